"""Mnemis prompts: base graph extraction (section 2.1), the hierarchy prompt and the
Global Selection prompt (appendix D), and a listwise reranker for fusion.

The two appendix D prompts come in two wordings: ours, which follows the paper's
instructions point by point, shortened where a small local model needs it, and the
paper's own text (``paper=True``, the ``mnemis-paper`` recipe), changed only where
``tests/designs/mnemis/test_mnemis_paper_prompts.py`` lists a reason. The base graph
prompts are written for memstrata from the steps section 2.1 describes (the paper
releases none). Each prompt function returns ``(messages, model)``; :func:`ask` sends one.

The paper's own text is in :mod:`memstrata.designs.mnemis.paper_text`; the adapters the
builder and the route are given (grouping, describing, selecting) are in
:mod:`memstrata.designs.mnemis.calls`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import BaseModel, Field, create_model

from memstrata.designs.mnemis.paper_text import (
    CATEGORY_SYSTEM_PAPER,
    GUIDANCE,
    SELECT_SYSTEM_PAPER,
)
from memstrata.designs.mnemis.sizing import sized
from memstrata.llm.base import LLMClient
from memstrata.llm.budgets import Budgets
from memstrata.llm.fence import FENCE_NOTE, fence
from memstrata.llm.schema import list_bounded
from memstrata.llm.types import Message
from memstrata.retrieval.context import count_tokens, shorten_longest

# answers ------------------------------------------------------------------------------


Name = Annotated[str, Field(max_length=60)]
#: appendix D's descriptor: "maximum 3 words", said in the schema too (a pattern a
#: grammar-constrained model follows; words of at most 20 characters keep it bounded)
Descriptor = Annotated[
    str, Field(max_length=62, pattern=r'^[^ "\\\n\t]{1,20}( [^ "\\\n\t]{1,20}){0,2}$')
]

# Tight bounds keep a small local model from rambling: the grammar closes each list at
# its bound. The bounds declared here are the small profile's; a capable model's are
# larger (:mod:`memstrata.designs.mnemis.sizing`). The tag bounds are the paper's.


class EntityNames(BaseModel):
    names: list[Name] = Field(default_factory=list, max_length=12)


class Duplicate(BaseModel):
    name: Name
    duplicate_of: int = Field(description="index of the existing entity, or -1")


class Duplicates(BaseModel):
    resolutions: list[Duplicate] = Field(default_factory=list, max_length=12)


class EntityAttributes(BaseModel):
    name: Name
    summary: str = Field(max_length=240)
    tag: list[Descriptor] = Field(default_factory=list, max_length=5)


class Attributes(BaseModel):
    entities: list[EntityAttributes] = Field(default_factory=list, max_length=12)


class ExtractedFact(BaseModel):
    source: Name
    target: Name
    relation: str = Field(default="", max_length=40)
    fact: str = Field(max_length=200)
    valid_at: str | None = Field(default=None, max_length=25)
    invalid_at: str | None = Field(default=None, max_length=25)


class Facts(BaseModel):
    facts: list[ExtractedFact] = Field(default_factory=list, max_length=6)


class FactResolution(BaseModel):
    new_fact: int
    duplicate_of: list[int] = Field(default_factory=list, max_length=5)
    contradicts: list[int] = Field(default_factory=list, max_length=5)


class FactResolutions(BaseModel):
    resolutions: list[FactResolution] = Field(default_factory=list, max_length=12)


class CategoryGroup(BaseModel):
    category: str = Field(max_length=40)
    description: str = Field(default="", max_length=160)
    tag: list[Descriptor] = Field(default_factory=list, max_length=5)
    indexes: list[int] = Field(default_factory=list, max_length=30)


class CategoryGroups(BaseModel):
    categories: list[CategoryGroup] = Field(default_factory=list, max_length=15)


class CategoryDescription(BaseModel):
    index: int
    description: str = Field(default="", max_length=160)
    tag: list[Descriptor] = Field(default_factory=list, max_length=5)


class CategoryDescriptions(BaseModel):
    categories: list[CategoryDescription] = Field(default_factory=list)


def category_descriptions_model(shown: int) -> type[CategoryDescriptions]:
    """One description per category shown, and no more."""
    return list_bounded(CategoryDescriptions, "categories", shown)


class SelectedNode(BaseModel):
    name: Name
    uuid: str = Field(max_length=40)
    get_all_children: bool = False


class NodeSelection(BaseModel):
    nodes: list[SelectedNode] = Field(default_factory=list)


def node_selection_model(shown: int) -> type[NodeSelection]:
    """A selection among ``shown`` nodes: the paper sets no top-k, so the model may pick
    every node it was shown and no more."""
    return list_bounded(NodeSelection, "nodes", shown)


class Ranking(BaseModel):
    order: list[int] = Field(default_factory=list, max_length=40)


# Which fields hold an entity name, and which lists hold such objects (for ``naming``).
_NAME_FIELDS = {
    "Duplicate": ("name",),
    "EntityAttributes": ("name",),
    "ExtractedFact": ("source", "target"),
}
_NESTED = ("resolutions", "entities", "facts")

Prompt = tuple[list[Message], type[BaseModel]]

M = TypeVar("M", bound=BaseModel)


def naming(model: type[M], names: Sequence[str], *, one_each: bool = False) -> type[M]:
    """``model`` with every entity-name field restricted to ``names``.

    A grammar-constrained backend then cannot invent or misspell an entity (a 135M model
    otherwise writes URLs and blanks there), and the answer costs fewer tokens. Other
    backends get the names as a JSON-schema ``enum``; pydantic checks them either way.
    ``one_each``: the answer has one item per name at most (de-duplication, attributes),
    so a model that repeats itself is cut off by the grammar.
    """
    unique = tuple(dict.fromkeys(names))
    return _naming(model, unique, len(unique) if one_each else None)  # type: ignore[return-value]


@lru_cache(maxsize=128)
def _naming(model: type[BaseModel], names: tuple[str, ...], cap: int | None) -> type[BaseModel]:
    if not names:
        return model
    choice: Any = Literal.__getitem__(names)
    fields: dict[str, Any] = {}
    for field, info in model.model_fields.items():
        if field in _NAME_FIELDS.get(model.__name__, ()):
            fields[field] = (choice, ...)
        elif field in _NESTED:  # the items as sized, their names narrowed
            item: Any = _naming(get_args(info.annotation)[0], names, None)
            bounds = [b for b in (_max_items(info), cap) if b is not None]
            bound = min(bounds) if bounds else None
            fields[field] = (list[item], Field(default_factory=list, max_length=bound))
    return create_model(model.__name__, __base__=model, **fields)


def _max_items(info: Any) -> int | None:
    return next((m.max_length for m in info.metadata if hasattr(m, "max_length")), None)


def _msgs(system: str, user: str) -> list[Message]:
    """Every Mnemis prompt shows stored text, fenced, so every system prompt says so,
    first: placed last, the sentence made the bundled 135M model pair an entity with
    itself in fact extraction."""
    return [
        Message(role="system", content=f"{FENCE_NOTE}\n{system}"),
        Message(role="user", content=user),
    ]


def _listed(items: Sequence[str], sep: str = "\n", empty: str = "(none)") -> str:
    """One fence around the joined items, or ``empty`` (our word, unfenced) for none."""
    return fence(sep.join(items)) if items else empty


def _episodes(current: str, recent: Sequence[str]) -> str:
    return (
        f"<RECENT EPISODES>\n{_listed(recent)}\n</RECENT EPISODES>\n"
        f"<CURRENT EPISODE>\n{fence(current)}\n</CURRENT EPISODE>"
    )


# base graph ---------------------------------------------------------------------------


def extract_entities(current: str, recent: Sequence[str], budgets: Budgets | None = None) -> Prompt:
    return _msgs(
        "You extract entity names from a conversation. An entity is a concrete person, "
        "organization, place, object, event or well-defined concept. Identify the "
        "entities of the current episode and of the recent episodes it continues: a name "
        "from a recent episode counts when the current episode refers back to it (he, "
        "she, it, there, that trip). The speaker counts as an entity. Answer JSON: "
        '{"names": [...]}.',
        _episodes(current, recent),
    ), sized(EntityNames, budgets)


def reflect_entities(
    current: str, recent: Sequence[str], found: Sequence[str], budgets: Budgets | None = None
) -> Prompt:
    return _msgs(
        "You check an entity extraction. List entity names in the current episode that "
        'the extraction missed; an empty list if none. Answer JSON: {"names": [...]}.',
        f"{_episodes(current, recent)}\n<EXTRACTED>\n{_listed(found, ', ')}\n</EXTRACTED>",
    ), sized(EntityNames, budgets)


def dedupe_entities(
    new: Sequence[tuple[str, list[tuple[int, str]]]], budgets: Budgets | None = None
) -> Prompt:
    lines = []
    for name, cands in new:
        options = "; ".join(f"{i}: {c}" for i, c in cands)
        lines.append(f"- {name} -> candidates {options}")
    return _msgs(
        "You de-duplicate entities. For each new name, give the index of the existing "
        "entity it refers to, or -1 if it is a different entity. Same name in other case "
        'or form is usually the same entity. Answer JSON: {"resolutions": '
        '[{"name": ..., "duplicate_of": index}]}.',
        _listed(lines),
    ), naming(sized(Duplicates, budgets), [n for n, _ in new], one_each=True)


def entity_attributes(
    current: str,
    recent: Sequence[str],
    entities: Sequence[tuple[str, str]],
    budgets: Budgets | None = None,
) -> Prompt:
    listed = [f"- {n}: {s or '(no summary yet)'}" for n, s in entities]
    return _msgs(
        "For each entity, write a concise summary (at most two sentences) that keeps what "
        "the existing summary says and adds what the current episode tells, and a tag: a "
        "list of up to 5 descriptors of at most 3 words giving its type or role. Answer "
        'JSON: {"entities": [{"name": ..., "summary": ..., "tag": [...]}]}.',
        f"{_episodes(current, recent)}\n<ENTITIES>\n{_listed(listed)}\n</ENTITIES>",
    ), naming(sized(Attributes, budgets), [n for n, _ in entities], one_each=True)


def extract_facts(
    current: str,
    recent: Sequence[str],
    names: Sequence[str],
    when: str,
    budgets: Budgets | None = None,
) -> Prompt:
    return _msgs(
        "You extract facts: verifiable statements of a relationship, action or state "
        "between two of the given entities, from the current episode. Give each fact's "
        "source and target entity names exactly as listed, a short relation, the fact as "
        "one sentence, and valid_at / invalid_at as ISO dates when the text says when it "
        f"started or ended (the episode happened at {when}). Answer JSON: "
        '{"facts": [{"source": ..., "target": ..., "relation": ..., "fact": ..., '
        '"valid_at": null, "invalid_at": null}]}.',
        f"{_episodes(current, recent)}\n<ENTITIES>\n{_listed(names, ', ')}\n</ENTITIES>",
    ), naming(sized(Facts, budgets), names)


def reflect_facts(
    current: str, names: Sequence[str], found: Sequence[str], budgets: Budgets | None = None
) -> Prompt:
    return _msgs(
        "You check a fact extraction. List facts between the given entities that the "
        "current episode states but the extraction missed, in the same format; an empty "
        'list if none. Answer JSON: {"facts": [...]}.',
        f"<CURRENT EPISODE>\n{fence(current)}\n</CURRENT EPISODE>\n<ENTITIES>\n"
        f"{_listed(names, ', ')}\n</ENTITIES>\n<EXTRACTED>\n{_listed(found)}\n</EXTRACTED>",
    ), naming(sized(Facts, budgets), names)


def resolve_facts(
    new: Sequence[str], existing: Sequence[str], budgets: Budgets | None = None
) -> Prompt:
    return _msgs(
        "You compare new facts with existing ones about the same entities. For each new "
        "fact (by index) list the existing facts it duplicates (same meaning) and the "
        "existing facts it contradicts (cannot both be true now, e.g. a changed job or "
        'address). Answer JSON: {"resolutions": [{"new_fact": i, "duplicate_of": [], '
        '"contradicts": []}]}.',
        f"<NEW FACTS>\n{_listed([f'{i}: {f}' for i, f in enumerate(new)])}\n</NEW FACTS>\n"
        f"<EXISTING FACTS>\n{_listed([f'{i}: {f}' for i, f in enumerate(existing)])}\n"
        "</EXISTING FACTS>",
    ), sized(FactResolutions, budgets)


# hierarchy (appendix D) ---------------------------------------------------------------

_CATEGORY_SYSTEM = """You are an AI assistant specialized in semantic categorization of nodes.
# INSTRUCTIONS:

