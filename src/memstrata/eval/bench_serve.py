"""``memstrata bench serve``: a served store under loopback load, and what REST costs.

A real ``memstrata serve`` runs as a child process on a free loopback port, with this
process's code and the configuration the command would use (``--config``, MEMSTRATA_*).
Three phases on the same store, in one run:

* seed: synthetic chat turns (:func:`~memstrata.eval.bench_scale.synthetic_turns`:
  templated, nearly all distinct, so each one is embedded; repeated text would be served
  by the embedding cache and make adds look cheap) added over REST in batches;
* load: C clients share a fixed, shuffled list of R requests: adds of one new episode
  each (unique ids) and searches made of the seeded vocabulary. A request's latency runs
  from the call to its body read; a client takes no new request once the time bound is
  past. Then the store file is read directly: every add answered 2xx must be stored
  exactly once;
* overhead: Q queries one at a time, each over REST with ``AsyncRemoteMemory`` (the
  service's own client: a ``SearchResult`` back, as in-process), in this process (an
  ``AsyncMemory`` on the same file, called as the endpoint calls it), over REST on a
  plain socket (no client library) and over REST through ``httpx.AsyncClient``, in
  every order in turn so that drift and warm caches favour no side, after a warm-up.
  Beside them, the parts of the difference: a bare round trip (``GET /v1/health``,
  through the client and over the socket), the key check every namespace route makes
  first, encoding the result as the endpoint does, and decoding it in the client.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pydantic import TypeAdapter

import memstrata
from memstrata.config import Config
from memstrata.errors import MemstrataError
from memstrata.eval.bench_scale import synthetic_queries, synthetic_turns
from memstrata.eval.metrics import percentile
from memstrata.memory import AsyncMemory
from memstrata.models import SearchResult
from memstrata.service.remote import AsyncRemoteMemory
from memstrata.store import open_store

NAMESPACE = "bench-serve"
SEED_BATCH = 250
READY_S = 180.0  # the server imports FastAPI, the MCP SDK and opens the store
TIMEOUT_S = 120.0
TIMEOUT = httpx.Timeout(TIMEOUT_S)

#: the searches compared: over REST with RemoteMemory's client, in this process, over REST
#: on a plain socket, over REST through httpx.AsyncClient
SIDES = ("rest", "inprocess", "rest_bare", "rest_httpx")
#: the parts of the REST overhead timed beside them (see ``_overhead``)
PARTS = ("roundtrip", "key_check", "encode", "decode")

#: called at the start of a phase with its name and size; returns the "n more done" tick
Phases = Callable[[str, int], Callable[[int], None]]


@dataclass(frozen=True)
class Settings:
    clients: int = 16
    requests: int = 2000
    seconds: float = 300.0
    add_share: float = 0.3
    seed_episodes: int = 2000
    queries: int = 480
    warmup: int = 10
    k: int = 10
    namespace: str = NAMESPACE
    seed: int = 7


# the server -------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env() -> dict[str, str]:
    """This environment, with this process's copy of memstrata first on the path: the
    server measured runs the code that measures it."""
    env = dict(os.environ)
    root = str(Path(memstrata.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


class Server:
    """``memstrata serve`` as a child process; stopped (SIGTERM, then SIGKILL) on exit
    from the ``with`` block, an error's too."""

    def __init__(
        self, db: Path, log: Path, config: Path | None = None, server_args: Sequence[str] = ()
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        self.cmd = [sys.executable, "-m", "memstrata", "serve", "--db", str(db)]
        self.cmd += ["--port", str(self.port)]
        if config is not None:
            self.cmd += ["--config", str(config)]
        self.cmd += list(server_args)
        self.proc: subprocess.Popen[bytes] | None = None
        self.returncode: int | None = None

    def __enter__(self) -> Server:
        with self.log.open("wb") as out:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                self.cmd,
                env=child_env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + READY_S
        with httpx.Client(timeout=5.0, trust_env=False) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise MemstrataError(
                        f"the server exited ({self.proc.returncode}) before it was ready: "
                        f"{self.tail()}"
                    )
                try:
                    if http.get(f"{self.url}/ready").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
        raise MemstrataError(f"the server was not ready after {READY_S:.0f} s: {self.tail()}")

    def stop(self) -> None:
        if self.proc is None or self.returncode is not None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.returncode = self.proc.returncode

    def tail(self, chars: int = 2000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"


# figures ------------------------------------------------------------------------------------
def summary(ms: Sequence[float]) -> dict[str, float]:
    if not ms:
        return {"p50_ms": 0.0, "p95_ms": 0.0}
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 0.95), 2)}


