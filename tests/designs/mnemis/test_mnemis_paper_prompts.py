"""The prompts ``mnemis-paper`` sends, diffed against the paper's appendix D.

The appendix releases two prompts: the hierarchy prompt (``extract_category_nodes``) and
the Global Selection prompt (``NODE_SELECTION_PROMPT_TEMPLATE``); they are copied below
as the paper prints them. Each is rendered by :mod:`memstrata.designs.mnemis.prompts`
with sample inputs, the paper's placeholders are given the same rendered values, and
the two texts are compared with :mod:`difflib`. Whitespace is compared collapsed: the
appendix is a PDF listing whose line breaks and indentation are the page's layout.

Every difference must be in :data:`ALLOWED` with its reason (docs/mnemis.md, "The
prompts against appendix D", lists the same). The paper releases no extraction or
reranking prompt (its reranker is a cross-encoder), so those have nothing to diff.

Reproduce the figures: ``pytest -q tests/designs/mnemis/test_mnemis_paper_prompts.py -s``.
"""

# ruff: noqa: E501  (the paper's lines as printed)

from __future__ import annotations

import difflib

import pytest

from memstrata.designs.mnemis.prompts import categorize, select_nodes
from memstrata.llm.fence import FENCE_NOTE, fence

# appendix D, extract_category_nodes: sys_prompt --------------------------------------

PAPER_CATEGORY_SYSTEM = """You are an AI assistant specialized in semantic categorization of
nodes.
# INSTRUCTIONS:

You are given a list of node names, each prefixed with an index, each followed with a
brief description of the name (e.g., 1. dog: [domestic animal]).
Your task is to:

1. Group the nodes into semantically meaningful categories based on shared attributes,
considering both inherent characteristics of the node names and the DESCRIPTIONS of the
nodes, NOT relying solely on the DESCRIPTIONS.
    All EXISTING CATEGORIES are provided for you.

- If a node's attribute matches an existing category, it should be added under that category.
- If a node name has attributes that do not match any existing category, create a new category and add it.
- The category name MUST NOT include the word "and" as a connector.

Examples of INVALID categories:

- "Food and Drinks"
- "University and Courses"

Examples of VALID categories:

- "Food"
- "Drinks"
- "University"
- "Courses"

2. Output each category as a dictionary entry where the key is the category name and the value is a list of node indexes (integers). Only refer to nodes by their indexes. Do not repeat node names.

Output format:

[
  {"category": "xx", "indexes": [0, 1, 2, 4]}},
  {"category": "xxx", "indexes": [2, 3, 4]}]

The tag is a list of descriptors (each descriptor maximum 3 words, maximum 5 descriptors) that concisely captures the nature or type of the node.

Tag example:

- Entity name: "Son"
- Tag: ["Family member", "Happy kid", "Anime lover"]

3. A node CAN be assigned to MULTIPLE categories at the same time.

Key points for multi-category classification:

- Each item can be assigned to multiple categories based on shared attributes.
- When multiple categories are formed for an item, select the minimal subset of features that are common across the grouped items.

Examples for different hierarchy levels:

Layer 1 (specific entities):

- "Microsoft Research Asia" and "Microsoft Research Shanghai" share the same parent organization (Microsoft) and a similar research focus (AI). They are grouped under:
  - "Microsoft Research Labs"
  - "AI-focused Research Labs"
- "Microsoft Research Asia" belongs to both "Microsoft Research Labs" and "NLP-focused Labs".

Layer 2 (category nodes from Layer 1):

- "Microsoft Research Labs" belongs to:
  - "Tech Company Labs"
  - "AI Research Organizations"
- "University AI Labs" belongs to:
  - "Academic Institutions"
  - "AI Research Organizations"

Layer 3 (higher-level abstractions):
- "Tech Company Labs" belongs to:
  - "Commercial Organizations"
  - "Research Institutions"

- "Academic Institutions" belongs to:
  - "Educational Organizations"
  - "Research Institutions"

Layer 4 (top-level concepts):
- "Research Institutions" belongs to:
  - "Knowledge Organizations"

- "Commercial Organizations" belongs to:
  - "Economic Entities"

4. There must be NO leftover or ungrouped nodes. Single-member categories are allowed if
  necessary.

5. The node name "user" and any first-person references ("I", "me") MUST be categorized
  into one category called "Speaker".
"""

# appendix D, extract_category_nodes: guidance and user_prompt (placeholders as printed)