You are given a list of node names, each prefixed with an index, each followed with a brief description of the name (e.g., 1. dog: [domestic animal]).
Your task is to:

1. Group the nodes into semantically meaningful categories based on shared attributes, considering both inherent characteristics of the node names and the DESCRIPTIONS of the nodes, NOT relying solely on the DESCRIPTIONS.
   All EXISTING CATEGORIES are provided for you.
   - If a node's attribute matches an existing category, it should be added under that category.
   - If a node name has attributes that do not match any existing category, create a new category and add it.
   - The category name MUST NOT include the word "and" as a connector.
   Examples of INVALID categories: "Food and Drinks", "University and Courses".
   Examples of VALID categories: "Food", "Drinks", "University", "Courses".

2. Output each category as an entry with the category name, its description, its tag and the list of node indexes (integers). Only refer to nodes by their indexes. Do not repeat node names.
   Output format:
   {"categories": [{"category": "xx", "description": "...", "tag": ["..."], "indexes": [0, 1, 2, 4]}, {"category": "xxx", "description": "...", "tag": ["..."], "indexes": [2, 3, 4]}]}
   The description is one short sentence saying what the members share.
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
   - "Microsoft Research Labs" belongs to: "Tech Company Labs", "AI Research Organizations"
   - "University AI Labs" belongs to: "Academic Institutions", "AI Research Organizations"
   Layer 3 (higher-level abstractions):
   - "Tech Company Labs" belongs to: "Commercial Organizations", "Research Institutions"
   - "Academic Institutions" belongs to: "Educational Organizations", "Research Institutions"
   Layer 4 (top-level concepts):
   - "Research Institutions" belongs to: "Knowledge Organizations"
   - "Commercial Organizations" belongs to: "Economic Entities"

