"""Converters to the generic QA-set JSON (``memstrata bench convert``).

* ``locomo``: each conversation becomes a sample; turns keep their ``D3:7`` ids, speaker,
  session and session date; adversarial questions get ``"abstain": true`` and no answer.
* ``hotpotqa``: document memory. One sample holds every passage of the corpus as one turn
  (id = title, text = its sentences joined); a question's evidence is the distinct titles
  of its supporting facts. Without a corpus file the passages come from the questions'
  own ``context``.
* ``longmemeval``: one sample per question, as the reader builds it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memstrata.errors import InvalidInputError
from memstrata.eval.qa import formats
from memstrata.eval.qa.formats import QA, Sample, Turn

SOURCES = ("locomo", "longmemeval", "hotpotqa")


def convert(path: str | Path, source: str, corpus: str | Path | None = None) -> list[Sample]:
    if source in ("locomo", "longmemeval"):
        return formats.load(path, source)
    if source == "hotpotqa":
        return from_hotpotqa(path, corpus)
    raise InvalidInputError(f"unknown source {source!r}; choose one of {', '.join(SOURCES)}")


def from_hotpotqa(path: str | Path, corpus: str | Path | None = None) -> list[Sample]:
    questions = formats._json(path, "hotpotqa")
    if not isinstance(questions, list):
        raise InvalidInputError(f"{path} is not a HotpotQA file (expected a list of questions)")
    passages: dict[str, str] = {}
    if corpus is not None:
        data = formats._json(corpus, "hotpotqa corpus")
        if not isinstance(data, dict):
            raise InvalidInputError(f"{corpus} is not a corpus (expected {{title: [sentences]}})")
        for title, sents in data.items():
            passages[str(title)] = _joined(sents, f"{corpus}: passage {title!r}")
    qa: list[QA] = []
    for i, rec in enumerate(questions):
        name = f"{path}: question {i}"
        if not isinstance(rec, dict) or not isinstance(rec.get("question"), str):
            raise InvalidInputError(f"{name} has no question")
        if corpus is None:
            for item in rec.get("context") or []:
                if isinstance(item, list) and len(item) == 2:
                    passages.setdefault(str(item[0]), _joined(item[1], f"{name} context"))
        facts = rec.get("supporting_facts") or []
        titles = list(dict.fromkeys(str(f[0]) for f in facts if isinstance(f, list) and f))
        missing = [t for t in titles if t not in passages]
        if missing:
            raise InvalidInputError(f"{name}: supporting passages {missing} are not in the corpus")
        qa.append(
            QA(
                id=str(rec.get("_id") or f"q{i}"),
                question=rec["question"],
                answer=None if rec.get("answer") is None else str(rec["answer"]),
                category=str(rec.get("type") or "all"),
                evidence=titles,
            )
        )
    turns = [Turn(id=title, text=text) for title, text in passages.items() if text.strip()]
    return [Sample(id="hotpotqa", turns=turns, qa=qa)]


def _joined(sentences: Any, name: str) -> str:
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
        raise InvalidInputError(f"{name} is not a list of sentences")
    return "".join(sentences).strip()


def to_qaset(samples: list[Sample]) -> list[dict[str, Any]]:
    out = []
    for s in samples:
        turns = []
        for t in s.turns:
            row: dict[str, Any] = {"id": t.id, "text": t.text}
            if t.speaker:
                row["speaker"] = t.speaker
            if t.at:
                row["at"] = t.at.isoformat()
            if t.session:
                row["session"] = t.session
            if t.metadata:
                row["metadata"] = t.metadata
            turns.append(row)
        qa = []
        for q in s.qa:
            item: dict[str, Any] = {"id": q.id, "question": q.question, "evidence": q.evidence}
            if q.answer is not None:
                item["answer"] = q.answer
            if q.category != "all":
                item["category"] = q.category
            if q.abstain:
                item["abstain"] = True
            if q.candidate is not None:
                item["candidate"] = q.candidate
            if q.stale:
                item["stale"] = q.stale
            if q.stale_answer is not None:
                item["stale_answer"] = q.stale_answer
            qa.append(item)
        out.append({"sample_id": s.id, "turns": turns, "qa": qa})
    return out


def write(samples: list[Sample], out: str | Path) -> Path:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_qaset(samples), indent=1, ensure_ascii=False), encoding="utf-8")
    return path
