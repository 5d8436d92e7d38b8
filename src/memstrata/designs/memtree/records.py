"""MemTree's record kind: a node of the tree."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from pydantic import Field

from memstrata.models import Derived


class TreeNode(Derived):
    """A MemTree node: aggregated content at a depth, with its parent (None for the root)."""

    kind: ClassVar[str] = "tree_node"
    parent_id: str | None = None
    depth: int = Field(default=0, ge=0)
    content: str = ""

    links: ClassVar[tuple[tuple[str, str], ...]] = (("parent_id", "tree_node"),)
    parent_field: ClassVar[str | None] = "parent_id"

    def search_text(self) -> str:
        return self.content

    def is_root(self) -> bool:
        return self.parent_id is None and self.depth == 0  # an aggregate of nothing at first

    @classmethod
    def natural_keys(cls, records: Sequence[Derived]) -> Iterable[tuple[str, Any]]:
        parents = {r.parent_id for r in records if isinstance(r, cls) and r.parent_id}
        for r in records:
            if isinstance(r, cls) and r.id not in parents and r.parent_id is not None:
                # a leaf: one per episode folded in
                yield "tree_leaf", tuple(sorted({s.episode for s in r.sources}))
