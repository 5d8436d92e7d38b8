"""What a conversation's order says about its turns, for System-1's ranking.

A chat's evidence is not where the question's words are alone: a reply leans on the turn
before it ("yes, last week!"), a topic is discussed over several turns, and a question
one person asks is answered by the next turn, in words of its own. These functions read
the candidates' sessions and positions (:class:`~memstrata.store.base.EpisodeMeta`) and,
for the answers to questions, the texts of the best candidates and their replies.
Passages outside any session (a document's) are left as they are.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import defaultdict
from functools import lru_cache
from itertools import chain

from memstrata.models import Episode
from memstrata.retrieval.system1 import standing
from memstrata.retrieval.text import sentences
from memstrata.store.base import EpisodeMeta, EpisodeText, ScoredKeys, SearchFilters, Store

#: a turn as ranking reads it: whole, or its text with who said it and where
Said = Episode | EpisodeText


def by_session(meta: dict[int, EpisodeMeta]) -> dict[str, list[EpisodeMeta]]:
    """The candidates of each session, in the order they were said."""
    groups: dict[str, list[EpisodeMeta]] = defaultdict(list)
    for m in meta.values():
        if m.session is not None:
            groups[m.session].append(m)
    for group in groups.values():
        group.sort(key=lambda m: m.seq)
    return groups


def near(meta: dict[int, EpisodeMeta], window: int) -> dict[int, list[int]]:
    """Each candidate's fellow candidates within ``window`` turns of it in its session."""
    out: dict[int, list[int]] = {}
    for group in by_session(meta).values():
        seqs = [m.seq for m in group]
        for m in group:
            lo = bisect_left(seqs, m.seq - window)
            hi = bisect_right(seqs, m.seq + window)
            out[m.key] = [g.key for g in group[lo:hi] if g.key != m.key]
    return out


def in_session(
    bm25: ScoredKeys, meta: dict[int, EpisodeMeta], window: int
) -> list[tuple[int, int]]:
    """The candidates ranked by the summed BM25 scores of themselves and the turns within
    ``window`` of them in the same session, as (key, rank from 1), best first; turns with
    the same sum share the best rank among them. Candidates with no lexical evidence
    around them, and those outside any session (a passage of a document), are left out.
    A question's evidence clusters where its topic is discussed: the second turn of a
    two-turn answer shares no word with the question, but its neighbours do."""
    lexical = dict(bm25)
    totals: dict[int, float] = {}
    for group in by_session(meta).values():
        seqs = [m.seq for m in group]
        found = [lexical.get(m.key, 0.0) for m in group]
        for i, m in enumerate(group):
            lo = bisect_left(seqs, m.seq - window)
            hi = bisect_right(seqs, m.seq + window)
            # its own score, then its neighbours' in the order they were said
            totals[m.key] = found[i] + sum(chain(found[lo:i], found[i + 1 : hi]))
    score = {key: totals[key] for key in meta if totals.get(key, 0.0) > 0}
    ranked = sorted(score, key=lambda key: -score[key])
    out: list[tuple[int, int]] = []
    for i, key in enumerate(ranked):
        tied = i > 0 and math.isclose(score[key], score[ranked[i - 1]], rel_tol=1e-9)
        out.append((key, out[-1][1] if tied else i + 1))
    return out


@lru_cache(maxsize=8192)
def asks(text: str) -> bool:
    """Whether a turn ends by asking something: its last sentence is a question."""
    if "?" not in text:  # most turns; splitting them into sentences is the cost
        return False
    spans = sentences(text)
    return bool(spans) and text[spans[-1][0] : spans[-1][1]].endswith("?")


def _by_assistant(episode: Said) -> bool:
    return standing.by_assistant(episode.role, episode.speaker)


def replies(
    store: Store,
    namespace: str,
    base: dict[int, float],
    meta: dict[int, EpisodeMeta],
    routes: dict[int, list[str]],
    filters: SearchFilters | None,
    *,
    weight: float,
    pool: int,
) -> tuple[dict[int, float], dict[int, Said]]:
    """The turns that answer a question among the ``pool`` best candidates (by ``base``,
    the fused scores), each with ``weight`` x its question's score; and the texts read
    (of candidates only).

    A question is a turn whose last sentence ends with a question mark; its reply is the
    next turn of the session, said by someone else. A reply that was no candidate joins
    them when it passes the ``filters``: ``meta``, ``base`` (at 0) and ``routes`` (by the
    route "reply") gain it. Pairs with an assistant in them do not count: an assistant's
    answer to a user is not what the user said, and its questions ("Would you like more
    examples?") ask for consent more than for facts; with them the rule lost on the long
    user/assistant chats (docs/benchmarks.md, "Answers to questions")."""
    best = sorted(base, key=lambda key: -base[key])[:pool]
    placed = [key for key in best if meta[key].session is not None]
    read: dict[int, Said] = dict(store.episode_texts(placed))
    asking = [key for key in best if key in read and asks(read[key].text)]
    gains: dict[int, float] = defaultdict(float)
    joining: list[int] = []
    for key in asking:
        m = meta[key]
        if m.session is None or _by_assistant(read[key]):
            continue
        after = store.session_after(namespace, m.session, m.seq, 1)
        if not after or after[0].speaker == m.speaker or _by_assistant(after[0]):
            continue
        reply = after[0]
        if reply.key not in meta:
            if filters is not None and not filters.admits(reply):
                continue
            joining.append(reply.key)  # one turn before it: it joins once
        read[reply.key] = reply
        gains[reply.key] += weight * base[key]
    for key in _join(store, joining, meta, routes, "reply"):
        base[key] = 0.0
    kept = {key: gain for key, gain in gains.items() if key in meta}
    return kept, {key: e for key, e in read.items() if key in meta}


