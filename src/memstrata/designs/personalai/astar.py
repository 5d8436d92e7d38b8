"""A*: shortest paths between the query's start nodes; the triples on them are returned.

The graph is taken as unweighted and undirected (every step costs 1). The estimate
``h`` is one of the paper's three heuristics, with ``d(a, b) = 1 - <a, b>`` on unit
vectors (inner product turned into a distance, so that "closer" is smaller):

* ``ip``: ``d(n, target)``;
* ``weighted_shortest_path``: ``d(n, target)`` times the BFS hop count from ``n`` to
  the target;
* ``averaged_weighted_shortest_path``: the mean of the distances between adjacent nodes
  on the path so far and ``d(n, target)``, times the BFS hop count.

A search stops at the target, after ``max_passed_nodes`` expansions, or at
``max_depth`` hops. Every pair of start nodes gets a search; a query with one start node
has no pair, and gets the items around it (its paths of length one).
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Literal

import numpy as np
from pydantic import Field

from memstrata.designs.personalai.retrieve import Item, Query, RestrictParams, path_keys

Heuristic = Literal["ip", "weighted_shortest_path", "averaged_weighted_shortest_path"]


class AStarParams(RestrictParams):
    h_metric_name: Heuristic = "ip"
    max_depth: int = Field(default=10, ge=1)
    max_passed_nodes: int = Field(default=150, ge=1)


def hops_to(q: Query, target: int, max_depth: int) -> dict[int, int]:
    """BFS hop counts to ``target`` over the nodes the query may enter."""
    adj = q.topo.adjacency()
    dist = {target: 0}
    frontier = deque([target])
    while frontier:
        u = frontier.popleft()
        if dist[u] >= max_depth:
            continue
        for v, _, _, _ in adj[u]:
            if v not in dist and (q.allowed(v) or v in q.starts):
                dist[v] = dist[u] + 1
                frontier.append(v)
    return dist


def search(q: Query, source: int, target: int, p: AStarParams) -> list[tuple[int, Item]] | None:
    """The path from ``source`` to ``target`` as (node, item of the edge into it), or None."""
    topo = q.topo
    adj = topo.adjacency()
    vecs = topo.vectors()
    tv = vecs[target]
    hops = hops_to(q, target, p.max_depth) if p.h_metric_name != "ip" else {}
    if p.h_metric_name != "ip" and source not in hops:
        return None
    tick = itertools.count()
    # entry: (f, tie, node, depth, sum of step distances, steps)
    heap: list[tuple[float, int, int, int, float, int]] = [(0.0, next(tick), source, 0, 0.0, 0)]
    parent: dict[int, tuple[int, int, str, str]] = {}
    best_g = {source: 0}
    passed = 0
    while heap and passed < p.max_passed_nodes:
        _, _, u, depth, dsum, steps = heapq.heappop(heap)
        if depth > best_g.get(u, depth):
            continue
        passed += 1
        q.visited.add(u)
        if u == target:
            path: list[tuple[int, Item]] = []
            node = u
            while node != source:
                prev, _, kind, rid = parent[node]
                path.append((node, Item(kind, rid)))  # type: ignore[arg-type]
                node = prev
            return path[::-1]
        if depth >= p.max_depth:
            continue
        nbrs = [
            (v, e, kind, rid)
            for v, e, kind, rid in adj[u]
            if (q.allowed(v) or v == target) and best_g.get(v, depth + 2) > depth + 1
        ]
        if not nbrs:
            continue
        idx = np.fromiter((v for v, _, _, _ in nbrs), dtype=np.int64, count=len(nbrs))
        to_target = 1.0 - vecs[idx] @ tv
        step = 1.0 - vecs[idx] @ vecs[u] if p.h_metric_name.startswith("averaged") else None
        for n, (v, e, kind, rid) in enumerate(nbrs):
            if p.h_metric_name == "ip":
                h = float(to_target[n])
                nsum, nsteps = dsum, steps
            else:
                if v not in hops:
                    continue
                if step is not None:
                    nsum, nsteps = dsum + float(step[n]), steps + 1
                    h = (nsum + float(to_target[n])) / (nsteps + 1) * hops[v]
                else:
                    nsum, nsteps = dsum, steps
                    h = float(to_target[n]) * hops[v]
            best_g[v] = depth + 1
            parent[v] = (u, e, kind, rid)
            heapq.heappush(heap, (depth + 1 + h, next(tick), v, depth + 1, nsum, nsteps))
    return None


def astar(q: Query, p: AStarParams) -> list[Item]:
    topo = q.topo
    out: list[Item] = []
    if len(q.starts) == 1:
        s = q.starts[0]
        q.visited.add(s)
        for v, _, kind, rid in topo.adjacency()[s]:
            if q.allowed(v):
                q.visited.add(v)
                out.append(Item(kind, rid, path_keys(topo, [s, v]), "astar"))
        return out
    for s, t in itertools.combinations(q.starts, 2):
        path = search(q, s, t, p)
        if not path:
            continue
        keys = path_keys(topo, [s] + [n for n, _ in path])
        for _, it in path:
            it.path, it.via = keys, "astar"
            out.append(it)
    return out