PAPER_GUIDANCE = """
<GUIDANCE ON CATEGORY GRANULARITY>
You are performing hierarchical semantic clustering from specific to abstract.

You are currently at Layer {layer}, where:
- Layer 1 contains the most specific, fine-grained categories.
- Higher layers should group lower-layer categories into broader, more abstract super-categories.

Example:

Layer 1:
- "Golden Retriever", "Poodle", "German Shepherd" -> "Dog breeds"
- "Persian Cat", "Siamese Cat" -> "Cat breeds"
- "Bengal Tiger", "Siberian Tiger" -> "Tiger subspecies"
- "Oak tree", "Pine tree" -> "Tree species"

Layer 2:
- "Dog breeds", "Cat breeds" -> "Pets"
- "Dog breeds", "Tiger subspecies" -> "Mammals"
- "Tiger subspecies" -> "Wild animals"
- "Tree species" -> "Trees"

Layer 3:
- "Pets", "Wild animals" -> "Animals"
- "Trees" -> "Plants"

Layer 4:
- "Animals", "Plants" -> "Living organisms"

Key points:
- Categories may belong to multiple parent categories.
- Do not merge categories that are too loosely related.

Your job at Layer {layer}:
- Merge semantically similar categories from Layer {layer - 1}.
- Each new category should reflect a shared attribute, domain, or higher-level concept.
- Multiple category assignments are allowed when justified.

Previous Layer {layer - 1} categories example:
{prev_example}
</GUIDANCE ON CATEGORY GRANULARITY>
"""

PAPER_CATEGORY_USER = """
<NODE INDEXED NAMES AND DESCRIPTIONS>
{context['content']}
</NODE INDEXED NAMES AND DESCRIPTIONS>

<EXISTING CATEGORIES>
These are names and descriptions of categories previously created. Reuse them if
applicable.
{context['existing_categories']}
</EXISTING CATEGORIES>

{guidance}

# ATTENTION
- The node name "user" and any first-person references ("I", "me") MUST be categorized
into one category called "Speaker". If the "Speaker" category does not exist, skip this
node.
- The category name MUST NOT include the word "and".

Please follow the INSTRUCTIONS and GUIDANCE carefully to ensure accurate categorization
and meaningful hierarchical relationships.
DO NOT INCLUDE ANY INVALID CATEGORIES.
"""

# appendix D, NODE_SELECTION_PROMPT_TEMPLATE (the listing skips from its line 19 to a
# second block numbered 17-23; both parts as printed) -----------------------------------

PAPER_SELECT = """You are analyzing a hierarchical knowledge graph to
help answer a user query.

Select all nodes that could help answer the query. A node is helpful if it:

- Directly relates to the query;
- Covers a clearly relevant topic, concept, or category;
- Provides useful background or context;
- Contains user-specific information (e.g. interests, goals, constraints);
- Likely has sub-nodes that may be helpful.

Do not be overly strict: include nodes that might provide context or personalization, even
if they seem partially redundant.

For each selected node:
- "name" is the node's name.
- "uuid" is the node's unique identifier.
- "get_all_children" is an boolean value. Set true only if you're confident all its sub-nodes are helpful.
---
User Query:
"{query}"

Available Nodes:
{nodes_info}
"""

# the documented differences: (the paper's text, ours, why) -----------------------------

FENCE = (
    "",
    FENCE_NOTE + " ",
    "Every memstrata prompt that shows stored text fences it and says so first: stored "
    "text is material, never instructions (memstrata.llm.fence).",
)
ALLOWED: dict[str, list[tuple[str, str, str]]] = {
    "categorize": [
        FENCE,
        (
            '[ {"category": "xx", "indexes": [0, 1, 2, 4]}}, '
            '{"category": "xxx", "indexes": [2, 3, 4]}]',
            '{"categories": [{"category": "xx", "description": "...", "tag": ["..."], '
            '"indexes": [0, 1, 2, 4]}, {"category": "xxx", "description": "...", '
            '"tag": ["..."], "indexes": [2, 3, 4]}]} The description is one short sentence '
            "saying what the members share.",
            "The output format: one JSON object (a structured reply's schema has an object "
            "at its top) whose categories carry a description and tag, as section 2.2 "
            "gives a category an entity's fields and the appendix releases no other prompt "
            'that writes them; the listing\'s stray "}}" is not copied.',
        ),
    ],
    "select": [
        FENCE,
        (
            "sub-nodes are helpful. ---",
            'sub-nodes are helpful. Answer JSON: {"nodes": [{"name": ..., "uuid": ..., '
            '"get_all_children": <boolean>}]} ---',
            "The appendix's listing skips the lines between its line 19 and the query "
            "(where the answer's format would be); ours states the JSON the schema wants.",
        ),
    ],
}

