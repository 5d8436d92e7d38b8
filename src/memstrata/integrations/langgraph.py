"""LangGraph's long-term memory store, kept in memstrata.

:class:`MemstrataStore` is a ``langgraph.store.base.BaseStore``: a graph compiled with
``store=MemstrataStore(memory)`` reads and writes its memories through ``get``,
``put``, ``search`` and ``list_namespaces`` (sync and async) as with LangGraph's own
stores, and they live in memstrata::

    from langgraph.graph import StateGraph
    from memstrata import Memory
    from memstrata.integrations.langgraph import MemstrataStore

    memory = Memory.open("memory.db")
    graph = builder.compile(store=MemstrataStore(memory))

How the two models meet (docs/integrations.md):

* a LangGraph namespace ``("memories", "u1")`` is the memstrata namespace
  ``prefix + "memories.u1"``: labels may not hold a dot, so the name reads back to the
  same tuple; each user or thread is a memstrata tenant of its own;
* an item is an episode whose id is the item's key; its text is what the index fields
  say (every string of the value by default), its value and update time sit in the
  episode's metadata (``langgraph``). A put replaces the episode (the old version stays
  in its history) and a ``None`` value deletes it; an episode added by other means reads
  as the value ``{"text": ...}``;
* a search with a query is the recipe's search in each namespace under the prefix: the
  items its hits rest on come first, by the hit's score, then the other matches of the
  filter, as LangGraph's stores rank every match; without a query, the matches in the
  order they were added, namespace by namespace in name order.

Within one batch, reads see the store as it was before the batch's writes, and the last
write of a key wins, as in LangGraph's in-memory store.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from memstrata.errors import InvalidInputError, NamespaceNotFoundError
from memstrata.integrations.bridge import Bridge, episodes
from memstrata.models import Episode
from memstrata.store.names import check_namespace

#: the key of an episode's metadata that holds the item's value and update time
FIELD = "langgraph"
#: what joins a namespace's labels into one memstrata namespace (LangGraph forbids it
#: inside a label, so the join reads back)
SEP = "."
#: episodes read per page when a search scans a namespace
PAGE = 1000
#: the most hits one namespace's search ranks (the service's own bound on k)
MAX_RANKED = 200

_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


class MemstrataStore(BaseStore):
    """A LangGraph ``BaseStore`` over a memstrata client.

    ``memory`` is a :class:`memstrata.Memory` or :class:`memstrata.RemoteMemory` (sync
    and async calls both work) or an :class:`memstrata.AsyncMemory` /
    :class:`memstrata.AsyncRemoteMemory` (async calls; a sync call from outside any event
    loop runs on a loop of its own). ``prefix`` starts every memstrata namespace the
    store uses, to keep a graph's memories apart from others in the same database;
    ``fields`` are the value's paths whose text is searched (LangGraph's
    ``IndexConfig.fields``; ``["$"]``, the default, is every string of the value);
    ``recipe`` is the memstrata recipe a search runs (None: the configured one)."""

    def __init__(
        self,
        memory: Any,
        *,
        prefix: str = "",
        fields: Sequence[str] | None = None,
        recipe: str | None = None,
    ) -> None:
        self._bridge = Bridge(memory)
        self._client = self._bridge.client
        self.prefix = prefix
        self.fields = list(fields) if fields is not None else ["$"]
        self.recipe = recipe

    # BaseStore ---------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._bridge.run(self._batch(list(ops)), "MemstrataStore")

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._bridge.arun(self._batch(list(ops)))

    # the batch -----------------------------------------------------------------------------
    async def _batch(self, ops: list[Op]) -> list[Result]:
        """Every write is checked before anything is read or written: a bad namespace or a
        value that is not JSON refuses the whole batch and stores nothing."""
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                self._check_put(op)
                puts[(tuple(op.namespace), op.key)] = op
            elif not isinstance(op, GetOp | SearchOp | ListNamespacesOp):
                raise ValueError(f"unknown store operation: {type(op).__name__}")
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            else:
                results.append(None)
        for op in puts.values():
            await self._put(op)
        return results

    def _check_put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        if not namespace:
            raise InvalidNamespaceError("a namespace cannot be empty")
        for label in namespace:
            if not isinstance(label, str) or not label:
                raise InvalidNamespaceError(f"namespace {namespace!r} has an empty label")
            if SEP in label:
                raise InvalidNamespaceError(
                    f"namespace label {label!r} holds a {SEP!r}, which LangGraph forbids"
                )
        try:
            check_namespace(self._name(namespace))
        except InvalidInputError as exc:
            raise InvalidNamespaceError(
                f"memstrata cannot hold namespace {namespace!r}: {exc}"
            ) from exc
        if not isinstance(op.key, str) or not op.key:
            raise InvalidInputError(f"an item's key is a non-empty string, not {op.key!r}")
        if op.value is not None:
            if not isinstance(op.value, Mapping):
                raise InvalidInputError(f"a value is a mapping, not {type(op.value).__name__}")
            try:
                json.dumps(dict(op.value), allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(
                    f"the value of {op.key!r} is not JSON ({exc}); nothing was stored"
                ) from exc

    # names ---------------------------------------------------------------------------------
    def _name(self, namespace: tuple[str, ...]) -> str:
        return self.prefix + SEP.join(namespace)

    def _path(self, name: str) -> tuple[str, ...] | None:
        """The LangGraph namespace of a memstrata one, if it is under the prefix."""
        if not name.startswith(self.prefix) or len(name) == len(self.prefix):
            return None
        return tuple(name[len(self.prefix) :].split(SEP))

    @staticmethod
    def _readable(namespace: Sequence[str]) -> bool:
        """Whether a namespace read can name anything this store writes."""
        return all(isinstance(label, str) and label and SEP not in label for label in namespace)

    async def _paths(self) -> list[tuple[tuple[str, ...], str]]:
        """(LangGraph namespace, memstrata name) of every namespace under the prefix, in
        name order."""
        names = sorted(await self._client.namespaces())
        return [(p, n) for n in names if (p := self._path(n)) is not None]

    # reads ---------------------------------------------------------------------------------
    async def _get(self, op: GetOp) -> Item | None:
        namespace = tuple(op.namespace)
        if not namespace or not self._readable(namespace):
            return None
        try:
            found = await self._client.get([op.key], namespace=self._name(namespace))
        except NamespaceNotFoundError:
            return None
        return item_of(found[0], namespace) if found else None

    def _episodes(self, name: str) -> AsyncIterator[Episode]:
        return episodes(self._client, name, page=PAGE)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if not self._readable(prefix):
            return []
        spaces = [(p, n) for p, n in await self._paths() if p[: len(prefix)] == prefix]
        start, size = max(op.offset, 0), max(op.limit, 0)
        ranked: list[tuple[Item, float | None]] | None = None
        if op.query and not op.filter:
            ranked = await self._ranked(op.query, spaces, start + size)
        if ranked is None:  # a filter, no query, or too few hits: every item is read
            matches: list[tuple[Item, bool]] = []  # (item, indexed)
            held = {name: 0 for _, name in spaces}
            for path, name in spaces:
                async for episode in self._episodes(name):
                    held[name] += 1
                    item = item_of(episode, path)
                    if matches_filter(item.value, op.filter):
                        matches.append((item, indexed(episode)))
            if op.query:
                ranked = await self._rank(op.query, held, matches)
            else:
                ranked = [(i, None) for i, _ in matches]
        return [
            SearchItem(
                namespace=i.namespace,
                key=i.key,
                value=i.value,
                created_at=i.created_at,
                updated_at=i.updated_at,
                score=score,
            )
            for i, score in ranked[start : start + size]
        ]

    async def _hits(self, query: str, name: str, k: int) -> list[tuple[float, list[str]]]:
        """(score, source episodes) of the recipe's hits in one namespace."""
        found = await self._client.search(
            query, namespace=name, k=max(1, min(k, MAX_RANKED)), recipe=self.recipe, max_tokens=None
        )
        return [(float(hit.score), list(hit.sources)) for hit in found.hits]

    async def _ranked(
        self, query: str, spaces: list[tuple[tuple[str, ...], str]], need: int
    ) -> list[tuple[Item, float | None]] | None:
        """Without a filter, the first ``need`` items by the recipe's hits alone, reading
        only the items hit; None when the hits hold fewer (the rest must be listed)."""
        scored: list[tuple[float, Item]] = []
        for path, name in spaces:
            hits = await self._hits(query, name, need)
            ids = list(dict.fromkeys(s for _, sources in hits for s in sources))
            held = {e.id: e for e in await self._client.get(ids, namespace=name)} if ids else {}
            taken: set[str] = set()
            for score, sources in hits:
                key = next((s for s in sources if s in held and s not in taken), None)
                if key is not None and indexed(held[key]):
                    taken.add(key)
                    scored.append((score, item_of(held[key], path)))
        if len(scored) < need:
            return None
        scored.sort(key=lambda pair: -pair[0])  # stable: a namespace's own order on ties
        return [(i, s) for s, i in scored]

    async def _rank(
        self, query: str, held: dict[str, int], matches: list[tuple[Item, bool]]
    ) -> list[tuple[Item, float | None]]:
        """The matches the recipe's hits rest on, by the hit's score (a hit on a derived
        record counts for the first matching episode it cites), then the rest in order.
        Each namespace's search ranks as many as it holds (up to :data:`MAX_RANKED`), as
        the best hits may fail the filter."""
        by_name: dict[str, dict[str, Item]] = {}
        for item, searchable in matches:
            if searchable:
                by_name.setdefault(self._name(item.namespace), {})[item.key] = item
        scored: list[tuple[float, Item]] = []
        for name, count in held.items():
            wanted = by_name.get(name)
            if not wanted:
                continue
            for score, sources in await self._hits(query, name, count):
                key = next((s for s in sources if s in wanted), None)
                if key is not None:
                    scored.append((score, wanted.pop(key)))
        scored.sort(key=lambda pair: -pair[0])  # stable: a namespace's own order on ties
        seen = {(i.namespace, i.key) for _, i in scored}
        ranked: list[tuple[Item, float | None]] = [(i, s) for s, i in scored]
        return ranked + [(i, None) for i, _ in matches if (i.namespace, i.key) not in seen]

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        paths = [p for p, _ in await self._paths()]
        if op.match_conditions:
            paths = [p for p in paths if all(matches_path(c, p) for c in op.match_conditions)]
        if op.max_depth is not None:
            paths = list(dict.fromkeys(p[: op.max_depth] for p in paths))
        start = max(op.offset, 0)
        return sorted(paths)[start : start + max(op.limit, 0)]

    # writes --------------------------------------------------------------------------------
    async def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        name = self._name(namespace)
        if op.value is None:
            try:
                await self._client.delete([op.key], namespace=name)
            except NamespaceNotFoundError:
                return
            # a namespace lives while it holds an item, as in LangGraph's stores
            if not (await self._client.list(namespace=name, limit=1)).episodes:
                await self._client.delete_namespace(name)
            return
        value = dict(op.value)
        fields = self.fields if op.index is None or op.index is False else list(op.index)
        held = {
            "value": value,
            "updated_at": datetime.now(UTC).isoformat(),
            "indexed": op.index is not False,
        }
        await self._client.add(
            text_of(value, fields),
            id=op.key,
            namespace=name,
            metadata={FIELD: held},
            replace=True,
        )


