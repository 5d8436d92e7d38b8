"""System-2 Global Selection (Mnemis section 2.3): top-down over the category hierarchy.

From the highest layer down, each layer's candidates are the children of what was
selected above. The ``llm`` tier asks the paper's selection prompt which nodes help and
whether all of a node's children do (``get_all_children``); the ``heuristic`` tier keeps
the ``beam`` nodes most similar to the query that clear ``floor``, and takes all children
of a node whose similarity clears ``all_children``. At the bottom are entities; the route
then adds their facts, the entities those facts link to, and their episodes. It returns
sets, unranked: fusion ranks and budgets them.

**Hubs.** An entity cited by more than ``hub_share`` of the namespace's episodes, and
more than ``hub_least`` of them (a speaker, "I", the user's home town) matches almost
every question and, once selected, brings in most of the conversation. The heuristic
tier never selects a hub; a hub the query names (its name's words all occur in the
query) instead *narrows* System-2's episodes to those the hub is cited in. The bottom
layer is chosen by the query's own content: an entity is taken when its name is close
to the query or all the content words of its name occur in it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from memstrata.designs.mnemis.graph import Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy
from memstrata.retrieval.record_index import matvec

# LLM selection: (query, [(uuid, name, tags)]) -> [(uuid, get_all_children)]
NodeSelector = Callable[[str, list[tuple[str, str, list[str]]]], Awaitable[list[tuple[str, bool]]]]


@dataclass(frozen=True)
class SelectionParams:
    beam: int = 6
    floor: float = 0.2
    entity_floor: float = 0.3
    entity_beam: int = 12
    all_children: float = 0.6
    hub_share: float = 0.1
    hub_least: int = 8


@dataclass
class Selection:
    categories: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    linked_entities: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    episodes: list[str] = field(default_factory=list)
    path: list[list[str]] = field(default_factory=list)
    #: hubs the query names; System-2's episodes are narrowed to theirs
    hubs: list[str] = field(default_factory=list)
    #: per episode, how many selected entities cite it (its System-2 support)
    support: dict[str, int] = field(default_factory=dict)
    #: the llm tier's picks that named no node shown (invented or mangled ids)
    unknown: int = 0


def _expand(
    graph: Graph,
    selected_entities: list[str],
    hubs: Sequence[str] = (),
    skip_hubs: bool = True,
) -> Selection:
    """The selected entities' facts, linked entities and episodes. ``hubs`` (those the
    query names) narrow the episodes; ``skip_hubs`` keeps hubs out of the linked
    entities. Both are the heuristic tier's rules: the llm tier passes neither."""
    out = Selection(entities=selected_entities, hubs=list(hubs))
    facts: dict[str, None] = {}
    linked: dict[str, None] = {}
    support: dict[str, int] = {}
    chosen = set(selected_entities)
    hub_set = graph.hubs() if skip_hubs else frozenset()
    for eid in selected_entities:
        for fid in graph.facts_of.get(eid, ()):
            facts.setdefault(fid, None)
            fact = graph.facts[fid]
            for other in fact.entity_ids or [fact.subject_id, fact.object_id]:
                if other not in chosen and other not in hub_set:
                    linked.setdefault(other, None)
        for ep in graph.episode_ids(eid):
            support[ep] = support.get(ep, 0) + 1
    if hubs:
        narrowed = {ep: n for ep, n in support.items() if graph.cites_any(hubs, ep)}
        support = narrowed or support
    out.facts = list(facts)
    out.linked_entities = list(linked)
    out.support = support
    out.episodes = list(support)
    return out


def named_hubs(graph: Graph, terms: set[str]) -> list[str]:
    """Hubs whose name's content words all occur among the query's ``terms``."""
    out = []
    for eid in graph.hubs():
        words = graph.name_terms(eid)
        if words and words <= terms:
            out.append(eid)
    return out


