"""Helpers for a design's :meth:`~memstrata.engine.contracts.Builder.repair`: which words
a delete or an update removed, whether a record's text still carries them, and which
episodes read a removed one in their context window.

A record's text is *derived* from its sources; after a removal it may only say what its
remaining sources (or, for an aggregate, its remaining members) say. The test here is on
content words: a word of the record that the removed text had and none of the texts it
may rest on has came from the removed text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memstrata.models import Episode, Span
from memstrata.retrieval.text import content_terms
from memstrata.store.base import RemovedEpisode, Repairs, Store


def removed_terms(work: Repairs) -> frozenset[str]:
    """Content words of every removed text."""
    return frozenset(t for ep in work.episodes for t in content_terms(ep.text))


def leaked(text: str, removed: frozenset[str], kept: Iterable[str]) -> set[str]:
    """Words of ``text`` that the removed texts had and none of ``kept`` has."""
    suspects = {t for t in content_terms(text) if t in removed}
    if not suspects:
        return set()
    for other in kept:
        suspects -= set(content_terms(other))
        if not suspects:
            break
    return suspects


def following(
    store: Store, namespace: str, removed: Sequence[RemovedEpisode], window: int
) -> list[Episode]:
    """The episodes that had a removed one among their ``window`` predecessors: the next
    turns of its session, or, without a session, the next episodes stored after it.
    Episodes removed themselves are left out."""
    gone = {ep.id for ep in removed}
    out: dict[str, Episode] = {}
    for ep in removed:
        if ep.session is not None:
            after = store.session_after(namespace, ep.session, ep.seq, window)
        else:
            after = store.iter_episodes(namespace, ep.key, window)
        for other in after:
            if other.id not in gone:
                out.setdefault(other.id, other)
    return list(out.values())


def episodes_by_id(store: Store, namespace: str, ids: Iterable[str]) -> dict[str, Episode]:
    """The stored episodes among ``ids`` (a removed one is simply absent)."""
    wanted = list(dict.fromkeys(ids))
    return {ep.id: ep for ep in store.get_episodes(namespace, wanted)}


def said_by(spans: Iterable[Span], episodes: dict[str, Episode]) -> list[str]:
    """What a record may still say: the texts of the episodes its spans cite, with their
    speakers' names."""
    out: list[str] = []
    for ep_id in dict.fromkeys(s.episode for s in spans):
        ep = episodes.get(ep_id)
        if ep is not None:
            out += [ep.text, ep.speaker or ""]
    return out
