"""The authorization matrix: every route of the app, as the app lists them, asked by six
callers (no key, a read, a write and an admin key of namespace ``a``, an admin key of
another namespace, a revoked key), on both stores. The expected status of each cell comes
from the table below (what docs/service.md promises), not from the app: a route the
table does not name fails the test, so a new route cannot escape it.

Every response is also checked for what must hold whatever the status: the statuses the
OpenAPI document lists for its operation include it, ``X-Content-Type-Options: nosniff``,
a Content-Security-Policy with ``frame-ancestors 'none'`` on HTML, no secret of the store
(its PostgreSQL password, its file path) and nothing of the other tenant's namespace.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from mcp.types import LATEST_PROTOCOL_VERSION
from service_helpers import serving
from starlette.routing import Mount, Route

from memstrata.config import Config
from memstrata.service import create_app, keys
from memstrata.store import open_store

CALLERS = ("none", "read", "write", "admin", "other", "revoked")
RANK = {"read": 0, "write": 1, "admin": 2}
SCOPE_OF = {"read": "read", "write": "write", "admin": "admin", "other": "admin"}
SEED_A = [
    {"id": "a1", "text": "Maya keeps her passport in the blue drawer.", "speaker": "Maya"},
    {"id": "a2", "text": "Maya flies to Lisbon in June for the conference.", "speaker": "Maya"},
]
SEED_Z = [
    {"id": "z1", "text": "Zoltan hides the spare key under the red pot.", "speaker": "Zoltan"}
]
SECRET_Z = ("Zoltan", "red pot", '"z"', "'z'")


@dataclass
class Cell:
    """How a route is asked and what each caller gets."""

    scope: str | None  # None: public; "optional": public, but a presented key must be valid
    bound: bool = True  # reaches namespace a's data: the other tenant's admin gets `other`
    ok: int = 200
    other: int = 404
    body: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    url: str | None = None  # for a mount: the URL asked
    headers: dict[str, str] = field(default_factory=dict)
    restore: bool = False  # a success removes seeded data: seed it again


MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LATEST_PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "matrix", "version": "1"},
    },
}
NS = "/v1/namespaces/{namespace:segment}"
TABLE: dict[tuple[str, str], Cell] = {
    ("GET", "/openapi.json"): Cell(None),
    ("GET", "/docs"): Cell(None),
    ("GET", "/docs/oauth2-redirect"): Cell(None),
    ("GET", "/redoc"): Cell(None),
    ("GET", "/"): Cell(None),
    ("MOUNT", "/explorer"): Cell(None, url="/explorer/index.html"),
    ("MOUNT", "/mcp"): Cell(
        "read",
        bound=False,
        url="/mcp/",
        body=MCP_INIT,
        headers={"Accept": "application/json, text/event-stream"},
    ),
    ("GET", "/v1/health"): Cell(None),
    ("GET", "/v1/ready"): Cell(None),
    ("GET", "/v1/whoami"): Cell("optional"),
    ("GET", "/v1/namespaces"): Cell("read", bound=False),
    ("GET", "/v1/recipes"): Cell("read", bound=False),
    ("POST", NS + "/episodes"): Cell("write", body={"episodes": [SEED_A[0]]}),
    ("GET", NS + "/episodes"): Cell("read"),
    ("GET", NS + "/episodes/{id:segment}/history"): Cell("read"),
    ("GET", NS + "/episodes/{id:segment}"): Cell("read"),
    ("PUT", NS + "/episodes/{id:segment}"): Cell("write", body={"text": SEED_A[0]["text"]}),
    ("DELETE", NS + "/episodes"): Cell("write", params={"id": ["a1"]}, restore=True),
    ("DELETE", NS): Cell("write", restore=True),
    ("POST", NS + "/search"): Cell("read", body={"query": "where is the passport?"}),
    ("POST", NS + "/search_many"): Cell("read", body={"queries": ["where is the passport?"]}),
    ("POST", NS + "/ask"): Cell("read", body={"question": "Where is the passport?"}),
    ("GET", NS + "/show/{name:segment}"): Cell("read"),
    ("GET", NS + "/stats"): Cell("read"),
    ("POST", NS + "/build"): Cell("write", body={}),
    ("POST", NS + "/retry"): Cell("write"),
    ("GET", NS + "/views"): Cell("read"),
    ("GET", NS + "/views/{name:segment}"): Cell("read"),
    ("GET", NS + "/derived"): Cell("read", params={"episode": "a1"}),
    ("GET", "/v1/jobs/{job_id}"): Cell("read"),
    ("GET", "/v1/jobs/{job_id}/events"): Cell("read"),
    ("GET", "/v1/keys"): Cell("admin", bound=False),
    ("POST", "/v1/keys"): Cell("admin", other=403, body={"namespaces": ["a"], "scope": "read"}),
    ("DELETE", "/v1/keys/{key_id}"): Cell("admin"),
}


def expected(cell: Cell, caller: str) -> int:
    if cell.scope is None:
        return cell.ok
    if cell.scope == "optional":
        return 401 if caller == "revoked" else cell.ok
    if caller in ("none", "revoked"):
        return 401
    if RANK[SCOPE_OF[caller]] < RANK[cell.scope]:
        return 403
    if caller == "other" and cell.bound:
        return cell.other
    return cell.ok


def app_routes(config: Config) -> list[tuple[str, str]]:
    """Every (method, path) the app answers; a mount is ("MOUNT", its path)."""
    found = []
    for route in create_app(config).routes:
        if isinstance(route, Mount):
            found.append(("MOUNT", route.path))
        elif isinstance(route, Route):
            found += [(m, route.path) for m in sorted(route.methods or ()) if m != "HEAD"]
    return found


class World:
    """The served store with its seeds and keys, and what a route's path needs."""

    def __init__(self, client: httpx.Client, url: str) -> None:
        self.client, self.url = client, url
        self.base = str(client.base_url).rstrip("/").removesuffix("/v1")
        store = open_store(url)
        try:
            self.root = keys.make_key(store, ["*"], "admin", "operator")[0]
            self.keys = {
                "read": keys.make_key(store, ["a"], "read")[0],
                "write": keys.make_key(store, ["a"], "write")[0],
                "admin": keys.make_key(store, ["a"], "admin")[0],
                "other": keys.make_key(store, ["z"], "admin")[0],
            }
            revoked, made = keys.make_key(store, ["a"], "admin")
            assert store.revoke_api_key(made.id)
            self.keys["revoked"] = revoked
        finally:
            store.close()
        self.job = ""
        self.seed()
        added = self.call("POST", "/v1/namespaces/z/episodes", self.root, {"episodes": SEED_Z})
        assert added.status_code == 200, added.text
        views = self.call("GET", "/v1/namespaces/a/views", self.root).json()["views"]
        assert views, "the seeded namespace shows no view"
        self.view = views[0]["name"]

    def call(
        self, method: str, path: str, key: str | None, body: Any = None, **extra: Any
    ) -> httpx.Response:
        headers = self.auth(key) | extra.pop("headers", {})
        return self.client.request(method, self.base + path, json=body, headers=headers, **extra)

    def seed(self) -> None:
        """Namespace a's episodes, built at once (no worker runs: nothing builds beside
        the requests), so its job has ended and its views have records."""
        added = self.call("POST", "/v1/namespaces/a/episodes", self.root, {"episodes": SEED_A})
        assert added.status_code == 200, added.text
        self.job = added.json()["job"]["id"]
        built = self.call("POST", "/v1/namespaces/a/build", self.root, {})
        assert built.status_code == 200, built.text
        assert self.call("GET", f"/v1/jobs/{self.job}", self.root).json()["state"] == "succeeded"

    def key_id(self) -> str:
        """A key of namespace a made for the call (revoking it is the call's effect)."""
        made = self.call("POST", "/v1/keys", self.root, {"namespaces": ["a"]})
        return str(made.json()["id"])

    def path(self, route: str) -> str:
        fill: dict[str, Callable[[], str]] = {
            "{namespace:segment}": lambda: "a",
            "{id:segment}": lambda: "a1",
            "{job_id}": lambda: self.job,
            "{key_id}": self.key_id,
            "{name:segment}": lambda: self.view if "/views/" in route else "Maya",
        }
        for hole, value in fill.items():
            if hole in route:
                route = route.replace(hole, value())
        return route

    def ask(self, method: str, route: str, cell: Cell, caller: str) -> httpx.Response:
        key = None if caller == "none" else self.keys[caller]
        path = cell.url or self.path(route)
        method = "POST" if method == "MOUNT" and cell.body is not None else method
        method = "GET" if method == "MOUNT" else method
        if route.endswith("/events"):
            with self.client.stream(
                method, self.base + path, headers=self.auth(key), timeout=120
            ) as streamed:
                streamed.read()
                return streamed
        return self.call(
            method, path, key, cell.body, params=cell.params, headers=dict(cell.headers)
        )

    @staticmethod
    def auth(key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}


