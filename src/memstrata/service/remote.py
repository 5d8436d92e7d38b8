"""A client of ``memstrata serve`` with the verbs of :class:`~memstrata.memory.Memory`.

Code written against ``Memory`` moves to the service by changing the line that opens it:
``Memory.open("memory.db")`` becomes ``RemoteMemory("http://127.0.0.1:8765", key)``. The
verbs take the same arguments and return the same types (``tests/test_one_api.py``
compares the four classes); the service's errors come back as the same exceptions (an
unknown namespace is :class:`NamespaceNotFoundError`, a conflicting add
:class:`ConflictError`, ...). :class:`AsyncRemoteMemory` is the async core;
:class:`RemoteMemory` runs it on a loop of its own thread, and may be shared by threads.
"""

from __future__ import annotations

import asyncio
import json as _json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote, unquote

import aiohttp
from pydantic import Field
from yarl import URL

from memstrata.engine import Answer, BuildReport, ShowNode
from memstrata.errors import (
    ConfigError,
    ConflictError,
    EpisodeNotFoundError,
    InvalidInputError,
    MemstrataError,
    Misdirected,
    NamespaceNotFoundError,
    NotFound,
    Overloaded,
    RequestTimeout,
    StoreClosedError,
    StoreError,
)
from memstrata.ingest import EpisodeLike, decode_utf8, episode_fields
from memstrata.jobs import JobStatus
from memstrata.llm.types import LLMBackendError, LLMError
from memstrata.models import Episode, EpisodeIn, SearchResult
from memstrata.runner import Blocking, LoopThread, blocking
from memstrata.service import keys
from memstrata.service.limits import MAX_EPISODES, MAX_IDS, MAX_QUERIES
from memstrata.store import AddReport, PreparedEpisode, SearchFilters
from memstrata.store.base import DeleteReport, EpisodeVersion
from memstrata.updates import KEEP, Keep
from memstrata.verbs import EpisodeIds, EpisodePage, check_page, episode_ids, one_id

