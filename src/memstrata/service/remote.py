"""A client of ``memstrata serve`` with the verbs of :class:`~memstrata.memory.Memory`.

Code written against ``Memory`` moves to the service by changing the line that opens it:
``Memory.open("memory.db")`` becomes ``RemoteMemory("http://127.0.0.1:8765", key)``. The
verbs take the same arguments and return the same types; the service's errors come back
as the same exceptions (an unknown namespace is :class:`NamespaceNotFoundError`, a
conflicting add :class:`ConflictError`, ...). :class:`AsyncRemoteMemory` is the async
core; :class:`RemoteMemory` runs it on its own event loop.
"""

from __future__ import annotations

import asyncio
import json as _json
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, unquote

import aiohttp
from yarl import URL

from memstrata.engine import Answer, BuildReport, ShowNode
from memstrata.errors import (
    ConfigError,
    ConflictError,
    InvalidInputError,
    MemstrataError,
    NamespaceNotFoundError,
    StoreError,
)
from memstrata.jobs import JobStatus
from memstrata.models import Episode, SearchResult
from memstrata.service import keys
from memstrata.store import AddReport, SearchFilters
from memstrata.store.base import DeleteReport, EpisodeVersion


class AsyncRemoteMemory:
    """The service at ``url`` (``http://host:port``), as ``key`` sees it.

    Requests go through one aiohttp session with keep-alive connections, made on the
    first call (a session belongs to the event loop it was made on). aiohttp rather
    than httpx, and without reading proxy settings from the environment at each request
    (which cost 1 to 1.6 ms a call here): the client's own work is most of what REST
    adds to a search (docs/service.md, Load). Point ``url`` at a proxy to go through it."""

    def __init__(
        self,
        url: str,
        key: str | None = None,
        *,
        namespace: str = "default",
        timeout: float = 60.0,
    ) -> None:
        self.namespace = namespace
        self.base_url = url.rstrip("/") + "/v1"
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> AsyncRemoteMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _path(self, namespace: str | None, *rest: str) -> str:
        parts = (namespace or self.namespace, *rest)
        return "/namespaces/" + "/".join(quote(p, safe="") for p in parts)

    async def _call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Sequence[str]] | None = None,
    ) -> Any:
        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self._headers, timeout=self._timeout)
        query = [(name, v) for name, values in (params or {}).items() for v in values]
        url = URL(self.base_url + path, encoded=True)  # the path is quoted already
        try:
            async with self._session.request(
                method, url.with_query(query) if query else url, json=json
            ) as response:
                status, body = response.status, await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise StoreError(f"cannot reach the service at {self.base_url}: {exc!r}") from exc
        if status >= 400:
            raise _error(status, body, path)
        return _json.loads(body)

    # writing ----------------------------------------------------------------------------
    async def add(self, text: str, *, namespace: str | None = None, **fields: Any) -> str:
        """Remember one episode; its id. A stored id with other content raises
        :class:`ConflictError` (unless ``replace=True``), as ``Memory.add`` does."""
        replace = bool(fields.pop("replace", False))
        report = await self.add_many(
            [{"text": text, **fields}], namespace=namespace, replace=replace
        )
        if report.conflicts:
            raise ConflictError(report.conflicts, namespace or self.namespace)
        return (report.added or report.existing or report.updated)[0]

    async def add_many(
        self,
        items: Iterable[str | Mapping[str, Any]],
        *,
        namespace: str | None = None,
        replace: bool = False,
    ) -> RemoteAddReport:
        episodes = [{"text": i} if isinstance(i, str) else _json_ready(i) for i in items]
        body = {"episodes": episodes, "replace": replace}
        return RemoteAddReport.model_validate(
            await self._call("POST", self._path(namespace, "episodes"), json=body)
        )

    async def job(self, job_id: str) -> JobStatus:
        """Where a job stands; a :class:`MemstrataError` when the service knows no such
        job for this key."""
        return JobStatus.model_validate(await self._call("GET", f"/jobs/{quote(job_id)}"))

    async def wait(self, job_id: str, timeout_s: float = 600.0, poll_s: float = 0.5) -> JobStatus:
        """The job once it is final (succeeded, failed or removed), or as it stands when
        ``timeout_s`` has passed."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            job = await self.job(job_id)
            if job.final or asyncio.get_running_loop().time() >= deadline:
                return job
            await asyncio.sleep(poll_s)

    async def update(self, id: str, text: str, *, namespace: str | None = None) -> Episode:
        data = await self._call("PUT", self._path(namespace, "episodes", id), json={"text": text})
        return Episode.model_validate(data)

    async def delete(
        self, ids: list[str] | None = None, *, namespace: str | None = None
    ) -> DeleteReport:
        if ids is None:
            data = await self._call("DELETE", self._path(namespace))
            return DeleteReport(data["deleted"])
        path = self._path(namespace, "episodes")
        data = await self._call("DELETE", path, params={"id": ids})
        return DeleteReport(data["deleted"], data["missing"])

    # reading ----------------------------------------------------------------------------
    async def get(self, ids: list[str], *, namespace: str | None = None) -> list[Episode]:
        """The stored episodes among ``ids`` (missing ones are left out, as ``Memory.get``)."""
        out = []
        for id in ids:
            try:
                data = await self._call("GET", self._path(namespace, "episodes", id))
            except _Missing:
                continue
            out.append(Episode.model_validate(data))
        return out

    async def history(self, id: str, *, namespace: str | None = None) -> list[EpisodeVersion]:
        data = await self._call("GET", self._path(namespace, "episodes", id, "history"))
        return [EpisodeVersion.model_validate(v) for v in data["versions"]]

    async def search(
        self,
        query: str,
        *,
        namespace: str | None = None,
        k: int | None = None,
        recipe: str | None = None,
        filters: SearchFilters | None = None,
    ) -> SearchResult:
        body = _body(query=query, k=k, recipe=recipe, filters=filters)
        data = await self._call("POST", self._path(namespace, "search"), json=body)
        return SearchResult.model_validate(data)

    async def ask(
        self,
        question: str,
        *,
        namespace: str | None = None,
        k: int | None = None,
        recipe: str | None = None,
        filters: SearchFilters | None = None,
    ) -> Answer:
        body = _body(question=question, k=k, recipe=recipe, filters=filters)
        return Answer.model_validate(
            await self._call("POST", self._path(namespace, "ask"), json=body)
        )

    async def show(self, name: str, *, namespace: str | None = None) -> list[ShowNode]:
        data = await self._call("GET", self._path(namespace, "show", name))
        return [ShowNode.model_validate(n) for n in data["nodes"]]

    async def namespaces(self) -> list[str]:
        return list((await self._call("GET", "/namespaces"))["namespaces"])

    async def stats(self, namespace: str | None = None) -> dict[str, Any]:
        return dict(await self._call("GET", self._path(namespace, "stats")))

    # building ---------------------------------------------------------------------------
    async def build(
        self, namespace: str | None = None, *, recipe: str | None = None, tier: str | None = None
    ) -> list[BuildReport]:
        data = await self._call(
            "POST", self._path(namespace, "build"), json=_body(recipe=recipe, tier=tier)
        )
        return [BuildReport.model_validate(r) for r in data["reports"]]

    async def retry(self, namespace: str | None = None) -> int:
        return int((await self._call("POST", self._path(namespace, "retry")))["queued"])


class RemoteMemory:
    """The synchronous facade of :class:`AsyncRemoteMemory` (its own event loop; not for
    use inside a running loop). Use ``with``, or call :meth:`close`."""

    def __init__(self, url: str, key: str | None = None, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._inner = AsyncRemoteMemory(url, key, **options)

    def __getattr__(self, name: str) -> Any:
        verb = getattr(self._inner, name)
        if not asyncio.iscoroutinefunction(verb):
            return verb

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._run(verb(*args, **kwargs))

        return call

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return self._loop.run_until_complete(coro)

    def __enter__(self) -> RemoteMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self._loop.is_closed():
            self._run(self._inner.close())
            self._loop.close()


class RemoteAddReport(AddReport):
    """An :class:`AddReport` with the job that builds the episodes' structures."""

    job: JobStatus | None = None


