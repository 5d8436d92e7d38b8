"""What keeps a namespace's structures sound while several writers work on it: the build
lease, and the repairs that re-derive what a delete or an update removed (a mixin of
:class:`~memstrata.engine.engine.Engine`).

A removal logs, in its transaction, what each builder lost; the call that removed runs
the repairs at once when it can take the builder's lease, else the lease holder does
before its next batch (``late``). A batch may also hold an episode that is deleted while
the builder works on it (a model call in flight): the drain re-derives from that removal
itself once the step is done (:meth:`Upkeep._removed_meanwhile`). Either way, what was
made from the removed text meanwhile goes too (:func:`memstrata.erasure.after_late_repair`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memstrata.embed.cache import for_its_namespace
from memstrata.engine.contracts import Builder, Context
from memstrata.engine.recipe import BuilderSpec
from memstrata.erasure import after_late_repair
from memstrata.errors import MemstrataError
from memstrata.models import Episode
from memstrata.store.base import RemovedEpisode, Repairs

if TYPE_CHECKING:
    import weakref
    from collections.abc import Awaitable, Callable

    from memstrata.engine.registry import Registry
    from memstrata.llm.base import LLMClient
    from memstrata.store.base import Store

logger = logging.getLogger("memstrata.engine")


class BuildBusyError(MemstrataError):
    """Another process holds the build lease of a namespace and builder."""


class Upkeep:
    """Mixin of :class:`~memstrata.engine.engine.Engine`: leases and repairs."""

    if TYPE_CHECKING:
        store: Store
        registry: Registry
        build_cfg: Any
        owner: str
        clock: Callable[[], float]
        sleep: Callable[[float], Awaitable[None]]
        _llm: Callable[[], LLMClient | None]
        _locks: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[str, str], asyncio.Lock]
        ]

        def context(self, namespace: str, tier: str | None = None) -> Context: ...
        def builders(self, name: str) -> list[Builder]: ...

    # leases -----------------------------------------------------------------------------
    def _local(self, namespace: str, builder: Builder) -> asyncio.Lock:
        locks = self._locks.setdefault(asyncio.get_running_loop(), {})
        key = (namespace, builder.name)
        if key not in locks:
            locks[key] = asyncio.Lock()
        return locks[key]

    async def _lease(
        self, namespace: str, builder: Builder, *, wait: bool, wait_s: float | None = None
    ) -> bool:
        cfg = self.build_cfg
        patience = cfg.wait_s if wait_s is None else wait_s
        deadline = self.clock() + patience
        while True:
            got = await asyncio.to_thread(
                self.store.acquire_lease, namespace, builder.name, self.owner, cfg.lease_s
            )
            if got or not wait:
                return got
            if self.clock() > deadline:
                holder = await asyncio.to_thread(self.store.lease_holder, namespace, builder.name)
                raise BuildBusyError(
                    f"another process ({holder}) is building {builder.name!r} in namespace "
                    f"{namespace!r}; waited {patience:.0f} s (build.wait_s)"
                )
            await self.sleep(min(1.0, patience / 10 or 0.1))

    # repairs ----------------------------------------------------------------------------
    @for_its_namespace
    async def repair(self, namespace: str, recipe: str, *, wait: bool = True) -> dict[str, int]:
        """Let each builder that lost episodes to a delete or update re-derive its
        records now (:meth:`Builder.repair`), under its lease. Returns the log entries
        still waiting per builder: another process holds its lease (its drain repairs
        them before its next batch) or no installed design provides it."""
        backlog = await asyncio.to_thread(self.store.repair_backlog, namespace)
        if not backlog:
            return {}
        ctx = self.context(namespace)
        for name in sorted(backlog):
            builder = self._builder_named(name, recipe)
            if builder is None:
                logger.warning("no installed design builds %r: its repairs wait", name)
                continue
            async with self._local(namespace, builder):
                try:
                    patience = self.build_cfg.repair_wait_s if wait else None
                    if not await self._lease(namespace, builder, wait=wait, wait_s=patience):
                        continue
                except BuildBusyError as exc:
                    logger.warning("repairs of %r wait for the lease holder: %s", name, exc)
                    continue
                try:
                    await self._repair(ctx, namespace, builder)
                finally:
                    await asyncio.to_thread(
                        self.store.release_lease, namespace, builder.name, self.owner
                    )
        return await asyncio.to_thread(self.store.repair_backlog, namespace)

    def _builder_named(self, name: str, recipe: str) -> Builder | None:
        """The builder called ``name``, with the parameters of the first recipe that
        uses it (``recipe`` first), else its defaults."""
        order = [recipe, *(r for r in self.registry.recipes if r != recipe)]
        for r in order:
            spec = self.registry.recipes.get(r)
            if spec is not None and any(b.name == name for b in spec.builders):
                return next(b for b in self.builders(r) if b.name == name)
        if name in self.registry.builders:
            return self.registry.builder(BuilderSpec(name=name))
        return None

    async def _repair(
        self, ctx: Context, namespace: str, builder: Builder, late: bool = False
    ) -> None:
        """Run the builder's logged repairs (lease held). ``late``: a drain's, for
        removals whose own call could not repair."""
        while True:
            work = await asyncio.to_thread(self.store.pending_repairs, namespace, builder.name)
            if not work:
                return
            await self._rederive(ctx, namespace, builder, work, late)
            await asyncio.to_thread(self.store.clear_repairs, namespace, work.ids)

    async def _rederive(
        self, ctx: Context, namespace: str, builder: Builder, work: Repairs, late: bool
    ) -> None:
        """One repair. If the LLM tier fails, the heuristic tier re-derives instead:
        removed text must not outlive its removal."""
        try:
            await builder.repair(ctx, namespace, work)
        except Exception as exc:
            if ctx.tier != "llm":
                raise
            logger.warning(
                "builder %s: llm repair failed (%s); re-deriving on the heuristic tier",
                builder.name,
                exc,
            )
            await builder.repair(ctx.with_tier("heuristic", None), namespace, work)
        if late:
            llm, removed = self._llm(), work.episodes
            await asyncio.to_thread(after_late_repair, self.store, llm, namespace, removed)

    async def _removed_meanwhile(
        self, ctx: Context, namespace: str, builder: Builder, page: Sequence[Episode]
    ) -> None:
        """After a step over ``page``: the episodes deleted while the builder had them (a
        delete logs repairs only for what was stored then, and what the step made from
        them came later). The builder re-derives from their removal, as from a logged
        one, and what the step made from their texts goes."""
        ids = [ep.id for ep in page]
        still = await asyncio.to_thread(self.store.existing_ids, namespace, ids)
        gone = [
            RemovedEpisode(
                id=ep.id,
                text=ep.text,
                speaker=ep.speaker,
                session=ep.session,
                seq=ep.seq,
                key=ep.key,
            )
            for ep in page
            if ep.id not in still
        ]
        if gone:
            await self._rederive(ctx, namespace, builder, Repairs(episodes=gone), late=True)