@dataclass
class Verb:
    """What one verb's requests did under load."""

    count: int = 0
    ms: list[float] = field(default_factory=list)  # requests answered 2xx
    errors: Counter[str] = field(default_factory=Counter)  # by status or exception

    def record(self, outcome: int | str, ms: float) -> None:
        self.count += 1
        if isinstance(outcome, int) and 200 <= outcome < 300:
            self.ms.append(ms)
        else:
            self.errors[str(outcome)] += 1

    def report(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "ok": len(self.ms),
            **summary(self.ms),
            "errors": sum(self.errors.values()),
            "errors_by_status": dict(sorted(self.errors.items())),
        }


def bootstrap_ci(
    a: Sequence[float], b: Sequence[float], *, seed: int, rounds: int = 2000
) -> list[float]:
    """95 % interval of ``median(a) - median(b)``, resampling the queries (one query's
    times on both sides stay together): how far the overhead figure may move with
    another draw of queries on this machine."""
    rng = random.Random(seed)
    n = len(a)
    if n < 2:
        return [0.0, 0.0]
    diffs = []
    for _ in range(rounds):
        pick = [rng.randrange(n) for _ in range(n)]
        diffs.append(statistics.median(a[i] for i in pick) - statistics.median(b[i] for i in pick))
    diffs.sort()
    return [round(diffs[int(0.025 * rounds)], 2), round(diffs[int(0.975 * rounds) - 1], 2)]


def _jsonable(turn: dict[str, Any]) -> dict[str, Any]:
    at = turn.get("occurred_at")
    return {**turn, "occurred_at": at.isoformat()} if at is not None else turn


# phases -------------------------------------------------------------------------------------
async def _seed(
    http: httpx.AsyncClient, ns: str, turns: list[dict[str, Any]], tick: Callable[[int], None]
) -> None:
    for i in range(0, len(turns), SEED_BATCH):
        batch = turns[i : i + SEED_BATCH]
        r = await http.post(f"/namespaces/{ns}/episodes", json={"episodes": batch})
        if r.status_code != 200:
            raise MemstrataError(f"seeding failed: HTTP {r.status_code} {r.text[:500]}")
        tick(len(batch))


async def _load(
    http: httpx.AsyncClient,
    s: Settings,
    adds: list[dict[str, Any]],
    queries: list[str],
    tick: Callable[[int], None],
) -> dict[str, Any]:
    verbs = ["add"] * len(adds) + ["search"] * len(queries)
    random.Random(s.seed).shuffle(verbs)
    add_it, query_it, plan = iter(adds), iter(queries), iter(verbs)
    stats = {"add": Verb(), "search": Verb()}
    acked: list[str] = []  # ids of the adds answered 2xx
    failed: list[str] = []
    stopped_by_time = False
    start = time.perf_counter()
    deadline = start + s.seconds

    async def client() -> None:
        nonlocal stopped_by_time
        for verb in plan:  # shared: each request is taken by one client
            if time.perf_counter() >= deadline:
                stopped_by_time = True
                return
            body: dict[str, Any]
            if verb == "add":
                episode = next(add_it)
                path, body = f"/namespaces/{s.namespace}/episodes", {"episodes": [episode]}
            else:
                path = f"/namespaces/{s.namespace}/search"
                body = {"query": next(query_it), "k": s.k}
            t0 = time.perf_counter()
            outcome: int | str
            try:
                outcome = (await http.post(path, json=body)).status_code
            except httpx.HTTPError as exc:
                outcome = type(exc).__name__
            stats[verb].record(outcome, 1000 * (time.perf_counter() - t0))
            if verb == "add":
                ok = isinstance(outcome, int) and 200 <= outcome < 300
                (acked if ok else failed).append(episode["id"])
            tick(1)

    await asyncio.gather(*(client() for _ in range(s.clients)))
    seconds = time.perf_counter() - start
    issued = sum(v.count for v in stats.values())
    return {
        "issued": issued,
        "seconds": round(seconds, 2),
        "throughput_rps": round(issued / seconds, 1) if seconds else 0.0,
        "stopped_by_time": stopped_by_time,
        "errors": sum(sum(v.errors.values()) for v in stats.values()),
        "verbs": {name: v.report() for name, v in stats.items()},
        "_acked": acked,
        "_failed": failed,
    }


def check_adds(db: Path, ns: str, acked: list[str], failed: list[str]) -> dict[str, int]:
    """Read the namespace whole from the file: each acknowledged add once, none twice."""
    counts: Counter[str] = Counter()
    store = open_store(db, create=False)
    try:
        after = 0
        while page := store.iter_episodes(ns, after_key=after, limit=1000):
            counts.update(e.id for e in page)
            after = page[-1].key
    finally:
        store.close()
    return {
        "adds_acknowledged": len(acked),
        "adds_visible": sum(1 for i in acked if counts[i] >= 1),
        "missing": sum(1 for i in acked if counts[i] == 0),
        "duplicates": sum(1 for n in counts.values() if n > 1),
        "failed_adds_stored": sum(1 for i in failed if counts[i] >= 1),
        "episodes_in_namespace": sum(counts.values()),
    }


