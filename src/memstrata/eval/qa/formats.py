"""Question-answering sets in one shape: samples of turns, each with its questions.

Three readers produce :class:`Sample` lists:

* ``locomo``: the LoCoMo release (through :mod:`memstrata.importers.locomo`); categories get
  their names, adversarial questions (category 5) are marked ``abstain``.
* ``longmemeval``: ``longmemeval_s`` / ``_m`` / ``_oracle``; one sample (namespace) per
  question holding its haystack sessions; turn ids are ``<session id>:<index>``; the
  evidence is the turns flagged ``has_answer`` and the sessions in ``answer_session_ids``;
  a question id ending in ``_abs`` is an abstention question.
* ``qaset``: the generic JSON documented in the README, for chat and documents alike. A
  question may name, beside its ``evidence`` (the turns stating the value asked for),
  ``stale`` turns that state a value since superseded and that value (``stale_answer``):
  knowledge-update data. Only this reader knows those names; the run scores what it gets.

Bad files raise :class:`InvalidInputError` naming the record (sample, turn or question).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memstrata.errors import InvalidInputError
from memstrata.importers import locomo

FORMATS = ("locomo", "longmemeval", "qaset")


@dataclass
class Turn:
    id: str
    text: str
    speaker: str | None = None
    at: datetime | None = None
    session: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def episode(self) -> dict[str, Any]:
        """What ``add_many`` takes."""
        return {
            "id": self.id,
            "text": self.text,
            "speaker": self.speaker,
            "occurred_at": self.at,
            "session": self.session,
            "metadata": self.metadata,
        }


@dataclass
class QA:
    id: str
    question: str
    answer: str | None = None
    category: str = "all"
    evidence: list[str] = field(default_factory=list)
    evidence_sessions: list[str] = field(default_factory=list)
    abstain: bool = False
    #: an adversarial question's trap: the plausible answer the data set offers, which
    #: the conversation does not support (LoCoMo's ``adversarial_answer``)
    candidate: str | None = None
    #: turns stating a value the evidence has since superseded (knowledge-update data)
    stale: list[str] = field(default_factory=list)
    #: the superseded value those turns state
    stale_answer: str | None = None


@dataclass
class Sample:
    id: str
    turns: list[Turn]
    qa: list[QA]

    def session_of(self) -> dict[str, str]:
        return {t.id: t.session for t in self.turns if t.session}


def load(path: str | Path, fmt: str) -> list[Sample]:
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "locomo":
        return from_locomo(path)
    data = _json(path, fmt)
    if fmt == "longmemeval":
        return from_longmemeval(data, str(path))
    return from_qaset(data, str(path))


def file_hash(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _json(path: str | Path, fmt: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"cannot read {fmt} file {path}: {exc}") from exc


# LoCoMo ---------------------------------------------------------------------------------
def from_locomo(path: str | Path) -> list[Sample]:
    out = []
    for conv in locomo.load(path):
        turns = [
            Turn(
                id=t["id"],
                text=t["text"],
                speaker=t.get("speaker"),
                at=t.get("occurred_at"),
                session=t.get("session"),
                metadata=dict(t.get("metadata") or {}),
            )
            for t in conv.turns
        ]
        sessions = {t.id: t.session for t in turns}
        qa = [
            QA(
                id=q.id,
                question=q.question,
                answer=None if q.category == 5 else q.answer,
                category=locomo.CATEGORY_NAMES.get(q.category, str(q.category)),
                evidence=list(q.evidence),
                evidence_sessions=_distinct(sessions.get(e) for e in q.evidence),
                abstain=q.category == 5,
                candidate=(q.answer or None) if q.category == 5 else None,
            )
            for q in conv.questions
        ]
        out.append(Sample(id=conv.namespace, turns=turns, qa=qa))
    return out


# LongMemEval ----------------------------------------------------------------------------
def parse_lme_date(value: Any) -> datetime | None:
    """``"2023/05/20 (Sat) 02:21"`` → datetime; None when absent or unreadable."""
    text = str(value or "").strip()
    if not text:
        return None
    day, _, rest = text.partition(" (")
    clock = rest.partition(") ")[2]
    for fmt in ("%Y/%m/%d %H:%M", "%Y/%m/%d"):
        try:
            return datetime.strptime(f"{day} {clock}".strip(), fmt)
        except ValueError:
            continue
    return None


def from_longmemeval(data: Any, where: str = "<data>") -> list[Sample]:
    if not isinstance(data, list):
        raise InvalidInputError(f"{where} is not a LongMemEval file (expected a list of questions)")
    out = []
    for i, rec in enumerate(data):
        qid_text = rec.get("question_id") if isinstance(rec, dict) else None
        name = f"{where}: question {i}" + (f" ({qid_text})" if qid_text is not None else "")
        if not isinstance(rec, dict):
            raise InvalidInputError(f"{name} is not an object")
        for key in ("question_id", "question", "haystack_sessions", "haystack_session_ids"):
            if key not in rec:
                raise InvalidInputError(f"{name} has no {key!r}")
        qid = str(rec["question_id"])
        if not isinstance(rec["question"], str) or not rec["question"].strip():
            raise InvalidInputError(f"{name}: the question is empty")
        sessions, ids = rec["haystack_sessions"], rec["haystack_session_ids"]
        dates = rec.get("haystack_dates") or [None] * len(ids)
        if not (isinstance(sessions, list) and isinstance(ids, list)) or len(sessions) != len(ids):
            raise InvalidInputError(
                f"{name}: haystack_sessions and haystack_session_ids differ in length"
            )
        turns: list[Turn] = []
        evidence: list[str] = []
        for sid, when, session in zip(ids, dates, sessions, strict=False):
            if not isinstance(session, list):
                raise InvalidInputError(f"{name}: session {sid} is not a list of turns")
            for j, turn in enumerate(session):
                if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
                    raise InvalidInputError(f"{name}: session {sid} turn {j} has no text content")
                tid = f"{sid}:{j}"
                turns.append(
                    Turn(
                        id=tid,
                        text=turn["content"],
                        speaker=turn.get("role"),
                        at=parse_lme_date(when),
                        session=str(sid),
                    )
                )
                if turn.get("has_answer"):
                    evidence.append(tid)
        known = {str(s) for s in ids}
        qa = QA(
            id=qid,
            question=str(rec["question"]),
            answer=None if rec.get("answer") is None else str(rec["answer"]),
            category=str(rec.get("question_type") or "all"),
            evidence=evidence,
            evidence_sessions=[
                str(s) for s in rec.get("answer_session_ids") or [] if str(s) in known
            ],
            abstain=qid.endswith("_abs"),
        )
        out.append(Sample(id=qid, turns=turns, qa=[qa]))
    _unique([s.id for s in out], where, "question_id")
    return out


# the generic QA set ---------------------------------------------------------------------
def from_qaset(data: Any, where: str = "<data>") -> list[Sample]:
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise InvalidInputError(f"{where} is not a QA set (expected a list of samples)")
    out = []
    for i, rec in enumerate(data):
        if not isinstance(rec, dict):
            raise InvalidInputError(f"{where}: sample {i} is not an object")
        sid = rec.get("sample_id")
        if not isinstance(sid, str) or not sid.strip():
            raise InvalidInputError(f"{where}: sample {i} has no sample_id")
        name = f"{where}: sample {sid!r}"
        raw_turns, raw_qa = rec.get("turns"), rec.get("qa")
        if not isinstance(raw_turns, list) or not isinstance(raw_qa, list):
            raise InvalidInputError(f"{name} needs a list of turns and a list of qa")
        turns = [_qaset_turn(t, f"{name} turn {j}") for j, t in enumerate(raw_turns)]
        _unique([t.id for t in turns], name, "turn id")
        known = {t.id for t in turns}
        sessions = {t.id: t.session for t in turns}
        qa = [
            _qaset_qa(q, f"{name} question {j}", f"{sid}:q{j}", known, sessions)
            for j, q in enumerate(raw_qa)
        ]
        _unique([q.id for q in qa], name, "question id")
        out.append(Sample(id=sid, turns=turns, qa=qa))
    _unique([s.id for s in out], where, "sample_id")
    return out


def _qaset_turn(rec: Any, name: str) -> Turn:
    if not isinstance(rec, dict):
        raise InvalidInputError(f"{name} is not an object")
    tid, text = rec.get("id"), rec.get("text")
    if not isinstance(tid, str) or not tid:
        raise InvalidInputError(f"{name} has no id")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError(f"{name} ({tid}) has no text")
    at = rec.get("at")
    when = None
    if at is not None:
        try:
            when = datetime.fromisoformat(str(at))
        except ValueError as exc:
            raise InvalidInputError(f"{name} ({tid}): 'at' is not an ISO date: {at!r}") from exc
    meta = rec.get("metadata") or {}
    if not isinstance(meta, dict):
        raise InvalidInputError(f"{name} ({tid}): metadata is not an object")
    return Turn(
        id=tid,
        text=text,
        speaker=_opt_str(rec.get("speaker")),
        at=when,
        session=_opt_str(rec.get("session")),
        metadata=meta,
    )


def _qaset_qa(
    rec: Any, name: str, default_id: str, known: set[str], sessions: dict[str, str | None]
) -> QA:
    if not isinstance(rec, dict):
        raise InvalidInputError(f"{name} is not an object")
    question = rec.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InvalidInputError(f"{name} has no question")
    evidence = rec.get("evidence", [])
    if not isinstance(evidence, list):
        raise InvalidInputError(f"{name}: evidence is not a list of turn ids")
    unknown = [str(e) for e in evidence if str(e) not in known]
    if unknown:
        raise InvalidInputError(f"{name}: evidence names unknown turn ids {unknown[:5]}")
    ev = _distinct(str(e) for e in evidence)
    stale = rec.get("stale", [])
    if not isinstance(stale, list):
        raise InvalidInputError(f"{name}: stale is not a list of turn ids")
    unknown = [str(e) for e in stale if str(e) not in known]
    if unknown:
        raise InvalidInputError(f"{name}: stale names unknown turn ids {unknown[:5]}")
    old = _distinct(str(e) for e in stale)
    both = [e for e in old if e in ev]
    if both:
        raise InvalidInputError(f"{name}: turns {both[:5]} are both evidence and stale")
    return QA(
        id=str(rec.get("id") or default_id),
        question=question,
        answer=_opt_str(rec.get("answer")),
        category=str(rec.get("category") or "all"),
        evidence=ev,
        evidence_sessions=_distinct(sessions.get(e) for e in ev),
        abstain=bool(rec.get("abstain", False)),
        candidate=_opt_str(rec.get("candidate")),
        stale=old,
        stale_answer=_opt_str(rec.get("stale_answer")),
    )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _distinct(items: Any) -> list[str]:
    return [x for x in dict.fromkeys(items) if x]


def _unique(ids: list[str], where: str, what: str) -> None:
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise InvalidInputError(f"{where}: {what} {i!r} appears twice")
        seen.add(i)
