"""Every PersonalAI prompt (appendices A, B and C) and the models of their answers.

Each prompt function returns ``(messages, model)``: the messages and the pydantic model
of the expected answer. Two output formats are offered, chosen by the builder's or
route's ``output`` parameter:

* ``lines``: the paper's own formats (``subject, relation, object; ...``, ``["new <-
  old"; ...]``, ``[[old -> new], ...]``, ``[Answer]: ...``), asked as plain text and
  parsed into the model by :func:`~memstrata.designs.personalai.replies.parse`;
* ``json``: the same instructions asking for a JSON object of the model's schema, for
  grammar-constrained models (the local GGUF backend).

Those are our wording (the fused recipes). ``style = "paper"`` renders Tables 5 and 7-10
in the paper's own words and line formats instead (``personalai-paper``); the text is in
:mod:`memstrata.designs.personalai.paper_text`.

:mod:`~memstrata.designs.personalai.replies` reads either format whatever was asked, so a
model that answers in the other one is not lost.
"""

from __future__ import annotations

import json
import re
from typing import Literal, TypeVar

from pydantic import BaseModel, Field, model_validator
from pydantic_core import PydanticCustomError

from memstrata.designs.personalai.paper_text import (
    PAPER_EMPTY,
    PAPER_REPLACE_SYSTEM,
    PAPER_T5_END,
    PAPER_T5_SYSTEM,
    PAPER_T7_USER,
    PAPER_T8_USER,
    PAPER_T9_SYSTEM,
    PAPER_T10_SYSTEM,
)
from memstrata.llm.fence import fence, noted
from memstrata.llm.types import Message

Output = Literal["json", "lines"]
#: whose wording a prompt has: ours (the fused recipes), or the paper's appendix text
#: (``personalai-paper``), which always asks for the paper's line formats
Style = Literal["ours", "paper"]
Prompt = tuple[list[Message], type[BaseModel]]
M = TypeVar("M", bound=BaseModel)
NOT_ENOUGH = "<NotEnoughtInfo>"  # the paper's token, spelling included


class ThesisItem(BaseModel):
    thesis: str = Field(max_length=600)
    nodes: list[str] = Field(default_factory=list, max_length=12)


class Theses(BaseModel):
    theses: list[ThesisItem] = Field(default_factory=list, max_length=40)


#: Table 6, rule 3: "Length of the triplet should not be more than 7 words." A reply's
#: longer triplet is dropped alone (counted on its call as ``triplet_too_long``)
TRIPLET_WORDS = 7


def triplet_words(*parts: str) -> int:
    return sum(len(p.split()) for p in parts)


class TripletItem(BaseModel):
    subject: str = Field(max_length=120)
    relation: str = Field(max_length=120)
    object: str = Field(max_length=120)

    @model_validator(mode="after")
    def _at_most_seven_words(self) -> TripletItem:
        if triplet_words(self.subject, self.relation, self.object) > TRIPLET_WORDS:
            raise PydanticCustomError(
                "triplet_too_long", "a triplet is at most {n} words", {"n": TRIPLET_WORDS}
            )
        return self


class Triplets(BaseModel):
    triplets: list[TripletItem] = Field(default_factory=list, max_length=60)


class Replacement(BaseModel):
    outdated: str = Field(max_length=600)
    new: str = Field(max_length=600)


class Replacements(BaseModel):
    replacements: list[Replacement] = Field(default_factory=list, max_length=40)


class KeyEntities(BaseModel):
    entities: list[str] = Field(default_factory=list, max_length=20)


class QAAnswer(BaseModel):
    chain_of_thoughts: str = Field(default="", max_length=2000)
    answer: str = Field(max_length=600)

    @property
    def abstained(self) -> bool:
        return bool(re.search(r"not\s*enough\w*\s*info", self.answer, re.IGNORECASE))


