"""The queue worker: folds pending episodes into a recipe's builders, namespace by namespace.

The queue is the store's: every (episode, builder) pair without a done mark. The worker
needs no state of its own, so killing it at any moment loses nothing: each builder step
is one transaction, and a restarted worker takes over the dead one's leases (same host:
at once; elsewhere: when the lease expires) and continues.

A stop request (the ``stop`` event: a signal handler, ``stop_worker``) is honoured
between two batches, also in the middle of a namespace's drain, so a worker over a long
backlog stops within one batch; its report then says what is still queued.

When a round finds nothing to fold in, the worker also writes the search indexes of
large namespaces that are missing or behind (``Store.build_indexes``: a SQLite
namespace's vector graph and full-text index), so that one-shot commands, which never
build them, find them written. A stop request abandons such a build at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

from memstrata.engine.engine import Engine

logger = logging.getLogger("memstrata.worker")


class WorkerReport(BaseModel):
    """What a worker run did: episodes folded in and failed, per namespace."""

    rounds: int = 0
    episodes: int = 0
    failed: int = 0
    namespaces: dict[str, int] = Field(default_factory=dict)
    errors: list[str] = Field(default_factory=list)
    stopped: bool = Field(
        default=False, description="ended by a stop request, not by running out of work"
    )
    queued: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="when stopped (or the LLM unreachable): episodes still queued per "
        "namespace and builder (zeros left out)",
    )
    unfinished: list[tuple[str, str]] = Field(
        default_factory=list,
        description="(namespace, builder) whose finishing step the stop left for the next run",
    )
    indexes: dict[str, list[str]] = Field(
        default_factory=dict, description="search indexes written, per namespace"
    )
    unreachable: str | None = Field(
        default=None,
        description="the LLM server could not be reached at the last round: why (the "
        "episodes not tried stay queued; a worker that goes on tries again after "
        "llm.breaker_cooldown_s)",
    )


async def run_worker(
    engine: Engine,
    recipe: str,
    *,
    namespaces: Sequence[str] | None = None,
    once: bool = False,
    stop: asyncio.Event | None = None,
    poll_s: float = 1.0,
    tier: str | None = None,
    on_step: Callable[[str, int], None] | None = None,
    rotate: int = 0,
) -> WorkerReport:
    """Drain until stopped (or, with ``once``, until nothing is pending).

    Episodes whose retry time has not come yet wait for a later round; ``once`` stops
    when a round folds nothing in, so it leaves them for the next run. ``on_step`` hears
    of every batch written: (namespace, episodes). ``rotate`` starts each round that
    many namespaces in, so that several workers of one process begin on different ones.
    """
    report = WorkerReport()
    stop = stop or asyncio.Event()
    builders = engine.builders(recipe)
    names: list[str] = list(namespaces or [])
    while not stop.is_set():
        report.rounds += 1
        names = list(namespaces) if namespaces else await asyncio.to_thread(engine.store.namespaces)
        if names and rotate:
            names = names[rotate % len(names) :] + names[: rotate % len(names)]
        done = 0
        report.unreachable = None
        for ns in names:
            if stop.is_set() or report.unreachable:
                break
            progress = None if on_step is None else functools.partial(on_step, ns)
            ctx = engine.context(ns, tier, progress)
            for builder in builders:
                if stop.is_set() or report.unreachable:
                    break
                step = await engine.drain(ctx, ns, builder, wait=False, describe=False, stop=stop)
                report.unreachable = step.unreachable
                done += step.episodes
                report.episodes += step.episodes
                report.failed += step.failed
                report.errors.extend(step.errors[:5])
                if step.episodes:
                    report.namespaces[ns] = report.namespaces.get(ns, 0) + step.episodes
                if step.stopped:
                    report.unfinished.append((ns, builder.name))
        if done == 0:
            await _write_indexes(engine, names, stop, report)
        if once and (done == 0 or report.unreachable):
            break
        if done == 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=poll_s)
    if stop.is_set() or report.unreachable:
        report.stopped = stop.is_set()
        if not names:
            names = await asyncio.to_thread(engine.store.namespaces)
        report.queued = await asyncio.to_thread(engine.queued, names, recipe)
    return report


async def _write_indexes(
    engine: Engine, names: Sequence[str], stop: asyncio.Event, report: WorkerReport
) -> None:
    """Bring each namespace's search indexes up to date (cheap when they are: a small
    namespace is seen as small without reading it), until ``stop``."""
    model = engine.base.embedder.model_id
    for ns in names:
        if stop.is_set():
            return
        build = asyncio.ensure_future(asyncio.to_thread(engine.store.build_indexes, ns, model))
        halt = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({build, halt}, return_when=asyncio.FIRST_COMPLETED)
            if not build.done():
                await asyncio.to_thread(engine.store.abandon_builds)
            got = await build
        except Exception as exc:  # the folding goes on; searches read all of it meanwhile
            logger.warning("namespace %s: its search indexes were not written: %s", ns, exc)
            continue
        finally:
            halt.cancel()
        if got.built:
            report.indexes.setdefault(ns, []).extend(got.built)
            logger.info("namespace %s: wrote its %s", ns, ", ".join(got.built))


class Worker:
    """One memory's queue worker: run in the caller's task, or as a background task."""

    def __init__(self, engine: Engine, recipe: str, poll_s: float) -> None:
        self.engine = engine
        self.recipe = recipe
        self.poll_s = poll_s
        self.stop = asyncio.Event()
        self._task: asyncio.Task[WorkerReport] | None = None

    async def run(
        self,
        *,
        recipe: str | None = None,
        namespaces: Sequence[str] | None = None,
        once: bool = True,
        on_step: Callable[[str, int], None] | None = None,
    ) -> WorkerReport:
        self.stop.clear()
        return await run_worker(
            self.engine,
            recipe or self.recipe,
            namespaces=namespaces,
            once=once,
            stop=self.stop,
            poll_s=self.poll_s,
            on_step=on_step,
        )

    def start(self, recipe: str | None = None) -> asyncio.Task[WorkerReport]:
        if self._task is None or self._task.done():
            self.stop.clear()  # now, so that a stop asked before the task runs holds
            self._task = asyncio.create_task(
                run_worker(self.engine, recipe or self.recipe, stop=self.stop, poll_s=self.poll_s)
            )
        return self._task

    async def halt(self) -> WorkerReport | None:
        """Stop the background task after its current batch; its report (``stopped``,
        what is still ``queued``), or None when no task runs."""
        if self._task is None:
            return None
        self.stop.set()
        task, self._task = self._task, None
        return await task
