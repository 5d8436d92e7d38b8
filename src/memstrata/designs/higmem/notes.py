"""The turn layer, heuristic tier: a turn's metadata from its text and the window before it.

* **Keywords**: the turn's content words as written (its image caption included; the
  shared parse, :func:`memstrata.nlp.keywords` with ``lemmas=False``), those that are
  new against the window first, names (:func:`memstrata.nlp.names`, any script) before
  other words, at most ``MAX_KEYWORDS``. As written, not lemmas: they are embedded with
  the turn, and the embedder reads words as people write them.
  A reply repeats the words of what it answers; the new words are what the turn adds.
* **Tags**: the turn's role, read off its form: ``question``, ``photo`` (an image is
  attached), ``plan`` (a future cue), ``dated`` (a date phrase resolved).
* **Context**: one line from the window: who speaks, when, and what they reply to.
* **Direct links**: the window's last turn when it is another speaker's question (the
  turn answers it). Profile keys need a reading of what a turn reveals about whom: the
  heuristic tier writes none.
* **Dates**: relative and absolute date phrases ("last Saturday", "next month", "two
  weeks ago", "12 June 2022") resolved against the turn's time by ``dateparser``. Its
  search also fires on words that only look like dates ("We" as Wednesday, the verb
  "may"), so a phrase is kept only when it holds a temporal cue word or a number.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from memstrata import nlp
from memstrata.designs.higmem.records import TurnNote
from memstrata.models import Episode, Span
from memstrata.retrieval.documents import caption_of
from memstrata.retrieval.text import sentences, words

MAX_KEYWORDS = 8
#: words that make a dateparser match a real date phrase
_CUES = frozenset(
    """
    yesterday today tonight tomorrow ago last next this past coming previous week weeks
    weekend month months year years day days morning evening night monday tuesday wednesday
    thursday friday saturday sunday january february march april june july august september
    october november december jan feb mar apr jun jul aug sep sept oct nov dec
    """.split()
)
_FUTURE = re.compile(
    r"\b(next|tomorrow|will|going to|gonna|plan(?:ning)? to|upcoming|coming|soon)\b", re.I
)


def _settings(base: datetime, future: bool) -> dict[str, Any]:
    return {
        "RELATIVE_BASE": base.replace(tzinfo=None),
        "PREFER_DATES_FROM": "future" if future else "past",
        "RETURN_AS_TIMEZONE_AWARE": False,
    }


@lru_cache(maxsize=1)
def _search() -> Any:
    from dateparser.search import search_dates  # imported on first use: ~0.3 s

    return search_dates


def _granularity(phrase: str) -> str:
    toks = set(words(phrase))
    if toks & {"year", "years"} or re.fullmatch(r"\D*(19|20)\d\d\D*", phrase):
        return "year"
    if toks & {"month", "months"}:
        return "month"
    if toks & {"week", "weeks", "weekend"}:
        return "week"
    months = {w for w in toks if w in _CUES and len(w) > 3 and w not in _WEEKDAYS}
    if months & _MONTHS and not re.search(r"\d", phrase):
        return "month"
    return "day"


_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_MONTHS = frozenset(
    "january february march april june july august september october november december".split()
)


def _trim(phrase: str) -> str:
    """dateparser's match may run on into function words ("two weeks ago at the")."""
    toks = phrase.split()
    while toks and toks[-1].lower().strip(",.") not in _CUES and not re.search(r"\d", toks[-1]):
        toks.pop()
    while toks and toks[0].lower().strip(",.") in {"on", "in", "at", "the", "we", "i"}:
        toks.pop(0)
    return " ".join(toks)


_ISO_DATE = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?")
_YEAR = re.compile(r"(?<!\d)\d{4}(?!\d)")


@lru_cache(maxsize=1)
def _date_parser() -> Any:
    from dateparser.date import DateDataParser

    return DateDataParser(
        languages=["en"],
        settings={"PREFER_DAY_OF_MONTH": "first", "RETURN_AS_TIMEZONE_AWARE": False},
    )


def _real(iso: str) -> bool:
    """Whether a ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD`` names a real year, month or day."""
    try:
        datetime.strptime(iso, {4: "%Y", 7: "%Y-%m"}.get(len(iso), "%Y-%m-%d"))
    except ValueError:
        return False
    return True


@lru_cache(maxsize=4096)
def calendar_date(text: str) -> str | None:
    """A date a model wrote ("2023-05-07", "7 May 2023", "May 2023", "2023/05/07", an
    ISO time) as ``YYYY-MM-DD``, ``YYYY-MM`` or ``YYYY`` by what it states; None when it
    names no year ("last Saturday" is a phrase to resolve, not a date) or is no date."""
    text = text.strip()
    if _ISO_DATE.fullmatch(text):  # read, not only matched: "2023-02-30" is no date
        return text if _real(text) else None
    if not _YEAR.search(text) or len(text) > 60:
        return None
    data = _date_parser().get_date_data(text)
    if data.date_obj is None:
        return None
    fmt = {"year": "%Y", "month": "%Y-%m"}.get(data.period or "day", "%Y-%m-%d")
    return str(data.date_obj.strftime(fmt))


