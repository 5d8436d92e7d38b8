"""Time in questions and turns, without a model: the periods a text names.

:func:`periods` reads the dates and periods of a text as ``[start, end)`` UTC ranges:

* **absolute**: "7 May 2023", "May 7th, 2023", "the 31 of December 2023", "2023-05-07",
  "01.01.2024" (dots: day first; slashes: month first unless the day says otherwise),
  "May 2023", "spring of 2024", "winter 2021 - 2022", "the first week of 2024", "2022";
* **relative to ``now``** (when given): "yesterday", "last night", "this week", "last
  weekend", "last month", "last year", "last Saturday", "last spring", "two weeks ago",
  "next month", "in January" and "on 3 June" without a year (the latest one by ``now``);
* **shifted**: "the week before August 3, 2023", "two weeks after 5 May 2023".

A date that only bounds the question ("before January 1st, 2024", "since 2020") names
no period the answer lies in, so it is left out. Two-digit years ("11/22/63" is a book)
and numbers that count things ("2000 calories") are not dates.

A turn is *about* a period when it was said in it or up to a day after (people report a
day's events that evening or the next day, "last night"), or when its own text names a
period relative to when it was said ("last Saturday") that overlaps it: :func:`about`.
A date the turn spells out is a word the question shares, which BM25 scores already.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import NamedTuple

from memstrata.retrieval.text import STOPWORDS

DAY = 86_400.0
#: how long after a period a turn may still report it ("last night", "yesterday")
REPORT_LAG = DAY


class Period(NamedTuple):
    start: float
    end: float
    unit: str  # day, week, month, season, year


_MONTH_NAMES = [m.lower() for m in calendar.month_name[1:]]
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAYNUM = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR4 = r"((?:19|20)\d\d)"
_NUMBERS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
} | {"a": 1, "an": 1, "the": 1, "couple": 2, "few": 3}
_COUNT_WORDS = (
    r"\d{1,2}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|a couple of|a few"
)
_COUNT = rf"({_COUNT_WORDS})"
_UNIT = r"(day|week|month|year)s?"
_SEASON = r"(spring|summer|autumn|fall|winter)"
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_ORDINAL = {"first": 0, "second": 1, "third": 2, "fourth": 3, "last": -1}

_ABSOLUTE: list[tuple[str, re.Pattern[str]]] = [
    ("iso", re.compile(rf"\b{_YEAR4}[-/](\d{{1,2}})[-/](\d{{1,2}})\b")),
    ("numeric", re.compile(rf"\b(\d{{1,2}})([./])(\d{{1,2}})\2{_YEAR4}\b")),
    ("dmy", re.compile(rf"\b{_DAYNUM}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR4}\b", re.I)),
    ("mdy", re.compile(rf"\b{_MONTH}\s+{_DAYNUM},?\s+{_YEAR4}\b", re.I)),
    (
        "week_of",
        re.compile(
            rf"\b(first|second|third|fourth|last) week of\s+(?:{_MONTH},?\s+)?{_YEAR4}\b", re.I
        ),
    ),
    ("my", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR4}\b", re.I)),
    (
        "season",
        re.compile(rf"\b{_SEASON}\s+(?:of\s+)?{_YEAR4}(?:\s*[-–/]\s*((?:19|20)?\d\d))?\b", re.I),
    ),
    ("year", re.compile(rf"(?<![\w$£€#./-]){_YEAR4}(?![\d%/]|\.\d)")),
]
_RELATIVE: list[tuple[str, re.Pattern[str]]] = [
    ("ago", re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b", re.I)),
    (
        "last_unit",
        re.compile(r"\b(last|past|previous|this|next)\s+(week|weekend|month|year)\b", re.I),
    ),
    ("last_weekday", re.compile(rf"\b(last|this past|next)\s+{_WEEKDAY}\b", re.I)),
    ("last_season", re.compile(rf"\b(last|this|next)\s+{_SEASON}\b", re.I)),
    (
        "day_word",
        re.compile(r"\b(yesterday|today|tonight|tomorrow|last night|this morning)\b", re.I),
    ),
    ("dm", re.compile(rf"\b{_DAYNUM}(?:\s+of)?\s+{_MONTH}\b|\b{_MONTH}\s+{_DAYNUM}\b", re.I)),
    ("month", re.compile(rf"\b(?:in|during|of|early|late|mid)\s+{_MONTH}\b", re.I)),
]
#: any relative phrase at all: one scan that spares most turns the full reading
_ANY_RELATIVE = re.compile("|".join(f"(?:{p.pattern})" for _, p in _RELATIVE), re.I)
_ANCHOR = re.compile(r"\s+(?:before|prior to|as of|on)\s+(?:the\s+)?", re.I)
_BOUND = re.compile(r"\b(?:before|after|since|until|till|by|prior to)\s+(?:the\s+)?$", re.I)
_SHIFT = re.compile(rf"\b({_COUNT_WORDS}|the)\s+{_UNIT}\s+(before|after)\s+(?:the\s+)?$", re.I)


def _ts(d: date) -> float:
    return datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()


def _add_months(d: date, n: int) -> date:
    m = d.year * 12 + d.month - 1 + n
    return date(m // 12, m % 12 + 1, 1)


def _month_num(name: str) -> int:
    name = name.lower().rstrip(".")
    return next(i for i, m in enumerate(_MONTH_NAMES, start=1) if m.startswith(name[:3]))


def _day(d: date) -> Period:
    return Period(_ts(d), _ts(d) + DAY, "day")


def _month(year: int, month: int) -> Period:
    start = date(year, month, 1)
    return Period(_ts(start), _ts(_add_months(start, 1)), "month")


def _year(year: int) -> Period:
    return Period(_ts(date(year, 1, 1)), _ts(date(year + 1, 1, 1)), "year")


def _season(name: str, year: int, until: int | None = None) -> list[Period]:
    """Meteorological seasons. "winter 2022" is ambiguous (the winter that ends in 2022 or
    the one that starts in it): both; "winter 2021 - 2022" is the one between."""
    name = "autumn" if name.lower() == "fall" else name.lower()
    if name == "winter":
        starts = [year] if until == year + 1 else [year - 1, year]
        return [Period(_ts(date(y, 12, 1)), _ts(date(y + 1, 3, 1)), "season") for y in starts]
    first = {"spring": 3, "summer": 6, "autumn": 9}[name]
    start = date(year, first, 1)
    return [Period(_ts(start), _ts(_add_months(start, 3)), "season")]


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _count(word: str) -> int:
    word = word.lower().replace("a couple of", "couple").replace("a few", "few")
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


_NEXT_WORD = re.compile(r"\s+([^\W\d_][^\W\d_']*)")


def _looks_counted(text: str, end: int) -> bool:
    """A bare year followed by a lower-case content word counts things ("2000 steps",
    "2000 étapes"): the word is the run of lower-case letters and apostrophes."""
    m = _NEXT_WORD.match(text, end)
    if m is None or not m.group(1)[0].islower():
        return False
    word = m.group(1)
    n = next((i for i, c in enumerate(word) if not (c.islower() or c == "'")), len(word))
    return word[:n] not in STOPWORDS and word[:n] not in _MONTH_NAMES


def _absolute(kind: str, m: re.Match[str], text: str) -> list[Period]:
    g = m.groups()
    if kind == "iso":
        d = _safe_date(int(g[0]), int(g[1]), int(g[2]))
        return [_day(d)] if d else []
    if kind == "numeric":
        a, sep, b, y = int(g[0]), g[1], int(g[2]), int(g[3])
        day_first = a > 12 or (sep == "." and b <= 12)
        d = _safe_date(y, b, a) if day_first else _safe_date(y, a, b)
        return [_day(d)] if d else []
    if kind == "dmy":
        d = _safe_date(int(g[2]), _month_num(g[1]), int(g[0]))
        return [_day(d)] if d else []
    if kind == "mdy":
        d = _safe_date(int(g[2]), _month_num(g[0]), int(g[1]))
        return [_day(d)] if d else []
    if kind == "week_of":
        year = int(g[2])
        scope = _month(year, _month_num(g[1])) if g[1] else _year(year)
        n = _ORDINAL[g[0].lower()]
        start = scope.start + 7 * DAY * n if n >= 0 else scope.end - 7 * DAY
        return [Period(start, start + 7 * DAY, "week")]
    if kind == "my":
        if g[0].lower() == "may" and not m.group(0)[0].isupper() and "," in m.group(0):
            return []
        return [_month(int(g[1]), _month_num(g[0]))]
    if kind == "season":
        year = int(g[1])
        until = None
        if g[2]:
            until = int(g[2]) if len(g[2]) == 4 else year // 100 * 100 + int(g[2])
        return _season(g[0], year, until)
    if _looks_counted(text, m.end()):
        return []
    return [_year(int(g[0]))]


def _relative(kind: str, m: re.Match[str], now: datetime | None) -> list[Period]:
    """The periods a phrase placed from ``now`` names, by the kind of phrase."""
    if now is None:
        return []
    g = [x.lower() if x else x for x in m.groups()]
    return _RELATIVE_BY_KIND.get(kind, _month_name)(g, m, now.date())


def _ago(g: list[str], m: re.Match[str], today: date) -> list[Period]:
    """ "three days ago", "two weeks ago", "a month ago", "a year ago"."""
    n, unit = _count(g[0]), g[1]
    if unit == "day":
        return [_day(today - timedelta(days=n))]
    if unit == "week":
        mid = _ts(today) - 7 * DAY * n
        return [Period(mid - 4 * DAY, mid + 4 * DAY, "week")]
    if unit == "month":
        s = _add_months(today.replace(day=1), -n)
        return [_month(s.year, s.month)]
    return [_year(today.year - n)]


def _last_unit(g: list[str], m: re.Match[str], today: date) -> list[Period]:
    """ "last week", "this weekend", "next month", "the previous year"."""
    step = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1}[g[0]]
    unit = g[1]
    if unit in ("week", "weekend"):
        monday = today - timedelta(days=today.weekday())
        start = monday + timedelta(weeks=step)
        if unit == "weekend":
            start += timedelta(days=5)
            return [Period(_ts(start), _ts(start) + 2 * DAY, "week")]
        return [Period(_ts(start), _ts(start) + 7 * DAY, "week")]
    if unit == "month":
        s = _add_months(today.replace(day=1), step)
        return [_month(s.year, s.month)]
    return [_year(today.year + step)]


def _last_weekday(g: list[str], m: re.Match[str], today: date) -> list[Period]:
    """ "last Saturday", "next Monday"."""
    target = list(calendar.day_name).index(g[1].capitalize())
    if g[0] == "next":
        ahead = (target - today.weekday()) % 7 or 7
        return [_day(today + timedelta(days=ahead))]
    back = (today.weekday() - target) % 7 or 7
    return [_day(today - timedelta(days=back))]


def _last_season(g: list[str], m: re.Match[str], today: date) -> list[Period]:
    """ "last spring", "next winter", "this fall"."""
    name = "autumn" if g[1] == "fall" else g[1]
    candidates = sorted(
        (
            p
            for y in (today.year - 2, today.year - 1, today.year, today.year + 1)
            for p in _season(name, y, y + 1 if name == "winter" else None)
        ),
        key=lambda p: p.start,
    )
    now_ts = _ts(today)
    if g[0] == "last":
        done = [p for p in candidates if p.end <= now_ts]
        return done[-1:]
    if g[0] == "next":
        return [p for p in candidates if p.start > now_ts][:1]
    return [p for p in candidates if p.start <= now_ts][-1:]


def _day_word(g: list[str], m: re.Match[str], today: date) -> list[Period]:
    """ "yesterday", "last night", "today", "tomorrow"."""
    shift = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(g[0], 0)
    return [_day(today + timedelta(days=shift))]


def _day_month(g: list[str], m: re.Match[str], today: date) -> list[Period]:
    """A day and month without a year ("7 May", "May 7th"): the latest such day not
    after tomorrow."""
    day_s, month_s = (g[0], g[1]) if g[0] else (g[3], g[2])
    if month_s == "may" and not re.search(r"\bMay\b", m.group(0)):
        return []
    month = _month_num(month_s)
    d = _safe_date(today.year, month, int(day_s))
    if d is not None and d > today + timedelta(days=1):
        d = _safe_date(today.year - 1, month, int(day_s))
    return [_day(d)] if d else []


def _month_name(g: list[str], m: re.Match[str], today: date) -> list[Period]:
    """A month without a year ("in March"): the latest such month, this one included."""
    month_s = g[0]
    if month_s == "may" and "May" not in m.group(0):
        return []
    month = _month_num(month_s)
    year = today.year if month <= today.month else today.year - 1
    return [_month(year, month)]


_RELATIVE_BY_KIND: dict[str, Callable[[list[str], re.Match[str], date], list[Period]]] = {
    "ago": _ago,
    "last_unit": _last_unit,
    "last_weekday": _last_weekday,
    "last_season": _last_season,
    "day_word": _day_word,
    "dm": _day_month,
}


def _shift(p: Period, n: int, unit: str, side: str) -> Period:
    span = {"day": DAY, "week": 7 * DAY, "month": 30 * DAY, "year": 365 * DAY}[unit]
    if side == "before":
        return Period(p.start - n * span, p.start - (n - 1) * span, unit)
    return Period(p.end + (n - 1) * span, p.end + n * span, unit)


def _shifted(found: list[Period], text: str, at: int) -> list[Period] | None:
    """ "the week before X", "two weeks after X": one ``unit`` placed by the shift; None
    when the date is only a bound ("before X"); ``found`` unchanged otherwise."""
    head = text[max(0, at - 40) : at]
    shift = _SHIFT.search(head)
    if shift:
        n, unit, side = _count(shift.group(1)), shift.group(2).lower(), shift.group(3).lower()
        return [_shift(p, n, unit, side) for p in found]
    if _BOUND.search(head):
        return None
    return found


class EventShift(NamedTuple):
    """ "two weeks before the wedding": a period placed from an event, not a date."""

    n: int
    unit: str
    side: str
    event: str

    def period(self, ts: float) -> Period:
        """The period, the event having happened at ``ts``."""
        day = _day(datetime.fromtimestamp(ts, UTC).date())
        return _shift(day, self.n, self.unit, self.side)


_EVENT = re.compile(
    rf"\b({_COUNT_WORDS}|the)\s+{_UNIT}\s+(before|after)\s+"
    r"((?:the|my|his|her|their|our|your|a|an)\s+[^?.!,;:\n]{2,60})",
    re.I,
)
#: where an event's name ends in a question ("... before the wedding did she ...")
_EVENT_END = frozenset(
    """did does do was were is are has have had will would could can when where what who
    which why how and or but that she he they i we you it""".split()
)


def event_shifts(text: str) -> list[EventShift]:
    """The shifts from named events ("a month after her graduation") in ``text``; a
    shift from a date is a period of :func:`periods` instead."""
    out = []
    for m in _EVENT.finditer(text[:10_000]):
        head, *rest = m.group(4).split()
        kept = [head]
        for word in rest:
            if word.lower() in _EVENT_END:
                break
            kept.append(word)
        event = " ".join(kept)
        if len(kept) > 1 and not periods(event):
            out.append(
                EventShift(_count(m.group(1)), m.group(2).lower(), m.group(3).lower(), event)
            )
    return out


def periods(text: str, now: datetime | None = None, *, absolute: bool = True) -> list[Period]:
    """The periods ``text`` names, in order; relative phrases only when ``now`` is given,
    dates spelled out only when ``absolute``. A relative phrase followed by a date ("last
    weekend before April 10, 2023") is relative to that date."""
    if not text or len(text) > 100_000:
        return []
    taken: list[tuple[int, int]] = []
    out: list[tuple[int, Period]] = []
    starts: dict[int, list[Period]] = {}  # absolute dates by where they begin

    def free(m: re.Match[str]) -> bool:
        return all(m.end() <= lo or m.start() >= hi for lo, hi in taken)

    for kind, pattern in _ABSOLUTE:
        for m in pattern.finditer(text):
            if free(m):
                taken.append((m.start(), m.end()))
                found = _absolute(kind, m, text)
                starts[m.start()] = found
                if absolute:
                    out += [(m.start(), p) for p in _shifted(found, text, m.start()) or []]
    for kind, pattern in _RELATIVE:
        for m in pattern.finditer(text) if now is not None else ():
            if free(m):
                taken.append((m.start(), m.end()))
                anchor = _ANCHOR.match(text, m.end())
                base = starts.get(anchor.end()) if anchor else None
                at = datetime.fromtimestamp(base[0].start, UTC) if base else now
                found = _relative(kind, m, at)
                out += [(m.start(), p) for p in _shifted(found, text, m.start()) or []]
    return [p for _, p in sorted(out, key=lambda x: x[0])]


def period_range(
    year: int, month: int | None = None, day: int | None = None
) -> tuple[float, float]:
    """The ``[start, end)`` UTC range of a year, a month or a day."""
    if month is None:
        p = _year(year)
    elif day is None:
        p = _month(year, month)
    else:
        p = _day(date(year, month, day))
    return p.start, p.end


def hull(found: Sequence[Period]) -> tuple[float, float] | None:
    """The smallest ``[start, end)`` holding every period; None for none."""
    if not found:
        return None
    return min(p.start for p in found), max(p.end for p in found)


def said_in(ts: float | None, found: Sequence[Period]) -> bool:
    """A turn said at ``ts`` reports on one of the periods (up to a day after it)."""
    return ts is not None and any(p.start <= ts < p.end + REPORT_LAG for p in found)


@lru_cache(maxsize=8192)
def _relative_periods(text: str, ts: float) -> tuple[Period, ...]:
    """What a turn's relative phrases name; cached, as searches meet the same turns."""
    if not _ANY_RELATIVE.search(text):
        return ()
    return tuple(periods(text, datetime.fromtimestamp(ts, UTC), absolute=False))


def about(ts: float | None, text: str, found: Sequence[Period]) -> bool:
    """A turn said at ``ts`` with ``text`` is about one of the periods: said in it, or its
    text names one relative to when it was said ("last Saturday") that overlaps one. A
    date the text spells out ("in 1988") is a word the question shares, which BM25
    already scores: counting it again raised the passages that only share the year."""
    if not found or ts is None:
        return False
    if said_in(ts, found):
        return True
    own = _relative_periods(text, ts)
    return any(q.start < o.end and o.start < q.end for o in own for q in found)
