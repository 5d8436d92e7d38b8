"""Every prompt ``personalai-paper`` sends, diffed against the paper's appendix text.

The ``RAW_*`` constants are Tables 5 and 7-10 as the paper's text reached us (a
conversion of its PDF tables, rows joined by newlines, row labels left out): facts from
the paper, typos and all. That conversion lost or garbled a few things; :data:`REPAIRS`
lists each repair with its reason, and each must match the raw text exactly once. Each
prompt function is rendered with sample inputs in the paper's wording (``style =
"paper"``), the paper's text gets the same inputs at its placeholders, and the two are
diffed with :mod:`difflib`: the characters that differ outside the placeholders must be
the documented additions of :data:`ADDED` and nothing else. Table 6 is not here:
``personalai-paper`` sends our wording of it (its text is cut off in the paper).

The figures of docs/personalai.md ("The paper's prompts, diffed")::

    PYTHONPATH=src python -m pytest -q -s -k figures \\
        tests/designs/personalai/test_personalai_paper_prompts.py
"""

from __future__ import annotations

import difflib
import json
import re

import pytest

from memstrata.designs.personalai.prompts import (
    extract_theses,
    key_entities,
    qa,
    replace_theses,
    replace_triplets,
)
from memstrata.llm.fence import FENCE_NOTE, fence

RAW_T5_SYSTEM = (
    "Objective: The main goal is to meticulously gather information from input [Text] and "
    "organize this data into a clear, structured knowledge graph. Requirements for "
    "building a knowledge graph: 1. Entities must depict concepts, similar to Wikipedia "
    "nodes. Entities must not include verbs and any other words which described motion, "
    "properties and etc. All the entities must be the real world objects or abstract "
    "concept. Use a structured thesises format to capture data. For example, from [Text] "
    '"Albert Einstein, born in Germany, is known for developing the theory of relativity" '
    '[Extracted thesises] should be "Albert Einstein was born in Germany, [Valbert '
    "Einstein, 'Germany', 'birth']\", \"Albert Einstein developed Theory of Relativity "
    "['Albert Einstein', 'developing', 'Theory of Relativity'].\" 2. Thesises MUST BE "
    "comprehension and consistent, so you can make them in form of sentense. You better "
    "make a much longer thesis than split it into two which inconsistent separately. For "
    'example, you better extract thesis "North exit from kitchen is blocked by door" than '
    '"kitchen has door" and "north exit is blocked by door" because without context of '
    'kitcher "north exit is blocked by door" can be related to every room at home. 3. You '
    "should extract only concrete knowledges, any assumptions must be described as "
    'hypothesis. For example, from [Text] "John have scored many points and potentially '
    'will be winner" [Extracted thesises] should be "John scored many points and '
    'potentially will be winner" [Extracted thesises] should be "John scored many points '
    "and potentially will be winner\" [John', 'winner'].\" 4. Remember that nodes must be "
    "an atomary units while thesis can be more complex and long. 5. Do not miss important "
    'information. If [Text] is "book involves story about knight, who needs to kill a '
    'dragon", thesises should be "book involves knight", "knight needs to kill dragon". 6. '
    "Several thesises can be extracted, that contain information about the same node. For "
    'example "kitchen contains apple" "kitchen contains apple" "'
)