class _Missing(MemstrataError):
    """A 404 for an episode (not a namespace)."""


_ERRORS: dict[str, type[MemstrataError]] = {
    "invalid_input": InvalidInputError,
    "malformed_json": InvalidInputError,
    "invalid_request": InvalidInputError,
    "too_large": InvalidInputError,
    "invalid_config": ConfigError,
    "not_found": _Missing,
    "unauthorized": keys.Unauthorized,
    "forbidden": keys.Forbidden,
    "store_busy": StoreError,
    "store_unavailable": StoreError,
}


def _error(status: int, body: bytes, path: str) -> MemstrataError:
    """The exception the service's JSON error stands for."""
    try:
        error = _json.loads(body)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        text = body[:200].decode("utf-8", "replace")
        return StoreError(f"the service answered {status}: {text}")
    if code == "namespace_not_found":
        return NamespaceNotFoundError(unquote(path.split("/namespaces/", 1)[-1].split("/", 1)[0]))
    if code == "conflict":
        return ConflictError(list(error.get("ids", [])), "")
    return _ERRORS.get(code, MemstrataError)(message)


def _body(**fields: Any) -> dict[str, Any]:
    out = {}
    for name, value in fields.items():
        if value is None:
            continue
        out[name] = value.model_dump(mode="json") if hasattr(value, "model_dump") else value
    return out


def _json_ready(item: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(item)
    when = out.get("occurred_at")
    if when is not None and not isinstance(when, str):
        out["occurred_at"] = when.isoformat()
    return out
