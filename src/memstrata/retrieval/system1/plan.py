"""What System-1 reads from a question before it searches: the BM25 terms, the speakers
it names (by label, or by another name, :mod:`.aliases`) and the period it names."""

from __future__ import annotations

from dataclasses import dataclass, field

from memstrata.knowledge.asking import present_words
from memstrata.retrieval import when
from memstrata.retrieval.system1.params import System1Params
from memstrata.retrieval.text import META_WORDS, content_terms, words


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