RAW_T7_USER = (
    "You will be provided with list of existing thesises and list of new thesises. The "
    "thesises denote facts about the environment where the player moves. The player takes "
    "actions and the environment changes, so some thesises from the list of existing "
    "thesises can be replaced with one of the new thesises. For example, the player took "
    'the item from the locker and the existing thesis "item is in locker" should be '
    'replaced with the new thesis "item is in inventory".\n'
    "Sometimes there are no thesises "
    'to replace: Example of existing thesises: ["Golden locker is open", "Room K is west '
    'of Room I", "Room K has exit to east"] Example of new thesises: ["Room T is north of '
    'Room N", "Room T has exit to south"] Example of replacing: []. Nothisg to replace here\n'
    "Sometimes "
    'several thesises can be replaced with one: Example of existing thesises: ["kitchen '
    'contains broom", "broom is on floor"] Example of new thesises: ["broom is in inventory"]\n'
    "Example "
    'of replacing: ["broom is in inventory <- kitchen contains broom", "broom is in '
    'inventory <- broom is on floor"]. Because broom changed location from the floor in '
    "the kitchen to players inventory.\n"
    "Ensure that thesises are only replaced if they "
    "contain redundant or conflicting information about the same aspect of an entity. "
    "Thesises should not be replaced if they provide distinct or complementary information "
    "about entities compared to the new thesises. Specifically, consider the "
    "relationships, properties, or contexts described by each thesis and verify that they "
    "align before replacement. If there is uncertainty about whether a thesis should be "
    "replaced, prioritize retaining the existing thesis over replacing it. When comparing "
    "existing and new thesises, if they refer to different aspects or attributes of "
    "entities, do not replace them. Replacements should only occur when there is semantic "
    "duplication between an existing thesis and a new thesis. Example of existing "
    "thesises: [\"apple need to be cooked\", 'knife used for cutting', 'apple has been "
    "sliced'] Example of new thesises: [\"apple is on table\", 'kitchen contains knife', "
    "'apple has beed grilled']\n"
    "Example of new triesises. [apple is of table , kitchen "
    "contains kille , apple has beed grilled] Example of replacing: []. Nothing to replace "
    "here. These thesises describe different properties of items, so they should not be replaced.\n"
    "Another "
    "example of when not to replase existung thesises: Example of existing thesises: "
    '["brush is used for painting"] Example of new thesises: ["brush is in art class"] '
    "Example of replacing: []. Nothing to replace here. These thesises describe different "
    "properties of brush, so they should not be replaced.\n"
    "I repeat, do not replace "
    "thesises if they carry differend type of information about entities!!! It is better "
    "to leave a thesis, than to replace the one that has important information. Do not "
    "state that thesis needs to be replaced if you are not sure!! If you find thesis in "
    "Existing thesises which semantically duplicate some thesis in New thesises, replace "
    "such thesis from Existing thesises. However do not replace thesis if they refer to "
    "different things. For every thesis you want to replace you must find replacement from "
    "new thesises. If there is no clear replacement, you must not replace existing thesis.\n"
    "The "
    "replace existing triesis. The replacements should contain information about the same "
    "properties as the statements being replaced, but must include more recent "
    "information. You MUST save existing thesis if it contains unique or actual "
    'information about entities. For example, you MUST NOT replace thesis "running is done '
    'with sneakers" with "sneakers located at store". ####\n'
    "Generate only list of "
    "replacing, no descriptions are needed. Existing thesises: {ex_thesises}. New "
    "thesises: {new_thesises}. ####\n"
    "Warning! Replacing must be generated strictly in "
    'following format: ["new_thesis_1 <- outdated_thesis_1"; "new_thesis_2 <- '
    'outdated_thesis_2";], you MUST NOT include any descriptions in answer. Replacing:'
)

