"""Looking inside a namespace's structures: the designs' views (:mod:`memstrata.engine.views`)
and the records derived from one episode. ``AsyncMemory.inspect`` is the way in; the web
explorer reads it. These are inspection calls over whole record sets, not hot paths."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from memstrata.engine.views import View, ViewQuery
from memstrata.errors import NotFound
from memstrata.models import load_kinds

if TYPE_CHECKING:
    from memstrata.memory import AsyncMemory


class Inspection:
    """The views and provenance of one memory's namespaces, read off the event loop; a
    namespace that holds nothing is :class:`~memstrata.NamespaceNotFoundError`."""

    def __init__(self, memory: AsyncMemory) -> None:
        self._memory = memory

    async def views(self, namespace: str) -> list[dict[str, Any]]:
        """The designs' views that have records to show in ``namespace``."""
        memory = self._memory
        await memory._known(namespace)
        stats = await asyncio.to_thread(memory.store.stats, namespace)
        owners = {
            b for s in stats for b, kinds in s.records_by_builder.items() if any(kinds.values())
        }
        found = memory.engine.registry.views.values()
        return [v.summary(d) for d, v in found if v.builder in owners]

    async def view(self, namespace: str, name: str, query: ViewQuery) -> View:
        """The view ``name`` of ``namespace``, cut as ``query`` says; :class:`NotFound`
        when no design offers it."""
        memory = self._memory
        await memory._known(namespace)
        found = memory.engine.registry.views.get(name)
        if found is None:
            raise NotFound(f"no view {name!r} (the namespace's /views lists them)")
        return await asyncio.to_thread(found[1].render, memory.engine.base, namespace, query)

    async def derived(self, namespace: str, episode: str) -> list[dict[str, Any]]:
        """The records whose provenance names ``episode``, each with the spans it rests
        on (every kind's records of the namespace are read)."""
        await self._memory._known(namespace)
        return await asyncio.to_thread(self._derived, namespace, episode)

    def _derived(self, namespace: str, episode: str) -> list[dict[str, Any]]:
        out = []
        for kind in load_kinds():
            for rec in self._memory.store.get_records(namespace, kind, builder=None):
                spans = [s for s in rec.sources if s.episode == episode]
                if spans:
                    out.append(
                        {
                            "kind": kind,
                            "id": rec.id,
                            "builder": rec.builder,
                            "text": rec.search_text(),
                            "spans": [s.model_dump() for s in spans],
                        }
                    )
        return out


__all__ = ["Inspection"]