def _documented(schema: dict[str, Any], route: str, method: str) -> set[str] | None:
    """The statuses the OpenAPI document lists for an operation (None: not documented)."""
    path = route.replace(":path}", "}")
    operation = schema["paths"].get(path, {}).get(method.lower())
    return None if operation is None else set(operation["responses"])


def _secrets(url: str) -> list[str]:
    """What no response may show: the PostgreSQL password, the SQLite file's path."""
    if url.startswith("postgresql://"):
        password = urlsplit(url).password
        assert password
        return [password]
    return [str(Path(url).parent)]


def test_every_route_for_every_caller(store_url: str) -> None:
    config = Config.load(store=store_url, recipe="mnemis", **{"build.mode": "queue"})
    routes = app_routes(config)
    unknown = [r for r in routes if r not in TABLE]
    assert not unknown, f"routes the matrix does not know (add them to TABLE): {unknown}"
    assert not [r for r in TABLE if r not in routes], "TABLE names routes the app lacks"
    cells = 0
    with serving(config, workers=0) as client:
        world = World(client, store_url)
        schema = world.call("GET", "/openapi.json", None).json()
        for method, route in routes:
            cell = TABLE[(method, route)]
            for caller in CALLERS:
                got = world.ask(method, route, cell, caller)
                cells += 1
                where = f"{method} {route} as {caller}"
                want = expected(cell, caller)
                assert got.status_code == want, f"{where}: {got.status_code} {got.text[:300]}"
                if got.status_code == 401:
                    assert got.headers["www-authenticate"] == "Bearer", where
                    assert got.json()["error"]["code"] == "unauthorized", where
                if want == 404 and caller == "other":
                    assert got.json()["error"]["code"] in ("namespace_not_found", "not_found")
                _every_response(got, where, store_url, sees_z=caller == "other")
                if method != "MOUNT":
                    documented = _documented(schema, route, method)
                    if documented is not None:
                        assert str(got.status_code) in documented, (where, sorted(documented))
                if cell.restore and got.status_code == 200:
                    world.seed()
        assert cells == len(routes) * len(CALLERS)
        print(f"authorization matrix: {len(routes)} routes x {len(CALLERS)} callers = {cells}")


