"""PersonalAI's own record kind: the thesis, a hyperedge over several entities (its
object nodes and simple relations are the core's :class:`~memstrata.models.Entity` and
:class:`~memstrata.models.Fact`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

from memstrata.models import Derived


class Thesis(Derived):
    """A proposition over several entities (PersonalAI thesis node, a hyperedge).

    Like a fact, a superseded thesis keeps its row, with ``invalid_at`` and its successors.
    """

    kind: ClassVar[str] = "thesis"
    text: str
    entity_ids: list[str] = Field(default_factory=list)
    invalid_at: datetime | None = None
    replaced_by: list[str] = Field(default_factory=list)

    links: ClassVar[tuple[tuple[str, str], ...]] = (
        ("entity_ids", "entity"),
        ("replaced_by", "thesis"),
    )

    def search_text(self) -> str:
        return self.text

    @classmethod
    def natural_keys(cls, records: Sequence[Derived]) -> Iterable[tuple[str, Any]]:
        for r in records:
            if isinstance(r, cls):
                yield "thesis", (r.text.casefold(), tuple(sorted({s.episode for s in r.sources})))
