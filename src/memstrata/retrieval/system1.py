"""System-1 route over episodes: dense and BM25 candidates fused by reciprocal rank fusion.

On top of plain RRF it applies LLM-free, data-set-independent refinements:

* **speaker matching** — when a question names a known speaker of the namespace, that
  person's own turns get a boost, and the name itself is dropped from the BM25 terms (every
  greeting addressed to a person contains the name, which otherwise crowds out evidence);
* **session context** — conversation turns lean on their neighbours ("yes, last week!"), so
  a candidate turn inherits part of the best score among the adjacent candidate turns of
  the same session; and the candidates ranked by the BM25 evidence of the turns around
  them in their session (``session_weight``, :func:`~.sessions.in_session`) join the fusion as a
  list of their own, so the second turn of a two-turn answer is found by the first;
* **answers to questions** (``reply_weight``) — a question one person asks the other
  ("What are your plans for the summer?") is answered by the next turn, which need share
  no word with it ("Researching adoption agencies"): the reply to a question among the
  best candidates borrows part of the question's score (:func:`~.sessions.replies`);
* **date handling** — the periods a question names ("on 7 May 2023", "in May 2023", "the
  week before August 3", "last spring", "three days ago"; :mod:`memstrata.retrieval.when`)
  raise the turns about them: said in one (or the day after), or naming one in their own
  text ("last Saturday", resolved against when the turn was said). Relative phrases count
  from the newest candidate turn; one placed from an event ("two weeks before the
  wedding") from the turn that best matches the event's words; and the turns said in a
  period the question names by date are searched alone, their two lists joining the
  fusion (``period_weight``), so the day's evidence is found even when the whole
  namespace ranks it low;
* **the speaker's thread** (``thread_weight``) — a question about what someone said
  raises her turns a few turns around the best candidate (:func:`~.sessions.thread`);
* **the question an answer was given to** (``ask_weight``) — when the best candidate
  answers someone else's question ("What got you into running?"), that question gains
  part of its score: evidence is marked on both turns (:func:`~.sessions.asked`);
* **likes and dislikes** (``stance_boost``) — a question about a preference ("her
  favourite dance", "what does he dislike") raises the turns that state one of that
  polarity ("I love salsa", "I can't stand crowds"; :mod:`memstrata.retrieval.stance`);
* **links** (``link_boost``) — the second step of a two-step question shares no words
  with it, but the first step names it: candidates about a name that the best candidate
  mentions and the question does not are raised (:func:`link_words`);
* **cover** (``cover_boost``) — a question about several things ("Mark King or Nick
  Hexum") finds one of them first: candidates about the names the best candidate leaves
  uncovered are raised (:func:`~.links.cover_words`);
* **standing instructions and advice** (``rule_boost``, ``advice_boost``) — a rule on how
  to answer ("Always format dates as MM/DD/YYYY when I ask about scheduling") is raised
  for every question, and a request for advice raises the turns that state a preference
  (:mod:`memstrata.retrieval.standing`);
* **words about the conversation** (``drop_meta_terms``) — "across our conversations",
  "what did I mention" are left out of the BM25 terms (``text.META_WORDS``), and so are
  the words of the present ("now", "these days": the question's time, which the engine's
  order reads, :mod:`memstrata.knowledge.present`);
* **the asker's own turns** (``asker_boost``) — a question in the first person ("When
  is my meeting?") to an assistant's memory is about the user, so the user's turns
  (role ``user``; without a role, a speaker called so) are raised like a named speaker's;
* **other names of the speakers** (``speaker_aliases``) — in a two-person chat, a name
  the question uses that is no speaker's label but that one speaker is called by
  ("Hey Kate!") counts as naming that speaker (:mod:`memstrata.retrieval.aliases`);
* **turns that ask** (``question_penalty``) — a question is read close to other
  questions ("Nope, never been to one. What was it about?" to "When did Melanie go on
  a hike?") whatever it asks, and it states nothing: a turn whose last sentence asks
  something is multiplied by 1 - ``question_penalty``; not a user's or an assistant's,
  whose questions to each other carry the user's own facts ("I'm moving to Lisbon in
  May, what should I pack?");
* **brief turns** (``brief_words``, ``brief_penalty``) — a turn of at most
  ``brief_words`` content words ("What about you Kate?", "Hey!") states little and
  matches a question's words by chance; its score is multiplied by 1 - ``brief_penalty``;
* **the speaker's own voice** (``voice_weight``) — a question about one speaker ("What
  country does Elise live in?") is also read as she would say it ("What country do I
  live in?", :mod:`memstrata.retrieval.voice`), and the dense hits of that reading among
  her own turns join the fusion as a third list; a question about two speakers as a pair
  ("Which cities have both Kate and Elise been to?") is read in each voice, a list each.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from memstrata.embed.base import Embedder, Vectors
from memstrata.knowledge.asking import present_words
from memstrata.models import Episode, Hit
from memstrata.retrieval import documents, sessions, stance, standing, when
from memstrata.retrieval.aliases import speaker_named, unknown_names
from memstrata.retrieval.fusion import rrf
from memstrata.retrieval.links import cover_words, link_words, word_strengths
from memstrata.retrieval.moves import Ledger, explain, ranked
from memstrata.retrieval.sessions import Said
from memstrata.retrieval.text import (
    META_WORDS,
    at_most_content_words,
    content_terms,
    words,
)
from memstrata.retrieval.voice import apart, in_voice
from memstrata.store.base import EpisodeMeta, ScoredKeys, SearchFilters, Store

#: turns read to learn whether a name the question uses is a speaker's other name
ALIAS_POOL = 100
#: the knobs of the factor's boosts other than the speaker's, in ``_refine``'s order
_RAISES = ("date_boost", "stance_boost", "rule_boost", "advice_boost", "asker_boost")


class System1Params(BaseModel):
    """Knobs of the route; defaults are what ``memstrata bench locomo`` reports with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    candidates: int = 100
    rrf_k: int = 60
    dense_weight: float = 1.0
    bm25_weight: float = 1.0
    speaker_boost: float = 0.0
    drop_speaker_terms: bool = False
    drop_meta_terms: bool = False
    neighbour_weight: float = 0.0
    neighbour_window: int = 1
    date_boost: float = 0.0
    stance_boost: float = 0.0
    link_boost: float = 0.0
    link_pool: int = 50
    cover_boost: float = 0.0
    rule_boost: float = 0.0
    advice_boost: float = 0.0
    asker_boost: float = 0.0
    speaker_aliases: bool = False
    brief_words: int = 0
    brief_penalty: float = 0.0
    voice_weight: float = 0.0
    session_weight: float = 0.0
    session_window: int = 10
    reply_weight: float = 0.0
    reply_pool: int = 20
    period_weight: float = 0.0
    thread_weight: float = 0.0
    thread_window: int = 3
    ask_weight: float = 0.0
    ask_pool: int = 1
    question_penalty: float = 0.0