# appendix A --------------------------------------------------------------------------
_THESES = (
    "Objective: The main goal is to meticulously gather information from input [Text] and "
    "organize this data into a clear, structured knowledge graph. Requirements: 1. Entities "
    "must depict concepts, similar to Wikipedia nodes; they must not include verbs or words "
    "describing motion or properties; every entity is a real-world object or an abstract "
    'concept. From [Text] "Albert Einstein, born in Germany, is known for developing the '
    'theory of relativity" extract "Albert Einstein was born in Germany, [\'Albert '
    "Einstein', 'Germany']\" and \"Albert Einstein developed Theory of Relativity, "
    "['Albert Einstein', 'Theory of Relativity']\". 2. Thesises MUST BE comprehensive and "
    "consistent sentences; better one longer thesis than two that are inconsistent apart. "
    'For example, extract "North exit from kitchen is blocked by door" rather than '
    '"kitchen has door" and "north exit is blocked by door": without the kitchen, "north '
    'exit is blocked by door" could be about any room of the house. 3. Extract only '
    "concrete knowledge; assumptions must be described as hypothesis. For example, from "
    '[Text] "John have scored many points and potentially will be winner" extract "John '
    "scored many points and potentially will be winner, ['John', 'winner']\". 4. Nodes "
    "must be atomary units while a thesis can be complex and long. 5. Do not miss "
    'important information. If [Text] is "book involves story about knight, who needs to '
    'kill a dragon", the thesises are "book involves knight" and "knight needs to kill '
    'dragon". 6. Several thesises may be about the same node, for example "kitchen '
    'contains apple" and "apple is on kitchen table".'
)
_THESES_LINES = (
    " Return one thesis per line: the thesis sentence, a comma, then the list of its "
    "nodes, e.g. Albert Einstein was born in Germany, ['Albert Einstein', 'Germany']"
)
_TRIPLETS = (
    "Objective: The main goal is to meticulously gather information from the input [Text] "
    "and organize this data into a clear, structured knowledge graph of triplets. Each "
    "triplet contains two entities (subject and object) and one relation that connects "
    "them. The subject is the entity that is the factual object of the action; what each "
    'predicate says is summarized as a triplet "subject predicate object". 1. Nodes must '
    "depict objects or concepts, usually in one or two words. Subjects and objects may be "
    "named entities or concepts describing a group of people, events or abstract objects "
    'from the Wikidata knowledge graph. 2. Complex objects like "John position engineer in '
    'Google" must be split into "John position engineer" and "John work at Google". 3. A '
    "triplet is at most 7 words. 4. Extract only concrete knowledge; assumptions must be "
    'described as hypothesis. For example, from [Text] "John have scored many points and '
    'potentially will be winner" extract "John, scored, many points" and "John, could be, '
    'winner", and do not extract "John, will be, winner". 5. Object and subject must be '
    "atomary units while the relation can be longer. 6. Do not miss important information. "
    'If [Text] is "book involves story about knight, who needs to kill a dragon", the '
    'triplets are "book, involves, knight" and "knight, needs to kill, dragon". 7. Several '
    'triplets may be about the same node, for example "kitchen, contains, table" and '
    '"apple, is on, table". Do not miss this type of connections. 8. Do not use "none" as '
    "subject or object."
)
_TRIPLETS_LINES = (
    " Return the triplets in the format: subject_1, relation_1, object_1; subject_2, "
    "relation_2, object_2; ..."
)


def _json_tail(model: type[BaseModel]) -> str:
    return " Answer with a JSON object matching this schema: " + json.dumps(
        model.model_json_schema(), separators=(",", ":")
    )


def extract_theses(text: str, output: Output = "json", style: Style = "ours") -> Prompt:
    """Table 5: thesis memories with the nodes they link."""
    if style == "paper":
        return [
            Message(role="system", content=noted(PAPER_T5_SYSTEM + PAPER_T5_END)),
            Message(role="user", content=f"[Text]: {fence(text)}\n[Extracted thesises]:"),
        ], Theses
    tail = _THESES_LINES if output == "lines" else _json_tail(Theses)
    return [
        Message(role="system", content=noted(_THESES + tail)),
        Message(role="user", content=f"[Text]: {fence(text)}\n[Extracted thesises]:"),
    ], Theses


