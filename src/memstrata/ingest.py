"""Validating what callers add: text, ids and context become a :class:`PreparedEpisode`."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from memstrata.config import Config
from memstrata.errors import InvalidInputError
from memstrata.models import EPISODE_KEYS, EpisodeIn
from memstrata.retrieval import documents
from memstrata.store import PreparedEpisode

EpisodeLike = EpisodeIn | PreparedEpisode | Mapping[str, Any] | str


#: the check of an episode id below as a regular expression (the service's OpenAPI
#: document): no C0 control character or DEL, one character that is not white space
ID_PATTERN = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"


def prepare_episode(item: EpisodeLike, config: Config) -> PreparedEpisode:
    """Validate one input and compute its index views; raises :class:`InvalidInputError`."""
    if isinstance(item, PreparedEpisode):
        return item
    if isinstance(item, str | bytes):
        item = {"text": item}
    if isinstance(item, Mapping):
        raw, written = episode_fields(item)
        text = raw.get("text")
        if isinstance(text, bytes):
            raw["text"] = decode_utf8(text)
        try:
            ep = EpisodeIn.model_validate(raw)
        except ValidationError as exc:
            raise InvalidInputError(f"invalid episode: {_first_error(exc, written)}") from exc
    else:
        ep = item
    text = ep.text
    if not text.strip():
        what = f"episode {ep.id!r}" if ep.id else "episode"
        raise InvalidInputError(f"{what} has empty text; nothing to remember")
    if len(text) > config.max_episode_chars:
        raise InvalidInputError(
            f"episode {ep.id or ''} has {len(text):,} characters, more than the limit of "
            f"{config.max_episode_chars:,} (max_episode_chars); split it into chunks"
        )
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"episode {ep.id or ''} text is not valid Unicode ({exc.reason} at position "
            f"{exc.start})"
        ) from exc
    for field in ("id", "speaker", "role", "session"):
        value = getattr(ep, field)
        if value is not None and not _encodable(value):
            raise InvalidInputError(f"episode {field} {value!r} is not valid Unicode")
    if ep.id is not None and not ep.id.strip():
        raise InvalidInputError(
            f"episode id {ep.id!r} is empty; give an id, or leave it out for a generated one"
        )
    if ep.id is not None and any(ord(c) < 32 or ord(c) == 127 for c in ep.id):  # ID_PATTERN
        raise InvalidInputError(
            f"episode id {ep.id!r} holds a control character (NUL, newline, ...); ids are "
            "printable text"
        )
    external_id = ep.id or uuid.uuid4().hex
    metadata = dict(ep.metadata)
    return PreparedEpisode(
        external_id=external_id,
        text=text,
        speaker=ep.speaker,
        role=ep.role,
        occurred_at=ep.occurred_at,
        session=ep.session,
        metadata=metadata,
        content_hash=hashlib.sha256(encoded).digest()[:16],
        index_text=documents.index_text(text, ep.speaker, metadata),
        embed_hash=None,
    )


def episode_fields(item: Mapping[Any, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The fields of :class:`EpisodeIn` in a mapping, and the key the caller wrote for each.

    A key outside :data:`EPISODE_KEYS` is refused rather than dropped: a misspelt or
    foreign field would otherwise lose data without a word. ``at`` (the import files'
    name) stands for ``occurred_at``; errors name the key as it was written.
    """
    unknown = [key for key in item if key not in EPISODE_KEYS]
    if unknown:
        named = ", ".join(repr(key) for key in unknown)
        raise InvalidInputError(
            f"unknown key{'s' if len(unknown) > 1 else ''} {named}; an episode takes "
            f"{', '.join(EPISODE_KEYS)}"
        )
    raw = dict(item)
    written = {}
    if "at" in raw:
        at = raw.pop("at")
        if at is not None and raw.get("occurred_at") is not None:
            raise InvalidInputError(
                "both 'at' and 'occurred_at' are given; they name the same time, give one"
            )
        if at is not None or "occurred_at" not in raw:
            raw["occurred_at"] = at
            written["occurred_at"] = "at"
    return raw, written


def _encodable(value: str) -> bool:
    """Whether ``value`` can be stored as UTF-8 (no lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def decode_utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"text is not valid UTF-8: byte 0x{data[exc.start]:02x} at position {exc.start}"
        ) from exc


def _first_error(exc: ValidationError, written: Mapping[str, str]) -> str:
    """The first problem, under the key the caller wrote, with the value it had."""
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    if loc:
        loc[0] = written.get(loc[0], loc[0])
    where = ".".join(loc) or "input"
    message = f"{where}: {err['msg']}"
    if err["type"] != "missing":
        message += f" (got {_short(err['input'])})"
    if loc and loc[0] in ("at", "occurred_at"):
        message += "; expected an ISO 8601 time such as 2024-03-02T10:21:00"
    return message


def _short(value: Any, limit: int = 60) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
