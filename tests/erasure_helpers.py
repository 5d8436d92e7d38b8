"""Helpers of the erasure tests (tests/test_erasure*.py): turns holding a secret, the
byte-level scan of every file memstrata wrote, and scripted models whose replies quote
the turns they were given, as a model's summaries, names and facts do."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import pgtest
from memstrata.config import Config
from memstrata.embed.base import Embedder, Vectors, content_hash
from memstrata.llm import LLMClient, ResponseCache
from memstrata.llm.fence import unfence
from memstrata.llm.scripted import ScriptedBackend
from memstrata.llm.types import Completion, Message
from memstrata.memory import Memory
from memstrata.store import Store

NS = "home"
DEEP = {"builders": [{"name": "memtree", "params": {"theta0": 0.0, "rate": 0.0}}]}
RECIPES = {"deep": {"routes": [{"name": "memtree"}], **DEEP, "fusion": {"order": "mixed"}}}


def turns(secret: str) -> list[dict[str, Any]]:
    texts = [
        "We booked the cabin by the lake for the first week of June.",
        "The cabin by the lake has a canoe and a wood stove.",
        f"My secret wifi password is {secret}, please remember it for the cabin router.",
        "We will paddle the canoe across the lake every morning in June.",
        "The lake cabin needs firewood for the stove, we should buy some.",
        "Grandma Odile is bringing her apricot tart to the cabin on Saturday.",
    ]
    return [
        {"id": f"t{i}", "speaker": "Ana", "session": "s1", "text": t} for i, t in enumerate(texts)
    ]


def summarize(messages: list[Message]) -> str:
    """MemTree's aggregate, written the way a model would: quoting the new turn."""
    user = unfence(messages[-1].content)
    new = user.split("[New Information]")[-1].strip().splitlines()
    return json.dumps({"summary": "Notes: " + (new[0] if new else "nothing new")})


def files_holding(root: Path, token: str) -> list[str]:
    """Every file under ``root`` whose bytes contain ``token``."""
    needle = token.encode()
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    )


def open_memory(target: str, embedder: Any, cache_dir: Path, llm: bool, **overrides: Any) -> Memory:
    settings: dict[str, Any] = {"build.mode": "manual", "llm.cache_dir": str(cache_dir)}
    settings.update(overrides)
    if not llm:
        settings["llm.kind"] = "none"
    m = Memory.open(target, embedder=embedder, namespace=NS, recipes=RECIPES, **settings)
    if not llm:
        m.llm = None
    return m


def build_everything(m: Memory, secret: str) -> None:
    m.add_many(turns(secret))
    for b in range(4):  # later writes: FTS5 merges the first segment into a deeper one
        m.add_many([{"id": f"f{b}{j}", "text": f"Tomatoes {b} {j} in the garden."} for j in (1, 2)])
    m.build(recipe="default")
    m.build(recipe="mnemis")  # no LLM: the heuristic tier
    assert m.search(secret, k=3).hits


def folders(target: str, tmp_path: Path) -> list[Path]:
    """Where memstrata wrote: the test's folder (store file, indexes, caches) and, for
    PostgreSQL, the server's data folder."""
    if target.startswith("postgres"):
        return [tmp_path, pgtest.local_server().folder / "data"]
    return [tmp_path]


def scan(roots: list[Path], token: str) -> list[str]:
    return [f"{root.name}/{f}" for root in roots for f in files_holding(root, token)]


def settle(m: Memory, target: str) -> None:
    """The documented step after a delete: none on SQLite, ``vacuum`` on PostgreSQL."""
    if target.startswith("postgres"):
        report = m.store.vacuum()  # type: ignore[attr-defined]
        assert report["wal"] == "retired", report


class Recording:
    """The real embedder, keeping every text it was asked to embed (what the stored
    vectors were made from)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> Vectors:
        self.texts += texts
        return self.inner.embed(texts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def quoted(messages: list[Message]) -> str:
    """What a model copies from a prompt: the last three non-empty lines of its user
    message (unfenced), last first (where the turn being read usually is)."""
    user = unfence(messages[-1].content)
    lines = [line.strip() for line in user.splitlines() if line.strip()]
    return " ".join(reversed(lines[-3:])) if lines else "nothing"


def fill(schema: dict[str, Any], text: str, defs: dict[str, Any] | None = None) -> Any:
    """A value of ``schema`` whose strings quote ``text``: a model that copies what it
    read into every field (names, facts, summaries, keywords)."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return fill(defs[schema["$ref"].rsplit("/", 1)[-1]], text, defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return fill(options[0], text, defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: fill(v, text, defs) for k, v in props.items()}
    if kind == "array":
        n = max(1, int(schema.get("minItems", 1)))
        n = min(n, int(schema.get("maxItems", n)))
        return [fill(schema.get("items", {}), text, defs) for _ in range(n)]
    if kind == "string":
        limit = int(schema.get("maxLength", 400))
        return text[:limit]
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0.0))
    if kind == "boolean":
        return False
    return None


class Quoting(ScriptedBackend):
    """A model of any prompt family: a reply that fits the request's JSON schema, every
    string of it quoting the prompt's turn; prose (``quoted``) when there is no schema.
    ``replies`` answers a schema with a top-level property of its name by a rule of its
    own; ``fail(messages)`` may raise instead, to fail a call with a message of its own."""

    def __init__(
        self,
        replies: dict[str, Callable[[list[Message]], Any]] | None = None,
        fail: Callable[[list[Message]], None] | None = None,
    ) -> None:
        super().__init__([])
        self.replies = replies or {}
        self.fail = fail

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> Completion:
        self._script.append(lambda msgs: self._reply(msgs, json_schema))
        return await super().complete(
            messages, json_schema=json_schema, max_tokens=max_tokens, temperature=temperature
        )

    def _reply(self, messages: list[Message], schema: dict[str, Any] | None) -> str:
        if self.fail is not None:
            self.fail(messages)
        text = quoted(messages)
        if schema is None:
            return text
        for name, rule in self.replies.items():
            if name in schema.get("properties", {}):
                return json.dumps(rule(messages))
        return json.dumps(fill(schema, text))


def vector_of(store: Any, embedder: Embedder, text: str) -> bool:
    """Whether the store keeps a vector of ``text``."""
    return bool(store.cached_embeddings(embedder.model_id, [content_hash(text)]))


@contextmanager
def use_llm(monkeypatch: pytest.MonkeyPatch, backend: ScriptedBackend) -> Iterator[None]:
    """Every memory opened meanwhile gets ``backend`` (no retries), accounting into its
    store, with the response cache in its configured ``llm.cache_dir``."""
    opened: list[ResponseCache] = []

    def make(config: Config, store: Store, namespace: str | None = None) -> LLMClient:
        assert config.llm.cache_dir
        opened.append(ResponseCache(Path(config.llm.cache_dir) / "llm-cache.sqlite"))
        return LLMClient(backend, cache=opened[-1], usage=store, max_retries=0)

    monkeypatch.setattr("memstrata.memory.make_llm", make)
    try:
        yield
    finally:
        for cache in opened:
            cache.close()
