"""Dates and periods read from questions and turns (retrieval/when.py)."""

from datetime import UTC, datetime

import pytest

from memstrata.retrieval.when import Period, about, event_shifts, hull, periods, said_in

NOW = datetime(2023, 10, 20, 15, tzinfo=UTC)  # a Friday


def spans(text: str, now: datetime | None = NOW) -> list[tuple[str, str, str]]:
    def day(ts: float) -> str:
        return f"{datetime.fromtimestamp(ts, UTC):%Y-%m-%d}"

    return [(day(p.start), day(p.end), p.unit) for p in periods(text, now)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("on October 13, 2023?", ("2023-10-13", "2023-10-14", "day")),
        ("on 1 February, 2023", ("2023-02-01", "2023-02-02", "day")),
        ("make on 29 Dec 2023", ("2023-12-29", "2023-12-30", "day")),
        ("on the 31 of December 2023", ("2023-12-31", "2024-01-01", "day")),
        ("naps on January 6th 2024", ("2024-01-06", "2024-01-07", "day")),
        ("read on 01.01.2024", ("2024-01-01", "2024-01-02", "day")),
        ("due 03.04.2024", ("2024-04-03", "2024-04-04", "day")),  # dots: day first
        ("due 03/04/2024", ("2024-03-04", "2024-03-05", "day")),  # slashes: month first
        ("due 25/04/2024", ("2024-04-25", "2024-04-26", "day")),  # unless the day says
        ("2023-05-07", ("2023-05-07", "2023-05-08", "day")),
        ("What happened in May 2023?", ("2023-05-01", "2023-06-01", "month")),
        ("december 2021", ("2021-12-01", "2022-01-01", "month")),
        ("plans for 2022", ("2022-01-01", "2023-01-01", "year")),
        ("in the spring of 2024", ("2024-03-01", "2024-06-01", "season")),
        ("in winter 2021 - 2022", ("2021-12-01", "2022-03-01", "season")),
        ("the first week of 2024", ("2024-01-01", "2024-01-08", "week")),
        ("the last week of March 2024", ("2024-03-25", "2024-04-01", "week")),
        ("the week before August 3, 2023", ("2023-07-27", "2023-08-03", "week")),
        ("last weekend before April 10, 2023", ("2023-04-08", "2023-04-10", "week")),
        ("yesterday", ("2023-10-19", "2023-10-20", "day")),
        ("last night", ("2023-10-19", "2023-10-20", "day")),
        ("last Saturday", ("2023-10-14", "2023-10-15", "day")),
        ("last week", ("2023-10-09", "2023-10-16", "week")),
        ("last month", ("2023-09-01", "2023-10-01", "month")),
        ("camping trip last year", ("2022-01-01", "2023-01-01", "year")),
        ("moved here 4 years ago", ("2019-01-01", "2020-01-01", "year")),
        ("three days ago", ("2023-10-17", "2023-10-18", "day")),
        ("last spring", ("2023-03-01", "2023-06-01", "season")),
        ("sick in January?", ("2023-01-01", "2023-02-01", "month")),
        ("In May we went", ("2023-05-01", "2023-06-01", "month")),
        ("on 3 June", ("2023-06-03", "2023-06-04", "day")),
        ("on 25 December", ("2022-12-25", "2022-12-26", "day")),  # the latest by now
    ],
)
def test_periods(text: str, expected: tuple[str, str, str]) -> None:
    assert spans(text) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "Did she take the test before December 23rd, 2023?",  # a bound, not a period
        "What was she watching shortly before 7 Jan 2024?",
        "Has he lived there since 2015?",
        'When did he start to read "11/22/63" by Stephen King?',  # two-digit year: a title
        "Did she like 2666 by Roberto Bolano?",
        "I walked 2000 steps",  # a count
        "J'ai marché 2000 étapes",  # a count, its word beyond ASCII
        "I may go there",  # the verb
        "no dates here",
        "",
    ],
)
def test_not_periods(text: str) -> None:
    assert periods(text, None) == []


def test_relative_phrases_need_a_now() -> None:
    assert periods("what did I do yesterday?") == []
    assert spans("yesterday, on 5 May 2023", None) == [("2023-05-05", "2023-05-06", "day")]


def test_several_periods_and_their_hull() -> None:
    found = periods("between March 2023 and 2024")
    assert [p.unit for p in found] == ["month", "year"]
    start, end = hull(found) or (0.0, 0.0)
    assert start == found[0].start and end == found[1].end
    assert hull([]) is None


def test_a_turn_is_about_a_period_when_said_in_it_or_naming_it() -> None:
    june_17 = periods("on 17 June 2023")
    said = datetime(2023, 6, 17, 21, tzinfo=UTC).timestamp()
    next_day = datetime(2023, 6, 18, 8, tzinfo=UTC).timestamp()  # "last night ..."
    later = datetime(2023, 6, 21, 12, tzinfo=UTC).timestamp()  # a Wednesday
    assert said_in(said, june_17) and said_in(next_day, june_17)
    assert not said_in(later, june_17) and not said_in(None, june_17)
    assert about(later, "Last Saturday I baked a cherry pie.", june_17)
    assert not about(later, "I baked a cherry pie.", june_17)
    assert not about(said, "anything", [])


def test_huge_text_is_not_scanned() -> None:
    assert periods("on 5 May 2023 " + "x" * 200_000) == []
    assert isinstance(periods("5 May 2023")[0], Period)


def test_relative_bounds_are_not_periods() -> None:
    assert periods("Has she been sick since last month?", NOW) == []
    assert periods("What did he plan before January?", NOW) == []
    assert spans("the day after yesterday") == [("2023-10-20", "2023-10-21", "day")]


def test_shifts_from_named_events() -> None:
    (shift,) = event_shifts("What did she buy two weeks before the wedding?")
    assert (shift.n, shift.unit, shift.side, shift.event) == (2, "week", "before", "the wedding")
    (after,) = event_shifts("Where did he go a month after his graduation did he move?")
    assert after.event == "his graduation" and after.side == "after"
    wedding = datetime(2023, 7, 1, 22, tzinfo=UTC).timestamp()
    day = datetime.fromtimestamp(shift.period(wedding).start, UTC)
    assert day == datetime(2023, 6, 17, tzinfo=UTC)
    assert event_shifts("the week before August 3, 2023") == []  # a date: a period
    assert event_shifts("two weeks before it") == []


def test_a_spelled_out_date_is_not_counted_twice() -> None:
    year_1988 = periods("Which 1988 comedy had music by her?")
    said = datetime(2023, 6, 21, 12, tzinfo=UTC).timestamp()
    # the year is a word both share (BM25's part); only relative phrases are resolved
    assert not about(said, "A 1988 Telugu comedy film.", year_1988)
    assert not about(None, "A 1988 Telugu comedy film.", year_1988)
    assert periods("on 5 May 2023, last week", NOW, absolute=False) == periods("last week", NOW)