# The ``default`` recipe's knobs. A steeper rank discount (k=20 instead of 60) lets the
# refinements re-order within the head of the list without being swamped by the long,
# flat RRF tail. Round values; the dev-split sweep in docs/benchmarks.md shows the
# neighbourhood is flat (k 10-30). The date and stance factors: round values in the
# middle of flat regions of the four-set sweep ("Query understanding", same file); the
# link, cover, rule and advice factors likewise ("Links between the steps of a question",
# "The other name, standing instructions ..."); the session's lexical evidence likewise
# ("The evidence around a turn"); the answers to questions ("Answers to questions"); and
# the day's own search and the speaker's thread ("The day a question names, and the
# speaker's thread"); the question before the best answer ("The question an answer was
# given to"); and the turns that ask ("Turns that ask").
DEFAULT_SYSTEM1 = System1Params(
    rrf_k=20,
    speaker_boost=0.5,
    drop_speaker_terms=True,
    drop_meta_terms=True,
    neighbour_weight=0.2,
    neighbour_window=1,
    date_boost=1.0,
    stance_boost=0.5,
    link_boost=0.5,
    cover_boost=0.5,
    rule_boost=2.0,
    advice_boost=0.5,
    asker_boost=0.5,
    speaker_aliases=True,
    brief_words=3,
    brief_penalty=0.5,
    voice_weight=1.0,
    session_weight=0.5,
    session_window=10,
    reply_weight=0.25,
    reply_pool=20,
    period_weight=1.0,
    thread_weight=0.2,
    thread_window=3,
    ask_weight=0.3,
    ask_pool=1,
    question_penalty=0.1,
)


