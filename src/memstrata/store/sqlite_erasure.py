"""The SQLite store's side of erasure (docs/engine.md, "Deleted means gone"): vectors no
stored text points to, error texts that quote a removed one, the index files of a
namespace that lost a text, and the WAL.

The rows themselves go in the delete's transaction (``sqlite.py``, ``sqlite_updates.py``),
where the namespace's FTS5 index is also merged into one segment (``_rewrite_fts``);
``secure_delete`` overwrites every freed cell and page with zeros.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Sequence

from memstrata.store.base import EpisodeVersion
from memstrata.store.erasing import UNKNOWN_WORDS, probe_words
from memstrata.store.reports import VERSION_COLS, version_of
from memstrata.store.sql.common import chunks as _chunks
from memstrata.store.sqlite_base import SQLiteBase


class Erasure(SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore`."""

    def forget_embeddings(
        self,
        hashes: Sequence[bytes],
        *,
        namespace: str | None = None,
        words: Collection[int] = (),
        everything: bool = False,
    ) -> int:
        with self._write() as conn:
            ns_id = self._ns_id(namespace) if namespace is not None else None
            scopes = [0] if ns_id is None else [0, ns_id]
            return self._forget(conn, list(hashes), scopes, words, everything)

    def _forget(
        self,
        conn: sqlite3.Connection,
        hashes: list[bytes],
        scopes: list[int],
        words: Collection[int],
        everything: bool,
    ) -> int:
        """``forget_embeddings`` in the caller's transaction, over the filings of the
        namespace ids ``scopes``."""
        at = ",".join("?" * len(scopes))
        if everything:
            filed = [
                r[0]
                for r in conn.execute(
                    f"SELECT hash FROM embedding_terms WHERE namespace_id IN ({at})", scopes
                )
            ]
        else:
            keys = sorted({*words, UNKNOWN_WORDS})
            filed = [
                r[0]
                for chunk in _chunks(keys, 500)
                for r in conn.execute(
                    f"SELECT hash FROM embedding_terms WHERE namespace_id IN ({at}) "
                    f"AND term IN ({','.join('?' * len(chunk))})",
                    (*scopes, *chunk),
                )
            ]
        found = list(dict.fromkeys(bytes(h) for h in filed))
        for chunk in _chunks(found, 500):
            conn.execute(
                f"DELETE FROM embedding_terms WHERE namespace_id IN ({at}) "
                f"AND hash IN ({','.join('?' * len(chunk))})",
                (*scopes, *chunk),
            )
        wanted = list(dict.fromkeys([*hashes, *found]))
        if not wanted:
            return 0
        held: set[bytes] = set()
        for sql in (
            "SELECT DISTINCT embed_hash FROM episodes WHERE embed_hash IN ({marks})",
            "SELECT DISTINCT embed_hash FROM episode_versions WHERE embed_hash IN ({marks})",
            "SELECT DISTINCT hash FROM embedding_terms WHERE hash IN ({marks})",
        ):
            held.update(bytes(r[0]) for r in self._rows_in(sql, wanted))
        removed = 0
        for chunk in _chunks([h for h in wanted if h not in held], 500):
            marks = ",".join("?" * len(chunk))
            removed += conn.execute(
                f"DELETE FROM embeddings WHERE hash IN ({marks})", chunk
            ).rowcount
        return removed

    def redact_errors(
        self, namespace: str, words: Collection[str], redact: Callable[[str], str | None]
    ) -> int:
        probe = probe_words(words)
        where = (
            ""
            if probe is None
            else " AND (" + " OR ".join(["instr(lower(error), ?) > 0"] * len(probe)) + ")"
        )
        with self._lock:  # read first: most deletes find nothing to rewrite
            ns_id = self._ns_id(namespace)
            calls = self._conn.execute(
                "SELECT id, error FROM llm_calls WHERE error IS NOT NULL "
                f"AND (namespace=? OR namespace IS NULL){where}",
                (namespace, *(probe or ())),
            ).fetchall()
            marks = self._conn.execute(
                "SELECT builder, episode_id, error FROM build_progress WHERE namespace_id=? "
                f"AND error IS NOT NULL{where}",
                (ns_id, *(probe or ())),
            ).fetchall()
        calls = [(new, key) for key, text in calls if (new := redact(text)) is not None]
        marks = [(new, ns_id, b, e) for b, e, text in marks if (new := redact(text)) is not None]
        if calls or marks:
            with self._write() as conn:
                conn.executemany("UPDATE llm_calls SET error=? WHERE id=?", calls)
                conn.executemany(
                    "UPDATE build_progress SET error=? WHERE namespace_id=? AND builder=? "
                    "AND episode_id=?",
                    marks,
                )
        return len(calls) + len(marks)

    def namespace_versions(self, namespace: str) -> list[EpisodeVersion]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            rows = self._conn.execute(
                f"SELECT e.external_id, {VERSION_COLS} FROM episode_versions v JOIN episodes e "
                "ON e.id=v.episode_id WHERE v.namespace_id=? AND length(v.content_hash) > 0 "
                "ORDER BY v.id",
                (ns_id,),
            ).fetchall()
        return [version_of(namespace, r) for r in rows]

    def _erase_files(self, ns_id: int) -> None:
        """The vector graph and full-text index files of the namespace hold what was just
        removed (vectors, terms): they go, once any build of them here has finished, and
        are built again from the store (searches are exact and FTS5 meanwhile)."""
        self._erase_graph(ns_id)
        self._erase_text(ns_id)

    def scrub(self) -> bool:
        with self._lock:
            if self.path == ":memory:":
                return True
            busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            return not busy
