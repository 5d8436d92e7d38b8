"""No secret and no other tenant's name in what the service and the CLI show: the
PostgreSQL password stays out of every response, CLI output, log line and error; the
store's location and size are for an admin key of the whole store; a namespace that does
not exist (or holds nothing yet) names no other namespace."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from service_helpers import serving

from memstrata.config import Config
from memstrata.errors import ConfigError, NamespaceNotFoundError, StoreError
from memstrata.memory import AsyncMemory
from memstrata.service import keys
from memstrata.store import open_store

TURNS = [{"id": "s1", "text": "Maya keeps her passport in the blue drawer.", "speaker": "Maya"}]


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _keys(url: str) -> dict[str, str]:
    store = open_store(url)
    try:
        return {
            "read": keys.make_key(store, ["a"], "read")[0],
            "write": keys.make_key(store, ["a"], "write")[0],
            "admin": keys.make_key(store, ["a"], "admin")[0],
            "root": keys.make_key(store, ["*"], "admin")[0],
        }
    finally:
        store.close()


# 6. the store's location, size and password -------------------------------------------------
def test_stats_show_the_store_only_to_an_admin_of_the_whole_store(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    from memstrata.redact import redact

    caplog.set_level(logging.DEBUG)
    made = _keys(store_url)
    secret = urlsplit(store_url).password if "://" in store_url else store_url
    assert secret
    config = Config.load(store=store_url, **{"build.mode": "queue"})
    with serving(config) as client:
        added = client.post("/namespaces/a/episodes", json={"episodes": TURNS},
                            headers=_bearer(made["write"]))  # fmt: skip
        assert added.status_code == 200
        for name in ("read", "write", "admin"):
            stats = client.get("/namespaces/a/stats", headers=_bearer(made[name]))
            assert stats.status_code == 200
            assert "store" not in stats.json() and "bytes" not in stats.json(), name
            assert secret not in stats.text and store_url not in stats.text
            assert stats.json()["namespaces"][0]["episodes"] == 1
        whole = client.get("/namespaces/a/stats", headers=_bearer(made["root"])).json()
        assert whole["bytes"] > 0
        if store_url.startswith("postgresql://"):
            assert whole["store"] == redact(store_url) and "********" in whole["store"]
        else:
            assert whole["store"] == f"sqlite:///{store_url}"
    if store_url.startswith("postgresql://"):
        assert secret not in caplog.text


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstrata", *args],
        capture_output=True, text=True, timeout=180, env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
def test_the_postgresql_password_is_in_no_output_log_or_error(
    store_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    password = urlsplit(store_url).password
    assert password and len(password) >= 8
    _keys(store_url)
    wrong = store_url.replace(f":{password}@", ":not-the-password-9f3e@")
    runs = [
        _run("stats", "--db", store_url),
        _run("stats", "--db", store_url, "--json"),
        _run("config", env={"MEMSTRATA_STORE": store_url}),
        _run("keys", "list", "--db", store_url),
        _run("stats", "--db", wrong),
        _run("stats", "--db", wrong, "--json"),
        _run("serve", "--db", wrong),
    ]
    for run in runs:
        assert password not in run.stdout + run.stderr, run.args
        assert "not-the-password-9f3e" not in run.stdout + run.stderr, run.args
    stats, _, config, listed, refused, *_ = runs
    assert stats.returncode == 0 and "********" in stats.stdout
    assert config.returncode == 0 and "********" in config.stdout
    assert listed.returncode == 0 and refused.returncode == 2
    assert "password" in refused.stderr or "refused" in refused.stderr

    # errors raised to a Python caller, and a served session's log
    with pytest.raises(StoreError) as opened:
        open_store(wrong)
    assert "not-the-password-9f3e" not in str(opened.value)
    with pytest.raises(ConfigError) as unsupported:
        open_store("mysql://root:hunter2-cardiff@db.example/mem")
    assert "hunter2-cardiff" not in str(unsupported.value)
    assert password not in str(Config.load(store=store_url).masked())
    config = Config.load(store=store_url, **{"build.mode": "queue"})
    with serving(config) as client:
        assert client.get("/ready").status_code == 200
    assert password not in caplog.text


# 7. a namespace that holds nothing names no other ------------------------------------------
def test_an_empty_namespace_names_no_other_namespace(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    config = Config.load(store=db, recipe="mnemis", **{"build.mode": "queue"})
    with serving(config) as client:
        for ns in ("A", "B", "globex-secret-project"):
            client.post(f"/namespaces/{ns}/episodes", json={"episodes": TURNS})
        store = open_store(db)
        try:
            tenant = keys.make_key(store, ["C"], "admin")[0]  # a tenant not yet written to
        finally:
            store.close()
        auth = _bearer(tenant)
        base = "/namespaces/C"
        responses = [
            client.get(f"{base}/stats", headers=auth),
            client.get(f"{base}/episodes", headers=auth),
            client.get(f"{base}/episodes/s1", headers=auth),
            client.get(f"{base}/episodes/s1/history", headers=auth),
            client.post(f"{base}/search", json={"query": "passport"}, headers=auth),
            client.post(f"{base}/ask", json={"question": "where is it?"}, headers=auth),
            client.get(f"{base}/show/Maya", headers=auth),
            client.get(f"{base}/views", headers=auth),
            client.get(f"{base}/derived", params={"episode": "s1"}, headers=auth),
            client.delete(base, headers=auth),
        ]
        for response in responses:
            assert response.status_code == 404, (response.request.url, response.text)
            _names_none(response.text)
        assert client.get("/namespaces", headers=auth).json() == {"namespaces": []}
        url = str(client.base_url).rstrip("/").removesuffix("/v1") + "/mcp/"
        for tool, args in (
            ("search_memory", {"query": "passport"}),
            ("ask_memory", {"question": "where is the passport?"}),
            ("show_structure", {"name": "Maya"}),
        ):
            result = asyncio.run(_tool(url, tenant, tool, {**args, "namespace": "C"}))
            assert result.is_error, tool
            assert "unknown namespace 'C'" in result.content[0].text
            _names_none(result.content[0].text)

    async def core() -> NamespaceNotFoundError:
        memory = await AsyncMemory.open(db)
        try:
            await memory.search("passport", namespace="C")
        except NamespaceNotFoundError as exc:
            return exc
        finally:
            await memory.close()
        raise AssertionError("no error")

    error = asyncio.run(core())  # the error the service sees names nothing else
    assert error.known is None
    _names_none(str(error))


def _names_none(text: str) -> None:
    for other in ("'A'", "'B'", "A, B", "globex-secret-project"):
        assert other not in text, text


async def _tool(url: str, key: str, tool: str, args: dict[str, Any]) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers=_bearer(key))
    async with Client(streamable_http_client(url, http_client=http)) as client:
        return await client.call_tool(tool, args)


def test_redact_masks_every_kind_of_secret() -> None:
    from memstrata.redact import redact

    assert redact("postgresql://u:s3cret@h:5432/db") == "postgresql://u:********@h:5432/db"
    assert redact("see http://x:y@h/ and https://a:b@c/") == (
        "see http://x:********@h/ and https://a:********@c/"
    )
    assert redact("host=h password=s3cret user=u") == "host=h password=******** user=u"
    assert redact("https://h/v1?api_key=abc&x=1") == "https://h/v1?api_key=********&x=1"
    assert redact("/var/lib/memory.db") == "/var/lib/memory.db"  # no secret: unchanged
    assert redact("postgresql://u@h/db") == "postgresql://u@h/db"
