"""``memtree-paper``'s prompts against the paper's appendix, character by character.

The appendix prompts are copied below as printed (Rezazadeh et al., appendix A.1.2,
"Aggregate Operation", and A.2.2, "Predicted Response Generation"). Each is rendered by
the design's prompt function with sample inputs, the paper's text gets the same inputs
at its placeholders, and the two are diffed (``difflib``). Whitespace runs count as one
space on both sides: the appendix's HTML rendering does not keep the prompts' line
layout. Every difference left must be one of :data:`ALLOWED`, each with its reason (the
same list is in docs/memtree.md). The figure per prompt is the number of characters
differing outside placeholders; ``python tests/designs/memtree/test_memtree_paper_prompts.py``
prints it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest

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
        r"</?data-[0-9a-f]{10}>",
        "stored text (the node's content, the new content, the search results) is fenced, "
        "as in every prompt here: a memory may carry instructions",
    ),
    Allowed(
        "fence note",
        re.escape(FENCE_NOTE),
        "the sentence that tells the model fenced text is material, never instructions: "
        "the prompt's one system line",
    ),
)

NEW = "Maya: I finally booked the flights to Lisbon for the conference in June."
CURRENT = "Maya is going to a data engineering conference; she plans her trip."
QUESTION = "Where is the conference Maya is going to?"
RESULTS = [NEW, "Tomas: Nice! Is that the data engineering conference you presented at?"]


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _rendered(messages: list[Message]) -> str:
    return "\n\n".join(m.content for m in messages)


@dataclass(frozen=True)
class Case:
    name: str
    paper: str
    render: Callable[[], list[Message]]


CASES = [
    Case(
        "A.1.2 aggregate",
        PAPER_AGGREGATE.format(n_children=3, new_content=NEW, current_content=CURRENT),
        lambda: prompts.paper_aggregate(CURRENT, NEW, 3)[0],
    ),
    Case(
        "A.2.2 answer",
        PAPER_ANSWER.format(query=QUESTION, retrieved_content="\n\n".join(RESULTS)),
        lambda: prompts.paper_answer(QUESTION, RESULTS)[0],
    ),
]


@dataclass
class Diff:
    """The differing characters of one prompt: ours added, the paper's missing, and
    what of ours is left once the documented differences are taken out."""

    added: list[str]
    missing: list[str]
    undocumented: list[str]
    by_reason: dict[str, int]

    @property
    def chars(self) -> int:
        return sum(map(len, self.added)) + sum(map(len, self.missing))


def diff(case: Case) -> Diff:
    ours, paper = _flat(_rendered(case.render())), _flat(case.paper)
    added: list[str] = []
    missing: list[str] = []
    matcher = difflib.SequenceMatcher(None, paper, ours, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "equal":
            missing += [paper[i1:i2]] if i2 > i1 else []
            added += [ours[j1:j2]] if j2 > j1 else []
    by_reason = {a.name: 0 for a in ALLOWED}
    # Documented differences are found in our whole rendering, then the added segments
    # must consist of them (and the whitespace next to them) only.
    spans: list[tuple[int, int]] = []
    for a in ALLOWED:
        for m in re.finditer(a.pattern, ours):
            spans.append(m.span())
            by_reason[a.name] += m.end() - m.start()
    covered = set(i for s, e in spans for i in range(s, e))
    undocumented = []
    for op, _, _, j1, j2 in matcher.get_opcodes():
        if op in ("insert", "replace"):
            left = "".join(ours[j] for j in range(j1, j2) if j not in covered).strip()
            if left:
                undocumented.append(left)
    return Diff(added, missing, undocumented, by_reason)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_paper_prompt_differs_only_where_documented(case: Case) -> None:
    got = diff(case)
    assert got.missing == [], "every character of the appendix prompt is in ours"
    assert got.undocumented == [], "each difference is one of ALLOWED"
    assert all(n > 0 for n in got.by_reason.values())  # both differences are really there
    # The figure docs/memtree.md reports: the fence tags and the note, nothing else.
    assert got.chars == FIGURES[case.name]


#: characters differing outside placeholders, per prompt (docs/memtree.md)
FIGURES = {"A.1.2 aggregate": 173, "A.2.2 answer": 136}


def test_the_diff_sees_a_changed_word() -> None:
    """The check can fail: a prompt that drifts from the appendix by one word is caught."""
    drifted = Case(
        "drifted",
        PAPER_ANSWER.format(query=QUESTION, retrieved_content="\n\n".join(RESULTS)),
        lambda: [
            Message(role="user", content=m.content.replace("high-quality", "good"))
            for m in prompts.paper_answer(QUESTION, RESULTS)[0]
        ],
    )
    got = diff(drifted)
    assert got.missing and got.undocumented


def test_our_fused_prompts_are_not_the_papers() -> None:
    """``memtree``'s prompts are ours (a JSON reply, a system/user split): the diff
    finds undocumented differences in them, so it would in a paper prompt that kept them."""
    for case, ours in zip(
        CASES,
        (
            lambda: prompts.aggregate(CURRENT, NEW, 3)[0],
            lambda: prompts.answer(QUESTION, RESULTS)[0],
        ),
        strict=True,
    ):
        assert diff(Case(case.name, case.paper, ours)).undocumented


if __name__ == "__main__":
    for case in CASES:
        d = diff(case)
        parts = ", ".join(f"{k} {v}" for k, v in d.by_reason.items())
        print(
            f"{case.name}: {d.chars} characters differ outside placeholders ({parts}); "
            f"undocumented: {len(d.undocumented)}"
        )
