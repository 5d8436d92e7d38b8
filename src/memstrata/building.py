"""Building what the recipes derive from episodes: ``build`` and ``retry`` now, or the queue
worker (a mixin of :class:`~memstrata.AsyncMemory`; ``work`` and the background worker
run in the process that holds the store, so they are local-only verbs)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from memstrata.engine import BuildReport, WorkerReport

if TYPE_CHECKING:
    from memstrata.config import Config
    from memstrata.engine import Engine
    from memstrata.engine.worker import Worker
    from memstrata.store import Store

Progress = Callable[[int], None]


class Building:
    """Mixin of :class:`~memstrata.memory.AsyncMemory`: the building verbs."""

    if TYPE_CHECKING:
        config: Config
        store: Store
        engine: Engine
        worker: Worker

        def _ns(self, namespace: str | None) -> str: ...
        async def _known(self, namespace: str) -> str: ...

    async def build(
        self,
        namespace: str | None = None,
        *,
        recipe: str | None = None,
        tier: str | None = None,
        rebuild: bool = False,
        progress: Progress | None = None,
        stop: asyncio.Event | None = None,
    ) -> list[BuildReport]:
        """Fold every pending episode into the recipe's builders (one report each); only
        new episodes are processed unless ``rebuild``. Without an LLM the tier is
        ``heuristic``. Waits for a build another process is running (``build.wait_s``).
        Setting ``stop`` (from a signal handler, say) ends the build after its current
        batch; the reports then say ``stopped`` and the rest stays queued."""
        ns = await self._known(self._ns(namespace))
        name = recipe or self.config.recipe
        return await self.engine.build(
            ns, name, tier=tier, rebuild=rebuild, progress=progress, stop=stop
        )

    async def retry(self, namespace: str | None = None, *, builder: str | None = None) -> int:
        """Make failed enrichments retryable now; returns how many episodes were queued."""
        ns = await self._known(self._ns(namespace))
        return await asyncio.to_thread(self.store.retry_failed, ns, builder)

    async def work(
        self,
        *,
        recipe: str | None = None,
        namespaces: list[str] | None = None,
        once: bool = True,
        on_step: Callable[[str, int], None] | None = None,
    ) -> WorkerReport:
        """Run the queue worker in this task (``once``: until nothing is pending)."""
        return await self.worker.run(
            recipe=recipe, namespaces=namespaces, once=once, on_step=on_step
        )

    def start_worker(self, *, recipe: str | None = None) -> asyncio.Task[WorkerReport]:
        """Run the queue worker in the background until :meth:`stop_worker` or close."""
        return self.worker.start(recipe)

    def request_stop(self) -> None:
        """Stop a running worker after its current batch (safe from a signal handler)."""
        self.worker.stop.set()

    async def stop_worker(self) -> WorkerReport | None:
        """Stop the background worker after its current batch; its report, or None."""
        return await self.worker.halt()