4. There must be NO leftover or ungrouped nodes. Single-member categories are allowed if necessary.

5. The node name "user" and any first-person references ("I", "me") MUST be categorized into one category called "Speaker"."""


def categorize(
    layer: int,
    nodes: Sequence[tuple[str, str]],
    existing: Sequence[tuple[str, str]],
    prev_example: str = "",
    paper: bool = False,
) -> Prompt:
    """Appendix D's ``extract_category_nodes``: ``nodes`` and ``existing`` categories are
    (name, description); ``prev_example`` shows a few categories of the layer below.
    ``paper``: the system prompt in the paper's words (the user prompt is the paper's in
    both)."""
    content = _listed([f"{i}. {n}: [{d}]" for i, (n, d) in enumerate(nodes)])
    known = _listed([f"- {n}: {d}" if d else f"- {n}" for n, d in existing])
    example = fence(prev_example) if prev_example else "(none: this is the first layer)"
    guidance = GUIDANCE.format(layer=layer, below=layer - 1, prev_example=example)
    user = (
        f"<NODE INDEXED NAMES AND DESCRIPTIONS>\n{content}\n</NODE INDEXED NAMES AND DESCRIPTIONS>\n\n"
        "<EXISTING CATEGORIES>\nThese are names and descriptions of categories previously "
        f"created. Reuse them if applicable.\n{known}\n</EXISTING CATEGORIES>\n\n"
        f"{guidance}\n\n"
        "# ATTENTION\n"
        '- The node name "user" and any first-person references ("I", "me") MUST be '
        'categorized into one category called "Speaker". If the "Speaker" category does '
        "not exist, skip this node.\n"
        '- The category name MUST NOT include the word "and".\n\n'
        "Please follow the INSTRUCTIONS and GUIDANCE carefully to ensure accurate "
        "categorization and meaningful hierarchical relationships.\n"
        "DO NOT INCLUDE ANY INVALID CATEGORIES."
    )
    return _msgs(CATEGORY_SYSTEM_PAPER if paper else _CATEGORY_SYSTEM, user), CategoryGroups


_DESCRIBE_SYSTEM = """You keep the descriptions of categories in a knowledge-graph hierarchy current.
Each category below is given by its index, its name, its current description and its members, each member followed with a brief description (e.g., dog: [domestic animal]). Members were added or removed since the description was written.

