"""A namespace's episodes: add, page through, read, update, delete them; and the
namespace itself, which goes with all of them. An add or an update answers with the job
that follows the building of what rests on its episodes."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from memstrata.errors import NamespaceNotFoundError
from memstrata.jobs import JobStatus
from memstrata.memory import AsyncMemory
from memstrata.models import Episode
from memstrata.service.bodies import AddBody, IsoTime, UpdateBody
from memstrata.service.http import NotFound
from memstrata.service.limits import MAX_PAGE
from memstrata.service.routes.common import NS, Mem, read, write
from memstrata.store import SearchFilters

Ids = Annotated[list[str], Query(min_length=1, description="ids to delete")]

router = APIRouter()


@router.post(NS + "/episodes", tags=["episodes"], dependencies=[write])
async def add(namespace: str, body: AddBody, memory: Mem) -> dict[str, Any]:
    """Remember episodes: searchable once this returns. Ids already stored with the
    same content are ``existing`` (a retried request changes nothing); with other
    content ``conflicts``, left as they were unless ``replace``. ``job`` follows the
    building of their structures (null when the recipe builds none)."""
    items = [e.model_dump(exclude_none=True) for e in body.episodes]
    report = await memory.add_many(items, namespace=namespace, replace=body.replace)
    ids = report.added + report.updated + report.existing
    job = await memory.jobs.start(namespace, "add", ids)
    return {**report.model_dump(), "job": _job(job)}


@router.get(NS + "/episodes", tags=["episodes"], dependencies=[read])
async def list_episodes(
    namespace: str,
    memory: Mem,
    after: Annotated[
        str | None,
        Query(min_length=1, max_length=200, description="the `next` of the previous page"),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    speaker: Annotated[list[str] | None, Query()] = None,
    session: Annotated[list[str] | None, Query()] = None,
    since: Annotated[IsoTime | None, Query()] = None,
    until: Annotated[IsoTime | None, Query()] = None,
) -> dict[str, Any]:
    """Episodes in the order they were added, a page at a time, optionally filtered
    (speakers, sessions, a time window); ``next`` is an opaque cursor for the next
    page (null on the last), good in this namespace only."""
    where = SearchFilters(speakers=speaker, sessions=session, since=since, until=until)
    page = await memory.list(namespace=namespace, after=after, limit=limit, filters=where)
    return {"episodes": [_out(e) for e in page.episodes], "next": page.next}


@router.get(NS + "/episodes/{id:segment}/history", tags=["episodes"], dependencies=[read])
async def history(namespace: str, id: str, memory: Mem) -> dict[str, Any]:
    """The versions updates replaced, oldest first. The path is the id's own segment
    (a "/" in it sent as %2F) followed by ``/history``."""
    return await _show(memory, namespace, id, history=True)


@router.get(NS + "/episodes/{id:segment}", tags=["episodes"], dependencies=[read])
async def get(namespace: str, id: str, memory: Mem) -> dict[str, Any]:
    """One episode; its id is one path segment, a "/" in it sent as %2F."""
    return await _show(memory, namespace, id, history=False)


@router.put(NS + "/episodes/{id:segment}", tags=["episodes"], dependencies=[write])
async def update(namespace: str, id: str, body: UpdateBody, memory: Mem) -> dict[str, Any]:
    """Replace an episode's text (and any context given: a field left out keeps its
    value, null clears it); the old version stays in its history. ``job`` follows
    the rebuilding of what rests on it."""
    await _episode(memory, namespace, id)
    changes = {f: getattr(body, f) for f in body.model_fields_set - {"text", "keep_history"}}
    episode = await memory.update(
        id, body.text, namespace=namespace, keep_history=body.keep_history, **changes
    )
    job = await memory.jobs.start(namespace, "update", [id])
    return {**_out(episode), "job": _job(job)}


@router.delete(NS + "/episodes", tags=["episodes"], dependencies=[write])
async def delete(namespace: str, id: Ids, memory: Mem) -> dict[str, Any]:
    """Delete episodes (and what was derived from them alone); ``missing`` lists the
    ids that were not stored."""
    report = await memory.delete(id, namespace=namespace)
    return {"deleted": int(report), "missing": report.missing}


@router.delete(NS + "", tags=["namespaces"], dependencies=[write])
async def delete_namespace(namespace: str, memory: Mem) -> dict[str, Any]:
    """Delete the namespace and everything in it; the number of episodes it held."""
    return {"deleted": await memory.delete_namespace(namespace)}


def _job(job: JobStatus | None) -> dict[str, Any] | None:
    return None if job is None else job.model_dump(mode="json")


async def _episode(memory: AsyncMemory, namespace: str, id: str) -> Episode:
    found = await memory.get(id, namespace=namespace)
    if not found:
        if namespace not in await memory.namespaces():
            raise NamespaceNotFoundError(namespace)
        raise NotFound(f"no episode {id!r} in namespace {namespace!r}")
    return found[0]


async def _show(memory: AsyncMemory, namespace: str, id: str, history: bool) -> dict[str, Any]:
    """An episode, or the versions updates replaced of it."""
    episode = await _episode(memory, namespace, id)
    if not history:
        return _out(episode)
    versions = await memory.history(id, namespace=namespace)
    return {"versions": [v.model_dump(mode="json") for v in versions]}


def _out(episode: Episode) -> dict[str, Any]:
    """An episode as the service shows it: without the store's key, a counter of every
    namespace's writes whose gaps would tell one tenant of another's."""
    return episode.model_dump(mode="json", exclude={"key"})
