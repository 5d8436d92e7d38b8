"""Validating what callers add: text, ids and context become a :class:`PreparedEpisode`."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from memstrata.config import Config
from memstrata.errors import InvalidInputError
from memstrata.models import EpisodeIn
from memstrata.retrieval import documents
from memstrata.store import PreparedEpisode

EpisodeLike = EpisodeIn | PreparedEpisode | Mapping[str, Any] | str


def prepare_episode(item: EpisodeLike, config: Config) -> PreparedEpisode:
    """Validate one input and compute its index views; raises :class:`InvalidInputError`."""
    if isinstance(item, PreparedEpisode):
        return item
    if isinstance(item, str | bytes):
        item = {"text": item}
    if isinstance(item, Mapping):
        raw = dict(item)
        text = raw.get("text")
        if isinstance(text, bytes):
            raw["text"] = decode_utf8(text)
        try:
            ep = EpisodeIn.model_validate(raw)
        except ValidationError as exc:
            raise InvalidInputError(f"invalid episode: {_first_error(exc)}") from exc
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


def decode_utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"text is not valid UTF-8: byte 0x{data[exc.start]:02x} at position {exc.start}"
        ) from exc


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "input"
    return f"{where}: {err['msg']}"
