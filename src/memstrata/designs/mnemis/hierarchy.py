"""Mnemis category hierarchy (paper section 2.2), built in full or kept up incrementally.

Rules the builder keeps, whatever the tier:

* layer 1 groups entities, layer i groups layer i-1; a node may have several parents
  (**many-to-many**);
* **compression ratio** ``n``: a category has at least ``n`` children, or exactly one
  (a node *promoted alone* because nothing is close enough to it);
* **node-count reduction** from layer 2: a layer with more nodes than the one below is
  not kept and ends the build; so does ``max_layers``. Ours, not the paper's: a layer
  already as small as ``top_width`` (a single screen for Global Selection) ends it too;
  ``top_width = 0`` (the ``mnemis-paper`` builder) leaves the paper's two rules alone;
* speakers (the user, first-person nodes) sit in one category called ``Speaker``, the
  one category exempt from ``n`` (two people talking make a category of two).

Paper-silent choices: ``n = 3``, at most 4 layers, groups of about 6 for the heuristic
clustering (spherical k-means over name embeddings, a second parent when within
``margin`` of the best), a similarity floor of 0.45 below which a node stands alone.

**Incremental updates** (beyond the paper, which rebuilds periodically): a new entity
joins the layer-1 categories it is close to; if none is, it is promoted alone through
every layer, and once ``n`` such lone nodes resemble each other they are merged into a
new category. A category that grows past ``split_at`` children is split in two when the
reduction rule allows one more node in its layer. No layer is ever added incrementally;
``memstrata build --rebuild`` rebuilds from scratch.

**Descriptions follow the children.** Every category whose set of children changed is
marked; in the ``llm`` tier :meth:`Hierarchy.redescribe` asks the model for its
description and tags again after each placement (the paper, which rebuilds, is silent
here: we show the appendix D description rules with the current members). A category
the model could not describe keeps its old text and its mark (stored with it,
``Category.children_changed``), so the next batch asks again, after a reload too. A
repair that removes a member marks its category the same way, and the llm tier's repair
describes it again. In the ``heuristic`` tier, member-derived descriptions are derived again.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memstrata.designs.mnemis.graph import SPEAKER_CATEGORY, Graph
from memstrata.designs.mnemis.records import Category
from memstrata.models import Span
from memstrata.retrieval.record_index import matvec
from memstrata.retrieval.text import content_terms

Groups = list[tuple[str, list[int]]]
# Per category name, the (description, tags) the LLM wrote for it.
Described = dict[str, tuple[str, list[str]]]
# An LLM grouping step (appendix D): (layer, [(name, description)], existing categories
# as [(name, description)], prev_example) -> groups and their descriptions.
LLMGrouper = Callable[
    [int, list[tuple[str, str]], list[tuple[str, str]], str], Awaitable[tuple[Groups, Described]]
]
# An LLM description step: [(name, current description, [(member, its description)])]
# -> per category, the (description, tags) the model wrote, or None where it wrote none.
LLMDescriber = Callable[
    [list[tuple[str, str, list[tuple[str, str]]]]],
    Awaitable[list[tuple[str, list[str]] | None]],
]


@dataclass(frozen=True)
class HierarchyParams:
    n: int = 3
    max_layers: int = 4
    #: a layer of this many nodes or fewer ends the build (ours); 0: no such rule
    top_width: int = 12
    group_size: int = 6
    margin: float = 0.04
    max_parents: int = 2
    floor: float = 0.45
    split_at: int = 30
    seed: int = 7
    rebuild_lone_share: float = 0.25


def _unit(m: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return (m / norms).astype(np.float32)


class Hierarchy:
    """Builds and maintains the categories of one :class:`Graph`."""

    def __init__(self, graph: Graph, params: HierarchyParams | None = None) -> None:
        self.g = graph
        self.p = params or HierarchyParams()
        self._vec: dict[str, NDArray[np.float32]] = {}
        self._stale: set[str] = set()

    # vectors ----------------------------------------------------------------------------
    def vector(self, node_id: str) -> NDArray[np.float32]:
        """Entities: name embedding. Categories: the normalised mean of their children."""
        if node_id in self._vec:
            return self._vec[node_id]
        cat = self.g.categories.get(node_id)
        if cat is None:
            v = self.g.name_vectors([node_id])[0]
        else:
            kids = [self.vector(c) for c in cat.child_ids] or [self.g.name_vectors([node_id])[0]]
            v = _unit(np.mean(kids, axis=0))
        self._vec[node_id] = v
        return v

    def vectors(self, ids: list[str]) -> NDArray[np.float32]:
        if not ids:
            return np.zeros((0, self.g.embedder.dim), dtype=np.float32)
        missing = [i for i in ids if i not in self._vec and i in self.g.entities]
        if missing:
            for i, v in zip(missing, self.g.name_vectors(missing), strict=True):
                self._vec[i] = v
        return np.stack([self.vector(i) for i in ids])

    # full build -------------------------------------------------------------------------
    def clear(self) -> None:
        for cid in list(self.g.categories):
            self.g.delete(cid)
        self._vec.clear()

    async def rebuild(self, grouper: LLMGrouper | None = None) -> list[int]:
        """Drop every category and build the layers again; returns the node count per layer."""
        self.clear()
        speakers = self.g.speakers()
        below = [i for i in self.g.entities if i not in set(speakers)]
        counts = [len(self.g.entities)]
        speaker_node: str | None = None
        prev: list[Category] = []
        for layer in range(1, self.p.max_layers + 1):
            if not below and speaker_node is None and not speakers:
                break
            groups, described = await self._group(layer, below, grouper, prev)
            made = [
                self._new_category(layer, name, [below[i] for i in idx]) for name, idx in groups
            ]
            for cat in made:
                self.describe(cat, described.get(cat.name))
            kids = [speaker_node] if speaker_node else speakers
            if kids:
                made.append(self._new_category(layer, SPEAKER_CATEGORY, kids, tags=["speaker"]))
            if layer >= 2 and len(made) > counts[-1]:
                for c in made:
                    self._drop(c)
                break
            counts.append(len(made))
            prev = made
            speaker_node = made[-1].id if kids else None
            below = [c.id for c in made if c.id != speaker_node]
            if self.p.top_width and len(made) <= self.p.top_width:
                break
        for cat in self.g.categories.values():  # the grouping just described every one
            cat.children_changed = False
        return counts[1:]

    async def _group(
        self, layer: int, ids: list[str], grouper: LLMGrouper | None, prev: list[Category]
    ) -> tuple[Groups, Described]:
        if not ids:
            return [], {}
        if grouper is not None:
            nodes = [(self._name(i), self._description(i)) for i in ids]
            existing = [(c.name, c.summary) for c in self.g.layer(layer)]
            raw, described = await grouper(layer, nodes, existing, self._example(prev))
            return self.enforce(raw, len(ids), None, [self._name(i) for i in ids]), described
        return self.cluster(self.vectors(ids), [self._name(i) for i in ids]), {}

    def _description(self, node_id: str) -> str:
        """What the appendix D prompt shows after a node's name: its tags, else its summary."""
        rec = self.g.entities.get(node_id) or self.g.categories.get(node_id)
        if rec is None:
            return ""
        tags = [t for t in rec.tags if t not in ("entity", "speaker")]
        return ", ".join(tags) if tags else rec.summary[:80]

    def _example(self, prev: list[Category], limit: int = 4) -> str:
        """``prev_example``: a few categories of the layer below with some members."""
        lines = []
        for cat in [c for c in prev if len(c.child_ids) > 1][:limit]:
            members = ", ".join(f'"{self._name(k)}"' for k in cat.child_ids[:4])
            lines.append(f'- {members} -> "{cat.name}"')
        return "\n".join(lines)

    def describe(self, cat: Category, written: tuple[str, list[str]] | None = None) -> None:
        """A category's summary and tags, like an entity's (section 2.2): what the LLM
        wrote, or else derived from the members (their shared words, then their names)."""
        names = [
            self._name(k) for k in cat.child_ids if k in self.g.entities or k in self.g.categories
        ]
        if written is not None and written[0]:
            cat.summary = written[0]
            cat.tags = written[1] or cat.tags
        elif cat.name != SPEAKER_CATEGORY:
            shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            cat.summary = f"{cat.name}: {shown}"
            words = Counter(w for nm in names for w in set(content_terms(nm)))
            shared = [w for w, c in words.most_common(5) if c >= 2]
            cat.tags = list(dict.fromkeys(shared + names))[:5]
        self.g.touch(cat)

    def cluster(self, x: NDArray[np.float32], names: list[str]) -> Groups:
        """Soft spherical k-means, then the compression ratio: small groups dissolve."""
        n_items = len(x)
        k = max(1, round(n_items / self.p.group_size))
        centroids = self._kmeans(x, k)
        sims = x @ centroids.T
        groups: list[list[int]] = [[] for _ in range(len(centroids))]
        for i in range(n_items):
            order = np.argsort(-sims[i])
            best = float(sims[i, order[0]])
            for rank, c in enumerate(order[: self.p.max_parents]):
                s = float(sims[i, c])
                if rank == 0 or (s >= best - self.p.margin and s >= self.p.floor):
                    groups[int(c)].append(i)
        return self.enforce([("", g) for g in groups], n_items, x, names)

    def enforce(
        self,
        groups: Groups,
        n_items: int,
        x: NDArray[np.float32] | None = None,
        names: list[str] | None = None,
    ) -> Groups:
        """Apply the compression ratio and "no leftover": groups smaller than ``n`` (but
        larger than one) dissolve; a node left without a group is promoted alone."""
        kept: Groups = []
        for name, idx in groups:
            idx = sorted({i for i in idx if 0 <= i < n_items})
            if name and re.search(r"\band\b", name, re.IGNORECASE):
                continue  # the paper forbids "X and Y" categories
            if len(idx) >= self.p.n:
                kept.append((name, idx))
        placed = {i for _, idx in kept for i in idx}
        for i in range(n_items):
            if i not in placed:
                kept.append(("", [i]))
        if names is not None:
            kept = [(nm or self._label([names[i] for i in idx], x, idx), idx) for nm, idx in kept]
        return kept

    def _label(self, member_names: list[str], x: NDArray[np.float32] | None, idx: list[int]) -> str:
        """A category name from its members: a word most of them share, else the member
        nearest the centre."""
        if len(member_names) == 1:
            return member_names[0]
        words = Counter(w for nm in member_names for w in set(content_terms(nm)))
        common = [w for w, c in words.most_common(2) if c >= max(2, len(member_names) // 3)]
        if common:
            return common[0].capitalize()
        if x is not None:
            centre = _unit(x[idx].mean(axis=0))
            return member_names[int(np.argmax(x[idx] @ centre))]
        return member_names[0]

    def _kmeans(self, x: NDArray[np.float32], k: int) -> NDArray[np.float32]:
        rng = np.random.default_rng(self.p.seed)
        n_items = len(x)
        k = min(k, n_items)
        first = int(rng.integers(n_items))
        chosen = [first]
        dist = 1.0 - matvec(x, x[first])
        for _ in range(1, k):
            weights = np.clip(dist, 0, None) ** 2
            total = float(weights.sum())
            nxt = (
                int(rng.choice(n_items, p=weights / total))
                if total > 0
                else int(rng.integers(n_items))
            )
            chosen.append(nxt)
            dist = np.minimum(dist, 1.0 - matvec(x, x[nxt]))
        c = x[chosen].copy()
        for _ in range(12):
            assign = np.argmax(x @ c.T, axis=1)
            new = np.zeros_like(c)
            np.add.at(new, assign, x)
            empty = ~new.any(axis=1)
            new[empty] = c[empty]
            new = _unit(new)
            if np.allclose(new, c):
                break
            c = new
        return c

    # incremental ------------------------------------------------------------------------
    def place(self, entity_ids: list[str]) -> None:
        """Fold new entities into an existing hierarchy without rebuilding it."""
        if not self.g.categories:
            return
        for eid in entity_ids:
            ent = self.g.entities[eid]
            if ent.entity_type == "speaker":
                self._place_speaker(eid)
            else:
                self._place(eid, 1)
        for cid in self._stale:
            if cid in self.g.categories:
                self.describe(self.g.categories[cid])
        self._stale.clear()

    def changed(self) -> list[str]:
        """Categories with more than one child whose children changed since the model
        last described them (``Speaker`` and lone promotions need no description)."""
        out = []
        for cat in self.g.categories.values():
            if not cat.children_changed:
                continue
            if cat.name == SPEAKER_CATEGORY or len(cat.child_ids) < 2:
                self._unmark(cat)
            else:
                out.append(cat.id)
        return out

    def forget_marks(self) -> None:
        """Clear every mark: the heuristic tier derives member-derived descriptions again
        itself, and its marks must not make a later llm-tier batch describe them all."""
        for cat in self.g.categories.values():
            self._unmark(cat)

    def _unmark(self, cat: Category) -> None:
        if cat.children_changed:
            cat.children_changed = False
            self.g.touch(cat)

    def mark_changed(self, cat: Category) -> None:
        """``cat``'s children changed: the llm tier describes it again (:meth:`redescribe`)."""
        if not cat.children_changed:
            cat.children_changed = True
            self.g.touch(cat)

    async def redescribe(self, describer: LLMDescriber) -> int:
        """Have the model describe again every :meth:`changed` category, from its
        current members; returns how many it described. A category left undescribed
        (no text, or the call failed) keeps its text and stays marked."""
        cats = [self.g.categories[c] for c in self.changed()]
        if not cats:
            return 0
        items = [
            (c.name, c.summary, [(self._name(k), self._description(k)) for k in c.child_ids])
            for c in cats
        ]
        written = await describer(items)
        done = 0
        for cat, w in zip(cats, written, strict=True):
            if w is not None and w[0]:
                self.describe(cat, w)
                self._unmark(cat)
                done += 1
        return done

    def lone_share(self) -> float:
        """Share of layer-1 categories holding a single entity: nodes incremental placement
        promoted alone because nothing was close. It grows as the hierarchy degrades."""
        first = [c for c in self.g.layer(1) if c.name != SPEAKER_CATEGORY]
        if not first:
            return 0.0
        return sum(len(c.child_ids) == 1 for c in first) / len(first)

    def degraded(self) -> bool:
        """Whether a full rebuild is due (the paper rebuilds periodically): more than
        ``rebuild_lone_share`` of layer 1 is lone nodes, and at least ``n`` of them."""
        first = [c for c in self.g.layer(1) if c.name != SPEAKER_CATEGORY]
        lone = sum(len(c.child_ids) == 1 for c in first)
        return lone >= self.p.n and self.lone_share() > self.p.rebuild_lone_share

    def _place_speaker(self, eid: str) -> None:
        speaker = next((c for c in self.g.layer(1) if c.name == SPEAKER_CATEGORY), None)
        if speaker is None:
            self._chain(eid, 1, SPEAKER_CATEGORY)
        elif eid not in speaker.child_ids:
            self._link(speaker, eid)

    def _place(self, node_id: str, layer: int) -> None:
        top = self.g.top_layer()
        if layer > top:
            return
        cats = [
            c
            for c in self.g.layer(layer)
            if len(c.child_ids) >= self.p.n and c.name != SPEAKER_CATEGORY
        ]
        v = self.vector(node_id)
        if cats:
            sims = matvec(self.vectors([c.id for c in cats]), v)
            order = np.argsort(-sims)
            best = float(sims[order[0]])
            if best >= self.p.floor:
                for rank, i in enumerate(order[: self.p.max_parents]):
                    if rank == 0 or float(sims[i]) >= best - self.p.margin:
                        self._link(cats[int(i)], node_id)
                        self._maybe_split(cats[int(i)])
                return
        if self._merge_lone(node_id, layer):
            return
        self._chain(node_id, layer, self._name(node_id))

    def _chain(self, node_id: str, layer: int, name: str) -> None:
        """Promote a node alone: a one-child category here and up to the top layer."""
        child = node_id
        for lyr in range(layer, self.g.top_layer() + 1):
            cat = self._new_category(lyr, name, [child])
            child = cat.id

    def _lone_chain(self, cat: Category) -> bool:
        """True for a one-child category whose ancestors all have one child too."""
        while True:
            if len(cat.child_ids) != 1:
                return False
            parents = [self.g.categories[p] for p in cat.parent_ids if p in self.g.categories]
            if not parents:
                return True
            if len(parents) != 1:
                return False
            cat = parents[0]

    def _merge_lone(self, node_id: str, layer: int) -> bool:
        """Join ``n - 1`` similar lone nodes of this layer and the new node into a category."""
        lone = [
            c
            for c in self.g.layer(layer)
            if c.name != SPEAKER_CATEGORY and self._lone_chain(c) and c.child_ids[0] != node_id
        ]
        if len(lone) < self.p.n - 1:
            return False
        v = self.vector(node_id)
        sims = matvec(self.vectors([c.child_ids[0] for c in lone]), v)
        close = [lone[int(i)] for i in np.argsort(-sims) if float(sims[int(i)]) >= self.p.floor]
        if len(close) < self.p.n - 1:
            return False
        members = [node_id] + [c.child_ids[0] for c in close]
        for c in close:
            self._drop_chain(c)
        names = [self._name(m) for m in members]
        cat = self._new_category(
            layer, self._label(names, self.vectors(members), list(range(len(members)))), members
        )
        self._place(cat.id, layer + 1)
        return True

    def _drop_chain(self, cat: Category) -> None:
        while True:
            parents = [self.g.categories[p] for p in cat.parent_ids if p in self.g.categories]
            self._drop(cat)
            if not parents:
                return
            cat = parents[0]

    def _maybe_split(self, cat: Category) -> None:
        if len(cat.child_ids) <= self.p.split_at:
            return
        below = len(self.g.entities) if cat.layer == 1 else len(self.g.layer(cat.layer - 1))
        if len(self.g.layer(cat.layer)) + 1 > below:
            return  # one more node here would break the reduction rule
        kids = list(cat.child_ids)
        x = self.vectors(kids)
        c = self._kmeans(x, 2)
        assign = np.argmax(x @ c.T, axis=1)
        halves = [[kids[i] for i in range(len(kids)) if assign[i] == h] for h in (0, 1)]
        if min(len(h) for h in halves) < self.p.n:
            return
        made = [
            self._new_category(
                cat.layer,
                self._label(
                    [self._name(m) for m in half], self.vectors(half), list(range(len(half)))
                ),
                half,
            ).id
            for half in halves
        ]
        self._replace(cat, made)

    def _replace(self, old: Category, new_ids: list[str]) -> None:
        """Put ``new_ids`` where ``old`` was under each of its parents, then drop ``old``.

        A parent that held ``old`` alone would be left with fewer than ``n`` children, so
        it is itself replaced by one lone category per new node, recursively upwards: one
        more node per layer, which the reduction rule allows once the layer below grew."""
        parents = [self.g.categories[p] for p in old.parent_ids if p in self.g.categories]
        self._drop(old)
        for parent in parents:
            for nid in new_ids:
                self._link(parent, nid)
            if len(parent.child_ids) == 1 or len(parent.child_ids) >= self.p.n:
                continue
            if parent.name == SPEAKER_CATEGORY:
                continue
            lone = [
                self._new_category(parent.layer, self._name(kid), [kid]).id
                for kid in list(parent.child_ids)
            ]
            self._replace(parent, lone)

    # records ----------------------------------------------------------------------------
    def _name(self, node_id: str) -> str:
        return self.g.name_of(node_id)

    def _tags(self, node_id: str) -> list[str]:
        rec = self.g.entities.get(node_id) or self.g.categories.get(node_id)
        return list(rec.tags) if rec is not None else []

    def _new_category(
        self, layer: int, name: str, children: list[str], tags: list[str] | None = None
    ) -> Category:
        cat = Category(
            namespace=self.g.namespace,
            name=name,
            layer=layer,
            tags=tags if tags is not None else [self._name(c) for c in children[:3]],
            child_ids=[],
        )
        self.g.categories[cat.id] = cat
        for child in children:
            self._link(cat, child)
        self.describe(cat)
        self._stale.discard(cat.id)
        self.mark_changed(cat)
        return cat

    def _link(self, cat: Category, child: str) -> None:
        if child in cat.child_ids:
            return
        cat.child_ids.append(child)
        self.mark_changed(cat)
        cat.sources = _merge_sources(cat.sources, self._sources(child))
        if not cat.summary or cat.summary.startswith(f"{cat.name}: "):
            self._stale.add(cat.id)  # member-derived: describe again once placing is done
        self.g.touch(cat)
        sub = self.g.categories.get(child)
        if sub is not None and cat.id not in sub.parent_ids:
            sub.parent_ids.append(cat.id)
            self.g.touch(sub)
        self._invalidate(cat.id)

    def _invalidate(self, cat_id: str) -> None:
        self._vec.pop(cat_id, None)
        cat = self.g.categories.get(cat_id)
        if cat is not None:
            for p in cat.parent_ids:
                self._invalidate(p)

    def _drop(self, cat: Category) -> None:
        for pid in cat.parent_ids:
            parent = self.g.categories.get(pid)
            if parent is not None and cat.id in parent.child_ids:
                parent.child_ids.remove(cat.id)
                self.mark_changed(parent)
                self.g.touch(parent)
                self._invalidate(pid)
        for child in cat.child_ids:
            sub = self.g.categories.get(child)
            if sub is not None and cat.id in sub.parent_ids:
                sub.parent_ids.remove(cat.id)
                self.g.touch(sub)
        self._vec.pop(cat.id, None)
        self.g.delete(cat.id)

    def _sources(self, node_id: str) -> list[Span]:
        """A category rests on the first mention of each child (provenance stays small)."""
        rec = self.g.entities.get(node_id) or self.g.categories.get(node_id)
        if rec is None or not rec.sources:
            return []
        return rec.sources[:1]


def _merge_sources(have: list[Span], more: list[Span]) -> list[Span]:
    out = list(have)
    for s in more:
        if s not in out and len(out) < 50:
            out.append(s)
    return out