RAW_T8_USER = (
    "[Extracted thesises]:You will be provided with list of existing triplets and list of "
    'new triplets. Triplets are in the following format: "subject, relation, object". The '
    "triplets denote facts about the environment where the player moves. The player takes "
    "actions and the environment changes, so some triplets from the list of existing "
    "triplets can be replaced with one of the new triplets. For example, the player took "
    'the item from the locker and the existing triplet "item, is in, locker" should be '
    'replaced with the new triplet "item, is in, inventory". Sometimes there are no '
    'triplets to replace: Example of existing triplets: "Golden locker, state, open"; '
    '"Room K, is west of, Room I"; "Room K, has exit, east". Example of new triplets: '
    '"Room T, is north of, Room N"; "Room T, has exit, south". Example of replacing: []. '
    "Nothisg to replace here Sometimes several triplets can be replaced with one:\n"
    "Example "
    'of existing triplets: "kitchen, contains, broom"; "broom, is on, floor". Example of '
    'new triplets: "broom, is in, inventory". Example of replacing: [["kitchen, contains, '
    'broom" -> "broom, is in, inventory"], ["broom, is on, floor" -> "broom, is in, '
    'inventory"]]. Because broom changed location from the floor in the kitchen to players '
    "inventory. Ensure that triplets are only replaced if they contain redundant or "
    "conflicting information about the same aspect of an entity. Triplets should not be "
    "replaced if they provide distinct or complementary information about entities "
    "compared to the new triplets. Specifically, consider the relationships, properties, "
    "or contexts described by each triplet and verify that they align before replacement. "
    "If there is uncertainty about whether a triplet should be replaced, prioritize "
    "retaining the existing triplet over replacing it. When comparing existing and new "
    "triplets, if they refer to different aspects or attributes of entities, do not "
    "replace them. Replacements should only occur when there is semantic duplication "
    'between an existing triplet and a new triplets: "apple, to be, cooked", \'knife, used '
    "for, cutting', 'apple, has been, sliced' Example of new triplets: \"apple, is on, "
    "table\", 'kitchen, contsins, knife', 'apple, has beed, grilled'. Example of "
    "replacing: []. Nothing to replace here. These triplets describe different properties "
    "of items, so they should not be replaced.\n"
    "Another example of when not to replase "
    'existung triplets: Example of existing triplets: "brush, used for, painting". Example '
    'of new triplets: "brush, is in, art class". Example of replacing: []. Nothing to '
    "replace here. These triplets describe different properties of brush, so they should "
    "not be replaced. I repeat, do not replace triplets, if they carry differend type of "
    "information about entities!!! It is better to leave a tripplet, than to replace the "
    "one that has important information. Do not state that triplet needs to be replaced if "
    "you are not sure!! If you find triplet in Existing triplets which semantically "
    "duplicate some triplet in New triplets, replace such triplet from Existing triplets. "
    "However do not replace triplets if they refer to different things. ####\n"
    "Generate "
    "only replacing, no descriptions are needed. Existing triplets: {ex_triplets}. New "
    "triplets: {new_triplets}. #### Warning! Replacing must be generated strictly in "
    "following format: [[outdated_triplet_1 -> actual_triplet_1], [outdated_triplet_2 -> "
    "actual_triplet_2],], you MUST NOT include any descriptions in answer. Replacing:"
)

RAW_T9_SYSTEM = (
    "You are an expert system that can extract [Key entities] from a given [Text]. [Key "
    "entities] is a noun or an object like persone, device, company and etc. Extracted "
    'entities must be presented in the following format: " <entitie1> <entitie2> '
    '<entitien>", where <entitie> is extracted [Key entities]. Your response only must '
    "contains extracted entities and do not include additional explanations of the "
    "obtained result. Examples of [Texts] and their corresponding extracted [Key entities] "
    "are listed below: #### Example 1 [Text]: Kayla has positive, negative or neutral "
    "opinion about video of Xiaomi 10Pro? [Key entites]: Kayla opinion video Xiaomi 10Pro "
    "#### Example 2 [Text]: Which device is better in battery life: Apple or k30u? [Key "
    "entites]: device battery life Apple k30u. #### Example 3 [Text]: The majority of "
    "speakers have positive, neutral or negative sentiment about screen of Samsung? [Key "
    "entites]: speakers sentiment screen Samsung ### Example 4 [Text]: Which people have "
    "positive opinion about video of Xiaomi 10Pro on 25.11.2020? [Key entites]: people "
    "opinion video Xiaomi 10Pro 25.11.2020</entitie></entitien></entitie2></entitie1>"
)