For each category write:
- description: one short sentence saying what its members share now, considering both the member names and their DESCRIPTIONS, NOT relying solely on the DESCRIPTIONS. Keep what still holds of the current description.
- tag: a list of descriptors (each descriptor maximum 3 words, maximum 5 descriptors) that concisely captures the nature or type of the category.
  Tag example:
  - Category name: "Family"
  - Tag: ["Relatives", "Household members", "Close people"]

Refer to categories only by their indexes; do not rename them.
Answer JSON: {"categories": [{"index": 0, "description": "...", "tag": ["..."]}]}"""


def describe_categories(categories: Sequence[tuple[str, str, Sequence[tuple[str, str]]]]) -> Prompt:
    """Describe categories again from their current members (a category's children
    changed since the hierarchy prompt described it; the paper rebuilds instead)."""
    blocks = []
    for i, (name, summary, members) in enumerate(categories):
        shown = [f"{m}: [{d}]" if d else m for m, d in members[:MEMBERS_SHOWN]]
        more = len(members) - len(shown)
        listed = "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
        blocks.append(
            f"{i}. {name}\n   current description: {summary or '(none)'}\n   members: {listed}"
        )
    user = f"<CATEGORIES>\n{_listed(blocks)}\n</CATEGORIES>"
    return _msgs(_DESCRIBE_SYSTEM, user), category_descriptions_model(len(categories))


# members shown per category when describing it again (the grouping shows 20 per call)
MEMBERS_SHOWN = 20


def select_nodes(
    query: str, nodes: Sequence[tuple[str, str, list[str]]], paper: bool = False
) -> Prompt:
    """Global Selection over ``nodes`` (uuid, name, tags). ``paper``: appendix D's
    template in the paper's words; otherwise ours, the same points shortened."""
    info = _listed([f'- name: "{n}", uuid: "{u}", tags: {t}' for u, n, t in nodes])
    if paper:
        user = f'---\nUser Query:\n"{query}"\n\nAvailable Nodes:\n{info}'
        return _msgs(SELECT_SYSTEM_PAPER, user), node_selection_model(len(nodes))
    system = (
        "You are analyzing a hierarchical knowledge graph to help answer a user query.\n"
        "Select all nodes that could help answer the query. A node is helpful if it: "
        "directly relates to the query; covers a clearly relevant topic, concept or "
        "category; provides useful background or context; contains user-specific "
        "information (interests, goals, constraints); or likely has helpful sub-nodes.\n"
        "Do not be overly strict: include nodes that might provide context or "
        "personalization, even if partially redundant.\n"
        'For each selected node: "name" is its name, "uuid" its identifier, and '
        '"get_all_children" is true only if you are confident all its sub-nodes help.\n'
        'Answer JSON: {"nodes": [{"name": ..., "uuid": ..., "get_all_children": <boolean>}]}'
    )
    user = f'User Query:\n"{query}"\n\nAvailable Nodes:\n{info}'
    return _msgs(system, user), node_selection_model(len(nodes))