def extract_triplets(text: str, output: Output = "json") -> Prompt:
    """Table 6: simple memories as subject-relation-object triplets."""
    tail = _TRIPLETS_LINES if output == "lines" else _json_tail(Triplets)
    return [
        Message(role="system", content=noted(_TRIPLETS + tail)),
        Message(role="user", content=f"[Text]: {fence(text)}\n[Extracted Triplets]:"),
    ], Triplets


# appendix B --------------------------------------------------------------------------
# Tables 7 and 8 carry the same instructions and the same five examples, for theses
# (plain statements) and for triplets ("subject, relation, object"). Each example is
# (existing, new, replacements as (outdated, new) pairs, why); the replies are written in
# the format the prompt asks for, so the examples teach the format too.
_Item = tuple[str, tuple[str, str, str]]  # the same fact as a thesis and as a triplet


def _fact(thesis: str, subject: str, relation: str, obj: str) -> _Item:
    return thesis, (subject, relation, obj)


_LOCKER = _fact("Golden locker is open", "Golden locker", "state", "open")
_WEST = _fact("Room K is west of Room I", "Room K", "is west of", "Room I")
_EXIT_K = _fact("Room K has exit to east", "Room K", "has exit", "east")
_NORTH = _fact("Room T is north of Room N", "Room T", "is north of", "Room N")
_EXIT_T = _fact("Room T has exit to south", "Room T", "has exit", "south")
_BROOM_K = _fact("kitchen contains broom", "kitchen", "contains", "broom")
_BROOM_F = _fact("broom is on floor", "broom", "is on", "floor")
_BROOM_I = _fact("broom is in inventory", "broom", "is in", "inventory")
_IN_LOCKER = _fact("item is in locker", "item", "is in", "locker")
_IN_INVENTORY = _fact("item is in inventory", "item", "is in", "inventory")
_EXAMPLES: list[tuple[list[_Item], list[_Item], list[tuple[_Item, _Item]], str]] = [
    ([_LOCKER, _WEST, _EXIT_K], [_NORTH, _EXIT_T], [], "Nothing to replace here."),
    (
        [_BROOM_K, _BROOM_F],
        [_BROOM_I],
        [(_BROOM_K, _BROOM_I), (_BROOM_F, _BROOM_I)],
        "Several can be replaced by one: the broom moved from the kitchen floor to the "
        "player's inventory.",
    ),
    (
        [
            _fact("apple needs to be cooked", "apple", "needs to be", "cooked"),
            _fact("knife is used for cutting", "knife", "is used for", "cutting"),
            _fact("apple has been sliced", "apple", "has been", "sliced"),
        ],
        [
            _fact("apple is on table", "apple", "is on", "table"),
            _fact("kitchen contains knife", "kitchen", "contains", "knife"),
            _fact("apple has been grilled", "apple", "has been", "grilled"),
        ],
        [],
        "Nothing to replace here: these describe different properties of the items.",
    ),
    (
        [_fact("brush is used for painting", "brush", "is used for", "painting")],
        [_fact("brush is in art class", "brush", "is in", "art class")],
        [],
        "Nothing to replace here: these describe different properties of the brush.",
    ),
]


def _item(item: _Item, what: str) -> str:
    return ", ".join(item[1]) if what == "triplets" else item[0]


def _reply(pairs: list[tuple[_Item, _Item]], what: str, output: Output) -> str:
    if output == "json":
        rows = [{"outdated": _item(o, what), "new": _item(n, what)} for o, n in pairs]
        return json.dumps({"replacements": rows})
    if what == "triplets":
        return "[" + "".join(f"[{_item(o, what)} -> {_item(n, what)}], " for o, n in pairs) + "]"
    return "[" + "; ".join(f'"{_item(n, what)} <- {_item(o, what)}"' for o, n in pairs) + "]"