#: episodes ``get`` asks for at once (one request each): a long list must not take the
#: service's whole capacity (it answers 429 past ``--max-inflight``)
GET_AT_ONCE = 8


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
        """Close the connections to the service."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _path(self, namespace: str | None, *rest: str) -> str:
        """A namespace path, each name one percent-encoded segment (``/`` included), the
        shape the service reads unambiguously (docs/service.md, Names with "/")."""
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
    async def add(
        self,
        text: str | bytes,
        *,
        namespace: str | None = None,
        id: str | None = None,
        speaker: str | None = None,
        role: str | None = None,
        occurred_at: datetime | str | None = None,
        session: str | None = None,
        metadata: dict[str, Any] | None = None,
        replace: bool = False,
        at: datetime | str | None = None,
    ) -> Episode:
        """Remember one piece of text; returns the stored episode. An ``id`` stored with
        the same content is a no-op; with other content :class:`ConflictError`, unless
        ``replace``. ``at`` is ``occurred_at`` as import lines name it."""
        item: dict[str, Any] = dict(text=text, id=id, speaker=speaker, role=role, at=at)
        item.update(occurred_at=occurred_at, session=session, metadata=metadata or {})
        ns = namespace or self.namespace
        report = await self.add_many([item], namespace=ns, replace=replace)
        if report.conflicts:
            raise ConflictError(report.conflicts, ns)
        stored = (report.added or report.existing or report.updated)[0]
        found = await self.get(stored, namespace=ns)
        if not found:  # deleted by another caller meanwhile
            raise EpisodeNotFoundError(stored, ns)
        return found[0]

    async def add_many(
        self,
        items: Iterable[EpisodeLike],
        *,
        namespace: str | None = None,
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
        replace: bool = False,
    ) -> RemoteAddReport:
        """Remember many episodes (strings, ``EpisodeIn`` or mappings shaped like import
        lines), one request per batch of ``batch_size`` (each batch all or nothing on the
        service; ``progress`` hears of each). Every item is read before the first request:
        an unknown key or text that is not UTF-8 stops the call with nothing sent."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive int, got {batch_size!r}")
        episodes = []
        for i, item in enumerate(items):
            try:
                episodes.append(_wire(item))
            except InvalidInputError as exc:
                raise InvalidInputError(f"item {i}: {exc}") from exc
        size = min(batch_size, MAX_EPISODES)
        total = RemoteAddReport()
        for start in range(0, len(episodes), size):
            batch = episodes[start : start + size]
            body = {"episodes": batch, "replace": replace}
            data = await self._call("POST", self._path(namespace, "episodes"), json=body)
            report = RemoteAddReport.model_validate({**data, "jobs": []})
            for field in ("added", "existing", "conflicts", "updated"):
                getattr(total, field).extend(getattr(report, field))
            if data.get("job"):
                total.jobs.append(JobStatus.model_validate(data["job"]))
            if progress:
                progress(len(batch))
        return total

    async def update(
        self,
        id: str,
        text: str | bytes,
        *,
        namespace: str | None = None,
        speaker: str | None | Keep = KEEP,
        role: str | None | Keep = KEEP,
        occurred_at: datetime | str | None | Keep = KEEP,
        session: str | None | Keep = KEEP,
        metadata: dict[str, Any] | None | Keep = KEEP,
        keep_history: bool = True,
    ) -> Episode:
        """Correct a stored episode: the old version goes to :meth:`history` (or, with
        ``keep_history=False``, is erased with the earlier ones); context fields left
        out keep their stored values, ``None`` clears one.
        :class:`EpisodeNotFoundError` when ``id`` is not stored."""
        body: dict[str, Any] = {"text": decode_utf8(text) if isinstance(text, bytes) else text}
        given: dict[str, Any] = dict(speaker=speaker, role=role, session=session)
        given.update(occurred_at=occurred_at, metadata=metadata)
        body.update({k: _plain(v) for k, v in given.items() if v is not KEEP})
        if not keep_history:
            body["keep_history"] = False
        path = self._path(namespace, "episodes", one_id(id))
        return Episode.model_validate(await self._call("PUT", path, json=body))

    async def delete(self, ids: EpisodeIds, *, namespace: str | None = None) -> DeleteReport:
        """Delete episodes by id (a bare string is one id); the count removed, whose
        ``missing`` names the given ids that were not stored."""
        wanted = episode_ids(ids)
        path = self._path(namespace, "episodes")
        if not wanted:  # nothing to delete, but an unknown namespace still says so
            await self._call("GET", path, params={"limit": ["1"]})
            return DeleteReport(0)
        deleted, missing = 0, []
        for start in range(0, len(wanted), MAX_IDS):  # ids travel in the URL
            chunk = wanted[start : start + MAX_IDS]
            data = await self._call("DELETE", path, params={"id": chunk})
            deleted += int(data["deleted"])
            missing += data["missing"]
        return DeleteReport(deleted, missing)

    async def delete_namespace(self, namespace: str) -> int:
        """Delete the namespace named and everything in it; the episodes it held."""
        if not isinstance(namespace, str) or not namespace:
            raise InvalidInputError("delete_namespace needs the namespace's name")
        return int((await self._call("DELETE", self._path(namespace)))["deleted"])

    # reading ----------------------------------------------------------------------------
    async def get(self, ids: EpisodeIds, *, namespace: str | None = None) -> list[Episode]:
        """The stored episodes with these ids, in the order given (ids not stored are left
        out). A bare string is one id."""
        wanted = episode_ids(ids)
        room = asyncio.Semaphore(GET_AT_ONCE)

        async def one(id: str) -> Episode | None:
            async with room:
                try:
                    data = await self._call("GET", self._path(namespace, "episodes", id))
                except (NotFound, NamespaceNotFoundError):
                    return None
            return Episode.model_validate(data)

        found = await asyncio.gather(*(one(i) for i in dict.fromkeys(wanted)))
        by_id = {e.id: e for e in found if e is not None}
        return [by_id[i] for i in wanted if i in by_id]

    async def history(self, id: str, *, namespace: str | None = None) -> list[EpisodeVersion]:
        """The versions of episode ``id`` that updates replaced, oldest first."""
        path = self._path(namespace, "episodes", one_id(id), "history")
        data = await self._call("GET", path)
        return [EpisodeVersion.model_validate(v) for v in data["versions"]]

    async def search(
        self,
        query: str,
        *,
        namespace: str | None = None,
        k: int | None = None,
        recipe: str | None = None,
        filters: SearchFilters | None = None,
        max_tokens: int | None = -1,
        adaptive: bool = False,
    ) -> SearchResult:
        """Best hits for ``query``, each with its sources, fitted to a token budget
        (``max_tokens``: -1 for the service's, None for no limit); see ``Memory.search``."""
        body = _reading(k, recipe, filters, max_tokens, adaptive) | {"query": query}
        data = await self._call("POST", self._path(namespace, "search"), json=body)
        return SearchResult.model_validate(data)

    async def search_many(
        self,
        queries: list[str],
        *,
        namespace: str | None = None,
        k: int | None = None,
        recipe: str | None = None,
        filters: SearchFilters | None = None,
        max_tokens: int | None = -1,
        adaptive: bool = False,
    ) -> list[SearchResult]:
        """:meth:`search` for many queries at once (embedded together on the service)."""
        options = _reading(k, recipe, filters, max_tokens, adaptive)
        path = self._path(namespace, "search_many")
        out: list[SearchResult] = []
        for start in range(0, len(queries), MAX_QUERIES):
            body = options | {"queries": queries[start : start + MAX_QUERIES]}
            data = await self._call("POST", path, json=body)
            out += [SearchResult.model_validate(r) for r in data["results"]]
        return out

    async def ask(
        self,
        question: str,
        *,
        namespace: str | None = None,
        k: int | None = None,
        recipe: str | None = None,
        filters: SearchFilters | None = None,
        max_tokens: int | None = -1,
        adaptive: bool = False,
    ) -> Answer:
        """An answer citing episode ids, or ``abstained`` when memory does not hold it."""
        body = _reading(k, recipe, filters, max_tokens, adaptive) | {"question": question}
        return Answer.model_validate(
            await self._call("POST", self._path(namespace, "ask"), json=body)
        )

    async def show(self, name: str, *, namespace: str | None = None) -> list[ShowNode]:
        """What the designs hold under ``name`` (a category, an entity, ...)."""
        data = await self._call("GET", self._path(namespace, "show", name))
        return [ShowNode.model_validate(n) for n in data["nodes"]]

    async def namespaces(self) -> list[str]:
        """The namespaces that hold episodes and that the key reaches."""
        return list((await self._call("GET", "/namespaces"))["namespaces"])

    async def stats(self, namespace: str | None = None) -> dict[str, Any]:
        """Counts, the build queue per builder, LLM usage per stage (see ``Memory``)."""
        return dict(await self._call("GET", self._path(namespace, "stats")))

    async def recipes(self) -> list[dict[str, Any]]:
        """Every recipe the service knows: name, description, builders, routes, answerer."""
        return list((await self._call("GET", "/recipes"))["recipes"])

    # building ---------------------------------------------------------------------------
    async def build(
        self,
        namespace: str | None = None,
        *,
        recipe: str | None = None,
        tier: str | None = None,
        rebuild: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> list[BuildReport]:
        """Fold pending episodes in now, on the service; one report per builder.
        ``progress`` hears of each builder's episodes when the service answers."""
        body: dict[str, Any] = {"recipe": recipe, "tier": tier, "rebuild": rebuild}
        data = await self._call("POST", self._path(namespace, "build"), json=body)
        reports = [BuildReport.model_validate(r) for r in data["reports"]]
        for report in reports:
            if progress and report.episodes:
                progress(report.episodes)
        return reports

    async def retry(self, namespace: str | None = None, *, builder: str | None = None) -> int:
        """Queue failed enrichments again; returns how many episodes."""
        data = await self._call("POST", self._path(namespace, "retry"), json={"builder": builder})
        return int(data["queued"])

    # jobs (the service's only) ---------------------------------------------------------
    async def job(self, job_id: str) -> JobStatus:
        """Where a job stands; :class:`NotFound` when the service knows no such job for
        this key."""
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

    # last: in the class body below this name, ``list`` is the verb, not the type
    async def list(
        self,
        *,
        namespace: str | None = None,
        after: str | None = None,
        limit: int = 100,
        filters: SearchFilters | None = None,
    ) -> EpisodePage:
        """A page of the namespace's episodes in the order they were added, optionally
        filtered; ``after`` is the ``next`` of the previous page (an opaque cursor)."""
        check_page(limit, after)
        params: dict[str, list[str]] = {"limit": [str(limit)]}
        if after is not None:
            params["after"] = [after]
        if filters is not None:
            params["speaker"] = filters.speakers or []
            params["session"] = filters.sessions or []
            for name in ("since", "until"):
                if (when := getattr(filters, name)) is not None:
                    params[name] = [when.isoformat()]
        data = await self._call("GET", self._path(namespace, "episodes"), params=params)
        return EpisodePage.model_validate(data)


class RemoteMemory(Blocking):
    """The synchronous facade of :class:`AsyncRemoteMemory`: the same verbs, run on a loop
    of the client's own thread, so one client may be shared by many threads. Use
    ``with``, or call :meth:`close`."""

    _inner: AsyncRemoteMemory

    def __init__(
        self,
        url: str,
        key: str | None = None,
        *,
        namespace: str = "default",
        timeout: float = 60.0,
    ) -> None:
        inner = AsyncRemoteMemory(url, key, namespace=namespace, timeout=timeout)
        self._start(inner, LoopThread(lambda: StoreClosedError(inner.base_url)))

    @property
    def namespace(self) -> str:
        """The namespace the verbs use when given none."""
        return self._inner.namespace

    add = blocking(AsyncRemoteMemory.add)
    add_many = blocking(AsyncRemoteMemory.add_many)
    update = blocking(AsyncRemoteMemory.update)
    delete = blocking(AsyncRemoteMemory.delete)
    delete_namespace = blocking(AsyncRemoteMemory.delete_namespace)
    history = blocking(AsyncRemoteMemory.history)
    get = blocking(AsyncRemoteMemory.get)
    list = blocking(AsyncRemoteMemory.list)
    search = blocking(AsyncRemoteMemory.search)
    search_many = blocking(AsyncRemoteMemory.search_many)
    ask = blocking(AsyncRemoteMemory.ask)
    show = blocking(AsyncRemoteMemory.show)
    namespaces = blocking(AsyncRemoteMemory.namespaces)
    stats = blocking(AsyncRemoteMemory.stats)
    recipes = blocking(AsyncRemoteMemory.recipes)
    build = blocking(AsyncRemoteMemory.build)
    retry = blocking(AsyncRemoteMemory.retry)
    job = blocking(AsyncRemoteMemory.job)
    wait = blocking(AsyncRemoteMemory.wait)


class RemoteAddReport(AddReport):
    """An :class:`AddReport` with the jobs that build the episodes' structures (one per
    request that stored episodes of a recipe that builds)."""

    jobs: list[JobStatus] = Field(default_factory=list)


_ERRORS: dict[str, type[MemstrataError]] = {
    "invalid_input": InvalidInputError,
    "malformed_json": InvalidInputError,
    "invalid_request": InvalidInputError,
    "too_large": InvalidInputError,
    "invalid_config": ConfigError,
    "not_found": NotFound,
    "unauthorized": keys.Unauthorized,
    "forbidden": keys.Forbidden,
    "store_busy": StoreError,
    "store_unavailable": StoreError,
    "misdirected_request": Misdirected,
    "request_timeout": RequestTimeout,
    "too_many_requests": Overloaded,
    "llm_unavailable": LLMBackendError,
    "llm_bad_reply": LLMError,
}


def _error(status: int, body: bytes, path: str) -> MemstrataError:
    """The exception the service's JSON error stands for."""
    try:
        error = _json.loads(body)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        text = body[:200].decode("utf-8", "replace")
        return StoreError(f"the service answered {status}: {text}")
    segments = [unquote(p) for p in path.split("/")[2:]] or [""]  # namespace, the rest
    if code == "namespace_not_found":
        return NamespaceNotFoundError(segments[0])
    if code == "conflict":
        return ConflictError(list(error.get("ids", [])), segments[0])
    if code == "not_found" and segments[1:2] == ["episodes"] and len(segments) > 2:
        return EpisodeNotFoundError(segments[2], segments[0])
    if code == "invalid_request" and error.get("problems"):
        shown = "; ".join(f"{p['at']}: {p['problem']}" for p in error["problems"][:3])
        return InvalidInputError(f"{message} ({shown})")
    return _ERRORS.get(code, MemstrataError)(message)


def _reading(
    k: int | None,
    recipe: str | None,
    filters: SearchFilters | None,
    max_tokens: int | None,
    adaptive: bool,
) -> dict[str, Any]:
    """The options a search and an ask share, as the service's body takes them."""
    body: dict[str, Any] = {"k": k, "recipe": recipe, "adaptive": adaptive}
    body["max_tokens"] = max_tokens  # null is "no limit": sent as it is
    if filters is not None:
        body["filters"] = filters.model_dump(mode="json", exclude_none=True)
    return body


def _wire(item: EpisodeLike) -> dict[str, Any]:
    """One episode as the service's add takes it: the same keys ``add_many`` takes in
    process (``at`` read as ``occurred_at``; an unknown key refused), times as ISO text."""
    if isinstance(item, PreparedEpisode):
        raw: dict[str, Any] = item.model_dump(
            include={"text", "speaker", "role", "occurred_at", "session", "metadata"}
        )
        raw["id"] = item.external_id
    elif isinstance(item, EpisodeIn):
        raw = item.model_dump()
    elif isinstance(item, str | bytes):
        raw = {"text": item}
    elif isinstance(item, Mapping):
        raw = episode_fields(item)[0]
    else:
        raise InvalidInputError(f"an episode is text, EpisodeIn or a mapping, not {item!r}")
    if isinstance(raw.get("text"), bytes):
        raw["text"] = decode_utf8(raw["text"])
    return {k: _plain(v) for k, v in raw.items() if v is not None}


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