#: characters differing outside placeholders, per prompt (docs/mnemis.md quotes them)
FIGURES = {"categorize": 262, "select": 183}


def _flat(text: str) -> str:
    return " ".join(text.split())


def _differing(paper: str, ours: str) -> int:
    """Characters in the non-equal blocks of a character diff (the longer side of each)."""
    ops = difflib.SequenceMatcher(None, paper, ours, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in ops if op != "equal")


def _rendered(name: str) -> tuple[str, str]:
    """The paper's text with its placeholders given our rendered values, and ours; both
    with whitespace collapsed."""
    if name == "categorize":
        nodes = [("Detroit", "City, Conference venue"), ("Lisbon", "City")]
        existing = [("Cities", "Places someone lived in or visited")]
        example = '- "Golden Gate", "Alcatraz" -> "Landmarks"'
        messages, _ = categorize(2, nodes, existing, example, paper=True)
        content = fence("0. Detroit: [City, Conference venue]\n1. Lisbon: [City]")
        known = fence("- Cities: Places someone lived in or visited")
        guidance = (
            PAPER_GUIDANCE.replace("{layer - 1}", "1")
            .replace("{layer}", "2")
            .replace("{prev_example}", fence(example))
        )
        user = (
            PAPER_CATEGORY_USER.replace("{context['content']}", content)
            .replace("{context['existing_categories']}", known)
            .replace("{guidance}", guidance)
        )
        paper = PAPER_CATEGORY_SYSTEM + "\n" + user
    else:
        nodes = [("3f2a9c1b", "Geography", ["Places", "Travel"]), ("77ab01ce", "Health", [])]
        messages, _ = select_nodes("Which cities did Dave travel to in 2023?", nodes, paper=True)
        info = fence(
            "- name: \"Geography\", uuid: \"3f2a9c1b\", tags: ['Places', 'Travel']\n"
            '- name: "Health", uuid: "77ab01ce", tags: []'
        )
        paper = PAPER_SELECT.replace("{query}", "Which cities did Dave travel to in 2023?").replace(
            "{nodes_info}", info
        )
    ours = "\n".join(m.content for m in messages)
    return _flat(paper), _flat(ours)


@pytest.mark.parametrize("name", ["categorize", "select"])
def test_the_paper_prompt_differs_only_where_a_reason_is_given(name: str) -> None:
    paper, ours = _rendered(name)
    figure = _differing(paper, ours)
    print(f"\n{name}: {figure} characters differ outside placeholders")
    patched = paper
    for theirs, mine, reason in ALLOWED[name]:
        assert reason
        if theirs:
            assert patched.count(theirs) == 1, theirs
            patched = patched.replace(theirs, mine)
        else:
            patched = mine + patched
    assert patched == ours, "\n".join(
        difflib.unified_diff(patched.split(". "), ours.split(". "), lineterm="")
    )
    assert figure == FIGURES[name]


def test_each_allowed_difference_is_needed() -> None:
    """Without any one of them, the rendered prompt no longer matches: none is idle."""
    for name, allowed in ALLOWED.items():
        paper, ours = _rendered(name)
        for skip in range(len(allowed)):
            patched = paper
            for i, (theirs, mine, _) in enumerate(allowed):
                if i != skip:
                    patched = patched.replace(theirs, mine) if theirs else mine + patched
            assert patched != ours


def test_ours_is_not_the_paper_wording() -> None:
    """The fused recipes keep their own wording: the ``paper`` switch is what changes."""
    nodes = [("3f2a9c1b", "Geography", ["Places"])]
    ours, _ = select_nodes("q", nodes)
    paper, _ = select_nodes("q", nodes, paper=True)
    assert "Likely has sub-nodes that may be helpful." in paper[0].content
    assert "Likely has sub-nodes that may be helpful." not in ours[0].content
    (ours_sys, _), _ = categorize(1, [("a", "b")], [])
    (paper_sys, _), _ = categorize(1, [("a", "b")], [], paper=True)
    assert '- "University and Courses"' in paper_sys.content
    assert '- "University and Courses"' not in ours_sys.content
