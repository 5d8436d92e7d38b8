"""Reading LoCoMo files: conversations become namespaces, turns become episodes.

Each conversation is imported into the namespace named by its ``sample_id``; turn ids are
the ``dia_id`` (``D3:7``); every turn of a session carries the session's date and time;
an image shared in a turn keeps its caption in ``metadata["image_caption"]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memstrata.errors import InvalidInputError

CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
_SESSION = re.compile(r"^session_(\d+)$")
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)


@dataclass
class Question:
    id: str
    namespace: str
    question: str
    answer: str
    category: int
    evidence: list[str] = field(default_factory=list)


@dataclass
class Conversation:
    namespace: str
    turns: list[dict[str, Any]]
    questions: list[Question]


def parse_session_time(value: str) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` → datetime (naive, local time of the conversation)."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(value.strip(), fmt)
        except ValueError:
            continue
    return None


def clean_evidence(raw: list[Any], known: set[str]) -> list[str]:
    """Normalise ids such as ``D:11:26``, ``D30:05`` or ``"D3:7,D3:8"``; drop unknown ones."""
    out: list[str] = []
    for item in raw:
        for match in _EVIDENCE.finditer(str(item)):
            eid = f"D{int(match.group(1))}:{int(match.group(2))}"
            if eid in known and eid not in out:
                out.append(eid)
    return out


def load(path: str | Path) -> list[Conversation]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"cannot read LoCoMo file {path}: {exc}") from exc
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(s, dict) for s in data):
        raise InvalidInputError(f"{path} is not a LoCoMo file (expected a list of samples)")
    return [_conversation(sample, i) for i, sample in enumerate(data)]


def _conversation(sample: dict[str, Any], index: int) -> Conversation:
    try:
        conv = sample["conversation"]
        namespace = str(sample.get("sample_id") or f"conv-{index}")
    except KeyError as exc:
        raise InvalidInputError(f"LoCoMo sample {index} has no {exc}") from exc
    turns: list[dict[str, Any]] = []
    sessions = sorted((int(m.group(1)), key) for key in conv if (m := _SESSION.match(key)))
    for number, key in sessions:
        when = parse_session_time(str(conv.get(f"{key}_date_time", "")))
        for turn in conv[key] or []:
            metadata: dict[str, Any] = {}
            if turn.get("blip_caption"):
                metadata["image_caption"] = turn["blip_caption"]
            if turn.get("img_url"):
                metadata["image_url"] = turn["img_url"]
            turns.append(
                {
                    "id": turn["dia_id"],
                    "text": turn.get("text") or "",
                    "speaker": turn.get("speaker"),
                    "occurred_at": when,
                    "session": f"session_{number}",
                    "metadata": metadata,
                }
            )
    known = {t["id"] for t in turns}
    questions = [
        Question(
            id=f"{namespace}:q{i}",
            namespace=namespace,
            question=str(qa.get("question", "")),
            answer=str(qa.get("answer", qa.get("adversarial_answer", ""))),
            category=int(qa.get("category", 0)),
            evidence=clean_evidence(qa.get("evidence") or [], known),
        )
        for i, qa in enumerate(sample.get("qa") or [])
    ]
    return Conversation(namespace=namespace, turns=turns, questions=questions)


def iter_turns(conversations: list[Conversation]) -> Iterator[tuple[str, dict[str, Any]]]:
    for conv in conversations:
        for turn in conv.turns:
            yield conv.namespace, turn