RAW_T10_SYSTEM = (
    "You are a system that is trying to generate an [Answer] for a given [Question], based "
    "on provided [Contexts] in a list format. If there is no relevant information in a "
    'given [Contexts] for generating the suitable answer or the [Contexts] is "< Empty >", '
    'then you should generate the following: "< NotEnoughtInfo >". Before generating the '
    "final answer you should present your [Chain of thoughts] that lead to the [Answer].\n"
    "The "
    "format you must match for generating response is presented below: [Chain of "
    "thoughts]: <chain-of-thoughts> [Answer]: <final-answer> ,where <chain-of-thoughts> is "
    "your reasoning path based on given [Question] and [Contexts] that concludes to the "
    "[Answer] and <final-answer> is your final [Answer] to the [Question]."
    "</final-answer></chain-of-thoughts></final-answer></chain-of-thoughts>\n"
    "Examples "
    "of [Questions], [Contexts] and expected [Answers] are presented in a list below: #### "
    "Example 1 [Example Question]: Whose opinions from Anthony and Grace about devices are "
    "most similar to Faith's? [Example Contexts]:\n"
    " Xiaomi (kind: device) opinion (person: "
    "Anthony; opinion: hard) maintenance point (kind: feature) mate30pro (kind: device) "
    "opinion (person: Anthony; opinion: not as good as) signal (kind: feature) iPhone "
    "(kind: device) opinion (person: Anthony; opinion: not as good as) signal (kind: "
    "feature) Xiaomi 12 (kind: device) opinion (person: Grace; opinion: beat) charging "
    "speed (kind: feature) Xiaomi (kind: device) opinion (person: Faith; opinion: problem) "
    "product control (kind: feature) k30s (kind: device) opinion (person: Faith; opinion: "
    "not as good) film effect (kind: feature) red rice (kind: device) opinion (person: "
    "Faith; opinion: not as good) film effect (kind: feature) [Example Chain of thoughts]: "
    "The task is to compare Anthony's and Grace's opinions to Faith's opinions about "
    'devices. Faith has two types of opinions: "problem" with the Xiaomi device and "not '
    'as good" with both k30s and red rice devices. We will look for similar expressions of '
    'dissatisfaction from Anthony and Grace. Grace\'s opinion about Xiaomi 12 is "beat", '
    "which is not similar to any of Faith's negative opinions. Anthony's opinions include "
    '"hard" for Xiaomi and "not as good as" for mate30pro and iPhone with respect to the '
    'signal feature. "Not as good as" matches Faith\'s "not as good". [Example Answer]: Anthony\n'
    "#### "
    "Example 2 [Example Question]: Whose opinions from Amanda and Arianna about "
    "manufacturers are most similar to Joshua's? [Example Contexts]: - Xiaomi 12 (kind: "
    "device) opinion (person: Grace; opinion: beat) charging speed (kind: feature) - "
    "Xiaomi (kind: device) opinion (person: Faith; opinion: problem) product control "
    "(kind: feature) - k30s (kind: device) opinion (person: Faith; opinion: not as good) "
    "film effect (kind: feature) [Example Chain of thoughts]: The task is to compare "
    "Amanda's and Arianna's opinions to Joshua's opinions about manufacturers. The "
    "provided contexts does not allow to determine which opinions from Amanda and Arianna "
    "about manufacturers are most similar to Joshua's. [Example Answer]: < NotEnoughtInfo "
    "> #### Example 3\n"
    "[Example Question]: The majority of speakers have positive, neutral "
    "or negative sentiment about signal of Apple? [Example Contexts]: < Empty > [Example "
    "Chain of thoughts]: The information for a give question is not provided. [Example "
    "Answer]: < NotEnoughtInfo >"
)

RAW_T10_USER = (
    "Generate [Answer] for the [Question] based on provided [Contexts]. [Question]: {q} "
    "[Contexts]: {c}\n"
    "[Chain of thoughtal"
)