class RawHttp:
    """A bare HTTP/1.1 keep-alive client on one socket, no client library: what a request
    costs without httpx (the server's side, the loopback and a minimal client)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def request(self, method: str, path: str, body: bytes = b"") -> bytes:
        if self.streams is None:
            self.streams = await asyncio.open_connection("127.0.0.1", self.port)
        reader, writer = self.streams
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
        if body:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        writer.write(head.encode() + b"\r\n" + body)
        await writer.drain()
        lines = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        status = lines[0].split(b" ", 2)[1]
        length = next(
            int(line.split(b":", 1)[1])
            for line in lines
            if line.lower().startswith(b"content-length:")
        )
        answer = await reader.readexactly(length)
        if status != b"200":
            raise MemstrataError(f"{method} {path}: HTTP {status.decode()} {answer[:300]!r}")
        return answer

    async def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            await self.streams[1].wait_closed()


@functools.cache
def _response_adapter() -> TypeAdapter[dict[str, Any]]:
    return TypeAdapter(dict[str, Any])  # FastAPI makes it once per route, at startup


def encode(result: SearchResult) -> bytes:
    """The search endpoint's response body, made as FastAPI makes it for a route that
    returns ``dict[str, Any]``: the dump, validated against that annotation, then written
    as JSON bytes by pydantic."""
    adapter = _response_adapter()
    return adapter.dump_json(adapter.validate_python(result.model_dump(mode="json")))


async def _overhead(
    remote: AsyncRemoteMemory,
    http: httpx.AsyncClient,
    raw: RawHttp,
    memory: AsyncMemory,
    s: Settings,
    queries: list[str],
    tick: Callable[[int], None],
) -> dict[str, Any]:
    from memstrata.service import keys

    path = f"/namespaces/{s.namespace}/search"
    times: dict[str, list[float]] = {k: [] for k in (*SIDES, *PARTS, "roundtrip_bare")}
    sizes: list[int] = []

    async def over_rest(q: str) -> SearchResult:
        return await remote.search(q, namespace=s.namespace, k=s.k)

    async def in_process(q: str) -> SearchResult:
        return await memory.search(q, namespace=s.namespace, k=s.k)

    async def over_socket(q: str) -> bytes:
        body = await raw.request("POST", f"/v1{path}", json.dumps({"query": q, "k": s.k}).encode())
        json.loads(body)  # a caller of the API gets the decoded result
        return body

    async def over_httpx(q: str) -> Any:
        r = await http.post(path, json={"query": q, "k": s.k})
        if r.status_code != 200:
            raise MemstrataError(f"search over REST failed: HTTP {r.status_code} {r.text[:500]}")
        return r.json()

    sides: dict[str, Callable[[str], Awaitable[Any]]] = {
        "rest": over_rest,
        "inprocess": in_process,
        "rest_bare": over_socket,
        "rest_httpx": over_httpx,
    }
    # every order of the three in turn: each side runs first, second and last equally
    # often, and before each other side as often as after it
    orders = list(itertools.permutations(SIDES))

    async def timed(name: str, step: Awaitable[Any]) -> Any:
        t0 = time.perf_counter()
        done = await step
        times[name].append(1000 * (time.perf_counter() - t0))
        return done

    for q in queries[: s.warmup]:  # the model loaded, the index and the stemmer warm
        for side in sides.values():
            await side(q)
        await remote._call("GET", "/health")
        await raw.request("GET", "/v1/health")
    for i, q in enumerate(queries[s.warmup :]):
        got = {name: await timed(name, sides[name](q)) for name in orders[i % len(orders)]}
        body: bytes = got["rest_bare"]
        sizes.append(len(body))
        # what the difference is made of, each timed on its own
        await timed("roundtrip", remote._call("GET", "/health"))
        await timed("roundtrip_bare", raw.request("GET", "/v1/health"))
        await timed("key_check", keys.check(memory.store, {}, "read"))
        t0 = time.perf_counter()
        encode(got["inprocess"])
        t1 = time.perf_counter()
        json.loads(body)
        times["encode"].append(1000 * (t1 - t0))
        times["decode"].append(1000 * (time.perf_counter() - t1))
        tick(1)
    p50 = {name: round(statistics.median(ms), 2) for name, ms in times.items()}
    paired = [a - b for a, b in zip(times["rest"], times["inprocess"], strict=True)]
    return {
        "queries": len(times["rest"]),
        "warmup": s.warmup,
        **{name: {"count": len(times[name]), **summary(times[name])} for name in SIDES},
        "overhead_ms": round(p50["rest"] - p50["inprocess"], 2),
        "overhead_ci95_ms": bootstrap_ci(times["rest"], times["inprocess"], seed=s.seed),
        "overhead_paired_p50_ms": round(statistics.median(paired), 2),
        "parts_p50_ms": {name: p50[name] for name in PARTS},
        "parts_sum_ms": round(sum(p50[name] for name in PARTS), 2),
        "roundtrip_bare_p50_ms": p50["roundtrip_bare"],
        "body_bytes_p50": int(statistics.median(sizes)),
    }


async def _phases(
    server: Server, cfg: Config, s: Settings, db: Path, phases: Phases
) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]  # a run's ids, distinct from any earlier run's on the store
    n_adds = round(s.requests * s.add_share)
    turns = [_jsonable(t) for t in synthetic_turns(s.seed_episodes + n_adds, s.seed)]
    for i, t in enumerate(turns):
        seeded = i < s.seed_episodes
        t["id"] = f"{tag}-seed-{i}" if seeded else f"{tag}-add-{i - s.seed_episodes}"
        t["session"] = f"{tag}-{t['session']}" if seeded else f"{tag}-load"
    load_queries = synthetic_queries(s.requests - n_adds, seed=s.seed)
    timed_queries = synthetic_queries(s.warmup + s.queries, seed=s.seed + 1)
    limits = httpx.Limits(max_connections=s.clients, max_keepalive_connections=s.clients)
    async with httpx.AsyncClient(
        base_url=server.url, timeout=TIMEOUT, limits=limits, trust_env=False
    ) as http:
        t0 = time.perf_counter()
        await _seed(http, s.namespace, turns[: s.seed_episodes], phases("seeding", s.seed_episodes))
        seeded_s = time.perf_counter() - t0
        load = await _load(
            http, s, turns[s.seed_episodes :], load_queries, phases("load", s.requests)
        )
    acked, failed = load.pop("_acked"), load.pop("_failed")
    check = await asyncio.to_thread(check_adds, db, s.namespace, acked, failed)
    raw = RawHttp(server.port)
    try:
        async with (
            AsyncMemory.open(config=cfg) as memory,
            AsyncRemoteMemory(server.url.removesuffix("/v1"), timeout=TIMEOUT_S) as remote,
            httpx.AsyncClient(base_url=server.url, timeout=TIMEOUT, trust_env=False) as http,
        ):
            tick = phases("sequential", s.queries)
            overhead = await _overhead(remote, http, raw, memory, s, timed_queries, tick)
    finally:
        await raw.close()
    return {
        "seed": {"episodes": s.seed_episodes, "seconds": round(seeded_s, 2)},
        "load": load,
        "check": check,
        "overhead": overhead,
    }


def run(
    settings: Settings,
    db: str | Path | None = None,
    config: Path | None = None,
    phases: Phases | None = None,
    server_args: Sequence[str] = (),
) -> dict[str, Any]:
    """Serve ``db`` (default: a fresh temporary store), run the three phases, stop the
    server; the report. ``config``: the TOML file both the server and this process read;
    ``server_args``: more options of ``memstrata serve`` (``--http h11``, ...)."""
    if settings.queries < 1 or settings.clients < 1 or not 0 <= settings.add_share <= 1:
        raise MemstrataError(
            "the bench needs a client, a timed query and an add share between 0 and 1"
        )
    with tempfile.TemporaryDirectory(prefix="memstrata-bench-serve-") as tmp:
        path = Path(db) if db is not None else Path(tmp) / "serve.db"
        served: dict[str, Any] = {"store": str(path), "build.mode": "queue"}  # as `serve`
        cfg = Config.load(config, **served)
        server = Server(path, Path(tmp) / "server.log", config, server_args)
        with server:
            report = asyncio.run(_phases(server, cfg, settings, path, phases or _quiet))
        report["server_exit"] = server.returncode
        report["setup"] = {
            **asdict(settings),
            "db": str(db) if db is not None else "temporary",
            "recipe": cfg.recipe,
            "cores": os.cpu_count(),
            "python": sys.version.split()[0],
            "server": " ".join(server.cmd[2:]),
        }
    return report


def _quiet(_: str, __: int) -> Callable[[int], None]:
    return lambda _n: None


def clean_exit(status: int | None) -> bool:
    """0, or the SIGTERM uvicorn raises again once it has shut down."""
    return status in (0, -signal.SIGTERM)


def failed(report: dict[str, Any]) -> bool:
    """An acknowledged add lost or stored twice, or a request that failed."""
    check = report["check"]
    return bool(check["missing"] or check["duplicates"] or report["load"]["errors"])