#: the rerank prompt's size in tokens as :func:`count_tokens` counts them: the bundled
#: model's 4,096-token context less the reply (``MAX_TOKENS["mnemis.rerank"]``) and about
#: 15% for counting MiniLM word pieces rather than the model's own tokens
RERANK_PROMPT_TOKENS = 3_200
#: the context that size was measured for
_RERANK_MEASURED_CONTEXT = 4_096


def rerank_prompt_tokens(budgets: Budgets) -> int:
    """The rerank prompt's size for the configured model: the bundled model's share of
    its context (:data:`RERANK_PROMPT_TOKENS` of 4,096), of the model's context window,
    so a capable model reads every candidate of a window whole."""
    return RERANK_PROMPT_TOKENS * budgets.context_tokens // _RERANK_MEASURED_CONTEXT


def rerank(
    query: str, kind: str, candidates: Sequence[str], budget: int = RERANK_PROMPT_TOKENS
) -> Prompt:
    """Candidates are shown whole while the prompt fits ``budget`` tokens; only a window
    that would not fit has its longest candidates cut to one common length, the shorter
    ones whole (:func:`shorten_longest`): a turn's answer may sit past any fixed cut."""
    system = (
        f"Order the {kind} candidates by how much each helps answer the query, most "
        'helpful first. Answer JSON: {"order": [indexes]}.'
    )
    shown, room = list(candidates), sum(count_tokens(c) for c in candidates)
    for _ in range(4):  # the fence's tag hashes the text: a cut moves it by a token or two
        listed = _listed([f"{i}: {c}" for i, c in enumerate(shown)])
        messages = _msgs(system, f"Query: {query}\n<CANDIDATES>\n{listed}\n</CANDIDATES>")
        over = sum(count_tokens(m.content) for m in messages) - budget
        if over <= 0:
            break
        room -= over
        shown = shorten_longest(candidates, room)
    return messages, Ranking


async def ask(
    llm: LLMClient, prompt: Prompt, stage: str, max_tokens: int | None = None
) -> BaseModel:
    """Send one prompt with its stage's completion budget for the model (or
    ``max_tokens``); returns the validated answer."""
    messages, model = prompt
    budget = llm.budgets.tokens(stage) if max_tokens is None else max_tokens
    return await llm.structured(messages, model, stage=stage, max_tokens=budget)
