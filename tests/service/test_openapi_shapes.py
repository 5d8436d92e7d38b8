"""Every answer the OpenAPI document gives a shape to has that shape: each operation of
``memstrata.service.shapes.SHAPES`` (and search and ask) is called on a served store and
its body validated against the document's schema, so a client typed from the document
(clients/typescript) reads what the service writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from jsonschema import Draft202012Validator
from service_helpers import serving

from memstrata.config import Config
from memstrata.service.shapes import SHAPES

NS = "/v1/namespaces/{namespace}"
TURNS = [
    {"id": "t1", "text": "Maya booked flights to Lisbon.", "speaker": "Maya", "session": "s1"},
    {"id": "t2", "text": "Tomas adopted a greyhound.", "occurred_at": "2024-03-02T10:21:00"},
]


def test_every_documented_answer_has_its_shape(tmp_path: Path) -> None:
    # a recipe that builds, so that an add has a job; built by the request only
    config = Config.load(store=str(tmp_path / "m.db"), recipe="mnemis", **{"build.mode": "queue"})
    with serving(config, workers=0) as client:
        _every_answer(client)


def _every_answer(client: httpx.Client) -> None:
    document = client.get("/../openapi.json").json()
    checked: list[tuple[str, str]] = []

    def call(method: str, path: str, concrete: str, **options: Any) -> Any:
        response = client.request(method.upper(), concrete, **options)
        assert response.status_code == 200, (method, concrete, response.text)
        body = response.json()
        schema = document["paths"][path][method]["responses"]["200"]["content"]
        root = {"components": document["components"]} | schema["application/json"]["schema"]
        problems = [e.message for e in Draft202012Validator(root).iter_errors(body)]
        assert not problems, (method, path, problems[:3], body)
        checked.append((path, method))
        return body

    call("get", "/v1/health", "/health")
    call("get", "/v1/ready", "/ready")
    added = call("post", NS + "/episodes", "/namespaces/me/episodes", json={"episodes": TURNS})
    assert added["added"] == ["t1", "t2"] and added["job"]["namespace"] == "me"
    assert call("get", "/v1/namespaces", "/namespaces") == {"namespaces": ["me"]}
    assert call("get", "/v1/recipes", "/recipes")["recipes"]
    page = call("get", NS + "/episodes", "/namespaces/me/episodes", params={"limit": 1})
    assert [e["id"] for e in page["episodes"]] == ["t1"] and page["next"]
    one = call("get", NS + "/episodes/{id}", "/namespaces/me/episodes/t2")
    assert one["occurred_at"].startswith("2024-03-02T10:21") and "key" not in one
    changed = call(
        "put", NS + "/episodes/{id}", "/namespaces/me/episodes/t2", json={"text": "A cat."}
    )
    assert changed["text"] == "A cat."
    versions = call("get", NS + "/episodes/{id}/history", "/namespaces/me/episodes/t2/history")
    assert [v["text"] for v in versions["versions"]] == ["Tomas adopted a greyhound."]
    call("post", NS + "/search", "/namespaces/me/search", json={"query": "Lisbon flights"})
    many = call(
        "post", NS + "/search_many", "/namespaces/me/search_many", json={"queries": ["a", "b"]}
    )
    assert [r["query"] for r in many["results"]] == ["a", "b"]
    call("post", NS + "/ask", "/namespaces/me/ask", json={"question": "Where is Maya going?"})
    call("get", NS + "/show/{name}", "/namespaces/me/show/Maya")
    assert call("post", NS + "/build", "/namespaces/me/build", json={})["reports"]
    assert call("post", NS + "/retry", "/namespaces/me/retry", json={}) == {"queued": 0}
    job = call("get", "/v1/jobs/{job_id}", f"/jobs/{added['job']['id']}")
    assert job["id"] == added["job"]["id"]
    gone = call("delete", NS + "/episodes", "/namespaces/me/episodes", params={"id": ["t1", "x"]})
    assert gone == {"deleted": 1, "missing": ["x"]}
    assert call("delete", NS, "/namespaces/me") == {"deleted": 1}

    # a key guards the store from then on: the last calls carry the admin key just made
    made = call("post", "/v1/keys", "/keys", json={"namespaces": ["*"], "scope": "admin"})
    auth = {"Authorization": f"Bearer {made['key']}"}
    assert [k["id"] for k in call("get", "/v1/keys", "/keys", headers=auth)["keys"]] == [made["id"]]
    revoked = call("delete", "/v1/keys/{key_id}", f"/keys/{made['id']}", headers=auth)
    assert revoked == {"revoked": True}

    assert set(SHAPES) <= set(checked)
