"""``SearchFilters.admits``: the filter rule for routes that filter outside the store."""

from __future__ import annotations

from datetime import UTC, datetime

from memstrata.models import Episode
from memstrata.store import SearchFilters


def ep(speaker: str | None, session: str | None, when: datetime | None) -> Episode:
    return Episode(
        id="e",
        namespace="n",
        text="t",
        speaker=speaker,
        session=session,
        occurred_at=when,
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
    )


def test_admits_by_speaker_session_and_time_window() -> None:
    may = datetime(2023, 5, 8, 13, 56)  # naive: read as UTC, like the store
    e = ep("Ana", "s1", may)
    assert SearchFilters().admits(e)
    assert SearchFilters(speakers=["Ana"], sessions=["s1"]).admits(e)
    assert not SearchFilters(speakers=["Ben"]).admits(e)
    assert not SearchFilters(sessions=["s2"]).admits(e)
    assert SearchFilters(since=datetime(2023, 5, 1, tzinfo=UTC)).admits(e)
    assert not SearchFilters(since=datetime(2023, 6, 1, tzinfo=UTC)).admits(e)
    assert not SearchFilters(until=datetime(2023, 5, 8, 13, 0)).admits(e)
    assert SearchFilters(until=datetime(2023, 5, 8, 14, 0, tzinfo=UTC)).admits(e)
    undated = ep("Ana", "s1", None)
    assert SearchFilters(speakers=["Ana"]).admits(undated)
    assert not SearchFilters(since=datetime(2023, 1, 1)).admits(undated)
