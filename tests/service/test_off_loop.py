"""The service never blocks its event loop on the store, and reaches the store only through
the memory's public API.

A served store records the thread of every call into it while every REST route and
every MCP tool is called once: none may run on the thread of the server's event loop,
but for the reads the store itself promises cannot wait (``read_at_once``, a request's
key check). And the service's source names no private member of another object and no
``.store`` attribute: what it needs of the store is a public verb or attribute of
``AsyncMemory`` (``keys``, ``jobs``, ``inspect``)."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from service_helpers import serving

import memstrata.service
from memstrata.config import Config
from memstrata.service.mcp_optional import mcp_missing_reason
from memstrata.store import open_store

SERVICE = Path(memstrata.service.__file__).parent


class Recorder:
    """The store calls made on a thread that runs an event loop."""

    def __init__(self) -> None:
        self.on_loop: list[str] = []
        self.calls = 0
        self.local = threading.local()

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(self.local, "depth", 0)
            if depth == 0:
                self.calls += 1
                if name != "read_at_once" and _runs_a_loop():
                    where = "".join(traceback.format_stack(limit=8)[:-1])
                    self.on_loop.append(f"{name}\n{where}")
            self.local.depth = depth + 1
            try:
                return fn(*args, **kwargs)
            finally:
                self.local.depth = depth

        return recorded


def _runs_a_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@contextlib.contextmanager
def recorded_store(db: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    """Every public method of the store's class records where it is called."""
    store = open_store(db)
    cls = type(store)
    store.close()
    recorder = Recorder()
    for name in dir(cls):
        if name.startswith("_") or isinstance(getattr(cls, name), property):
            continue
        fn = getattr(cls, name)
        if callable(fn) and not isinstance(fn, type):
            monkeypatch.setattr(cls, name, recorder.wrap(name, fn))
    yield recorder


def _every_route(client: httpx.Client) -> None:
    """Each REST route once (the job's event stream aside: it follows the job for as long
    as the job runs, and reads the store as ``job_status`` does)."""
    ns = "/namespaces/t"
    episodes = [{"id": "e1", "text": "Maya hides the passport in the drawer."}]
    added = client.post(f"{ns}/episodes", json={"episodes": episodes}).json()
    calls = [
        ("GET", "/health", None),
        ("GET", "/ready", None),
        ("GET", "/namespaces", None),
        ("GET", "/recipes", None),
        ("GET", f"{ns}/episodes", None),
        ("GET", f"{ns}/episodes/e1", None),
        ("GET", f"{ns}/episodes/e1/history", None),
        ("PUT", f"{ns}/episodes/e1", {"text": "Maya keeps the passport in the drawer."}),
        ("POST", f"{ns}/search", {"query": "passport"}),
        ("POST", f"{ns}/search_many", {"queries": ["passport", "drawer"]}),
        ("POST", f"{ns}/ask", {"question": "Where is the passport?"}),
        ("GET", f"{ns}/show/Maya", None),
        ("GET", f"{ns}/stats", None),
        ("POST", f"{ns}/build", {}),
        ("POST", f"{ns}/retry", {}),
        ("GET", f"/jobs/{added['job']['id']}", None),
        ("GET", "/whoami", None),
        ("GET", f"{ns}/views", None),
        ("GET", f"{ns}/derived?episode=e1", None),
        ("DELETE", f"{ns}/episodes?id=e1", None),
        ("DELETE", ns, None),
        ("GET", "/keys", None),
    ]
    for method, path, body in calls:
        answer = client.request(method, path, json=body)
        assert answer.status_code < 300, (method, path, answer.text)
    made = client.post("/keys", json={"namespaces": ["*"], "scope": "admin"})
    assert made.status_code == 200, made.text
    client.headers["Authorization"] = f"Bearer {made.json()['key']}"
    for method, path in [("GET", "/keys"), ("DELETE", f"/keys/{made.json()['id']}")]:
        assert client.request(method, path).status_code == 200


async def _every_tool(url: str) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    calls: list[tuple[str, dict[str, Any]]] = [
        ("add_memory", {"text": "Zoltan hides the key.", "id": "z1"}),
        ("search_memory", {"query": "key"}),
        ("ask_memory", {"question": "Who hides the key?"}),
        ("get_memory", {"ids": ["z1"]}),
        ("list_memories", {}),
        ("update_memory", {"id": "z1", "text": "Zoltan hid the key."}),
        ("show_structure", {"name": "Zoltan"}),
        ("delete_memory", {"ids": ["z1"]}),
        ("add_memory", {"text": "Ada reads.", "namespace": "gone"}),
        ("delete_namespace", {"namespace": "gone"}),
    ]
    async with Client(streamable_http_client(url)) as client:
        job = None
        for tool, args in calls:
            done = await client.call_tool(tool, args)
            assert not done.is_error, (tool, done)
            job = job or (done.structured_content or {}).get("job")
        assert job is not None
        assert not (await client.call_tool("job_status", {"job_id": job["id"]})).is_error


def test_no_route_or_tool_calls_the_store_on_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    why = mcp_missing_reason()
    assert why is None, why  # the suite's venv has the extra `mcp` (make test installs it)
    db = tmp_path / "served.db"
    options = {"build.mode": "queue", "recipe": "mnemis"}
    config = Config.load(store=str(db), **options)
    with recorded_store(db, monkeypatch) as recorder, serving(config, workers=0) as client:
        _every_route(client)
        client.headers.pop("Authorization")
        reopen = open_store(db)  # the key made above is revoked: open the store again
        try:
            reopen.lift_key_guard()
        finally:
            reopen.close()
        url = str(client.base_url).rstrip("/").removesuffix("/v1") + "/mcp/"
        asyncio.run(_every_tool(url))
    assert recorder.calls > 50
    assert not recorder.on_loop, "store calls on the event loop:\n" + "\n".join(recorder.on_loop)


def _reaches_past_the_api(path: Path) -> list[str]:
    """``x._name`` with ``x`` not ``self`` or ``cls``, and any ``.store`` attribute."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Attribute):
            continue
        own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
        private = node.attr.startswith("_") and not node.attr.startswith("__")
        if (private and not own) or node.attr == "store":
            found.append(f"{path.relative_to(SERVICE)}:{node.lineno}: .{node.attr}")
    return found


def test_the_service_uses_the_memory_s_public_api_only() -> None:
    found = [hit for path in sorted(SERVICE.rglob("*.py")) for hit in _reaches_past_the_api(path)]
    assert not found, "\n".join(found)
