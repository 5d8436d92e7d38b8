"""What a delete (or an update that drops history) must take along besides the rows,
the rule both stores follow (docs/engine.md, "Deleted means gone").

A text is *made from* a removed one when it held a content word of it: an LLM reply to a
prompt that quoted it (the response cache), a vector of a text a design derived from it
(a name, a fact, a summary, a sentence a route compared), an error message that quoted
it (a failed call's, a failed build's). The test is on words because that is what a
quote keeps, and it is the one the designs' repairs use for their own records
(:mod:`memstrata.engine.removal`): what holds a removed word goes (a vector, a reply) or
loses its text (an error keeps its class, so a failure still says what failed), and a
text that merely shares a word costs a call or an embedding again, never a leak. A
removed text of stopwords only gives no word to look for: everything of the namespace
that could have been made from it goes.

The store's delete removes the rows, the full-text terms and the index files in its
transaction; the designs' repairs re-derive what rested on the texts; :func:`erase` runs
last, once the repairs have cleared their log, so its scrub of the files sees the end
state. A repair that a drain runs later (its process held the lease, maybe with the
episode in a batch) takes what was made meanwhile itself (:func:`after_late_repair`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from memstrata.embed.base import content_hash
from memstrata.llm.cache import ResponseCache
from memstrata.models import Episode
from memstrata.retrieval import documents
from memstrata.retrieval.text import content_words, word_key
from memstrata.store.base import RemovedEpisode, Store

if TYPE_CHECKING:
    from memstrata.config import Config
    from memstrata.llm import LLMClient

logger = logging.getLogger("memstrata")

#: what an error text that quoted a removed text says instead, after its class
REDACTED = "(its text went with a deleted episode it quoted)"


class Removed(Protocol):
    """A removed version: an episode, or an entry of its history."""

    @property
    def namespace(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def speaker(self) -> str | None: ...
    @property
    def metadata(self) -> dict[str, Any]: ...


def versions_of(store: Store, namespace: str, episode: Episode) -> list[Removed]:
    """The episode's earlier versions, which an update without history erases too."""
    return list(store.episode_history(namespace, episode.id))


def going(store: Store, namespace: str, ids: Sequence[str]) -> list[Removed]:
    """What a delete of ``ids`` removes: each stored episode and its earlier versions."""
    out: list[Removed] = []
    for episode in store.get_episodes(namespace, list(ids)):
        out += [episode, *versions_of(store, namespace, episode)]
    return out


def all_episodes(store: Store, namespace: str) -> list[Removed]:
    """Every text of the namespace (before deleting it whole): its current episodes and
    their earlier versions."""
    out: list[Removed] = []
    after = 0
    while page := store.iter_episodes(namespace, after, 1000):
        out += page
        after = page[-1].key
    return out + list(store.namespace_versions(namespace))


def embedded_hashes(removed: Sequence[Removed]) -> list[bytes]:
    """The keys of the vectors made from these texts: the episode's own (its speaker's
    name first) and the speaker-free one a design may read it by."""
    out: list[bytes] = []
    for r in removed:
        for speaker in {r.speaker, None}:
            out.append(content_hash(documents.embed_text(r.text, speaker, r.metadata)))
    return list(dict.fromkeys(out))


def removed_words(texts: Sequence[str]) -> set[str] | None:
    """The content words of the removed ``texts``; None when one has none (see the
    module: everything that could be made from it is then taken)."""
    out: set[str] = set()
    for text in texts:
        found = content_words(text)
        if not found:
            return None
        out.update(found)
    return out


def redaction(words: Collection[str] | None) -> Callable[[str], str | None]:
    """The rule for a stored error text: one holding any of ``words`` (any at all, when
    None) keeps its class (``RuntimeError``) and says :data:`REDACTED` instead of the
    rest; None leaves it as it is."""

    def redact(text: str) -> str | None:
        if words is not None and not set(content_words(text)) & set(words):
            return None
        head = text.split(":", 1)[0].strip()
        new = f"{head if head.isidentifier() else 'error'}: {REDACTED}"
        return None if new == text else new

    return redact


def forget_made_from(
    store: Store,
    caches: Sequence[ResponseCache],
    namespace: str,
    texts: Sequence[str],
    hashes: Sequence[bytes] = (),
) -> None:
    """Take what was made from the removed ``texts`` of ``namespace``: the vectors of
    ``hashes`` (the texts' own) and those filed there (or under no namespace) under
    their words, the cached replies whose prompts held them, the error texts quoting
    them. Idempotent: a second run finds nothing."""
    words = removed_words(texts)
    store.forget_embeddings(
        hashes,
        namespace=namespace,
        words={word_key(w) for w in words or ()},
        everything=words is None,
    )
    for cache in caches:
        cache.purge(texts)
    store.redact_errors(namespace, sorted(words or ()), redaction(words))


def after_late_repair(
    store: Store, llm: LLMClient | None, namespace: str, removed: Sequence[RemovedEpisode]
) -> None:
    """After a repair that a drain ran for removals made earlier (their own delete could
    not take the lease): what was made from the texts meanwhile (a reply to a call in
    flight, its vectors, its errors) goes too. Only texts no longer stored count: a
    deleted episode's, or a replaced one no version keeps."""
    texts = [
        r.text
        for r in removed
        if r.deleted or r.text not in {v.text for v in store.episode_history(namespace, r.id)}
    ]
    if texts:
        caches = [llm.cache] if llm is not None and llm.cache is not None else []
        forget_made_from(store, caches, namespace, texts)
        store.scrub()


def erase(store: Store, config: Config, llm: LLMClient | None, removed: Sequence[Removed]) -> None:
    """:func:`forget_made_from` the removed texts (purging the configured cache file, and
    the client's own if it has another), then scrub the store's files."""
    if not removed:
        return
    from memstrata.factory import response_cache_path

    path = response_cache_path(config, store)
    own = llm.cache if llm is not None else None
    caches = [own] if own is not None else []
    other = None
    if path is not None and path.exists() and (own is None or own.path != path):
        other = ResponseCache(path)
        caches.append(other)
    try:
        texts = [r.text for r in removed]
        forget_made_from(store, caches, removed[0].namespace, texts, embedded_hashes(removed))
    finally:
        if other is not None:
            other.close()
    if not store.scrub():
        logger.info(
            "the removed text may stay in the store's files for now: %s",
            "a reader held the WAL (the next delete retries)"
            if store.url.startswith("sqlite")
            else "the server keeps dead rows until `memstrata pg vacuum` (docs/postgres.md)",
        )