#: (table, row, text, reason): every repair of the raw text, each found in it once
REPAIRS: list[tuple[str, str, str, str, str]] = [
    (
        "table5",
        "system",
        "[Valbert Einstein, 'Germany', 'birth']",
        "['Albert Einstein', 'Germany', 'birth']",
        "the list's opening [' read as a letter V",
    ),
    (
        "table5",
        "system",
        '"John scored many points and potentially will be winner" [Extracted thesises] '
        'should be "John scored many points and potentially will be winner" '
        "[John', 'winner'].\"",
        "\"John scored many points and potentially will be winner ['John', 'winner'].\"",
        "the example read twice, its node list without its opening ['",
    ),
    (
        "table5",
        "system",
        'For example "kitchen contains apple" "kitchen contains apple" "',
        'For example "kitchen contains apple"',
        "the table breaks off here, its last example read twice (ADDED completes it)",
    ),
    (
        "table7",
        "user",
        "Example of new triesises. [apple is of table , kitchen contains kille , apple "
        "has beed grilled] ",
        "",
        "a second, garbled reading of the line before it (the row's User label sits on it)",
    ),
    (
        "table8",
        "user",
        "[Extracted thesises]:You will be provided",
        "You will be provided",
        "Table 5's reply tag printed into this cell",
    ),
    (
        "table9",
        "system",
        '" <entitie1> <entitie2> <entitien>", where <entitie> is extracted',
        '"<entitie1> | <entitie2> | ... | <entitieN>", where <entitie...> is extracted',
        "the conversion read <entitie1> ... as HTML tags (lower-cased, the '|' and '...' "
        "between them dropped, closing tags added at the end); as the paper's published "
        "prompt prints it",
    ),
    *(
        (
            "table9",
            "system",
            plain,
            piped,
            "the conversion dropped every '|' of the tables (its cell separator): the "
            "entities run together ('Xiaomi 10Pro', 'battery life' cannot be told apart)",
        )
        for plain, piped in [
            ("Kayla opinion video Xiaomi 10Pro", "Kayla | opinion | video | Xiaomi 10Pro"),
            ("device battery life Apple k30u.", "device | battery life | Apple | k30u."),
            ("speakers sentiment screen Samsung", "speakers | sentiment | screen | Samsung"),
            (
                "people opinion video Xiaomi 10Pro 25.11.2020",
                "people | opinion | video | Xiaomi 10Pro | 25.11.2020",
            ),
        ]
    ),
    (
        "table9",
        "system",
        "</entitie></entitien></entitie2></entitie1>",
        "",
        "closing tags the conversion added for the placeholders it read as HTML",
    ),
    (
        "table10",
        "system",
        "</final-answer></chain-of-thoughts></final-answer></chain-of-thoughts>",
        "",
        "closing tags the conversion added for the placeholders it read as HTML",
    ),
    *(
        (
            "table10",
            "system",
            before,
            before.replace(") ", ") - ", 1) if before.startswith("feature") else ":\n - Xiaomi",
            "Example 1's contexts lost their list markers, which Example 2's keep ('- ')",
        )
        for before in [
            ":\n Xiaomi",
            "feature) mate30pro",
            "feature) iPhone",
            "feature) Xiaomi 12",
            "feature) Xiaomi (kind",
            "feature) k30s",
            "feature) red rice",
        ]
    ),
    (
        "table10",
        "user",
        "\n[Chain of thoughtal",
        "",
        "a garbled second reading of the Assistant row, '[Chain of thoughts]:'",
    ),
]

#: rows the conversion printed in the wrong order: (table, reason)
SWAPPED = {
    "table5": "the User row holds the reply's tag and the Assistant row the input; Tables "
    "9 and 10 put the input in the User row and the reply's tag in the Assistant row",
}