def thread(
    store: Store,
    best: int,
    meta: dict[int, EpisodeMeta],
    routes: dict[int, list[str]],
    speakers: list[str],
    filters: SearchFilters | None,
    *,
    window: int,
) -> tuple[list[int], dict[int, Episode]]:
    """The turns of ``speakers`` within ``window`` turns of ``best`` (the best candidate)
    in its session, and the texts read.

    A question about what someone said ("What does Jon plan to do at the grand
    opening?") finds the turn that names its topic ("The official opening night is
    tomorrow"); what the person says about it comes a turn or two later in the same
    exchange ("... I want to savor all the good vibes"), in words of its own. A turn that
    was no candidate joins them when it passes the ``filters``: ``meta`` and ``routes``
    (by the route "thread") gain it."""
    if meta[best].session is None or not speakers:
        return [], {}
    near_keys = store.session_neighbours([best], window).get(best, [])
    # the candidates' speakers are known; only the others are read
    read = store.episodes_by_key([key for key in near_keys if key not in meta])
    found = [key for key in near_keys if key in meta and meta[key].speaker in speakers]
    joining = [
        key
        for key, e in read.items()
        if e.speaker in speakers and (filters is None or filters.admits(e))
    ]
    found += _join(store, joining, meta, routes, "thread")
    return found, {key: read[key] for key in joining}


def _join(
    store: Store,
    keys: list[int],
    meta: dict[int, EpisodeMeta],
    routes: dict[int, list[str]],
    route: str,
) -> list[int]:
    """Make the turns ``keys`` (no candidates, through the search's filters) candidates:
    ``meta`` gains their positions and ``routes`` the ``route`` that found them. Returns
    the keys still stored."""
    if not keys:
        return []
    joined = store.episode_meta(keys)
    for key, m in joined.items():
        meta[key] = m
        routes[key] = [route]
    return list(joined)


def asked(
    store: Store,
    best: list[int],
    meta: dict[int, EpisodeMeta],
    routes: dict[int, list[str]],
    filters: SearchFilters | None,
    known: dict[int, Said],
) -> tuple[dict[int, int], dict[int, Said]]:
    """The question each of the ``best`` candidates answers: the turn just before it in
    its session, said by someone else, whose last sentence asks something (keys: answer
    -> question); and the texts read (``known``: texts read already).

    Evidence is often marked on the question as well as on its answer ("What got you into
    running?" / "I've been running farther to de-stress"), and the question need share no
    word with what is asked of the answer. A question that was no candidate joins them
    when it passes the ``filters`` (by the route "asked"). Pairs with an assistant in them
    do not count, as in :func:`replies`."""
    placed = [key for key in best if meta[key].session is not None]
    near = store.session_neighbours(placed, 1)
    wanted = [*placed, *(n for ns in near.values() for n in ns)]
    read = {k: known[k] for k in wanted if k in known}
    fresh = store.episodes_by_key([k for k in wanted if k not in read])
    read.update(fresh)
    found: dict[int, int] = {}
    joining: list[int] = []
    for key, ns in near.items():
        answer = read.get(key)
        question = next((read[n] for n in ns if n in read and read[n].seq < meta[key].seq), None)
        if answer is None or question is None or question.speaker == answer.speaker:
            continue
        q = question.key
        if _by_assistant(answer) or _by_assistant(question) or not asks(question.text):
            continue
        if q not in meta:  # ``known`` holds candidates only: this one was read whole
            whole = fresh.get(q)
            if whole is None or (filters is not None and not filters.admits(whole)):
                continue
            joining.append(q)
        found[key] = q
    _join(store, list(dict.fromkeys(joining)), meta, routes, "asked")
    found = {a: q for a, q in found.items() if q in meta}  # a joining turn may be gone
    return found, {k: e for k, e in read.items() if k in meta}