@dataclass
class QueryPlan:
    text: str
    terms: list[str]
    speakers: list[str]
    period: tuple[float, float] | None
    known_speakers: list[str]
    #: the question's words that are another name of a speaker (:mod:`.aliases`)
    alias_words: list[str] = field(default_factory=list)


def parse_period(text: str) -> tuple[float, float] | None:
    """The ``[start, end)`` timestamp range holding every date the text names ("May 2023",
    "7 May 2023", "2022"; :mod:`memstrata.retrieval.when`); None when it names none."""
    return when.hull(when.periods(text))


def name_parts(speaker: str) -> list[str]:
    """The words of a speaker's label that a question names her by."""
    return [w for w in words(speaker) if len(w) > 1]


def plan_query(
    text: str,
    known_speakers: list[str],
    params: System1Params,
    aliases: dict[str, str] | None = None,
) -> QueryPlan:
    """``aliases``: other names of speakers (lowercased name -> speaker label)."""
    terms = content_terms(text)
    query_words = set(words(text))
    mentioned = []
    for speaker in known_speakers:
        parts = name_parts(speaker)
        if parts and any(p in query_words or p + "'s" in query_words for p in parts):
            mentioned.append(speaker)
    other_names = aliases or {}
    said = [n for n in other_names if n in query_words or n + "'s" in query_words]
    for name in said:
        if other_names[name] not in mentioned:
            mentioned.append(other_names[name])
    if params.drop_speaker_terms and mentioned:
        names = {w for s in mentioned for w in words(s)} | set(said)
        kept = [t for t in terms if t not in names]
        terms = kept or terms
    if params.drop_meta_terms:
        # the words of a subject ("chat", "mention"), and those of the present ("now",
        # "these days"): the question's time, read by memstrata.knowledge.present
        meta = META_WORDS | present_words(words(text))
        terms = [t for t in terms if t not in meta] or terms
    return QueryPlan(
        text=text,
        terms=terms,
        speakers=mentioned,
        period=parse_period(text),
        known_speakers=known_speakers,
        alias_words=said,
    )