# the item model ----------------------------------------------------------------------------
def item_of(episode: Episode, namespace: tuple[str, ...]) -> Item:
    """An episode as a LangGraph item: the value it holds, or ``{"text": ...}`` for an
    episode written by other means; updated when its value last changed."""
    held = episode.metadata.get(FIELD)
    value: dict[str, Any] = {"text": episode.text}
    updated = episode.created_at
    if isinstance(held, dict) and isinstance(held.get("value"), dict):
        value = held["value"]
        stamp = held.get("updated_at")
        if isinstance(stamp, str):  # stamped before the write: never before the creation
            updated = max(updated, datetime.fromisoformat(stamp))
    return Item(
        value=value,
        key=episode.id,
        namespace=namespace,
        created_at=episode.created_at,
        updated_at=updated,
    )


def indexed(episode: Episode) -> bool:
    """Whether a query may find the episode's item (not put with ``index=False``)."""
    held = episode.metadata.get(FIELD)
    return not (isinstance(held, dict) and held.get("indexed") is False)


def text_of(value: dict[str, Any], fields: Sequence[str]) -> str:
    """The text memstrata searches an item by: the strings at ``fields`` (``$``: every
    string of the value, in order), one per line; the value's JSON when it has none."""
    texts: list[str] = []
    for path in fields:
        if path == "$":
            texts.extend(_strings(value))
        else:
            texts.extend(t for t in get_text_at_path(value, tokenize_path(path)) if t)
    text = "\n".join(t for t in texts if t.strip())
    return text or json.dumps(value, ensure_ascii=False, sort_keys=True)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


