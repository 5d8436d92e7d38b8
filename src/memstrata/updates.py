"""Writing episodes over ids that may already be stored: idempotent re-adds, conflicts,
and updates that keep the replaced version (a mixin of :class:`~memstrata.AsyncMemory`).

An id already stored with the same content (:func:`~memstrata.store.base.same_episode`:
text, speaker, role, occurred_at, session and metadata) is a no-op, so imports can be
re-run. With different content it is a *conflict*: left unchanged and reported, unless the
caller asks to replace it. Replacing (``update``, or ``replace=True``) embeds the new text
first, then writes in one store transaction the old version into the history, the new
text and index rows, the provenance cleanup and the removal of the episode's build marks;
then, in ``inline`` mode, the builders fold the episode in again.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from memstrata import erasure
from memstrata.embed.cache import ensure_embedded
from memstrata.errors import EpisodeNotFoundError
from memstrata.ingest import prepare_episode
from memstrata.models import Episode
from memstrata.retrieval import documents
from memstrata.store import AddReport, PreparedEpisode
from memstrata.store.base import DeleteReport, EpisodeVersion, check_namespace, same_episode
from memstrata.verbs import EpisodeIds, episode_ids, one_id

logger = logging.getLogger("memstrata")

if TYPE_CHECKING:
    from memstrata.config import Config
    from memstrata.embed.base import Embedder
    from memstrata.engine import Engine
    from memstrata.llm import LLMClient
    from memstrata.store import Store


class Keep(enum.Enum):
    """The default of :meth:`EpisodeWriter.update`'s context fields: keep the stored value."""

    KEEP = "keep"

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Final = Keep.KEEP


def _missing(id: str, namespace: str) -> EpisodeNotFoundError:
    return EpisodeNotFoundError(id, namespace)


def _rounds(batch: list[PreparedEpisode]) -> list[list[PreparedEpisode]]:
    """Split a batch so that no id repeats within a part, order kept per id: the second
    occurrence of an id replaces the first, and so on."""
    parts: list[list[PreparedEpisode]] = []
    seen: dict[str, int] = {}
    for p in batch:
        n = seen.get(p.external_id, 0)
        seen[p.external_id] = n + 1
        if n == len(parts):
            parts.append([])
        parts[n].append(p)
    return parts


