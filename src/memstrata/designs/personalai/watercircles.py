"""WaterCircles: breadth-first rings from every start node at once.

Rings grow one hop at a time from each query entity's node, over simple relations
(object to object). Thesis and episode fragments next to a ring are examined on the way
(section 3, "Text Fragment Analysis"), not crossed. An object reached from two different
starts is an intersection: the simple triplets on both chains that meet there go to the
primary list; every simple triplet traversed goes to the secondary list. Thesis (hyper)
and episode (episodic) fragments met on the way are ranked by ``N_intersections``: how
many query entities other than the one whose ring found them occur in their text (by
name, whole words, any case), as the paper defines it. ``strict_filter`` keeps only
fragments with ``N_intersections >= 1`` when the query has two or more start nodes (with
one there is nothing to intersect). The result: ``chain_triplets_num`` from the primary
list, ``other_triplets_num`` more from the secondary, ``hyper_num`` theses and
``episodic_num`` episodes.

``max_depth`` (rings per start) is not in the paper; see docs/personalai.md for its
sweep. ``do_text_pruning`` cuts each fragment's text to the sentences that name a query
entity.
"""

from __future__ import annotations

import re

from pydantic import Field

from memstrata.designs.personalai.retrieve import Item, Query, RestrictParams, path_keys
from memstrata.retrieval.text import sentences


class WaterCirclesParams(RestrictParams):
    strict_filter: bool = True
    hyper_num: int = Field(default=15, ge=0)
    episodic_num: int = Field(default=15, ge=0)
    chain_triplets_num: int = Field(default=25, ge=0)
    other_triplets_num: int = Field(default=6, ge=0)
    do_text_pruning: bool = False
    max_depth: int = Field(default=2, ge=1)


Parent = dict[int, tuple[int, str, str]]  # node -> (previous node, edge kind, record id)


def _chain(parents: Parent, node: int) -> list[tuple[int, str, str]]:
    """Edges from a ring's start to ``node``, start first, as (node entered, kind, rid)."""
    out = []
    while node in parents:
        prev, kind, rid = parents[node]
        out.append((node, kind, rid))
        node = prev
    return out[::-1]


def watercircles(q: Query, p: WaterCirclesParams) -> list[Item]:
    topo = q.topo
    adj = topo.adjacency()
    starts = list(dict.fromkeys(q.starts))
    parents: list[Parent] = [{} for _ in starts]
    owner: dict[int, int] = {s: i for i, s in enumerate(starts)}  # first ring to reach a node
    depth_of: dict[int, int] = {s: 0 for s in starts}
    frontiers = [[s] for s in starts]
    q.visited.update(starts)
    primary: dict[str, list[str]] = {}
    secondary: dict[str, list[str]] = {}
    fragments: dict[int, int] = {}  # fragment node -> ring that found it
    reached: list[set[int]] = [{s} for s in starts]
    wanted = p.chain_triplets_num
    for depth in range(1, p.max_depth + 1):
        for ring, frontier in enumerate(frontiers):
            nxt = []
            for u in frontier:
                for v, _, kind, rid in adj[u]:
                    if kind != "simple":  # a fragment: examined, not crossed
                        if v not in fragments and q.allowed(v):
                            fragments[v] = ring
                            depth_of[v] = depth
                            parents[ring][v] = (u, kind, rid)
                            q.visited.add(v)
                        continue
                    if v in reached[ring] or not q.allowed(v) and v not in owner:
                        continue
                    reached[ring].add(v)
                    parents[ring][v] = (u, kind, rid)
                    q.visited.add(v)
                    nxt.append(v)
                    secondary.setdefault(rid, path_keys(topo, [u, v]))
                    other = owner.setdefault(v, ring)
                    depth_of.setdefault(v, depth)
                    if other != ring and len(primary) < wanted:  # two rings meet at v
                        chain = _chain(parents[other], v) + _chain(parents[ring], v)[::-1]
                        keys = path_keys(topo, [starts[other]] + [n for n, _, _ in chain])
                        for _, k, r in chain:
                            if k == "simple":
                                primary.setdefault(r, keys)
            frontiers[ring] = nxt
    out = [Item("simple", r, path, "watercircles") for r, path in primary.items()][:wanted]
    others = [r for r in secondary if r not in primary][: p.other_triplets_num]
    out += [Item("simple", r, secondary[r], "watercircles") for r in others]
    ranked = _rank_fragments(q, fragments, starts, depth_of, p)
    for kind, limit in (("hyper", p.hyper_num), ("episodic", p.episodic_num)):
        want = "thesis" if kind == "hyper" else "episode"
        taken = [(n, ring) for n, ring, _ in ranked if topo.types[n] == want][:limit]
        for n, ring in taken:
            path = [starts[ring]] + [x for x, _, _ in _chain(parents[ring], n)]
            out.append(Item(kind, topo.keys[n][2:], path_keys(topo, path), "watercircles"))
    return out


def _rank_fragments(
    q: Query,
    fragments: dict[int, int],
    starts: list[int],
    depth_of: dict[int, int],
    p: WaterCirclesParams,
) -> list[tuple[int, int, int]]:
    """(fragment, ring, N_intersections), most intersections first, then nearer, then
    more similar to the question."""
    if not fragments:
        return []
    topo = q.topo
    # N_intersections (section 3, "Text Fragment Analysis"): the query entities other
    # than the one whose ring found the fragment that occur in the fragment's text.
    names = {s: _name_pattern(topo.graph.node_text(topo.keys[s])) for s in set(starts)}
    texts = _fragment_texts(q, list(fragments))
    counts: dict[int, int] = {}
    for n, ring in fragments.items():
        own = starts[ring]
        counts[n] = sum(1 for s, pat in names.items() if s != own and pat.search(texts[n]))
    nodes = list(fragments)
    sims = q.similarity(nodes)
    scored = []
    for n, sim in zip(nodes, sims, strict=True):
        scored.append((n, fragments[n], counts[n], depth_of[n], float(sim)))
    if p.strict_filter and len(set(starts)) > 1:
        scored = [s for s in scored if s[2] >= 1]
    scored.sort(key=lambda s: (-s[2], s[3], -s[4]))
    return [(n, ring, k) for n, ring, k, _, _ in scored]


def _name_pattern(name: str) -> re.Pattern[str]:
    """A query entity's name as a case-free match of whole words."""
    return re.compile(rf"(?<!\w){re.escape(name.strip())}(?!\w)", re.IGNORECASE)


def _fragment_texts(q: Query, nodes: list[int]) -> dict[int, str]:
    """Each thesis's or episode's text, episodes read from the store in one call."""
    topo = q.topo
    keys = {n: topo.keys[n] for n in nodes}
    episodes = topo.graph.episode_texts(k[2:] for k in keys.values() if k.startswith("e:"))
    return {
        n: episodes[k[2:]] if k.startswith("e:") else topo.graph.node_text(k)
        for n, k in keys.items()
    }


def prune(text: str, names: list[str]) -> str:
    """The sentences of ``text`` that name one of ``names`` (all of it if none does)."""
    pats = [re.compile(re.escape(n), re.IGNORECASE) for n in names if n.strip()]
    kept = [text[a:b] for a, b in sentences(text) if any(p.search(text[a:b]) for p in pats)]
    return " ".join(kept) if kept else text
