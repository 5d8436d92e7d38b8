"""A tiny third-party memstrata design, installed as a wheel by ``tests/engine/test_plugins.py``.

It uses only the engine's contracts and declares its own record kind: the ``keywords``
builder writes, per episode, one :class:`KeywordSet` made of the episode's three longest
words; the ``keywords`` route returns the sets sharing a word with the query; ``show
WORD`` lists the sets holding a word; the ``tiny`` recipe fuses the route with System-1.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import ClassVar

from memstrata.engine import (
    Builder,
    BuilderSpec,
    Context,
    Design,
    FusionSpec,
    Recipe,
    Route,
    RouteSpec,
    ShowNode,
    StepResult,
)
from memstrata.models import Derived, Episode, Hit, Span
from memstrata.store import SearchFilters

NAME = "keywords"


class KeywordSet(Derived):
    """An episode's three longest words."""

    kind: ClassVar[str] = "keyword_set"
    text: str

    def search_text(self) -> str:
        return self.text


def words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def theses(ctx: Context, namespace: str) -> list[KeywordSet]:
    found = ctx.store.get_records(namespace, KeywordSet.kind, builder=NAME)
    return [r for r in found if isinstance(r, KeywordSet)]


class KeywordsBuilder(Builder):
    """One thesis per episode: its three longest words, citing the whole episode."""

    name = NAME
    kinds = (KeywordSet.kind,)

    async def update(self, ctx: Context, namespace: str, episodes: Sequence[Episode]) -> StepResult:
        records = [
            KeywordSet(
                namespace=namespace,
                text=" ".join(sorted(words(ep.text), key=len, reverse=True)[:3]),
                sources=[Span(episode=ep.id, start=0, end=len(ep.text))],
            )
            for ep in episodes
        ]
        keys = [ep.key for ep in episodes]
        await asyncio.to_thread(ctx.store.write_records, namespace, records, built=(NAME, keys))
        return StepResult()


class KeywordsRoute(Route):
    """Theses sharing a word with the query, most shared words first."""

    name = NAME
    needs = (NAME,)

    async def search(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None = None,
    ) -> list[list[Hit]]:
        held = await asyncio.to_thread(theses, ctx, namespace)
        out = []
        for query in queries:
            asked = set(words(query))
            scored = [(len(asked & set(t.text.split())), t) for t in held]
            best = sorted((x for x in scored if x[0]), key=lambda x: (-x[0], x[1].text))[:k]
            out.append(
                [
                    Hit(
                        kind=KeywordSet.kind,
                        id=t.id,
                        text=t.text,
                        score=float(n),
                        sources=[s.episode for s in t.sources],
                        spans=list(t.sources),
                        routes=[NAME],
                    )
                    for n, t in best
                ]
            )
        return out


def show(ctx: Context, namespace: str, name: str) -> list[ShowNode] | None:
    held = [t for t in theses(ctx, namespace) if name.lower() in t.text.split()]
    if not held:
        return None
    children = [
        ShowNode(text=f"{t.text} [{', '.join(s.episode for s in t.sources)}]") for t in held
    ]
    return [ShowNode(text=f"keyword {name.lower()}", children=children)]


design = Design(
    name="tiny",
    builders=[KeywordsBuilder],
    routes=[KeywordsRoute],
    recipes=[
        Recipe(
            name="tiny",
            description="Longest-word sets, fused with System-1 over episodes.",
            builders=[BuilderSpec(name=NAME)],
            routes=[RouteSpec(name=NAME, weight=2.0), RouteSpec(name="system1", weight=1.0)],
            fusion=FusionSpec(
                kind_order=[KeywordSet.kind, "episode"], budgets={KeywordSet.kind: 1}
            ),
        )
    ],
    show=show,
    description="A tiny plug-in design for the tests.",
    records=[KeywordSet],
)
