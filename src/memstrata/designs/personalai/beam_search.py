"""BeamSearch: up to ``max_paths`` paths from each start node, relevant to the question.

Each start node's beam runs on its own (the sharing rules below hold among one start's
paths), and may pass through other start nodes; the starts' selections are merged, best
first, so the order in which the query's entities were found does not matter.

A path's relevance is ``mean_alpha * mean(sim) + (1 - mean_alpha) * sim(last)``, with
``sim`` the cosine between the question and each node the path entered (the paper names
``mean_alpha`` without its formula; this is the reading used here). Each step extends
every live path by each admissible neighbour and keeps the ``max_paths`` most relevant
candidates. A path **ends** when it has no admissible neighbour or when every extension
would lower its relevance; paths alive at ``max_depth`` are **continuous**.

* ``same_path_intersection_by_node``: a path may revisit its own nodes.
* ``diff_paths_intersection_by_node`` / ``..._by_rel``: distinct paths may share nodes
  (other than their start) / edges. A path that branches shares its prefix with its
  branches, so with either sharing off a path keeps one extension per step, and the
  paths are disjoint after the start.
* ``final_sorting_mode``: ``ended_first``, ``continuous_first`` or ``mixed`` (section 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import Field

from memstrata.designs.personalai.retrieve import Item, Query, RestrictParams, path_keys

SortMode = Literal["ended_first", "continuous_first", "mixed"]


class BeamSearchParams(RestrictParams):
    max_depth: int = Field(default=5, ge=1)
    max_paths: int = Field(default=10, ge=1)
    same_path_intersection_by_node: bool = False
    diff_paths_intersection_by_node: bool = False
    diff_paths_intersection_by_rel: bool = False
    mean_alpha: float = Field(default=0.75, ge=0, le=1)
    final_sorting_mode: SortMode = "mixed"


@dataclass
class Path:
    nodes: list[int]
    edges: list[tuple[int, str, str]] = field(default_factory=list)  # (edge, kind, rid)
    sims: list[float] = field(default_factory=list)
    score: float = -2.0


def relevance(sims: list[float], alpha: float) -> float:
    return alpha * (sum(sims) / len(sims)) + (1 - alpha) * sims[-1] if sims else -2.0


def beam_paths(q: Query, p: BeamSearchParams) -> list[Path]:
    """The selected paths of every start node: up to ``max_paths`` per start node (the
    paper: "given a starting node, the algorithm constructs N paths"), each start's in
    its final sorting order, the starts' lists merged best first. A path may enter
    another start node (A-X-B finds "X knows B"). Each start's beam is searched on its
    own, so the result does not depend on the order of the start nodes."""
    adj = q.topo.adjacency()
    out: list[Path] = []
    for s in sorted(set(q.starts)):
        out.extend(_from_start(q, adj, s, p))
    return sorted(out, key=lambda x: (-x.score, x.nodes))


def _from_start(q: Query, adj: Any, s: int, p: BeamSearchParams) -> list[Path]:
    """The beam from one start node; path sharing rules hold among its own paths."""
    used_nodes: set[int] = set()
    used_edges: set[int] = set()
    branch = p.diff_paths_intersection_by_node and p.diff_paths_intersection_by_rel
    ended: list[Path] = []
    q.visited.add(s)
    live = [Path([s])]
    for _ in range(p.max_depth):
        cands: list[tuple[Path, Path]] = []  # (parent, child)
        for path in live:
            u = path.nodes[-1]
            nbrs = [
                (v, e, kind, rid)
                for v, e, kind, rid in adj[u]
                if q.allowed(v)
                and v != s
                and (p.same_path_intersection_by_node or v not in path.nodes)
            ]
            if not nbrs:
                ended.append(path)
                continue
            sims = q.similarity([v for v, _, _, _ in nbrs])
            # A child's relevance grows with its last node's similarity, and at most
            # max_paths children survive a step: only the most similar can.
            if len(nbrs) > p.max_paths:
                top = np.argsort(-sims, kind="stable")[: p.max_paths]
                nbrs, sims = [nbrs[i] for i in top], sims[top]
            kids = []
            for (v, e, kind, rid), sim in zip(nbrs, sims, strict=True):
                ksims = path.sims + [float(sim)]
                kids.append(
                    Path(
                        path.nodes + [v],
                        path.edges + [(e, kind, rid)],
                        ksims,
                        relevance(ksims, p.mean_alpha),
                    )
                )
            if path.sims and max(k.score for k in kids) < path.score:
                ended.append(path)
                continue
            cands.extend((path, k) for k in kids)
        cands.sort(key=lambda pc: (-pc[1].score, pc[1].nodes))
        kept: list[Path] = []
        extended: set[int] = set()
        for parent, child in cands:
            if len(kept) >= p.max_paths:
                break
            v, (e, _, _) = child.nodes[-1], child.edges[-1]
            if not branch and len(parent.nodes) > 1 and id(parent) in extended:
                continue
            if not p.diff_paths_intersection_by_node and v in used_nodes:
                continue
            if not p.diff_paths_intersection_by_rel and e in used_edges:
                continue
            kept.append(child)
            extended.add(id(parent))
            used_nodes.add(v)
            used_edges.add(e)
            q.visited.add(v)
        # A live path none of whose extensions was kept ends here.
        done = {id(x) for x in ended}
        ended.extend(x for x in live if x.sims and id(x) not in extended | done)
        live = kept
        if not live:
            break
    return select(ended, live, p)


def select(ended: list[Path], continuous: list[Path], p: BeamSearchParams) -> list[Path]:
    ended = sorted((x for x in ended if x.sims), key=lambda x: -x.score)
    continuous = sorted((x for x in continuous if x.sims), key=lambda x: -x.score)
    if p.final_sorting_mode == "ended_first":
        return (ended + continuous)[: p.max_paths]
    if p.final_sorting_mode == "continuous_first":
        return (continuous + ended)[: p.max_paths]
    return sorted(ended + continuous, key=lambda x: -x.score)[: p.max_paths]


def beam_search(q: Query, p: BeamSearchParams) -> list[Item]:
    """The paper's BeamSearch retriever: every edge of the paths :func:`beam_paths`
    selects, as an item naming the path's records."""
    out: list[Item] = []
    for path in beam_paths(q, p):
        keys = path_keys(q.topo, path.nodes)
        for _, kind, rid in path.edges:
            out.append(Item(kind, rid, keys, "beam"))  # type: ignore[arg-type]
    return out