def _every_response(got: httpx.Response, where: str, url: str, sees_z: bool) -> None:
    assert got.headers.get("x-content-type-options") == "nosniff", where
    if got.headers.get("content-type", "").startswith("text/html"):
        policy = got.headers.get("content-security-policy", "")
        assert "frame-ancestors 'none'" in policy, where
    text = got.text
    for secret in _secrets(url):
        assert secret not in text, f"{where} shows {secret!r}"
    if not sees_z:  # only the admin of z reaches it
        assert not any(s in text for s in SECRET_Z), f"{where} shows namespace z: {text[:300]}"


def test_the_openapi_document_lists_what_each_operation_answers(
    served: tuple[httpx.Client, Path],
) -> None:
    """Each operation that needs a key documents 401 and 403, each with a path parameter
    404, every one 429; a wrong method gets 405 with an Allow header naming the methods
    the document gives the path, and no other (a namespace may hold "/", so DELETE of
    the namespace ``a/ask`` exists too, but the path names the ask)."""
    client, _ = served
    schema = client.get("/../openapi.json").json()
    needs_no_key = {"/v1/health", "/v1/ready", "/v1/whoami"}
    operations = 0
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            operations += 1
            statuses = set(operation["responses"])
            where = f"{method.upper()} {path}"
            if path not in needs_no_key:
                assert {"401", "403"} <= statuses, where
            if "{" in path:
                assert "404" in statuses, where
            if path != "/v1/health":
                assert "429" in statuses, where
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")) and status != "422":
                    ref = response["content"]["application/json"]["schema"]["$ref"]
                    assert ref.endswith("/Error"), where
        concrete = path.replace("{namespace}", "a").replace("{id}", "e1")
        concrete = concrete.replace("{job_id}", "job_x").replace("{key_id}", "key_x")
        concrete = concrete.replace("{name}", "n")
        wrong = client.request("PATCH", "/.." + concrete)
        assert wrong.status_code == 405, (path, wrong.status_code)
        allowed = {m.strip() for m in wrong.headers["allow"].split(",")}
        assert {m.upper() for m in item} == allowed, (path, allowed)
        assert wrong.json()["error"]["code"] == "method_not_allowed"
    assert operations >= 26


def test_authentication_comes_before_the_body(served: tuple[httpx.Client, Path]) -> None:
    """Broken JSON and a body missing its fields get 401 without a key, 403 with a key
    whose scope is short: the body is not read before the caller is known."""
    client, db = served
    client.post("/namespaces/a/episodes", json={"episodes": SEED_A})
    store = open_store(db)
    try:
        read = keys.make_key(store, ["a"], "read")[0]
        write = keys.make_key(store, ["a"], "write")[0]
    finally:
        store.close()
    broken = {"content-type": "application/json"}
    no_key = client.post("/namespaces/a/episodes", content=b'{"episodes": [', headers=broken)
    assert no_key.status_code == 401, no_key.text
    assert client.post("/keys", json={}).status_code == 401
    short = client.post("/keys", json={}, headers={"X-API-Key": read})
    assert short.status_code == 403, short.text
    wrong_scope = client.post(
        "/namespaces/a/episodes", content=b"{", headers={**broken, "X-API-Key": read}
    )
    assert wrong_scope.status_code == 403
    parsed = client.post(
        "/namespaces/a/episodes", content=b"{", headers={**broken, "X-API-Key": write}
    )
    assert parsed.status_code == 400 and parsed.json()["error"]["code"] == "malformed_json"
    ready = client.get("/ready")
    assert ready.status_code == 200 and json.loads(ready.text) == {"status": "ready"}