#: the differences left, each with its reason: text memstrata adds to the paper's
ADDED: dict[str, list[tuple[str, str]]] = {
    "table5": [
        (
            ', "apple is on kitchen table". [Extracted thesises] should be returned one per '
            "line, each as in the examples: the thesis, then the list of its nodes.",
            "the table breaks off in rule 6, before the reply's format: its example's "
            "second thesis and the format are ours",
        ),
    ],
}
#: the fence note: every prompt that shows stored text says, in its system prompt, that
#: fenced text is material, not instructions (tests/llm/test_fence.py); Table 9 shows
#: only the question, which is not stored text, so it has none
NOTED = {"table5", "table7", "table8", "table10"}
for _table in NOTED:
    ADDED.setdefault(_table, []).append(
        ("\n" + FENCE_NOTE, "the fence note: stored text is never read as instructions")
    )

#: the assistant rows are the start of the reply: chat servers do not continue a reply
#: they are given, so the row's text ends the user turn (joined to it by the newline
#: that joins the rows here: no character differs)
RAW: dict[str, list[tuple[str, str]]] = {
    "table5": [
        ("system", RAW_T5_SYSTEM),
        ("user", "[Extracted thesises]:"),
        ("assistant", "[Text]: {text}"),
    ],
    "table7": [("system", "You are a helpful assistant."), ("user", RAW_T7_USER)],
    "table8": [("system", "You are a helpful assistant."), ("user", RAW_T8_USER)],
    "table9": [
        ("system", RAW_T9_SYSTEM),
        ("user", "Extract [Key entites] from the given [Text]. [Text]: {text}"),
        ("assistant", "[Key entites]:"),
    ],
    "table10": [
        ("system", RAW_T10_SYSTEM),
        ("user", RAW_T10_USER),
        ("assistant", "[Chain of thoughts]:"),
    ],
}

TEXT = "Maya moved to Lisbon in May. She works at Acme, a design studio."
OLD = ["Maya works at Acme", "Maya lives in Porto"]
NEW = ["Maya now works at Globex", "Maya lives in Lisbon"]
OLD_T = ["Maya, works at, Acme", "Maya, lives in, Porto"]
NEW_T = ["Maya, works at, Globex", "Maya, lives in, Lisbon"]
QUESTION = "Where does Maya work now?"
CONTEXTS = ["Maya works at Globex", "Maya moved to Lisbon in May.", "Maya works at Acme"]


def _listed(items: list[str]) -> str:
    return "; ".join(f'"{t}"' for t in items)


#: each prompt as ``personalai-paper`` renders it, and what stands at the paper's
#: placeholders (the stored text fenced, the question as asked)
CASES = {
    "table5": (lambda: extract_theses(TEXT, "lines", "paper"), {"text": fence(TEXT)}),
    "table7": (
        lambda: replace_theses(OLD, NEW, "lines", "paper"),
        {"ex_thesises": fence(json.dumps(OLD)), "new_thesises": fence(json.dumps(NEW))},
    ),
    "table8": (
        lambda: replace_triplets(OLD_T, NEW_T, "lines", "paper"),
        {"ex_triplets": fence(_listed(OLD_T)), "new_triplets": fence(_listed(NEW_T))},
    ),
    "table9": (lambda: key_entities(QUESTION, "lines", "paper"), {"text": QUESTION}),
    "table10": (
        lambda: qa(QUESTION, CONTEXTS, "lines", "paper"),
        {"q": QUESTION, "c": fence("\n".join(f"- {c}" for c in CONTEXTS))},
    ),
    "table10-empty": (
        lambda: qa(QUESTION, [], "lines", "paper"),
        {"q": QUESTION, "c": "< Empty >"},
    ),
}


def rows(table: str, repaired: bool) -> list[tuple[str, str]]:
    out = [list(r) for r in RAW[table]]
    if repaired:
        for name, row, old, new, _ in REPAIRS:
            if name == table:
                at = next(r for r in out if r[0] == row)
                assert at[1].count(old) == 1, (table, old)
                at[1] = at[1].replace(old, new)
        if table in SWAPPED:
            out[1][1], out[2][1] = out[2][1], out[1][1]
    return [(r[0], r[1]) for r in out]


