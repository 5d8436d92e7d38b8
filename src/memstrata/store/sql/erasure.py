"""Erasure's rules both SQL stores share (docs/engine.md, "Deleted means gone"): vectors
no stored text needs any more, error texts that may quote a removed text, and the earlier
versions of a namespace's episodes. What a backend does with its files (SQLite's index
folders and WAL, PostgreSQL's ``vacuum``) stays its own."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from memstrata.store.erasing import UNKNOWN_WORDS, probe_words
from memstrata.store.reports import VERSION_COLS, EpisodeVersion, version_of
from memstrata.store.sql.host import SQLCore


class ErasureRules(SQLCore):
    """Part of a SQL store: the primitives of :class:`~memstrata.store.erasing.StoreErasure`
    that are rows only."""

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
        conn: Any,
        hashes: list[bytes],
        scopes: list[int],
        words: Collection[int],
        everything: bool,
    ) -> int:
        """``forget_embeddings`` in the caller's transaction, over the filings of the
        namespace ids ``scopes`` (in hash order: concurrent deletes lock rows alike)."""
        within = f"namespace_id IN ({','.join('?' * len(scopes))})"
        if everything:
            filed = conn.execute(
                self._sql(f"SELECT DISTINCT hash FROM embedding_terms WHERE {within}"), scopes
            ).fetchall()
        else:
            filed = self._in(
                conn,
                f"SELECT DISTINCT hash FROM embedding_terms WHERE {within} AND term {{in_}}",
                sorted({*words, UNKNOWN_WORDS}),
                lead=scopes,
            )
        found = sorted({bytes(r[0]) for r in filed})
        self._in(
            conn, f"DELETE FROM embedding_terms WHERE {within} AND hash {{in_}}", found, lead=scopes
        )
        wanted = sorted(set(hashes) | set(found))
        return self._in_changed(
            conn,
            "DELETE FROM embeddings WHERE hash {in_} "
            "AND NOT EXISTS (SELECT 1 FROM episodes e WHERE e.embed_hash = embeddings.hash) "
            "AND NOT EXISTS (SELECT 1 FROM episode_versions v "
            "WHERE v.embed_hash = embeddings.hash) "
            "AND NOT EXISTS (SELECT 1 FROM embedding_terms t WHERE t.hash = embeddings.hash)",
            wanted,
        )

    def redact_errors(
        self, namespace: str, words: Collection[str], redact: Callable[[str], str | None]
    ) -> int:
        probe = probe_words(words)
        where, bound = ("", ()) if probe is None else self.dialect.contains_any("error", probe)
        with self._lock:  # read first: most deletes find nothing to rewrite
            ns_id = self._ns_id(namespace)
            calls = self._rows(
                "SELECT id, error FROM llm_calls WHERE error IS NOT NULL "
                f"AND (namespace=? OR namespace IS NULL){where}",
                (namespace, *bound),
            )
            marks = self._rows(
                "SELECT builder, episode_id, error FROM build_progress WHERE namespace_id=? "
                f"AND error IS NOT NULL{where}",
                (ns_id, *bound),
            )
        calls = sorted((key, new) for key, text in calls if (new := redact(text)) is not None)
        marks = sorted((b, e, new) for b, e, text in marks if (new := redact(text)) is not None)
        if calls or marks:
            with self._write() as conn:
                cur = conn.cursor()
                cur.executemany(
                    self._sql("UPDATE llm_calls SET error=? WHERE id=?"),
                    [(n, k) for k, n in calls],
                )
                cur.executemany(
                    self._sql(
                        "UPDATE build_progress SET error=? WHERE namespace_id=? AND builder=? "
                        "AND episode_id=?"
                    ),
                    [(n, ns_id, b, e) for b, e, n in marks],
                )
        return len(calls) + len(marks)

    def namespace_versions(self, namespace: str) -> list[EpisodeVersion]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            rows = self._rows(
                f"SELECT e.external_id, {VERSION_COLS} FROM episode_versions v JOIN episodes e "
                "ON e.namespace_id=v.namespace_id AND e.id=v.episode_id "
                "WHERE v.namespace_id=? AND length(v.content_hash) > 0 ORDER BY v.id",
                (ns_id,),
            )
        return [version_of(namespace, r) for r in rows]