def _replace_system(what: str, output: Output) -> str:
    one = what[:-2] if what == "thesises" else what[:-1]
    shape = ' Triplets are written "subject, relation, object".' if what == "triplets" else ""
    lines = [
        f"You will be given a list of existing {what} and a list of new {what}.{shape} "
        f"They are facts about a world that changes over time, so an existing {one} may be "
        f"made outdated by one of the new {what}. For example, once an item is taken from "
        f'a locker, the existing {one} "{_item(_IN_LOCKER, what)}" is replaced by the new '
        f'{one} "{_item(_IN_INVENTORY, what)}".'
    ]
    for n, (old, new, pairs, why) in enumerate(_EXAMPLES):
        if n == 2:
            lines.append(
                f"Replace a {one} only when it holds redundant or conflicting information "
                "about the same aspect of an entity. Keep it when it gives distinct or "
                f"complementary information compared to the new {what}: compare the "
                "relations, properties and contexts they describe, and replace only when "
                "these align. When they concern different aspects or attributes, do not "
                f"replace. Replace only on semantic duplication between an existing {one} "
                f"and a new {one}. When unsure, keep the existing {one}."
            )
        lines.append(
            f"Example. Existing {what}: "
            + json.dumps([_item(i, what) for i in old])
            + f". New {what}: "
            + json.dumps([_item(i, what) for i in new])
            + f". Replacing: {_reply(pairs, what, output)}. {why}"
        )
    lines.append(
        f"Once more: do not replace {what} that carry a different kind of information "
        f"about the entities. Leaving a {one} in place is better than losing one that "
        f"holds important information, so never mark a {one} as replaced when you are not "
        f"sure. An existing {one} that semantically duplicates a new one is replaced by "
        f"it; {what} about different things are not. Every {one} you replace needs its "
        f"replacement among the new {what}; without a clear one, keep it."
    )
    if what == "thesises":
        lines.append(
            "A replacement must describe the same properties as the thesis it replaces, "
            "with more recent information. Keep an existing thesis that holds unique or "
            'current information: never replace "running is done with sneakers" with '
            '"sneakers located at store".'
        )
    lines.append("Generate only the list of replacements, no descriptions.")
    return " ".join(lines)


_REPLACE_LINES = {
    "thesises": ' Replacing must be generated strictly in the format: ["new_thesis_1 <- '
    'outdated_thesis_1"; "new_thesis_2 <- outdated_thesis_2";], [] if nothing, with no '
    "descriptions.",
    "triplets": " Replacing must be generated strictly in the format: [[outdated_triplet_1 "
    "-> actual_triplet_1], [outdated_triplet_2 -> actual_triplet_2],], [] if nothing, with "
    "no descriptions.",
}


def _replace(what: str, existing: list[str], new: list[str], output: Output) -> Prompt:
    tail = _REPLACE_LINES[what] if output == "lines" else _json_tail(Replacements)
    shown = (
        (json.dumps(existing), json.dumps(new))
        if what == "thesises"
        else ("; ".join(existing), "; ".join(new))
    )
    user = f"Existing {what}: {fence(shown[0])}. New {what}: {fence(shown[1])}. Replacing:"
    return [
        Message(role="system", content=noted(_replace_system(what, output) + tail)),
        Message(role="user", content=user),
    ], Replacements


def replace_theses(
    existing: list[str], new: list[str], output: Output = "json", style: Style = "ours"
) -> Prompt:
    """Table 7: which existing theses the new ones make outdated."""
    if style == "paper":
        shown = [json.dumps(x, ensure_ascii=False) for x in (existing, new)]
        return _paper_replace(PAPER_T7_USER, "thesises", shown)
    return _replace("thesises", existing, new, output)


