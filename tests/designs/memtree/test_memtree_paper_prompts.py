"""``memtree-paper``'s prompts against the paper's appendix, character by character.

The appendix prompts are copied below as printed (Rezazadeh et al., appendix A.1.2,
"Aggregate Operation", and A.2.2, "Predicted Response Generation"; one paragraph a line,
a blank line between, as the appendix lays them out). Each is rendered by the design's
prompt function with every text placeholder's own name as its value (and n = 3, which
the paper's text gets too), and diffed against the paper's (``difflib``). Two figures
per prompt:

* outside placeholders and fences: the user prompt as sent, without the data fences
  and their note; the goal is 0;
* as sent: the fence tags and the fence note counted too; every differing stretch must
  be one of :data:`ALLOWED`, each with its reason (docs/memtree.md lists them).

``python tests/designs/memtree/test_memtree_paper_prompts.py`` prints both.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from tests.designs.paper_prompts import Difference, as_sent, differences, differing_chars

from memstrata.designs.memtree import prompts
from memstrata.llm.fence import FENCE_NOTE
from memstrata.llm.types import Message

# Appendix A.1.2, as printed ({n_children} is the paper's placeholder name for n).
PAPER_AGGREGATE = """\
You will receive two pieces of information: New Information is detailed, and Existing \
Information is a summary from {n_children} previous entries. Your task is to merge these \
into a single, cohesive summary that highlights the most important insights.

- Focus on the key points from both inputs.

- Ensure the final summary combines the insights from both pieces of information.

- If the number of previous entries in Existing Information is accumulating (more than 2), \
focus on summarizing more concisely, only capturing the overarching theme, and getting more \
abstract in your summary.

Output the summary directly.

[New Information]

{new_content}

[Existing Information (from {n_children} previous entries)]

{current_content}

[ Output Summary ]"""

# Appendix A.2.2, as printed.
PAPER_ANSWER = """\
Write a high-quality short answer for the given question using only the provided search \
results (some of which might be irrelevant).

[ Question ]

{query}

[ Search Results ]

{retrieved_content}

[ Output ]"""


@dataclass(frozen=True)
class Allowed:
    """A documented difference: what our rendering adds (a pattern) and why."""

    name: str
    pattern: str
    reason: str


ALLOWED = (
    Allowed(
        "fence tags",
        r"\n?</?data-[0-9a-f]{10}>\n?",  # with the line break it adds, on either side
        "stored text (the node's content, the new content, the search results) is fenced, "
        "as in every prompt here: a memory may carry instructions",
    ),
    Allowed(
        "fence note",
        re.escape(FENCE_NOTE) + r"\n\n",
        "the sentence that tells the model fenced text is material, never instructions: "
        "the prompt's one system message",
    ),
)


@dataclass(frozen=True)
class Case:
    name: str
    paper: str
    render: Callable[[], list[Message]]


N = 3
CASES = [
    Case(
        "A.1.2 aggregate",
        PAPER_AGGREGATE.replace("{n_children}", str(N)),
        lambda: prompts.paper_aggregate("{current_content}", "{new_content}", N)[0],
    ),
    Case(
        "A.2.2 answer",
        PAPER_ANSWER,
        lambda: prompts.paper_answer("{query}", ["{retrieved_content}"])[0],
    ),
]


def joined(messages: list[Message]) -> str:
    """Every message as the model reads it, one after the other."""
    return "\n\n".join(m.content for m in messages)


def unfenced(messages: list[Message]) -> str:
    """The prompt without the fences and their note: what the paper's text would have
    been with the same values."""
    return as_sent(joined(messages))


def undocumented(diffs: list[Difference]) -> list[Difference]:
    """The stretches that are not wholly made of :data:`ALLOWED` additions."""
    either = "|".join(f"(?:{a.pattern})" for a in ALLOWED)
    return [d for d in diffs if d.paper or not re.fullmatch(f"(?:{either})+", d.ours)]


#: characters differing per prompt: outside placeholders and fences, and as sent
#: (docs/memtree.md)
FIGURES = {"A.1.2 aggregate": (0, 174), "A.2.2 answer": (0, 137)}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_paper_prompt_differs_only_where_documented(case: Case) -> None:
    messages = case.render()
    bare = differences(unfenced(messages), case.paper)
    assert bare == [], "outside the fences, the prompt is the appendix's"
    sent = differences(joined(messages), case.paper)
    assert sent and undocumented(sent) == []
    assert (differing_chars(bare), differing_chars(sent)) == FIGURES[case.name]


def test_the_diff_sees_a_changed_word_and_our_json_prompts() -> None:
    """The check can fail: a prompt one word away from the appendix is caught, and so
    are ``memtree``'s own prompts (a JSON reply asked for, a system/user split)."""
    drifted = [
        Message(role=m.role, content=m.content.replace("high-quality", "good"))
        for m in prompts.paper_answer("{query}", ["{retrieved_content}"])[0]
    ]
    assert undocumented(differences(joined(drifted), PAPER_ANSWER))
    ours = [
        prompts.aggregate("{current_content}", "{new_content}", N)[0],
        prompts.answer("{query}", ["{retrieved_content}"])[0],
    ]
    for case, messages in zip(CASES, ours, strict=True):
        assert undocumented(differences(joined(messages), case.paper))


if __name__ == "__main__":
    for case in CASES:
        messages = case.render()
        bare = differing_chars(differences(unfenced(messages), case.paper))
        sent = differences(joined(messages), case.paper)
        print(
            f"{case.name}: {bare} characters differ outside placeholders and fences; "
            f"{differing_chars(sent)} as sent, all of them fence tags and the fence note "
            f"(undocumented stretches: {len(undocumented(sent))})"
        )
