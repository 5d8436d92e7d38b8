"""HiGMem's record kinds: the turn note (a turn's analysed metadata) and the event (a
summary and a fact sheet over several turns)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, Field, field_validator

from memstrata.models import Derived


class EventFact(BaseModel):
    """One line of an event's fact sheet: a short fact, when it happened if known, and
    the turns (episode ids) it came from."""

    text: str
    when: str | None = None
    turns: list[str] = Field(default_factory=list)


class Event(Derived):
    """A HiGMem event: a summary and a fact sheet (a timeline) over the turns it links.

    ``turn_ids`` are the linked turns in the order they joined; ``sources`` holds one span
    per linked turn, so a deleted turn drops out of the event's provenance. A fact given
    as a plain string is read as a fact without date or links.
    """

    kind: ClassVar[str] = "event"
    summary: str
    facts: list[EventFact] = Field(default_factory=list)
    turn_ids: list[str] = Field(default_factory=list)

    links: ClassVar[tuple[tuple[str, str], ...]] = (("turn_ids", "episode"),)

    @field_validator("facts", mode="before")
    @classmethod
    def _plain_facts(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"text": v} if isinstance(v, str) else v for v in value]
        return value

    def search_text(self) -> str:
        return self.summary

    @classmethod
    def natural_keys(cls, records: Sequence[Derived]) -> Iterable[tuple[str, Any]]:
        return (("event", tuple(sorted(r.turn_ids))) for r in records if isinstance(r, cls))


def profile_key(key: str) -> tuple[str, str] | None:
    """A profile key ``Person: attribute`` as (person, attribute); None if malformed."""
    person, sep, attribute = key.partition(":")
    if not sep or not person.strip() or not attribute.strip():
        return None
    return person.strip(), attribute.strip()


class TurnNote(Derived):
    """A HiGMem turn node's metadata, derived from one turn (its only source) read in the
    window of the turns before it: the episode itself is never changed.

    ``dates`` are the relative or absolute date phrases of the turn resolved against the
    turn's time (``{"phrase": ..., "date": "YYYY-MM-DD"}``); ``timestamp`` is the turn's
    own time (ISO), or the date the turn is about when the analysis says so. ``profile``
    and ``links_to`` are the analysis' profile-retrieval keys and direct links (appendix
    C); a link names a turn of the note's window, so removing that turn re-analyses this
    one (the builder's repair) and the link goes.
    """

    kind: ClassVar[str] = "turn_note"
    turn_id: str
    keywords: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    context: str = ""
    timestamp: str | None = None
    dates: list[dict[str, str]] = Field(default_factory=list)
    profile: list[str] = Field(
        default_factory=list, description="profile keys, 'Person: attribute' (e.g. 'Ana: pets')"
    )
    links_to: list[str] = Field(
        default_factory=list, description="earlier turns of its window it answers or refers to"
    )

    links: ClassVar[tuple[tuple[str, str], ...]] = (
        ("turn_id", "episode"),
        ("links_to", "episode"),
    )

    def search_text(self) -> str:
        parts = [", ".join(self.keywords), self.context]
        return " | ".join(p for p in parts if p)

    @classmethod
    def natural_keys(cls, records: Sequence[Derived]) -> Iterable[tuple[str, Any]]:
        return (("turn_note", r.turn_id) for r in records if isinstance(r, cls))