def resolve_dates(text: str, when: datetime | None) -> list[dict[str, str]]:
    """Date phrases of ``text`` resolved against ``when``: ``{"phrase", "date", "unit"}``,
    ``date`` as ``YYYY-MM-DD``, ``YYYY-MM`` or ``YYYY`` by the phrase's granularity."""
    if when is None or not text.strip():
        return []
    found = _search()(text, languages=["en"], settings=_settings(when, bool(_FUTURE.search(text))))
    out: list[dict[str, str]] = []
    for raw, moment in found or []:
        phrase = _trim(raw)
        toks = set(words(phrase))
        if not phrase or not (toks & _CUES or re.search(r"\d", phrase)):
            continue
        if toks <= {"may", "sun", "sat", "wed", "mar"} and not re.search(r"\d", phrase):
            continue
        unit = _granularity(phrase)
        fmt = {"year": "%Y", "month": "%Y-%m"}.get(unit, "%Y-%m-%d")
        item = {"phrase": phrase, "date": moment.strftime(fmt), "unit": unit}
        if item not in out:
            out.append(item)
    return out


def turn_body(ep: Episode) -> str:
    """The turn as the layers read it: speaker, text and an attached image's caption."""
    caption = caption_of(ep.metadata)
    body = f"{ep.speaker}: {ep.text}" if ep.speaker else ep.text
    return body + (f" [shared a photo: {caption}]" if caption else "")


def keywords(ep: Episode, window: Sequence[Episode]) -> list[str]:
    """Keywords of the turn (:func:`memstrata.nlp.keywords`: its content words as
    written, its image caption's too), new-against-the-window and names first; the
    speakers' names are no keywords."""
    caption = caption_of(ep.metadata) or ""
    terms = nlp.keywords(ep.text, lemmas=False) + (
        nlp.keywords(caption, lemmas=False) if caption else []
    )
    speakers = {w for e in [*window, ep] if e.speaker for w in nlp.words(e.speaker)}
    seen = {t for e in window for t in nlp.keywords(e.text, lemmas=False)}
    names = {w for n in nlp.names(ep.text) for w in nlp.words(n.text)}
    terms = [t for t in dict.fromkeys(terms) if t not in speakers]
    ranked = sorted(
        range(len(terms)),
        key=lambda i: (terms[i] in seen, terms[i] not in names, i),
    )
    return [terms[i] for i in ranked[:MAX_KEYWORDS]]


def _first_sentence(text: str, limit: int = 90) -> str:
    spans = sentences(text)
    first = text[spans[0][0] : spans[0][1]] if spans else text.strip()
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def context_line(ep: Episode, window: Sequence[Episode]) -> str:
    """Who speaks, when, and what the turn answers (the window's last turn)."""
    who = ep.speaker or "someone"
    when = f" on {ep.occurred_at:%d %B %Y}" if ep.occurred_at else ""
    line = f"{who}{when}"
    if window:
        prev = window[-1]
        line += f", replying to {prev.speaker or 'someone'}: “{_first_sentence(prev.text)}”"
    return line


def tags(ep: Episode, dates: list[dict[str, str]]) -> list[str]:
    out = []
    if ep.text.rstrip().endswith("?"):
        out.append("question")
    if caption_of(ep.metadata):
        out.append("photo")
    if _FUTURE.search(ep.text):
        out.append("plan")
    if dates:
        out.append("dated")
    return out


def analyse(ep: Episode, window: Sequence[Episode]) -> TurnNote:
    """The heuristic turn analysis of ``ep`` read after ``window`` (oldest first)."""
    dates = resolve_dates(ep.text, ep.occurred_at)
    return TurnNote(
        namespace=ep.namespace,
        turn_id=ep.id,
        keywords=keywords(ep, window),
        tags=tags(ep, dates),
        context=context_line(ep, window),
        timestamp=ep.occurred_at.isoformat() if ep.occurred_at else None,
        dates=dates,
        links_to=answered(ep, window),
        sources=[Span(episode=ep.id, start=0, end=len(ep.text))],
    )


def answered(ep: Episode, window: Sequence[Episode]) -> list[str]:
    """The question ``ep`` answers: the window's last turn, if another speaker asked it."""
    if not window:
        return []
    prev = window[-1]
    asks = prev.text.rstrip().endswith("?") and prev.speaker != ep.speaker
    return [prev.id] if asks else []


def note_text(ep: Episode, note: TurnNote | None) -> str:
    """What is embedded of an analysed turn (T_t = (D_t, M_t)): the turn, its keywords and
    its resolved dates; the context line is left out, it describes the neighbour."""
    body = turn_body(ep)
    if note is None:
        return body
    extra = [", ".join(note.keywords)] if note.keywords else []
    extra += [f"{d['phrase']} = {d['date']}" for d in note.dates]
    return body + (" (" + "; ".join(extra) + ")" if extra else "")