def replace_triplets(
    existing: list[str], new: list[str], output: Output = "json", style: Style = "ours"
) -> Prompt:
    """Table 8: which existing triplets ("subject, relation, object") the new ones replace."""
    if style == "paper":
        shown = ["; ".join(f'"{t}"' for t in x) for x in (existing, new)]
        return _paper_replace(PAPER_T8_USER, "triplets", shown)
    return _replace("triplets", existing, new, output)


def _paper_replace(template: str, what: str, shown: list[str]) -> Prompt:
    """Tables 7 and 8 as printed: a one-line system prompt, the whole instruction in the
    user turn, the two lists at its ``{ex_...}`` and ``{new_...}`` placeholders."""
    values = {f"{{ex_{what}}}": fence(shown[0]), f"{{new_{what}}}": fence(shown[1])}
    user = re.sub(r"\{(?:ex|new)_\w+\}", lambda m: values[m.group(0)], template)
    return [
        Message(role="system", content=noted(PAPER_REPLACE_SYSTEM)),
        Message(role="user", content=user),
    ], Replacements


# appendix C --------------------------------------------------------------------------
#: Table 9's four examples: (text, key entities)
KEY_ENTITY_EXAMPLES = [
    (
        "Kayla has positive, negative or neutral opinion about video of Xiaomi 10Pro?",
        ["Kayla", "opinion", "video", "Xiaomi 10Pro"],
    ),
    (
        "Which device is better in battery life: Apple or k30u?",
        ["device", "battery life", "Apple", "k30u"],
    ),
    (
        "The majority of speakers have positive, neutral or negative sentiment about screen "
        "of Samsung?",
        ["speakers", "sentiment", "screen", "Samsung"],
    ),
    (
        "Which people have positive opinion about video of Xiaomi 10Pro on 25.11.2020?",
        ["people", "opinion", "video", "Xiaomi 10Pro", "25.11.2020"],
    ),
]

#: the contexts of Table 10's first example (its second shows three of them)
_OPINIONS = [
    "Xiaomi (kind: device) opinion (person: Anthony; opinion: hard) maintenance "
    "point (kind: feature)",
    "mate30pro (kind: device) opinion (person: Anthony; opinion: not as good as) "
    "signal (kind: feature)",
    "iPhone (kind: device) opinion (person: Anthony; opinion: not as good as) "
    "signal (kind: feature)",
    "Xiaomi 12 (kind: device) opinion (person: Grace; opinion: beat) charging "
    "speed (kind: feature)",
    "Xiaomi (kind: device) opinion (person: Faith; opinion: problem) product "
    "control (kind: feature)",
    "k30s (kind: device) opinion (person: Faith; opinion: not as good) film effect (kind: feature)",
    "red rice (kind: device) opinion (person: Faith; opinion: not as good) film "
    "effect (kind: feature)",
]

#: Table 10's three examples: (question, contexts, chain of thoughts, answer); no
#: contexts stands for "<Empty>"
QA_EXAMPLES: list[tuple[str, list[str], str, str]] = [
    (
        "Whose opinions from Anthony and Grace about devices are most similar to Faith's?",
        _OPINIONS,
        "Anthony's and Grace's opinions are compared with Faith's. Faith finds a "
        '"problem" with Xiaomi and finds k30s and red rice "not as good". Grace\'s only '
        'opinion, "beat" for Xiaomi 12, is like none of these. Anthony finds Xiaomi '
        '"hard" and mate30pro and iPhone "not as good as" for the signal, which matches '
        'Faith\'s "not as good".',
        "Anthony",
    ),
    (
        "Whose opinions from Amanda and Arianna about manufacturers are most similar to Joshua's?",
        _OPINIONS[3:6],
        "Amanda's and Arianna's opinions about manufacturers are to be compared with "
        "Joshua's, but the contexts say nothing of any of the three, so the question "
        "cannot be answered from them.",
        NOT_ENOUGH,
    ),
    (
        "The majority of speakers have positive, neutral or negative sentiment about "
        "signal of Apple?",
        [],
        "No information is given for the question.",
        NOT_ENOUGH,
    ),
]


