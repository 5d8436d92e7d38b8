"""``memstrata bench gguf``: the in-process GGUF backend's JSON calls, timed with
llama-cpp-python's own grammar sampler and with the lazy one, on the same prompts.

The prompts ask for what a graph design extracts from a turn (its entities, then facts
between them, as JSON) over the bundled sample conversation. Each goes to both samplers
in turn (alternating which goes first), greedy, with the schema the client would send.
Both must give the same replies; the report says whether they did, how fast each
reads a long prompt, the median time of a call and of a call per reply token, and how
often the lazy sampler had to test the whole vocabulary.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from memstrata.eval.report import write_report
from memstrata.llm.fence import FENCE_NOTE, fence
from memstrata.llm.gguf import GGUFBackend
from memstrata.llm.schema import bounded_json_schema
from memstrata.llm.types import Message

SAMPLERS = ("llama-cpp-python", "lazy")


class Entities(BaseModel):
    names: list[str] = Field(max_length=12)


class Fact(BaseModel):
    source: str
    target: str
    relation: str
    fact: str
    valid_at: str | None = None


class Facts(BaseModel):
    facts: list[Fact] = Field(max_length=8)


def _ask(system: str, user: str) -> list[Message]:
    """A system prompt and the sample text it works on, fenced as every prompt's is."""
    return [
        Message(role="system", content=f"{system} {FENCE_NOTE}"),
        Message(role="user", content=fence(user)),
    ]


def _sample() -> list[dict[str, Any]]:
    """The turns of the bundled sample conversation."""
    text = resources.files("memstrata.data").joinpath("sample_conversation.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def calls(turns: int) -> list[tuple[list[Message], type[BaseModel]]]:
    """Two calls per turn of the sample conversation: its entities, then its facts."""
    rows = _sample()[:turns]
    speakers = ", ".join(sorted({r["speaker"] for r in rows}))
    out: list[tuple[list[Message], type[BaseModel]]] = []
    for i, row in enumerate(rows):
        recent = "\n".join(f"{r['speaker']}: {r['text']}" for r in rows[max(0, i - 2) : i])
        episode = (
            f"<RECENT>\n{recent or '(none)'}\n</RECENT>\n"
            f"<CURRENT>\n{row['speaker']}: {row['text']}\n</CURRENT>"
        )
        out.append(
            (
                _ask(
                    "You extract the names of the people, places, organizations, objects "
                    "and events the current message mentions; the speaker counts. Answer "
                    'JSON: {"names": [...]}.',
                    episode,
                ),
                Entities,
            )
        )
        out.append(
            (
                _ask(
                    "You extract facts the current message states between two entities "
                    f"(the speakers are {speakers}): source, target, a short relation, the "
                    f"fact as one sentence, and valid_at as an ISO date when the text says "
                    f"when it started (the message was sent at {row['at']}). Answer JSON: "
                    '{"facts": [...]}.',
                    episode,
                ),
                Facts,
            )
        )
    return out


def _long_prompt() -> list[Message]:
    """The whole sample conversation (about 1,000 tokens), to time reading a prompt."""
    chat = "\n".join(f"{r['speaker']}: {r['text']}" for r in _sample())
    return _ask("Summarize the conversation as JSON.", chat)


async def _timed(
    backend: GGUFBackend, messages: list[Message], schema: dict[str, Any], max_tokens: int
) -> dict[str, Any]:
    start = time.perf_counter()
    c = await backend.complete(messages, json_schema=schema, max_tokens=max_tokens, temperature=0.0)
    return {
        "ms": (time.perf_counter() - start) * 1000,
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "text": c.text,
    }


async def _run(
    turns: int, max_tokens: int, model_path: str | None, weights: str | None
) -> dict[str, Any]:
    backends = {
        name: GGUFBackend(model_path, lazy_grammar=(name == "lazy"), weights=weights)
        for name in SAMPLERS
    }
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in SAMPLERS}
    reading: dict[str, float] = {}
    try:
        long = _long_prompt()
        for name in SAMPLERS:  # each model reads the long prompt once (no cached prefix)
            r = await _timed(backends[name], long, {"type": "object"}, 1)
            reading[name] = r["prompt_tokens"] / (r["ms"] / 1000)
        for i, (messages, model) in enumerate(calls(turns)):
            schema = bounded_json_schema(model)
            order = SAMPLERS if i % 2 == 0 else SAMPLERS[::-1]
            for name in order:
                rows[name].append(await _timed(backends[name], messages, schema, max_tokens))
        lazy = backends["lazy"]
        steps, refused, full = lazy.grammar_steps, lazy.grammar_refused, lazy.grammar_full_passes
    finally:
        for backend in backends.values():
            backend.close()
    same = sum(a["text"] == b["text"] for a, b in zip(*rows.values(), strict=True))
    report: dict[str, Any] = {
        "model": backends["lazy"].model,
        "turns": turns,
        "calls": len(rows["lazy"]),
        "max_tokens": max_tokens,
        "identical_replies": same,
        "lazy_steps": steps,
        "lazy_refused": refused,
        "lazy_full_passes": full,
        "samplers": {},
    }
    for name, got in rows.items():
        per_token = [r["ms"] / r["completion_tokens"] for r in got if r["completion_tokens"]]
        report["samplers"][name] = {
            "prompt_read_tokens_per_s": reading[name],
            "call_ms_p50": statistics.median(r["ms"] for r in got),
            "ms_per_reply_token_p50": statistics.median(per_token) if per_token else None,
            "total_s": sum(r["ms"] for r in got) / 1000,
            "prompt_tokens": sum(r["prompt_tokens"] for r in got),
            "completion_tokens": sum(r["completion_tokens"] for r in got),
        }
    return report


def run(
    turns: int = 8,
    max_tokens: int = 256,
    model_path: str | None = None,
    weights: str | None = "q8_0",
) -> dict[str, Any]:
    if turns < 1:
        raise ValueError("--turns must be at least 1")
    return asyncio.run(_run(turns, max_tokens, model_path, weights))


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# GGUF JSON calls: {report['model']}, {report['calls']} calls "
        f"({report['turns']} turns, max_tokens {report['max_tokens']})",
        "",
        "| sampler | prompt read (tokens/s) | call p50 (ms) | call ms per reply token, p50 "
        "| total (s) | prompt tokens | reply tokens |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in report["samplers"].items():
        per_token = s["ms_per_reply_token_p50"]
        lines.append(
            f"| {name} | {s['prompt_read_tokens_per_s']:.0f} | {s['call_ms_p50']:.0f} | "
            f"{'-' if per_token is None else f'{per_token:.1f}'} | {s['total_s']:.1f} | "
            f"{s['prompt_tokens']} | {s['completion_tokens']} |"
        )
    lines += [
        "",
        f"Identical replies: {report['identical_replies']} of {report['calls']}. "
        f"The lazy sampler chose {report['lazy_steps']} tokens; the grammar refused the "
        f"model's best at {report['lazy_refused']} of them, and the whole vocabulary was "
        f"tested at {report['lazy_full_passes']}.",
        "",
    ]
    return "\n".join(lines)


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, "gguf", markdown)