class EpisodeRoute:
    """Hybrid retrieval over one namespace's episodes."""

    name = "episodes"

    def __init__(self, store: Store, embedder: Embedder, params: System1Params | None = None):
        self.store = store
        self.embedder = embedder
        self.params = params or System1Params()

    def search(
        self,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None = None,
        qvecs: Vectors | None = None,
    ) -> list[list[Hit]]:
        """``qvecs``: the queries' vectors when the caller already has them."""
        p = self.params
        speakers = self.store.speakers(namespace)
        aliases = self._aliases(namespace, queries, speakers) if p.speaker_aliases else {}
        plans = [plan_query(q, speakers, p, aliases) for q in queries]
        readings = self._readings(plans, aliases, filters) if p.voice_weight else []
        # the queries and their readings in one request, one batch for the embedder
        texts = [text for _, _, text in readings]
        if qvecs is None:
            vecs = self.embedder.embed([*queries, *texts])
            qvecs, rvecs = vecs[: len(queries)], vecs[len(queries) :]
        else:
            rvecs = self.embedder.embed(texts)
        dense = self.store.dense_episodes(
            namespace, self.embedder.model_id, qvecs, p.candidates, filters
        )
        voiced = self._voiced(namespace, readings, rvecs, filters)
        out = []
        for i, (plan, dense_hits) in enumerate(zip(plans, dense, strict=True)):
            bm25_hits = self.store.bm25_episodes(namespace, plan.terms, p.candidates, filters)
            voices = voiced.get(i, [])
            dated = self._in_period(namespace, plan, qvecs[i : i + 1], filters)
            lists = [dense_hits, bm25_hits, *voices, *dated]
            names = ["dense", "bm25"] + ["dense"] * len(voices) + ["dense", "bm25"][: len(dated)]
            routes: dict[int, list[str]] = defaultdict(list)
            for hits, route in zip(lists, names, strict=True):
                for key, _ in hits:
                    if route not in routes[key]:
                        routes[key].append(route)
            meta = self.store.episode_meta(list(routes))
            scores = rrf(
                [[key for key, _ in hits] for hits in lists],
                k=p.rrf_k,
                weights=[p.dense_weight, p.bm25_weight]
                + [p.voice_weight] * len(voices)
                + [p.period_weight] * len(dated),
            )
            session = []
            if p.session_weight:
                # turns with the same evidence around them share a rank: a session's
                # turns near one answer tie, and their order in the store decides nothing
                session = sessions.in_session(bm25_hits, meta, p.session_window)
                for key, rank in session:
                    scores[key] += p.session_weight / (p.rrf_k + rank)
            trace = [
                ("dense", ranked(dense_hits)),
                ("bm25", ranked(bm25_hits)),
                *(("voice", ranked(v)) for v in voices),
                *zip(("period-dense", "period-bm25"), map(ranked, dated), strict=False),
                ("session", session),
            ]
            found, turns, base, ledger = self._refine(
                namespace, filters, plan, scores, routes, meta, k
            )
            explain(
                self.store, self.embedder, found, turns, base, ledger, trace, dense_hits, qvecs[i]
            )
            out.append(found)
        return out

    def _in_period(
        self, namespace: str, plan: QueryPlan, qvec: Vectors, filters: SearchFilters | None
    ) -> list[ScoredKeys]:
        """The dense and BM25 hits among the turns said in the period the question names
        by date (or the day after, :data:`~.when.REPORT_LAG`); none without one."""
        if not self.params.period_weight or plan.period is None:
            return []
        start, end = (datetime.fromtimestamp(t, UTC) for t in plan.period)
        only = (filters or SearchFilters()).within(start, end + timedelta(seconds=when.REPORT_LAG))
        n = self.params.candidates
        (dense,) = self.store.dense_episodes(namespace, self.embedder.model_id, qvec, n, only)
        return [dense, self.store.bm25_episodes(namespace, plan.terms, n, only)]

    def _readings(
        self, plans: list[QueryPlan], aliases: dict[str, str], filters: SearchFilters | None
    ) -> list[tuple[int, str, str]]:
        """(question index, speaker, the question read in her voice) for each question
        about one speaker, and for each speaker of a question about two as a pair ("both
        Kate and Elise"; :mod:`~memstrata.retrieval.voice`)."""
        readings: list[tuple[int, str, str]] = []
        for i, plan in enumerate(plans):
            if not 1 <= len(plan.speakers) <= 2:
                continue
            names = {
                s: name_parts(s) + [a for a in plan.alias_words if aliases.get(a) == s]
                for s in plan.speakers
            }
            for speaker in plan.speakers:
                if filters is not None and filters.speakers and speaker not in filters.speakers:
                    continue
                other = next((o for o in plan.speakers if o != speaker), None)
                text = (
                    plan.text if other is None else apart(plan.text, names[speaker], names[other])
                )
                voiced = in_voice(text, names[speaker]) if text is not None else None
                if voiced is not None:
                    readings.append((i, speaker, voiced))
        return readings

    def _voiced(
        self,
        namespace: str,
        readings: list[tuple[int, str, str]],
        vecs: Vectors,
        filters: SearchFilters | None,
    ) -> dict[int, list[list[tuple[int, float]]]]:
        """The dense hits of each reading (``vecs``, one row per reading) among its
        speaker's own turns, by question index."""
        out: dict[int, list[list[tuple[int, float]]]] = defaultdict(list)
        for row, (i, speaker, _) in enumerate(readings):
            only = (filters or SearchFilters()).model_copy(update={"speakers": [speaker]})
            (hits,) = self.store.dense_episodes(
                namespace, self.embedder.model_id, vecs[row : row + 1], self.params.candidates, only
            )
            out[i].append(hits)
        return out

    def _aliases(self, namespace: str, queries: list[str], speakers: list[str]) -> dict[str, str]:
        """The other names of the two speakers that the queries use: each name of a
        query that is no speaker's is looked up in the turns that hold it
        (:func:`~memstrata.retrieval.aliases.speaker_named`)."""
        if len(speakers) != 2:
            return {}
        names = dict.fromkeys(n for q in queries for n in unknown_names(q, speakers))
        found: dict[str, str] = {}
        for name in names:
            hits = self.store.bm25_episodes(namespace, [name], ALIAS_POOL)
            turns = self.store.episode_texts([key for key, _ in hits]).values()
            speaker = speaker_named(name, ((e.speaker, e.text) for e in turns), speakers)
            if speaker is not None:
                found[name] = speaker
        return found

    def _refine(
        self,
        namespace: str,
        filters: SearchFilters | None,
        plan: QueryPlan,
        scores: dict[int, float],
        routes: dict[int, list[str]],
        meta: dict[int, EpisodeMeta],
        k: int,
    ) -> tuple[list[Hit], dict[int, Episode], dict[int, float], Ledger]:
        """Re-rank fused candidates (``meta``: theirs); both routes applied the filters
        already in the store. Returns the hits, their episodes (by key, in order), the
        candidates' fused scores and what moved them (:class:`~.moves.Ledger`)."""
        p = self.params
        base = {key: scores[key] for key in meta}
        final = dict(base)
        ledger = Ledger()
        if p.neighbour_weight:
            for key, near in sessions.near(meta, p.neighbour_window).items():
                if near:
                    gain = p.neighbour_weight * max(base[n] for n in near)
                    final[key] += gain
                    ledger.gain("neighbour_weight", key, gain)
        episodes: dict[int, Said] = {}
        if p.reply_weight:
            gains, replied = sessions.replies(
                self.store,
                namespace,
                base,
                meta,
                routes,
                filters,
                weight=p.reply_weight,
                pool=p.reply_pool,
            )
            episodes.update(replied)
            for key, gain in gains.items():
                final[key] = final.get(key, 0.0) + gain
                ledger.gain("reply_weight", key, gain)
        found = self._periods(namespace, filters, plan, meta) if p.date_boost else []
        polarity = stance.asks(plan.text) if p.stance_boost else None
        advice = bool(p.advice_boost) and standing.asks_advice(plan.text)
        asked_by_me = bool(p.asker_boost) and standing.first_person(plan.text)
        # the candidates' texts, read only when something below asks for them
        rules = (p.rule_boost, p.brief_penalty, p.question_penalty)
        read = any((found, polarity, advice, asked_by_me, *rules))
        if read:
            unread = [key for key in meta if key not in episodes]
            episodes = {**episodes, **self.store.episode_texts(unread)}

        def marked(on: object, test: Callable[[Said], bool]) -> set[int]:
            return {k for k, e in episodes.items() if test(e)} if on else set()

        dated = {k for k, e in episodes.items() if when.about(meta[k].occurred_ts, e.text, found)}
        # each mark, and the factor its candidates gain
        raised = [
            (dated, p.date_boost),
            (marked(polarity, lambda e: polarity in stance.states(e.text)), p.stance_boost),
            (marked(p.rule_boost, lambda e: standing.instructs(e.text)), p.rule_boost),
            (marked(advice, lambda e: bool(stance.states(e.text))), p.advice_boost),
            (marked(asked_by_me, lambda e: standing.by_asker(e.role, e.speaker)), p.asker_boost),
        ]
        brief = marked(p.brief_penalty, lambda e: _brief(e.text, p.brief_words))
        asking = marked(p.question_penalty, _asks_between_people)
        named = set(plan.speakers)
        ledger.factored = meta
        ledger.boosts = [("speaker_boost", p.speaker_boost, lambda key: meta[key].speaker in named)]
        ledger.boosts += [
            (r, b, keys.__contains__) for r, (keys, b) in zip(_RAISES, raised, strict=True)
        ]
        ledger.penalties = [
            ("brief_penalty", p.brief_penalty, brief.__contains__),
            ("question_penalty", p.question_penalty, asking.__contains__),
        ]
        for key, m in meta.items():
            factor = 1.0
            if p.speaker_boost and plan.speakers and m.speaker in plan.speakers:
                factor += p.speaker_boost
            for keys, boost in raised:
                if key in keys:
                    factor += boost
            if key in brief:
                factor *= 1.0 - p.brief_penalty
            if key in asking:
                factor *= 1.0 - p.question_penalty
            final[key] *= factor
        if p.link_boost or p.cover_boost:
            episodes = self._link(namespace, plan, final, episodes, ledger)
        if p.thread_weight and plan.speakers and final:
            best = max(final, key=lambda key: final[key])
            threaded, texts = sessions.thread(
                self.store, best, meta, routes, plan.speakers, filters, window=p.thread_window
            )
            episodes = {**texts, **episodes}
            if threaded:
                gain = p.thread_weight * final[best]
                for key in [*threaded, best]:  # the best gains as much, so it stays first
                    final[key] = final.get(key, 0.0) + gain
                    ledger.gain("thread_weight", key, gain)
        if p.ask_weight and final:
            top = sorted(final, key=lambda key: -final[key])[: p.ask_pool]
            questions, seen = sessions.asked(self.store, top, meta, routes, filters, episodes)
            episodes = {**seen, **episodes}
            for answer, question in questions.items():
                gain = p.ask_weight * final[answer]
                final[question] = final.get(question, 0.0) + gain
                ledger.gain("ask_weight", question, gain)
        top = sorted(final, key=lambda key: -final[key])[:k]
        whole = {key: e for key in top if isinstance(e := episodes.get(key), Episode)}
        whole.update(self.store.episodes_by_key([key for key in top if key not in whole]))
        turns = {key: whole[key] for key in top if key in whole}
        hits = [documents.episode_hit(e, final[key], routes[key]) for key, e in turns.items()]
        return hits, turns, base, ledger

    def _link(
        self,
        namespace: str,
        plan: QueryPlan,
        final: dict[int, float],
        episodes: dict[int, Said],
        ledger: Ledger,
    ) -> dict[int, Said]:
        """Raise the candidates about the second step of the question: a name the best
        candidate mentions and the question does not (``link_boost``), or a name the
        question asks about and the best candidate does not hold (``cover_boost``). Each
        gains its factor x the best score x its strength (:func:`word_strengths`); the
        best candidate gains the largest raise, so it stays first. Returns ``episodes``
        with the texts it read."""
        p = self.params
        pool = sorted(final, key=lambda key: -final[key])[: p.link_pool]
        unread = [key for key in pool if key not in episodes]
        if unread:
            episodes = {**episodes, **self.store.episode_texts(unread)}
        keys = [key for key in pool if key in episodes]
        if len(keys) < 2 or keys[0] != pool[0]:
            return episodes
        anchor, others = episodes[keys[0]].text, [episodes[key].text for key in keys[1:]]
        speakers = {w for speaker in plan.known_speakers for w in words(speaker)}
        speakers.update(plan.alias_words)
        top = final[pool[0]]
        gains = [0.0] * len(others)
        parts: dict[str, list[float]] = {}
        for rule, boost, found in (
            (
                "link_boost",
                p.link_boost,
                lambda: link_words(anchor, set(content_terms(plan.text)) | speakers),
            ),
            ("cover_boost", p.cover_boost, lambda: cover_words(plan.text, anchor, speakers)),
        ):
            if boost:
                strengths = word_strengths(
                    found(), others, lambda ws: self.store.doc_freqs(namespace, ws)
                )
                parts[rule] = [boost * top * s for s in strengths]
                gains = [g + x for g, x in zip(gains, parts[rule], strict=True)]
        for key, gain in zip(keys[1:], gains, strict=True):
            final[key] += gain
        lead = max(gains, default=0.0)
        final[pool[0]] += lead
        for rule, part in parts.items():
            for key, x in zip(keys[1:], part, strict=True):
                ledger.gain(rule, key, x)
            if lead:  # the best's raise, shared as the best-raised candidate's was
                at = gains.index(lead)
                ledger.gain(rule, pool[0], lead * part[at] / gains[at])
        return episodes

    def _periods(
        self,
        namespace: str,
        filters: SearchFilters | None,
        plan: QueryPlan,
        meta: dict[int, EpisodeMeta],
    ) -> list[when.Period]:
        """The periods the question names. A relative one ("last month") counts from the
        newest candidate: a question is asked after what it asks about. One placed from
        an event ("two weeks before the wedding") counts from the turn that best matches
        the event's words."""
        times = [m.occurred_ts for m in meta.values() if m.occurred_ts is not None]
        now = datetime.fromtimestamp(max(times), UTC) if times else None
        found = when.periods(plan.text, now)
        for shift in when.event_shifts(plan.text):
            terms = content_terms(shift.event)
            top = self.store.bm25_episodes(namespace, terms, 1, filters) if terms else []
            at = self.store.episode_meta([top[0][0]]) if top else {}
            ts = next((m.occurred_ts for m in at.values()), None)
            if ts is not None:
                found.append(shift.period(ts))
        return found


def _asks_between_people(episode: Said) -> bool:
    """Whether a turn asks something and is neither a user's nor an assistant's (most
    turns ask nothing, which is the quickest to tell)."""
    if not sessions.asks(episode.text):
        return False
    return not standing.by_assistant(episode.role, episode.speaker) and not standing.by_asker(
        episode.role, episode.speaker
    )


@lru_cache(maxsize=8192)
def _brief(text: str, limit: int) -> bool:
    """Whether a turn says at most ``limit`` content words; asked of every candidate."""
    return at_most_content_words(text, limit)
