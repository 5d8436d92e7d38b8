"""Jobs: where the building an add or an update started stands, once or as a stream of
server-sent events. Another tenant's job does not exist for a key."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from memstrata.errors import MemstrataError
from memstrata.jobs import JobStatus
from memstrata.memory import AsyncMemory
from memstrata.service.http import NotFound, describe
from memstrata.service.routes.common import Mem, caller, key_of, read

#: how often an event stream looks at its job
SSE_POLL_S = 0.25
#: how long an event stream may stay silent before it sends a comment
SSE_HEARTBEAT_S = 15.0

router = APIRouter()


@router.get("/v1/jobs/{job_id}", tags=["jobs"], dependencies=[read])
async def job_status(request: Request, job_id: str, memory: Mem) -> dict[str, Any]:
    """Where a job stands: ``queued``, ``running``, ``succeeded``, ``failed`` (with
    each failure's reason) or ``removed``; read from the build marks, so it says
    ``succeeded`` only once every step is done."""
    return (await _visible(request, memory, job_id)).model_dump(mode="json")


@router.get("/v1/jobs/{job_id}/events", tags=["jobs"], dependencies=[read])
async def job_events(request: Request, job_id: str, memory: Mem) -> StreamingResponse:
    """Server-sent events: a ``job`` event each time the job's state changes, the
    last one final (``succeeded``, ``failed`` or ``removed``); comments keep the
    connection alive meanwhile. The key is checked again at each look: the stream of
    a key revoked meanwhile ends with an ``error`` event."""
    job = await _visible(request, memory, job_id)
    keyed = key_of(request) is not None

    async def still_allowed() -> None:
        now = await caller(request, "read")
        if keyed and (now is None or not now.reaches(job.namespace)):
            raise NotFound(f"no job {job_id!r}")

    follow = memory.jobs.follow(
        job_id, SSE_POLL_S, heartbeat_s=SSE_HEARTBEAT_S, check=still_allowed
    )
    return StreamingResponse(
        _events(request, follow),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache"},
    )


async def _visible(request: Request, memory: AsyncMemory, job_id: str) -> JobStatus:
    key = key_of(request)
    job = await memory.jobs.status(job_id)
    if job is None or (key is not None and not key.reaches(job.namespace)):
        raise NotFound(f"no job {job_id!r}")  # another tenant's job does not exist
    return job


async def _events(request: Request, follow: AsyncIterator[JobStatus | None]) -> AsyncIterator[str]:
    """The stream's text: a ``job`` event per state, a comment per silence, and an
    ``error`` event for what ends it early."""
    try:
        async for now in follow:
            if await request.is_disconnected():
                return
            if now is None:
                yield ": still there\n\n"  # a comment: keeps proxies from closing
            else:
                yield f"event: job\ndata: {json.dumps(now.model_dump(mode='json'))}\n\n"
    except MemstrataError as exc:
        _, code, message = describe(exc)
        yield f"event: error\ndata: {json.dumps({'code': code, 'message': message})}\n\n"