# filters and namespace patterns -----------------------------------------------------------
def matches_filter(value: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    """LangGraph's search filter: every key of ``where`` holds in ``value`` (a plain value
    is equality, a mapping of ``$`` operators compares, another mapping matches nested)."""
    return not where or all(_holds(value.get(k), want) for k, want in where.items())


def _holds(have: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if any(str(k).startswith("$") for k in want):
            return all(_compare(have, op, arg) for op, arg in want.items())
        return isinstance(have, Mapping) and all(_holds(have.get(k), v) for k, v in want.items())
    if isinstance(want, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(want)
            and all(_holds(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)


def _compare(have: Any, op: str, arg: Any) -> bool:
    """One ``$`` operator; an order between values that are not numbers holds for none."""
    if op not in _OPERATORS:
        raise ValueError(f"unknown filter operator {op!r}; valid: {', '.join(_OPERATORS)}")
    if op == "$eq":
        return bool(have == arg)
    if op == "$ne":
        return bool(have != arg)
    try:
        a, b = float(have), float(arg)
    except (TypeError, ValueError):
        return False
    if math.isnan(a) or math.isnan(b):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def matches_path(condition: MatchCondition, path: tuple[str, ...]) -> bool:
    """A namespace against a prefix or suffix pattern, ``*`` matching any one label."""
    pattern = tuple(condition.path)
    if len(path) < len(pattern):
        return False
    if condition.match_type == "prefix":
        pairs = zip(path, pattern, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(path), reversed(pattern), strict=False)
    else:
        raise ValueError(f"unknown namespace match type {condition.match_type!r}")
    return all(want == "*" or have == want for have, want in pairs)


__all__ = ["MemstrataStore"]
