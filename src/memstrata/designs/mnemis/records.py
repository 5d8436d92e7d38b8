"""Mnemis's own record kind: the category of its hierarchy (its entities and facts are the
core's :class:`~memstrata.models.Entity` and :class:`~memstrata.models.Fact`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from pydantic import Field

from memstrata.models import Derived


class Category(Derived):
    """A node of the category hierarchy. Layer 1 groups entities; layer i groups layer i-1.

    ``parent_ids`` is many-to-many: a child may sit under several categories.
    """

    kind: ClassVar[str] = "category"
    name: str
    layer: int = Field(ge=1)
    summary: str = Field(default="", description="what its members share, like an entity's")
    tags: list[str] = Field(default_factory=list)
    child_ids: list[str] = Field(default_factory=list)
    parent_ids: list[str] = Field(default_factory=list)
    children_changed: bool = Field(
        default=False,
        description="its children changed since the model last described it (stored, so a "
        "mark survives a reload until the description is written)",
    )

    links: ClassVar[tuple[tuple[str, str], ...]] = (
        ("child_ids", "category|entity"),
        ("parent_ids", "category"),
    )
    link_fields: ClassVar[tuple[str, str] | None] = ("child_ids", "parent_ids")

    @classmethod
    def natural_keys(cls, records: Sequence[Derived]) -> Iterable[tuple[str, Any]]:
        for r in records:
            if isinstance(r, cls):
                yield "category", (r.layer, tuple(sorted(r.child_ids)))

    def search_text(self) -> str:
        if self.summary:
            return f"{self.name}: {self.summary}"
        return f"{self.name}: {', '.join(self.tags)}" if self.tags else self.name