def select_heuristic(
    graph: Graph,
    hierarchy: Hierarchy,
    qvec: NDArray[np.float32],
    params: SelectionParams,
    terms: set[str] | None = None,
) -> Selection:
    """Beam down the layers by similarity; at the bottom, the entities close to the query
    or named by it, hubs never (they narrow instead, see the module's docstring)."""
    top = graph.top_layer()
    if top == 0:
        return Selection()
    terms = terms or set()
    graph.set_hub_share(params.hub_share, params.hub_least)
    hubs = graph.hubs()
    frontier = [c.id for c in graph.layer(top)]
    path: list[list[str]] = []
    taken: list[str] = []
    entities: list[str] = []
    whole: list[str] = []
    for layer in range(top, 0, -1):
        cats = [c for c in frontier if c in graph.categories and graph.categories[c].layer == layer]
        if not cats:
            break
        sims = matvec(hierarchy.vectors(cats), qvec)
        order = np.argsort(-sims)
        keep = [cats[int(i)] for i in order[: params.beam] if sims[int(i)] >= params.floor]
        if not keep:
            keep = [cats[int(order[0])]]
        path.append(keep)
        taken.extend(keep)
        frontier = []
        for cid in keep:
            if float(sims[cats.index(cid)]) >= params.all_children:
                # get_all_children: the whole subtree helps, its entities are taken at once
                whole.extend(e for e in _leaves(graph, cid) if e not in hubs)
            else:
                frontier.extend(graph.categories[cid].child_ids)
        frontier = list(dict.fromkeys(frontier))
    leaf = [e for e in frontier if e in graph.entities and e not in hubs]
    if leaf:
        sims = matvec(graph.name_vectors(leaf), qvec)
        order = np.argsort(-sims)
        entities = [
            leaf[int(i)] for i in order[: params.entity_beam] if sims[int(i)] >= params.entity_floor
        ]
        named = [e for e in leaf if (w := graph.name_terms(e)) and w <= terms]
        entities = entities + named
    entities = list(dict.fromkeys(entities + whole))
    sel = _expand(graph, entities, named_hubs(graph, terms))
    sel.categories = taken
    sel.path = path
    return sel


#: nodes shown per selection prompt; a wider layer is asked in several prompts (the
#: hierarchy's build shows the model 20 nodes per call too)
SELECT_CHUNK = 20


async def select_llm(graph: Graph, query: str, selector: NodeSelector) -> Selection:
    """The paper's route: the LLM picks nodes layer by layer, entities at the bottom, as
    many as it finds helpful (no top-k). A layer of any width is shown in prompts of
    ``SELECT_CHUNK`` nodes, issued together. The heuristic tier's hub rules do not apply:
    the model may pick a hub, a hub the query names does not narrow, and hubs may be
    linked entities."""
    top = graph.top_layer()
    if top == 0:
        return Selection()
    frontier = [c.id for c in graph.layer(top)]
    taken: list[str] = []
    path: list[list[str]] = []
    entities: list[str] = []
    unknown = 0
    while frontier:
        live = [n for n in frontier if n in graph.categories or n in graph.entities]
        if not live:
            break
        short = _short_ids(live)
        nodes = []
        for sid, nid in short.items():
            rec = graph.categories.get(nid) or graph.entities[nid]
            nodes.append((sid, rec.name, list(rec.tags)))
        chunks = [nodes[i : i + SELECT_CHUNK] for i in range(0, len(nodes), SELECT_CHUNK)]
        replies = await asyncio.gather(*(selector(query, chunk) for chunk in chunks))
        picks: dict[str, bool] = {}
        for chunk, reply in zip(chunks, replies, strict=True):
            # ids are hex: a model that copies one in capitals or quoted means that node
            shown = {sid.casefold(): sid for sid, _, _ in chunk}
            for u, all_kids in reply:
                known = shown.get(u.strip(" \"'`").casefold())
                if known is None:
                    unknown += 1
                    continue
                uid = short[known]
                picks[uid] = picks.get(uid, False) or all_kids
        picked = list(picks.items())
        path.append([u for u, _ in picked])
        nxt: list[str] = []
        for uid, all_kids in picked:
            if uid in graph.entities:
                entities.append(uid)
                continue
            taken.append(uid)
            kids = graph.categories[uid].child_ids
            if all_kids:
                # Every descendant helps: take the whole subtree's entities at once.
                entities.extend(_leaves(graph, uid))
            else:
                nxt.extend(kids)
        frontier = list(dict.fromkeys(nxt))
    sel = _expand(graph, list(dict.fromkeys(entities)), skip_hubs=False)
    sel.categories = taken
    sel.path = path
    sel.unknown = unknown
    return sel


def _short_ids(ids: list[str]) -> dict[str, str]:
    """The first 8 hex digits of each uuid, or the full uuids if two share them: a small
    model copies 8 characters far more reliably (and cheaply) than 32."""
    short = {i[:8]: i for i in ids}
    return short if len(short) == len(ids) else {i: i for i in ids}


def _leaves(graph: Graph, cat_id: str) -> list[str]:
    out: list[str] = []
    stack = [cat_id]
    seen: set[str] = set()
    while stack:
        nid = stack.pop()
        if nid in seen:
            continue
        seen.add(nid)
        if nid in graph.entities:
            out.append(nid)
        elif nid in graph.categories:
            stack.extend(graph.categories[nid].child_ids)
    return out
