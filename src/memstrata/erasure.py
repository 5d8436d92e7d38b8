"""What a delete (or an update that drops history) must take along besides the rows:
the vectors embedded from the removed texts, the LLM replies made from them, and their
bytes in the store's own files (docs/engine.md, "Deleted means gone").

The store's delete removes the rows, the full-text terms and the index files in its
transaction; the designs' repairs re-derive what rested on the texts; this runs last,
once the repairs have cleared their log, so its scrub of the files sees the end state.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from memstrata.embed.base import content_hash
from memstrata.llm.cache import ResponseCache
from memstrata.models import Episode
from memstrata.retrieval import documents
from memstrata.store.base import Store

if TYPE_CHECKING:
    from memstrata.config import Config
    from memstrata.llm import LLMClient

logger = logging.getLogger("memstrata")


class Removed(Protocol):
    """A removed version: an episode, or an entry of its history."""

    @property
    def text(self) -> str: ...
    @property
    def speaker(self) -> str | None: ...
    @property
    def metadata(self) -> dict[str, Any]: ...


def versions_of(store: Store, namespace: str, episode: Episode) -> list[Removed]:
    """The episode's earlier versions, which an update without history erases too."""
    return list(store.episode_history(namespace, episode.id))


def all_episodes(store: Store, namespace: str) -> list[Removed]:
    """Every current episode of the namespace (before deleting it whole)."""
    out: list[Removed] = []
    after = 0
    while page := store.iter_episodes(namespace, after, 1000):
        out += page
        after = page[-1].key
    return out


def embedded_hashes(removed: Sequence[Removed]) -> list[bytes]:
    """The keys of the vectors made from these texts: the episode's own (its speaker's
    name first) and the speaker-free one a design may read it by."""
    out: list[bytes] = []
    for r in removed:
        for speaker in {r.speaker, None}:
            out.append(content_hash(documents.embed_text(r.text, speaker, r.metadata)))
    return list(dict.fromkeys(out))


def erase(store: Store, config: Config, llm: LLMClient | None, removed: Sequence[Removed]) -> None:
    """Forget the vectors no stored text needs, purge the cached LLM replies made from
    the removed texts (the configured cache file, and the client's own if it has
    another), then scrub the store's files."""
    if not removed:
        return
    from memstrata.factory import response_cache_path

    store.forget_embeddings(embedded_hashes(removed))
    texts = [r.text for r in removed]
    path = response_cache_path(config, store)
    own = llm.cache if llm is not None else None
    if own is not None:
        own.purge(texts)
    if path is not None and path.exists() and (own is None or own.path != path):
        with ResponseCache(path) as cache:
            cache.purge(texts)
    if not store.scrub():
        logger.info(
            "the removed text may stay in the store's files for now: %s",
            "a reader held the WAL (the next delete retries)"
            if store.url.startswith("sqlite")
            else "the server keeps dead rows until `memstrata pg vacuum` (docs/postgres.md)",
        )