class EpisodeWriter:
    """Mixin of :class:`~memstrata.memory.AsyncMemory`: ``update``, ``delete``,
    ``history`` and the batch write behind ``add`` and ``add_many``."""

    if TYPE_CHECKING:
        config: Config
        store: Store
        embedder: Embedder

        def _ns(self, namespace: str | None) -> str: ...
        async def _known(self, namespace: str) -> str: ...
        async def _fold_in(self, namespace: str) -> None: ...

        engine: Engine
        _llm: LLMClient | None

    async def update(
        self,
        id: str,
        text: str | bytes,
        *,
        namespace: str | None = None,
        speaker: str | None | Keep = KEEP,
        role: str | None | Keep = KEEP,
        occurred_at: datetime | str | None | Keep = KEEP,
        session: str | None | Keep = KEEP,
        metadata: dict[str, Any] | None | Keep = KEEP,
        keep_history: bool = True,
    ) -> Episode:
        """Correct a stored episode: it gets ``text`` (and any context given; omitted
        fields keep their stored values, None clears one, ``metadata`` replaces the whole
        mapping). The replaced version is kept (:meth:`history`); searches see only the
        new one; what was derived from the old text loses that source and the builders
        take the episode again (now, in ``inline`` mode). Same content: nothing happens.
        ``keep_history=False`` erases the replaced text and the earlier versions as a
        delete erases a text. Raises :class:`EpisodeNotFoundError` when ``id`` is not
        stored."""
        one_id(id)
        ns = await self._known(self._ns(namespace))
        given: dict[str, Any] = dict(speaker=speaker, role=role, session=session)
        given.update(occurred_at=occurred_at, metadata=metadata)
        changes = {k: v for k, v in given.items() if v is not KEEP}
        replaced = await asyncio.to_thread(self._update_one, ns, id, text, changes, keep_history)
        if replaced is not None:
            await self._after_removal(ns, [] if keep_history else replaced)
        return (await asyncio.to_thread(self.store.get_episodes, ns, [id]))[0]

    async def delete(self, ids: EpisodeIds, *, namespace: str | None = None) -> DeleteReport:
        """Delete episodes by id (a bare string is one id) and, along provenance, what
        was derived from them alone.

        Returns the number of episodes removed (an int) whose ``missing`` lists the given
        ids that were not stored: a delete is idempotent and does not raise for them. A
        whole namespace goes with :meth:`delete_namespace`, never by leaving ids out.
        """
        wanted = episode_ids(ids)
        ns = await self._known(self._ns(namespace))
        going = await asyncio.to_thread(erasure.going, self.store, ns, wanted)
        report = await asyncio.to_thread(self.store.delete_episodes, ns, wanted)
        if report:
            await self._after_removal(ns, going)
        return report

    async def delete_namespace(self, namespace: str) -> int:
        """Delete the namespace named (never the default by omission) and everything in
        it, erased as a delete erases a text; the number of episodes it held.
        :class:`NamespaceNotFoundError` if it holds nothing."""
        ns = await self._known(check_namespace(namespace))
        everything = await asyncio.to_thread(erasure.all_episodes, self.store, ns)
        removed = await asyncio.to_thread(self.store.delete_namespace, ns)
        await asyncio.to_thread(self._erase, everything)
        return removed

    async def _after_removal(self, namespace: str, erased: Sequence[erasure.Removed] = ()) -> None:
        """Every design re-derives what rested on the removed text before the call
        returns (their repairs), then, in ``inline`` mode, folds in what is queued again
        (an updated episode, episodes of a dropped aggregate); last, what the ``erased``
        texts left behind goes (:mod:`memstrata.erasure`)."""
        left = await self.engine.repair(namespace, self.config.recipe)
        if left:
            logger.warning(
                "repairs still waiting in %r (another process holds the build lease; "
                "its next batch does them, and the removed text stays in their log "
                "until then): %s",
                namespace,
                left,
            )
        await self._fold_in(namespace)
        if erased:
            await asyncio.to_thread(self._erase, erased)

    def _erase(self, removed: Sequence[erasure.Removed]) -> None:
        erasure.erase(self.store, self.config, self._llm, removed)

    async def history(self, id: str, *, namespace: str | None = None) -> list[EpisodeVersion]:
        """The versions of episode ``id`` that updates replaced, oldest first (empty if it
        was never updated; the current version is :meth:`get`'s)."""
        one_id(id)
        ns = await self._known(self._ns(namespace))

        def read() -> list[EpisodeVersion]:
            if not self.store.existing_ids(ns, [id]):
                raise _missing(id, ns)
            return self.store.episode_history(ns, id)

        return await asyncio.to_thread(read)

    def _update_one(
        self, ns: str, id: str, text: str | bytes, changes: dict[str, Any], keep_history: bool
    ) -> list[erasure.Removed] | None:
        """The replaced version (with, when history goes, the earlier ones), or None when
        nothing changed."""
        stored = self.store.get_episodes(ns, [id])
        if not stored:
            raise _missing(id, ns)
        old = stored[0]
        item: dict[str, Any] = old.model_dump(
            include={"speaker", "role", "occurred_at", "session", "metadata"}
        )
        item.update(changes, id=id, text=text)
        item["metadata"] = item["metadata"] or {}
        prepared = prepare_episode(item, self.config)
        if same_episode(prepared, old):
            return None
        earlier = [] if keep_history else erasure.versions_of(self.store, ns, old)
        self._embed([prepared])  # before the transaction: a failure leaves the old version
        report = self.store.update_episodes(ns, [prepared], keep_history=keep_history)
        if report.missing:
            raise _missing(id, ns)  # deleted by another writer meanwhile
        return [old, *earlier] if report.updated else None

    def _embed(self, items: Sequence[PreparedEpisode]) -> None:
        if items:
            texts = [documents.embed_text(p.text, p.speaker, p.metadata) for p in items]
            hashes = ensure_embedded(self.store, self.embedder, texts, file=False)
            for p, h in zip(items, hashes, strict=True):
                p.embed_hash = h

    async def _write_batches(
        self,
        namespace: str,
        prepared: list[PreparedEpisode],
        batch_size: int,
        replace: bool,
        progress: Callable[[int], None] | None,
    ) -> AddReport:
        """Write batch by batch (each one transaction), embedding up to two batches ahead
        of the writes: the embedder's workers never wait for a commit, nor for the last
        slow batch of the one before."""
        total = AddReport()
        batches = [prepared[s : s + batch_size] for s in range(0, len(prepared), batch_size)]
        ahead = [asyncio.create_task(self._embed_ahead(namespace, b)) for b in batches[:2]]
        try:
            for i, batch in enumerate(batches):
                await ahead[i]
                if i + 2 < len(batches):
                    ahead.append(asyncio.create_task(self._embed_ahead(namespace, batches[i + 2])))
                report = await asyncio.to_thread(self._write_batch, namespace, batch, replace)
                for field in ("added", "existing", "conflicts", "updated"):
                    getattr(total, field).extend(getattr(report, field))
                if progress:
                    progress(len(batch))
        finally:
            # A failed batch stops the call; embeddings still running finish first (they
            # only fill the cache), so nothing touches the store after this returns.
            await asyncio.gather(*ahead, return_exceptions=True)
        return total

    async def _embed_ahead(self, namespace: str, batch: list[PreparedEpisode]) -> None:
        """Fill the embedding cache for the items of ``batch`` that a write will store
        (new ids, or stored with other content), before the write needs them."""

        def run() -> None:
            stored = {
                e.id: e for e in self.store.get_episodes(namespace, [p.external_id for p in batch])
            }
            self._embed(
                [
                    p
                    for p in batch
                    if (old := stored.get(p.external_id)) is None or not same_episode(p, old)
                ]
            )

        await asyncio.to_thread(run)

    def _write_batch(
        self, namespace: str, batch: list[PreparedEpisode], replace: bool = False
    ) -> AddReport:
        """Add a batch (one transaction); ids stored with other content are conflicts, or
        with ``replace`` are updated (one more transaction)."""
        report = AddReport()
        for part in _rounds(batch) if replace else [batch]:
            self._write_part(namespace, part, replace, report)
        return report

    def _write_part(
        self, namespace: str, part: list[PreparedEpisode], replace: bool, report: AddReport
    ) -> None:
        stored = {
            e.id: e for e in self.store.get_episodes(namespace, [p.external_id for p in part])
        }
        fresh: list[PreparedEpisode] = []
        changed: list[PreparedEpisode] = []
        for p in part:
            old = stored.get(p.external_id)
            if old is None:
                fresh.append(p)
            elif same_episode(p, old):
                report.existing.append(p.external_id)
            elif replace:
                changed.append(p)
            else:
                report.conflicts.append(p.external_id)
        self._embed(fresh + changed)
        added = self.store.add_episodes(namespace, fresh)
        report.added.extend(added.added)
        report.existing.extend(added.existing)
        if replace:  # written by another process since we looked: replace those too
            changed.extend(p for p in fresh if p.external_id in set(added.conflicts))
        else:
            report.conflicts.extend(added.conflicts)
        if changed:
            updated = self.store.update_episodes(namespace, changed)
            report.updated.extend(updated.updated)
            report.existing.extend(updated.unchanged)
            gone = set(updated.missing)  # deleted by another process since we looked
            if gone:
                again = self.store.add_episodes(
                    namespace, [p for p in changed if p.external_id in gone]
                )
                report.added.extend(again.added)
                report.existing.extend(again.existing)
                report.conflicts.extend(again.conflicts)
