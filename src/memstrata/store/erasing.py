"""The part of the store's contract that erasure uses (docs/engine.md, "Deleted means
gone"): what a delete must take along besides the rows, as primitives both backends
give. Which texts count as removed, and what is done with a text that quoted one, is
:mod:`memstrata.erasure`'s (one rule for both stores); these only find and change rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memstrata.store.base import EpisodeVersion

#: the word key of a vector whose text's words are not known (stored before vectors were
#: filed, or copied from another store): filed under no namespace, every delete takes it
UNKNOWN_WORDS = -1

#: how many words a scan of error texts filters on in SQL; past it, it reads them all
ERROR_PROBE_WORDS = 64


def probe_words(words: Collection[str]) -> list[str] | None:
    """The words an error scan may pre-filter on by substring, or None to read every
    error: too many, or one the text may spell otherwise than a substring test sees (a
    store's ``lower()`` folding only ASCII, a curly apostrophe read as a straight one),
    since the filter must never leave out a row the rule would take."""
    plain = all(w.isascii() and w.isalnum() for w in words)
    if not words or len(words) > ERROR_PROBE_WORDS or not plain:
        return None
    return sorted(words)


class StoreErasure(ABC):
    """Mixed into :class:`~memstrata.store.base.Store`."""

    @abstractmethod
    def forget_embeddings(
        self,
        hashes: Sequence[bytes],
        *,
        namespace: str | None = None,
        words: Collection[int] = (),
        everything: bool = False,
    ) -> int:
        """Drop the vectors made from removed texts: those of ``hashes`` (the texts' own)
        and those filed (``put_embeddings``) under ``namespace`` or under none with any
        of ``words`` (every one so filed, with ``everything``). Their filing under those
        goes; a vector goes unless a stored episode or version points to it or another
        namespace filed it too. Returns how many vectors went (every model's count)."""

    @abstractmethod
    def redact_errors(
        self,
        namespace: str,
        words: Collection[str],
        redact: Callable[[str], str | None],
    ) -> int:
        """Every stored error text of the namespace (failed LLM calls of it and of no
        namespace, failed build marks) that may hold one of ``words`` (all of them when
        ``words`` is empty) is given to ``redact``; where it returns a text, that
        replaces the error. Returns how many were replaced."""

    @abstractmethod
    def namespace_versions(self, namespace: str) -> list[EpisodeVersion]:
        """Every earlier version of the namespace's episodes (not the empty rows an
        update without history leaves), oldest first."""

    @abstractmethod
    def scrub(self) -> bool:
        """After repairs: push what deletes removed out of the store's files (SQLite: WAL
        checkpointed, truncated). False if not done (a reader held the WAL; PostgreSQL
        keeps dead rows until ``PostgresStore.vacuum``)."""
