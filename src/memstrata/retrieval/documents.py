"""What the indexes see of an episode.

Stored text is never changed; these functions decide the *index* views. The speaker is
part of both views because questions name people ("what did Ana say about ..."), and an
attached image's caption is part of both because a photo is often the only place a fact
appears.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memstrata.models import Episode, Hit, Span

#: memstrata's metadata key for a description of an attached image. Importers map their
#: format's own field onto it (the LoCoMo reader does); nothing else is read.
IMAGE_CAPTION = "image_caption"


def caption_of(metadata: dict[str, Any]) -> str | None:
    value = metadata.get(IMAGE_CAPTION)
    return value.strip() if isinstance(value, str) and value.strip() else None


def index_text(text: str, speaker: str | None, metadata: dict[str, Any]) -> str:
    """Body of the full-text index."""
    parts = [speaker or "", text]
    caption = caption_of(metadata)
    if caption:
        parts.append(caption)
    return " \n".join(p for p in parts if p)


def embed_text(text: str, speaker: str | None, metadata: dict[str, Any]) -> str:
    """Input of the embedder."""
    body = f"{speaker}: {text}" if speaker else text
    caption = caption_of(metadata)
    if caption:
        body += f" [shared a photo: {caption}]"
    return body


def render(text: str, speaker: str | None, when: str | None, metadata: dict[str, Any]) -> str:
    """How an episode reads in a context handed to an answer model."""
    head = " ".join(p for p in (f"[{when}]" if when else "", f"{speaker}:" if speaker else "") if p)
    caption = caption_of(metadata)
    body = text + (f" [shared a photo: {caption}]" if caption else "")
    return f"{head} {body}" if head else body


def episode_hit(
    ep: Episode,
    score: float,
    routes: Iterable[str] = (),
    spans: Iterable[Span] = (),
    excerpt: Span | None = None,
) -> Hit:
    """An episode as a hit, rendered as the answer model reads it; every route that
    returns episodes makes them here, so they read and cite alike. With ``excerpt`` (the
    chunk a route matched), the hit reads only that part of a long episode, marked
    "…" where it is cut, so a 100,000-character episode reaches the answer as the
    chunk that was found rather than being dropped from the context whole."""
    when = ep.occurred_at.strftime("%Y-%m-%d %H:%M") if ep.occurred_at else None
    text = ep.text
    if excerpt is not None and (excerpt.start > 0 or excerpt.end < len(text)):
        part = text[excerpt.start : excerpt.end].strip()
        head = "…" if text[: excerpt.start].strip() else ""
        tail = "…" if text[excerpt.end :].strip() else ""
        text = f"{head}{part}{tail}" if part else text
    return Hit(
        kind="episode",
        id=ep.id,
        text=render(text, ep.speaker, when, ep.metadata),
        score=round(score, 6),
        sources=[ep.id],
        spans=list(spans),
        routes=sorted(set(routes)),
        metadata={"speaker": ep.speaker, "session": ep.session},
    )