def key_entities(question: str, output: Output = "json", style: Style = "ours") -> Prompt:
    """Table 9: the key entities of a question, with the table's four examples."""
    if style == "paper":  # the Assistant row's tag closes the user turn
        user = f"Extract [Key entites] from the given [Text]. [Text]: {question}\n[Key entites]:"
        return [
            Message(role="system", content=PAPER_T9_SYSTEM),
            Message(role="user", content=user),
        ], KeyEntities

    def shown(entities: list[str]) -> str:
        if output == "lines":
            return "; ".join(entities)
        return json.dumps({"entities": entities})

    examples = " ".join(
        f"#### Example {i} [Text]: {text} [Key entities]: {shown(found)}"
        for i, (text, found) in enumerate(KEY_ENTITY_EXAMPLES, start=1)
    )
    system = (
        "You are an expert system that can extract [Key entities] from a given [Text]. "
        "[Key entities] is a noun or an object like person, device, company and etc. Your "
        "response must contain only the extracted entities, with no explanation. Examples "
        f"of [Texts] and the entities extracted from them: {examples}"
    )
    tail = (
        " Return only the entities, separated by semicolons."
        if output == "lines"
        else _json_tail(KeyEntities)
    )
    return [
        Message(role="system", content=system + tail),
        Message(
            role="user", content=f"Extract [Key entities] from the given [Text]. [Text]: {question}"
        ),
    ], KeyEntities


def _contexts(contexts: list[str]) -> str:
    return "\n".join(f"- {c}" for c in contexts) if contexts else "<Empty>"


def qa(
    question: str, contexts: list[str], output: Output = "json", style: Style = "ours"
) -> Prompt:
    """Table 10: answer from the filtered triplets, or the NotEnoughInfo abstention, with
    the table's three examples (an answer, too little in the contexts, no contexts)."""
    if style == "paper":
        listed = fence("\n".join(f"- {c}" for c in contexts)) if contexts else PAPER_EMPTY
        user = (
            "Generate [Answer] for the [Question] based on provided [Contexts]. "
            f"[Question]: {question} [Contexts]: {listed}\n[Chain of thoughts]:"
        )
        return [
            Message(role="system", content=noted(PAPER_T10_SYSTEM)),
            Message(role="user", content=user),
        ], QAAnswer

    def shown(thoughts: str, answer: str) -> str:
        if output == "lines":
            return f"[Chain of thoughts]: {thoughts} [Answer]: {answer}"
        return json.dumps({"chain_of_thoughts": thoughts, "answer": answer})

    examples = "\n".join(
        f"#### Example {i} [Example Question]: {q} [Example Contexts]:\n{_contexts(c)}\n"
        f"{shown(thoughts, answer)}"
        for i, (q, c, thoughts, answer) in enumerate(QA_EXAMPLES, start=1)
    )
    system = (
        "You are a system that is trying to generate an [Answer] for a given [Question], "
        "based on provided [Contexts] in a list format. If there is no relevant information "
        f'in the given [Contexts] or the [Contexts] is "<Empty>", answer "{NOT_ENOUGH}". '
        "Before the final answer present your [Chain of thoughts] that leads to it: your "
        "reasoning from the [Question] and the [Contexts] to the [Answer]. Examples of "
        f"[Questions], [Contexts] and expected answers:\n{examples}\n"
    )
    tail = (
        "Format: [Chain of thoughts]: <reasoning> [Answer]: <final answer>"
        if output == "lines"
        else _json_tail(QAAnswer).lstrip()
    )
    ctx = fence(_contexts(contexts)) if contexts else "<Empty>"
    return [
        Message(role="system", content=noted(system + tail)),
        Message(role="user", content=f"[Question]: {question}\n[Contexts]:\n{ctx}"),
    ], QAAnswer
