"""Jobs: what an add or update left to build, and how far the builders have got.

A job is a list of episodes and the builders of a recipe, made when the episodes are
committed. Its state is never stored: it is read from the store's build marks each time,
so it says exactly what the marks say. A worker killed in the middle of a job leaves
episodes without a done mark; the job reads ``running`` (or ``queued``) until a worker
takes the queue over and finishes, and never ``succeeded`` for work that was not done.
A failed enrichment never hides an episode: it is searchable from the moment it is
committed, whatever its job says.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from memstrata.store.base import JobRecord

if TYPE_CHECKING:
    from memstrata.memory import AsyncMemory

State = Literal["queued", "running", "succeeded", "failed", "removed"]
#: states after which nothing changes by itself (``failed`` changes on a ``retry``)
FINAL: frozenset[str] = frozenset({"succeeded", "failed", "removed"})


class JobFailure(BaseModel):
    episode: str
    builder: str
    status: Literal["failed", "dead"] = Field(
        description="failed: tried again later; dead: attempts used up, until a retry"
    )
    attempts: int
    error: str


class JobStatus(BaseModel):
    """Where a job stands. ``steps`` are (episode, builder) pairs; ``done + failed + dead
    + queued == steps``."""

    id: str
    namespace: str
    kind: str
    recipe: str
    state: State
    message: str
    episodes: int = Field(description="episodes the job covered when made")
    removed: int = Field(description="of them, deleted since (no longer to build)")
    steps: int
    done: int
    failed: int = Field(description="steps that failed and will be tried again")
    dead: int = Field(description="steps that failed every attempt")
    queued: int
    progress: float = Field(description="done / steps (1.0 when there is nothing to do)")
    builders: dict[str, dict[str, int]]
    next_retry_at: datetime | None = None
    failures: list[JobFailure] = Field(default_factory=list)
    created_at: str

    @property
    def final(self) -> bool:
        return self.state in FINAL


def new_id() -> str:
    return "job_" + secrets.token_hex(8)


async def start(
    memory: AsyncMemory, namespace: str, kind: str, ids: Sequence[str], recipe: str | None = None
) -> JobStatus | None:
    """A job over the stored episodes among ``ids``, for the builders of ``recipe`` (the
    memory's default); None when the recipe builds nothing or no id is stored."""
    name = recipe or memory.config.recipe
    builders = [b.name for b in memory.engine.builders(name)]
    if not builders or not ids:
        return None
    job_id = new_id()
    count = await asyncio.to_thread(
        memory.store.add_job, namespace, job_id, kind, name, builders, list(ids)
    )
    return await status(memory, job_id) if count else None


async def status(memory: AsyncMemory, job_id: str) -> JobStatus | None:
    """The job's state now, or None when no such job is known."""
    record = await asyncio.to_thread(memory.store.job, job_id)
    if record is None:
        return None
    busy = False
    if record.present:
        for builder in record.builders:
            holder = await asyncio.to_thread(memory.store.lease_holder, record.namespace, builder)
            busy = busy or holder is not None
    return judge(record, busy)


async def follow(
    memory: AsyncMemory,
    job_id: str,
    interval_s: float = 0.5,
    *,
    heartbeat_s: float | None = None,
    check: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[JobStatus | None]:
    """The job's state each time it changes, ending with a final one (or when the job is
    gone); with ``heartbeat_s``, None after that long without a change. ``check`` is
    awaited before each look (the service's key check: what it raises ends the stream)."""
    last: dict[str, object] | None = None
    quiet = 0.0
    while True:
        if check is not None:
            await check()
        now = await status(memory, job_id)
        if now is None:
            return
        seen = now.model_dump(exclude={"message"})
        if seen != last:
            yield now
            last, quiet = seen, 0.0
        elif heartbeat_s is not None and quiet >= heartbeat_s:
            yield None
            quiet = 0.0
        if now.final:
            return
        await asyncio.sleep(interval_s)
        quiet += interval_s


def judge(record: JobRecord, building: bool = False) -> JobStatus:
    """The state the marks support (``building``: a builder of the job holds a lease)."""
    per = {b: record.marks.get(b, {}) for b in record.builders}
    steps = record.present * len(record.builders)
    done = sum(m.get("done", 0) for m in per.values())
    failed = sum(m.get("failed", 0) for m in per.values())
    dead = sum(m.get("dead", 0) for m in per.values())
    queued = steps - done - failed - dead
    state: State
    if record.present == 0 and record.episodes:
        state, message = "removed", "its episodes were deleted before they were built"
    elif done == steps:
        state, message = "succeeded", f"built: {steps} of {steps} steps done"
    elif queued == 0 and failed == 0:
        state = "failed"
        episodes = len({f.episode for f in record.failures if f.status == "dead"})
        message = (
            f"{dead} of {steps} steps failed every attempt ({episodes}+ episodes); the "
            "episodes stay stored and searchable; `retry` queues them again"
        )
    elif done + failed + dead == 0 and not building:
        state, message = "queued", f"waiting for a worker: {steps} steps to do"
    else:
        state = "running"
        message = f"{done} of {steps} steps done"
        if failed:
            message += f"; {failed} failed and will be tried again"
        if dead:
            message += f"; {dead} failed every attempt"
    failures = [
        JobFailure(
            episode=f.episode,
            builder=f.builder,
            status="dead" if f.status == "dead" else "failed",
            attempts=f.attempts,
            error=f.error,
        )
        for f in record.failures
    ]
    retry = record.next_retry_at
    return JobStatus(
        id=record.id,
        namespace=record.namespace,
        kind=record.kind,
        recipe=record.recipe,
        state=state,
        message=message,
        episodes=record.episodes,
        removed=record.episodes - record.present,
        steps=steps,
        done=done,
        failed=failed,
        dead=dead,
        queued=queued,
        progress=round(done / steps, 4) if steps else 1.0,
        builders={b: {**m, "queued": record.present - sum(m.values())} for b, m in per.items()},
        next_retry_at=datetime.fromtimestamp(retry, UTC) if retry and failed else None,
        failures=failures,
        created_at=record.created_at,
    )


class Jobs:
    """The jobs of one memory (``AsyncMemory.jobs``): what a service starts after an add
    or an update and reports on, read from the store's build marks off the event loop."""

    def __init__(self, memory: AsyncMemory) -> None:
        self._memory = memory

    async def start(
        self, namespace: str, kind: str, ids: Sequence[str], recipe: str | None = None
    ) -> JobStatus | None:
        """A job over the stored episodes among ``ids`` (:func:`start`)."""
        return await start(self._memory, namespace, kind, ids, recipe)

    async def status(self, job_id: str) -> JobStatus | None:
        """The job's state now, or None when no such job is known."""
        return await status(self._memory, job_id)

    def follow(
        self,
        job_id: str,
        interval_s: float = 0.5,
        *,
        heartbeat_s: float | None = None,
        check: Callable[[], Awaitable[None]] | None = None,
    ) -> AsyncIterator[JobStatus | None]:
        """The job's state each time it changes (:func:`follow`)."""
        return follow(self._memory, job_id, interval_s, heartbeat_s=heartbeat_s, check=check)


__all__ = [
    "FINAL",
    "JobFailure",
    "JobStatus",
    "Jobs",
    "follow",
    "judge",
    "new_id",
    "start",
    "status",
]
