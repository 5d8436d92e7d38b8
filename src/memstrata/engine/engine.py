"""The engine: runs a recipe's builders over pending episodes and its routes over queries.

It names no design. Builders, routes and answerers are found in the :class:`Registry`
by the names a :class:`Recipe` gives, instantiated once per open memory with the recipe's
parameters, and driven through their contracts:

* **drain** folds a namespace's pending episodes into one builder, batch by batch, under
  a lease in the store so that no two processes build the same (namespace, builder) at
  once. A batch that fails is marked failed with its error and retried later with
  backoff, a bounded number of times; the episodes themselves are never touched.
* **search** runs the recipe's routes, fuses their hits (:mod:`memstrata.engine.fusion`)
  and says how many episodes the recipe's builders have not folded in yet.
* **ask** hands the fused hits to the recipe's answerer.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from memstrata.embed.base import Embedder
from memstrata.embed.cache import for_its_namespace
from memstrata.engine.catchup import LABEL as UNBUILT
from memstrata.engine.catchup import unbuilt_hits
from memstrata.engine.contracts import (
    Answer,
    Builder,
    BuildReport,
    Context,
    QuestionInfo,
    Route,
    ShowNode,
    Tier,
    elapsed,
)
from memstrata.engine.explain import Noting, explain, noting, reads
from memstrata.engine.fusion import cut, merge, rerank
from memstrata.engine.prompts import Ranking
from memstrata.engine.prompts import rerank as rerank_prompt
from memstrata.engine.recipe import Recipe
from memstrata.engine.registry import Registry
from memstrata.engine.upkeep import BuildBusyError as BuildBusyError
from memstrata.engine.upkeep import Upkeep
from memstrata.errors import ConfigError
from memstrata.knowledge.present import order_results
from memstrata.llm.base import LLMClient
from memstrata.llm.types import NOT_SENT
from memstrata.models import Episode, Hit
from memstrata.redact import redact
from memstrata.retrieval import evidence
from memstrata.retrieval.system1 import System1Params
from memstrata.store.base import SearchFilters, Store

logger = logging.getLogger("memstrata.engine")


def check_tier(tier: str) -> Tier:
    """``tier`` if it names one, else a :class:`ConfigError` listing the tiers."""
    if tier in ("heuristic", "llm"):
        return tier  # type: ignore[return-value]
    raise ConfigError(f"unknown tier {tier!r}; choose heuristic or llm")


class Engine(Upkeep):
    """One open memory's recipes, parts and build bookkeeping."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        registry: Registry,
        *,
        llm: Callable[[], LLMClient | None],
        build: Any,
        retrieval: dict[str, Any] | None = None,
        search_tier: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """``clock`` and ``sleep`` time the wait for another process's build lease; a
        caller may pass its own to let that time pass without waiting it out."""
        self.store = store
        self.registry = registry
        self.build_cfg = build
        self.retrieval = {k: v for k, v in (retrieval or {}).items() if v is not None}
        self.search_tier = search_tier
        self._llm = llm
        self.clock, self.sleep = clock, sleep
        # notes the vectors a search's routes compute (engine.explain), else transparent
        self.base = Context(store, Noting(embedder))
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._builders: dict[tuple[str, int], Builder] = {}
        self._routes: dict[tuple[str, int], Route] = {}
        self._finished: set[tuple[str, str]] = set()
        # The store lease is per engine (re-entrant for its owner), so tasks of this
        # engine also take a local lock: two drains of one builder never interleave.
        self._locks: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[str, str], asyncio.Lock]
        ] = weakref.WeakKeyDictionary()

    # parts ------------------------------------------------------------------------------
    def recipe(self, name: str) -> Recipe:
        return self.registry.recipe(name)

    def builders(self, name: str) -> list[Builder]:
        recipe = self.recipe(name)
        out = []
        for i, spec in enumerate(recipe.builders):
            if (name, i) not in self._builders:
                self._builders[(name, i)] = self.registry.builder(spec)
            out.append(self._builders[(name, i)])
        return out

    def routes(self, name: str) -> list[Route]:
        recipe = self.recipe(name)
        out = []
        for i, spec in enumerate(recipe.routes):
            if (name, i) not in self._routes:
                cls = self.registry.routes[spec.name]
                self._routes[(name, i)] = self.registry.route(
                    spec, self._overrides(cls, spec), recipe
                )
            out.append(self._routes[(name, i)])
        return out

    def _overrides(self, cls: type[Route], spec: Any) -> dict[str, Any]:
        """``[retrieval]`` config knobs tune System-1 wherever a route uses it: the route's
        own parameters when they are System-1's, or its ``system1`` field."""
        if not self.retrieval:
            return {}
        if cls.Params is System1Params:
            return dict(self.retrieval)
        field = cls.Params.model_fields.get("system1")
        if field is not None and field.annotation is System1Params:
            nested = spec.params.get("system1", {})
            if isinstance(nested, System1Params):
                nested = nested.model_dump()
            base = (
                System1Params.model_validate(nested)
                if nested
                else field.get_default(call_default_factory=True)
            )
            return {"system1": {**base.model_dump(), **self.retrieval}}
        return {}

    def tier(self, tier: str | None) -> Tier:
        if tier is None:
            return "heuristic" if self._llm() is None else "llm"
        return check_tier(tier)

    def context(
        self,
        namespace: str,
        tier: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> Context:
        chosen = self.tier(tier)
        llm = self._llm() if chosen == "llm" else None
        if chosen == "llm" and llm is None:
            raise ConfigError("the llm tier needs an LLM; configure llm.kind or use heuristic")
        scoped = llm.scoped(namespace=namespace) if llm is not None else None
        return self.base.with_tier(chosen, scoped, progress)

    # building ---------------------------------------------------------------------------
    async def build(
        self,
        namespace: str,
        recipe: str,
        *,
        tier: str | None = None,
        rebuild: bool = False,
        wait: bool = True,
        progress: Callable[[int], None] | None = None,
        stop: asyncio.Event | None = None,
    ) -> list[BuildReport]:
        """Fold every pending episode into each of the recipe's builders; once ``stop``
        is set, builders not started yet are left out of the reports."""
        ctx = self.context(namespace, tier, progress)
        reports: list[BuildReport] = []
        for builder in self.builders(recipe):
            if stop is not None and stop.is_set():
                break
            if reports and reports[-1].unreachable:
                break  # the other builders would find the server gone too
            if rebuild:
                async with self._local(namespace, builder):
                    await self._lease(namespace, builder, wait=True)
                    try:
                        await builder.rebuild(ctx, namespace)
                    finally:
                        await asyncio.to_thread(
                            self.store.release_lease, namespace, builder.name, self.owner
                        )
            reports.append(await self.drain(ctx, namespace, builder, wait=wait, stop=stop))
        return reports

    @for_its_namespace
    async def drain(
        self,
        ctx: Context,
        namespace: str,
        builder: Builder,
        *,
        wait: bool = False,
        describe: bool = True,
        stop: asyncio.Event | None = None,
    ) -> BuildReport:
        """Fold the namespace's pending episodes into ``builder``, batch by batch, until
        none is left or ``stop`` is set. The stop is looked at between batches: each
        batch is one transaction, so stopping there leaves nothing half-applied."""
        # Waits for another drain of this engine even when ``wait`` is false: that one
        # may have looked for pending episodes before ours were committed.
        async with self._local(namespace, builder):
            return await self._drain(
                ctx, namespace, builder, wait=wait, describe=describe, stop=stop
            )

    async def _drain(
        self,
        ctx: Context,
        namespace: str,
        builder: Builder,
        *,
        wait: bool,
        describe: bool,
        stop: asyncio.Event | None,
    ) -> BuildReport:
        t0 = time.perf_counter()
        report = BuildReport(namespace=namespace, builder=builder.name, tier=ctx.tier)
        if not await self._lease(namespace, builder, wait=wait):
            holder = await asyncio.to_thread(self.store.lease_holder, namespace, builder.name)
            report.skipped = f"another process ({holder}) is building {builder.name!r}"
            return report
        try:
            try:
                await self._repair(ctx, namespace, builder, late=True)
            except Exception as exc:
                logger.warning("builder %s could not repair: %s", builder.name, exc)
                report.errors.append(f"repair: {type(exc).__name__}: {exc}")
            lost = await self._batches(ctx, namespace, builder, report, stop)
            # a lost lease leaves the finishing step to the new holder
            if not lost:
                await self._finish(ctx, namespace, builder, report, stop)
        finally:
            await asyncio.to_thread(self.store.release_lease, namespace, builder.name, self.owner)
        if describe:
            await self._describe(ctx, namespace, builder, report)
        report.seconds = elapsed(t0)
        return report

    async def _batches(
        self,
        ctx: Context,
        namespace: str,
        builder: Builder,
        report: BuildReport,
        stop: asyncio.Event | None,
    ) -> bool:
        """Hand the pending episodes to ``builder`` a batch at a time, renewing the lease
        after each, until none is left, ``stop`` is set or the LLM server is gone.
        Returns whether the lease was lost to another process."""
        cfg = self.build_cfg
        breaker = ctx.llm.breaker if ctx.llm is not None else None
        after = 0
        while True:
            page = await asyncio.to_thread(
                self.store.pending_episodes, namespace, builder.name, cfg.batch_size, after
            )
            if not page:
                return False
            if stop is not None and stop.is_set():
                report.stopped = True
                return False
            if breaker is not None and breaker.is_open:
                report.unreachable = breaker.why
                return False
            after = page[-1].key
            await self._batch(ctx, namespace, builder, page, report)
            if report.unreachable:
                return False
            if not await asyncio.to_thread(
                self.store.acquire_lease, namespace, builder.name, self.owner, cfg.lease_s
            ):
                # Held past build.lease_s without a renewal (a stalled process, a
                # host that could not be checked): another one took the build over.
                # Going on would write what the new holder writes too.
                holder = await asyncio.to_thread(self.store.lease_holder, namespace, builder.name)
                if holder is not None:  # else the namespace is gone: nothing to do
                    report.errors.append(f"lease lost to {holder}: stopped after this batch")
                report.stopped = True
                return True

    async def _batch(
        self,
        ctx: Context,
        namespace: str,
        builder: Builder,
        page: list[Episode],
        report: BuildReport,
    ) -> None:
        """One batch: the builder's step, the repairs of what was removed meanwhile, and
        the failures marked for a retry with backoff."""
        cfg = self.build_cfg
        breaker = ctx.llm.breaker if ctx.llm is not None else None
        trips = breaker.trips if breaker is not None else 0
        try:
            step = await builder.update(ctx, namespace, page)
            failed = step.failed
            for key, value in step.work.items():
                report.work[key] = report.work.get(key, 0) + value
        except Exception as exc:
            logger.warning("builder %s failed a batch: %s", builder.name, exc)
            failed = {ep.id: f"{type(exc).__name__}: {exc}" for ep in page}
        left: set[str] = set()
        if breaker is not None and breaker.trips > trips:
            # The server went away during the batch: episodes whose calls were not
            # sent (their reason quotes the refusal) stay queued, attempts untouched,
            # unless the builder wrote them (a stage to redo); the drain stops here.
            report.unreachable = breaker.why
            refused = [i for i, why in failed.items() if NOT_SENT in why]
            unbuilt = self.store.unbuilt
            left = set(await asyncio.to_thread(unbuilt, namespace, [builder.name], refused))
            failed = {i: e for i, e in failed.items() if i not in left}
        try:
            await self._removed_meanwhile(ctx, namespace, builder, page)
        except Exception as exc:
            logger.warning("builder %s could not repair: %s", builder.name, exc)
            report.errors.append(f"repair: {type(exc).__name__}: {exc}")
        if failed:
            keys = {ep.id: ep.key for ep in page}
            await asyncio.to_thread(
                self.store.mark_failed,
                namespace,
                builder.name,
                [(keys[i], err) for i, err in failed.items() if i in keys],
                cfg.max_attempts,
                cfg.backoff_s,
            )
            report.errors.extend(f"{i}: {e}" for i, e in list(failed.items())[:5])
        report.episodes += len(page) - len(left)
        report.failed += len(failed)
        ctx.advance(len(page) - len(left))

    async def _finish(
        self,
        ctx: Context,
        namespace: str,
        builder: Builder,
        report: BuildReport,
        stop: asyncio.Event | None,
    ) -> None:
        """The builder's finishing step, when the drain folded something in or the
        builder never finished in this engine."""
        due = report.episodes or (namespace, builder.name) not in self._finished
        if due and (report.unreachable or (stop is not None and stop.is_set())):
            # The finishing step (possibly long: a first hierarchy) is left to the
            # next drain, which runs it as this one is not marked finished.
            report.stopped = True
            self._finished.discard((namespace, builder.name))
        elif due:
            try:
                await builder.finish(ctx, namespace)
                self._finished.add((namespace, builder.name))
            except Exception as exc:
                logger.warning("builder %s could not finish: %s", builder.name, exc)
                report.errors.append(f"finish: {type(exc).__name__}: {exc}")

    async def _describe(
        self, ctx: Context, namespace: str, builder: Builder, report: BuildReport
    ) -> None:
        """The builder's figures, its record counts and, on the llm tier, its LLM usage."""
        report.details = await builder.describe(ctx, namespace)
        stats = (await asyncio.to_thread(self.store.stats, namespace))[0]
        report.counts = dict(stats.records_by_builder.get(builder.name, {}))
        if ctx.tier == "llm" and builder.stage_prefix:
            usage = await asyncio.to_thread(self.store.llm_usage, namespace)
            report.llm = {k: v for k, v in usage.items() if k.startswith(builder.stage_prefix)}

    # records written before records named their builder ---------------------------------
    def adopt_unowned(self) -> list[str]:
        """Give records written before ownership to the builder that wrote them: the only
        builder with progress in the namespace that declares the kind. Where two could
        have (entities of Mnemis and PersonalAI), their records cannot be told apart: those
        builders start over from the episodes. Returns what was done, as sentences."""
        done: list[str] = []
        for namespace, kinds in self.store.unowned_records().items():
            builds = self.store.stats(namespace)[0].builds
            restart: set[str] = set()
            owners: dict[str, list[str]] = {}
            for kind in kinds:
                owners[kind] = [
                    n
                    for n, cls in self.registry.builders.items()
                    if kind in cls.kinds and n in builds
                ]
                if len(owners[kind]) > 1:
                    restart.update(owners[kind])
            for kind, names in owners.items():
                if len(names) == 1 and names[0] not in restart:
                    self.store.adopt_records(namespace, kind, names[0])
                    done.append(f"{namespace}: {kinds[kind]} {kind} records given to {names[0]}")
            for name in sorted(restart):
                for kind in self.registry.builders[name].kinds:
                    self.store.adopt_records(namespace, kind, None)
                self.store.reset_build(namespace, name)
                done.append(
                    f"{namespace}: {name} starts over (its records could not be told apart)"
                )
        for line in done:
            logger.warning("store upgrade: %s", line)
        return done

    async def pending(self, namespace: str, recipe: str) -> int:
        """Episodes some builder of the recipe has not folded in yet."""
        counts = [
            await asyncio.to_thread(self.store.pending_count, namespace, b.name)
            for b in self.builders(recipe)
        ]
        return max(counts, default=0)

    def queued(self, namespaces: list[str], recipe: str) -> dict[str, dict[str, int]]:
        """Episodes each of the recipe's builders has not taken yet (no done, failed or
        dead mark: the ``queued`` of :meth:`stats`), per namespace; zeros left out."""
        out: dict[str, dict[str, int]] = {}
        names = [b.name for b in self.builders(recipe)]
        for ns in namespaces:
            for s in self.store.stats(ns):
                for name in names:
                    marks = s.builds.get(name, {})
                    left = s.episodes - sum(marks.values())
                    if left > 0:
                        out.setdefault(ns, {})[name] = left
        return out

    def stats(self, namespace: str | None, recipe: str) -> dict[str, Any]:
        """Store counts, the build queue of each builder (the recipe's ones listed even
        before their first run), recent failures, LLM usage."""
        spaces = []
        for s in self.store.stats(namespace):
            row = s.model_dump()
            for b in self.builders(recipe):
                row["builds"].setdefault(b.name, {"done": 0, "failed": 0, "dead": 0})
            for counts in row["builds"].values():
                counts["queued"] = max(0, s.episodes - sum(counts.values()))
            row["failures"] = [f._asdict() for f in self.store.build_failures(s.namespace)]
            spaces.append(row)
        return {
            "store": redact(self.store.url),
            "bytes": self.store.size_bytes(),
            "recipe": recipe,
            "namespaces": spaces,
            "llm": self.store.llm_usage(namespace),
        }

    @for_its_namespace
    async def show(self, namespace: str, name: str) -> list[ShowNode]:
        """Every design's view of ``name``, each top node naming its design; empty when
        no design knows it."""
        ctx = self.base
        out: list[ShowNode] = []
        for design in self.registry.designs.values():
            if design.show is not None:
                found = await asyncio.to_thread(design.show, ctx, namespace, name)
                for node in found or []:
                    out.append(node.model_copy(update={"design": design.name}))
        return out

    def recipe_summaries(self) -> list[dict[str, Any]]:
        return [
            {**r.summary(), "origin": self.registry.origin.get(n, "")}
            for n, r in self.registry.recipes.items()
        ]

    # searching --------------------------------------------------------------------------
    @for_its_namespace
    async def search(
        self,
        namespace: str,
        queries: list[str],
        k: int,
        recipe: str,
        filters: SearchFilters | None = None,
        keep: float | None = None,
    ) -> list[list[Hit]]:
        """At most ``k`` hits per query, whatever the recipe: its kinds share them
        (:func:`~memstrata.engine.fusion.cut`); each route is asked for a share of 1
        (:meth:`~memstrata.engine.recipe.FusionSpec.unit`). ``keep``: cut each result to
        its adaptive evidence set (:meth:`evidence_sets`); None keeps the ``k`` hits."""
        spec = self.recipe(recipe)
        routes = self.routes(recipe)
        ctx = self.context(namespace, self.search_tier)
        names = [s.name for s in spec.routes]
        labels = [n if names.count(n) == 1 else f"{n}#{i + 1}" for i, n in enumerate(names)]
        weights = [s.weight for s in spec.routes]
        unit = spec.fusion.unit(k)  # what a share of 1 gets: each route's depth
        with noting() as noted:
            per_route = [await r.search(ctx, namespace, queries, unit, filters) for r in routes]
            if spec.builders and not all(r.surfaces_unbuilt for r in routes):
                builders = [b.name for b in spec.builders]
                per_route.append(
                    await asyncio.to_thread(
                        unbuilt_hits,
                        *(self.store, ctx.embedder, namespace, queries, unit, builders, filters),
                    )
                )
                labels.append(UNBUILT)
                weights.append(1.0)
        out = []
        for qi, query in enumerate(queries):
            merged = merge(
                [
                    (label, weight, hits[qi])
                    for label, weight, hits in zip(labels, weights, per_route, strict=True)
                ],
                spec.fusion,
            )
            if spec.fusion.reranker == "llm" and ctx.llm is not None:
                merged = await rerank(query, merged, spec.fusion, k, _reorder(ctx.llm))
            out.append(cut(merged, spec.fusion, k))
        # a question about now puts the current value first (memstrata.knowledge.present)
        out = await asyncio.to_thread(order_results, self.store, namespace, queries, out)
        if keep is not None:
            out = await asyncio.to_thread(self.evidence_sets, namespace, queries, out, keep, k)
        # the hits returned only: why each was found, and its relevance as its score
        told = (self.store, self.base.embedder, namespace, queries, out, noted)
        if reads(queries, out, noted):
            await asyncio.to_thread(explain, *told)
        else:
            explain(*told)
        return out

    def evidence_sets(
        self, namespace: str, queries: list[str], results: list[list[Hit]], keep: float, k: int
    ) -> list[list[Hit]]:
        """Each query's hits cut to the source turns scoring at least ``keep`` of the best
        one, at most ``k`` (:mod:`memstrata.retrieval.evidence`)."""
        qvecs = self.base.embedder.embed(queries)
        out = []
        for query, qvec, hits in zip(queries, qvecs, results, strict=True):
            ids = evidence.source_order(hits, k)
            scores = evidence.source_scores(
                self.store, self.base.embedder, namespace, query, qvec, ids
            )
            out.append(evidence.cut(hits, scores, keep, k))
        return out

    @for_its_namespace
    async def answer(
        self,
        namespace: str,
        question: str,
        hits: list[Hit],
        recipe: str,
        about: QuestionInfo | None = None,
    ) -> Answer:
        answerer = self.registry.answerer(self.recipe(recipe).answerer)
        return await answerer.answer(self.context(namespace), namespace, question, hits, about)


def _reorder(llm: LLMClient) -> Callable[[str, str, list[str]], Any]:
    async def reorder(query: str, kind: str, texts: list[str]) -> list[int]:
        messages, model = rerank_prompt(query, kind, texts)
        budget = llm.budgets.tokens("fusion.rerank")
        reply = await llm.structured(messages, model, stage="fusion.rerank", max_tokens=budget)
        assert isinstance(reply, Ranking)
        return reply.order

    return reorder
