"""What the REST service gives away and what it takes, on SQLite and PostgreSQL: no store
key in any output and an opaque, checked list cursor (gaps in a store-wide counter would
show other tenants' writes), strict types in bodies and queries (422 naming the field),
and every episode id addressable, ``a/history`` included."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from service_helpers import serving

from memstrata.config import Config
from memstrata.service import keys
from memstrata.store import open_store


@pytest.fixture
def client(store_at: Callable[[str], str]) -> Iterator[tuple[httpx.Client, str]]:
    """A client of a server over a fresh store (once on each backend), and the store."""
    where = store_at("served")
    config = Config.load(store=where, **{"build.mode": "queue", "build.poll_s": 0.05})
    with serving(config) as http:
        yield http, where


def _add(http: httpx.Client, ns: str, ids: list[str]) -> None:
    episodes = [{"id": i, "text": f"episode {i}", "speaker": "Ana"} for i in ids]
    response = http.post(f"/namespaces/{quote(ns, safe='')}/episodes", json={"episodes": episodes})
    assert response.status_code == 200, response.text


def _refused(response: httpx.Response, status: int, at: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    if at is not None:
        assert at in [p["at"] for p in error["problems"]], error
    return error


def test_no_store_key_and_an_opaque_checked_cursor(client: tuple[httpx.Client, str]) -> None:
    http, _ = client
    _add(http, "a", ["a0", "a1", "a2"])
    _add(http, "b", [f"b{i}" for i in range(30)])  # another tenant's writes in between
    _add(http, "a", ["a3", "a4", "a5"])
    seen, cursors = [], []
    params: dict[str, Any] = {"limit": 2}
    while True:
        page = http.get("/namespaces/a/episodes", params=params).json()
        assert all("key" not in e for e in page["episodes"])
        seen += [e["id"] for e in page["episodes"]]
        if page["next"] is None:
            break
        cursors.append(page["next"])
        params["after"] = page["next"]
    assert seen == [f"a{i}" for i in range(6)]
    assert all(isinstance(c, str) and not c.isdigit() for c in cursors)
    assert len({len(c) for c in cursors}) == 1  # the gap before a3 does not show
    assert "key" not in http.get("/namespaces/a/episodes/a1").json()
    put = http.put("/namespaces/a/episodes/a1", json={"text": "episode a1, corrected"}).json()
    assert "key" not in put and put["text"] == "episode a1, corrected"
    for bad in ["9223372036854775808", "5", "-1", cursors[0][:-1] + "!", "%00"]:
        error = _refused(http.get("/namespaces/a/episodes", params={"after": bad}), 400)
        assert error["code"] == "invalid_input" and "cursor" in error["message"]
    other = http.get("/namespaces/b/episodes", params={"after": cursors[0]})
    assert _refused(other, 400)["code"] == "invalid_input"  # a's cursor means nothing in b


def episodes_at(namespace: str) -> str:
    return f"/namespaces/{namespace}/episodes"


def test_bodies_and_queries_take_strict_types(client: tuple[httpx.Client, str]) -> None:
    http, _ = client
    _add(http, "me", ["t1"])
    listing = "/namespaces/me/episodes"
    _refused(http.get(listing, params={"until": "0.5"}), 422, "query.until")
    _refused(http.get(listing, params={"since": "1714557600"}), 422, "query.since")
    assert http.get(listing, params={"since": "2024-05-01T00:00:00Z"}).status_code == 200
    search = "/namespaces/me/search"
    for body, at in [
        ({"query": "x", "k": True}, "body.k"),
        ({"query": "x", "k": "5"}, "body.k"),
        ({"query": "x", "k": 5.5}, "body.k"),
        ({"query": " \x1c\n"}, "body.query"),
        ({"query": "x", "k": 201}, "body.k"),
        ({"query": "x", "filters": {"speaker": ["Ana"]}}, "body.filters.speaker"),
        ({"query": "x", "filters": {"until": 0.5}}, "body.filters.until"),
        ({"query": "x", "filters": {"since": "1714557600"}}, "body.filters.since"),
        ({"query": "x", "filters": {"speakers": "Ana"}}, "body.filters.speakers"),
        ({"query": "x", "adaptive": "yes"}, "body.adaptive"),
        ({"query": "x", "max_tokens": "100"}, "body.max_tokens"),
        ({"query": 5}, "body.query"),
        ({"query": "x", "filters": {"since": "0001-01-01T00:00:00+05:00"}}, "body.filters.since"),
    ]:
        _refused(http.post(search, json=body), 422, at)
    assert http.post(search, json={"query": "episode", "k": 200}).status_code == 200
    # 5.0 is the integer 5 to JSON Schema, which the OpenAPI document speaks
    assert http.post(search, json={"query": "episode", "k": 5.0}).status_code == 200
    _refused(http.post(episodes_at("me"), json={"episodes": [{"text": "  "}]}), 422)
    _refused(http.get(listing, params={"after": ""}), 422, "query.after")
    _refused(http.post("/namespaces/me/ask", json={"question": "x", "k": "5"}), 422, "body.k")
    episodes = "/namespaces/me/episodes"
    _refused(http.post(episodes, json={"episodes": [{"text": "x"}], "replace": "yes"}), 422)
    _refused(
        http.post(episodes, json={"episodes": [{"text": "x", "occurred_at": 0.5}]}),
        422,
        "body.episodes.0.occurred_at",
    )
    _refused(
        http.post(
            episodes, json={"episodes": [{"text": "x", "occurred_at": "9999-12-31T23:59-05:00"}]}
        ),
        422,
        "body.episodes.0.occurred_at",
    )
    _refused(http.put(f"{episodes}/t1", json={"text": "y", "session": 5}), 422, "body.session")
    _refused(http.post("/namespaces/me/build", json={"rebuild": "yes"}), 422, "body.rebuild")
    stored = http.get(listing).json()["episodes"]
    assert [(e["id"], e["text"]) for e in stored] == [("t1", "episode t1")]  # nothing else


def test_every_id_is_addressable(client: tuple[httpx.Client, str]) -> None:
    http, where = client
    ids = ["a", "a/history", "x/episodes/y", "h/history/history"]
    _add(http, "n", ids)
    assert http.put("/namespaces/n/episodes/a", json={"text": "a, second"}).status_code == 200
    for id_ in ids:
        got = http.get(f"/namespaces/n/episodes/{quote(id_, safe='')}")
        assert got.status_code == 200 and got.json()["id"] == id_, (id_, got.text)
    history = http.get("/namespaces/n/episodes/a/history").json()
    assert [v["text"] for v in history["versions"]] == ["episode a"]
    put = http.put("/namespaces/n/episodes/a%2Fhistory", json={"text": "the id a/history"})
    assert put.status_code == 200 and put.json()["id"] == "a/history"
    assert http.get("/namespaces/n/episodes/a").json()["text"] == "a, second"
    # a name is one segment: "n/ask" is the namespace n%2Fask, never n's ask, and the
    # DELETE of /namespaces/n/ask names no namespace
    _add(http, "n/ask", ["q1"])
    assert _refused(http.delete("/namespaces/n/ask"), 405)["code"] == "method_not_allowed"
    assert http.get("/namespaces/n%2Fask/episodes/q1").json()["id"] == "q1"
    assert http.delete("/namespaces/n%2Fask").json() == {"deleted": 1}
    # a history is only read: written with its "/" unencoded, a PUT names no episode
    wrong = http.put("/namespaces/n/episodes/a/history", json={"text": "x"})
    assert _refused(wrong, 405)["code"] == "method_not_allowed"
    assert wrong.headers["allow"] == "GET"
    versions = http.get("/namespaces/n/episodes/a%2Fhistory/history").json()["versions"]
    assert [v["text"] for v in versions] == ["episode a/history"]
    odd = http.get(f"/namespaces/n/episodes/{quote('h/history/history', safe='')}/history")
    assert odd.status_code == 200 and odd.json() == {"versions": []}
    missing = http.get("/namespaces/n/episodes/a%2Fnothing")
    assert _refused(missing, 404)["code"] == "not_found"
    # a key of the namespace "n/episodes/x" does not reach "n" by way of an id
    store = open_store(where)
    try:
        key = keys.make_key(store, ["n/episodes/x"], "read")[0]
    finally:
        store.close()
    sneaky = http.get(
        "/namespaces/n/episodes/x%2Fepisodes%2Fy", headers={"Authorization": f"Bearer {key}"}
    )
    assert _refused(sneaky, 404)["code"] == "namespace_not_found"