def paper_text(table: str, values: dict[str, str], repaired: bool = True) -> str:
    """The paper's rows joined by newlines, ``values`` at the placeholders (in one pass,
    so a value holding braces stays as it is)."""
    text = "\n".join(t for _, t in rows(table, repaired) if t)
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], text)


def differing(a: str, b: str) -> int:
    """Characters that differ between ``a`` and ``b``: per difflib opcode that is not
    ``equal``, the longer of its two sides."""
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")


def rendered(case: str) -> tuple[str, str]:
    """(the rendering joined by newlines, the same without the documented additions)."""
    make, _ = CASES[case]
    messages, _ = make()
    assert [m.role for m in messages] == ["system", "user"]
    ours = "\n".join(m.content for m in messages)
    bare = ours
    for text, _ in ADDED.get(case.split("-")[0], []):
        assert bare.count(text) == 1, (case, text)
        bare = bare.replace(text, "")
    return ours, bare


def figures(case: str) -> dict[str, int]:
    table = case.split("-")[0]
    values = CASES[case][1]
    ours, bare = rendered(case)
    return {
        "outside placeholders": differing(paper_text(table, values), ours),
        "undocumented": differing(paper_text(table, values), bare),
        "repaired": differing(paper_text(table, values, repaired=False), bare),
    }


#: what the figures are (docs/personalai.md shows them): characters differing from the
#: paper's text outside the placeholders (all of them the documented additions: the
#: fence note's 99, Table 5's completion's 149), none undocumented, and the characters
#: the repairs change in the raw text
FIGURES = {
    "table5": {"outside placeholders": 248, "undocumented": 0, "repaired": 163},
    "table7": {"outside placeholders": 99, "undocumented": 0, "repaired": 96},
    "table8": {"outside placeholders": 99, "undocumented": 0, "repaired": 21},
    "table9": {"outside placeholders": 0, "undocumented": 0, "repaired": 84},
    "table10": {"outside placeholders": 99, "undocumented": 0, "repaired": 104},
    "table10-empty": {"outside placeholders": 99, "undocumented": 0, "repaired": 104},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_paper_prompt_is_the_papers_text_but_for_what_is_documented(case: str) -> None:
    table = case.split("-")[0]
    _, bare = rendered(case)
    expected = paper_text(table, CASES[case][1])
    assert differing(expected, bare) == 0, "\n".join(
        difflib.unified_diff(expected.split("\n"), bare.split("\n"), lineterm="")
    )


def test_every_repair_and_addition_is_of_the_text_it_names() -> None:
    for table in RAW:
        rows(table, repaired=True)  # each repair's text is in its row exactly once
    for name, row, old, new, why in REPAIRS:
        assert old != new and why and name in RAW and row in dict(RAW[name])
    for table, added in ADDED.items():
        raw = paper_text(table, {k: "" for k in re.findall(r"\{(\w+)\}", str(RAW[table]))})
        for text, why in added:
            assert why and text not in raw  # an addition, not the paper's own words


def test_the_fused_prompts_keep_our_wording() -> None:
    """The fused recipes' prompts are not the paper's text (their own tests hold them)."""
    for make in (
        lambda s: extract_theses(TEXT, "lines", s),
        lambda s: replace_theses(OLD, NEW, "lines", s),
        lambda s: replace_triplets(OLD_T, NEW_T, "lines", s),
        lambda s: key_entities(QUESTION, "lines", s),
        lambda s: qa(QUESTION, CONTEXTS, "lines", s),
    ):
        ours, paper = make("ours")[0], make("paper")[0]
        assert [m.content for m in ours] != [m.content for m in paper]


def test_figures() -> None:
    """The per-prompt figures of docs/personalai.md; ``-s`` prints them."""
    got = {case: figures(case) for case in sorted(CASES)}
    print("\n| prompt | differing outside placeholders | of them undocumented | repaired |")
    print("|---|---:|---:|---:|")
    for case, f in got.items():
        print(f"| {case} | {f['outside placeholders']} | {f['undocumented']} | {f['repaired']} |")
    assert got == FIGURES
