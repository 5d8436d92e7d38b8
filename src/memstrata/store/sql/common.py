"""Small helpers every SQL backend uses: times as stored, list chunks, speaker deltas,
the episode row, lease owners. Backend-neutral: no driver is imported here."""

from __future__ import annotations

import json
import os
import socket
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from importlib import resources
from typing import TYPE_CHECKING, Any

from memstrata.models import Episode

if TYPE_CHECKING:
    from memstrata.store.base import PreparedEpisode

HOST = socket.gethostname()

#: the columns :func:`episode` reads, ``e`` being episodes and ``n`` namespaces
EP_COLS = (
    "e.id, n.name, e.external_id, e.text, e.speaker, e.role, e.occurred_at, e.session, "
    "e.seq, e.metadata, e.created_at"
)

#: an API key's columns, in the order copies read and write them
KEY_COLS = "hash, prefix, namespaces, scope, label, created_at, revoked_at, public_id, opened_at"


def now() -> str:
    return datetime.now(UTC).isoformat()


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def ts(value: datetime | None) -> float | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def episode_values(ep: PreparedEpisode) -> tuple[Any, ...]:
    """What an add or an update writes of an episode, in the order of :data:`EPISODE_VALUES`."""
    return (
        ep.text,
        ep.speaker,
        ep.role,
        iso(ep.occurred_at),
        ts(ep.occurred_at),
        ep.session,
        json.dumps(ep.metadata, ensure_ascii=False) if ep.metadata else None,
        ep.content_hash,
        ep.embed_hash,
    )


#: the columns :func:`episode_values` fills
EPISODE_VALUES = (
    "text, speaker, role, occurred_at, occurred_ts, session, metadata, content_hash, embed_hash"
)


def stamp(moment: float | None = None) -> str:
    """A build mark's time, to the second, in UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(moment))


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def speaker_deltas(
    added: Iterable[str | None], removed: Iterable[str | None]
) -> list[tuple[str, int]]:
    """How a batch changes each speaker's episode count, non-zero ones, in name order
    (both stores take the rows in that order, so two writers cannot deadlock on them)."""
    delta: Counter[str] = Counter(s for s in added if s is not None)
    delta.subtract(s for s in removed if s is not None)
    return [(speaker, delta[speaker]) for speaker in sorted(delta) if delta[speaker]]


def episode(row: Sequence[Any]) -> Episode:
    """An :class:`Episode` of a row of :data:`EP_COLS`."""
    return Episode(
        key=row[0],
        namespace=row[1],
        id=row[2],
        text=row[3],
        speaker=row[4],
        role=row[5],
        occurred_at=row[6],
        session=row[7],
        seq=row[8],
        metadata=json.loads(row[9]) if row[9] else {},
        created_at=row[10],
    )


def process_alive(owner: str) -> bool:
    """False only when ``owner`` (``host:pid:token``) names a process of this host that
    no longer runs; a process elsewhere cannot be checked and counts as alive."""
    parts = owner.split(":")
    if len(parts) < 3 or parts[0] != HOST:
        return True
    try:
        pid = int(parts[1])
    except ValueError:
        return True
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def migrations(backend: str) -> list[tuple[int, str]]:
    """The numbered SQL files of ``store/migrations/<backend>``, as (version, text), in order."""
    folder = resources.files("memstrata.store").joinpath(f"migrations/{backend}")
    out = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            out.append((int(entry.name.split("_", 1)[0]), entry.read_text()))
    return sorted(out)
