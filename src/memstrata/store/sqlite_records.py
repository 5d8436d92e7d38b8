"""The SQLite store's derived records: writes with provenance and links, reads, cascades.

Records keep their full JSON in ``records.data``; the per-kind tables only hold the few
columns queries filter on, and ``provenance`` ties each record to the episode spans it rests
on, so deleting episodes can take along the records left without any source.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from memstrata.errors import StoreError
from memstrata.models import DERIVED_KINDS, Category, ConceptEdge, Derived, Entity, Fact, TreeNode
from memstrata.store.sqlite_common import _chunks, _iso, _now


class DerivedRecords:
    """Mixin of :class:`~memstrata.store.sqlite.SQLiteStore`."""

    if TYPE_CHECKING:
        _conn: sqlite3.Connection
        _lock: threading.RLock

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...
        def _ns_id(self, namespace: str, create: bool = False) -> int | None: ...
        def _create_ns(self, namespace: str) -> int: ...
        @staticmethod
        def _mark_done(
            conn: sqlite3.Connection, ns_id: int, builder: str, keys: Sequence[int]
        ) -> None: ...

    def put_records(self, namespace: str, records: Sequence[Derived]) -> None:
        self.write_records(namespace, records)

    def write_records(
        self,
        namespace: str,
        put: Sequence[Derived],
        delete: Sequence[str] = (),
        built: tuple[str, Sequence[int]] | None = None,
    ) -> None:
        if not put and not delete and not built:
            return
        with self._write() as conn:
            conn.execute("PRAGMA defer_foreign_keys=ON")
            ns_id = self._create_ns(namespace)
            for chunk in _chunks(list(delete), 500):
                marks = ",".join("?" * len(chunk))
                conn.execute(
                    f"DELETE FROM records WHERE namespace_id=? AND id IN ({marks})",
                    (ns_id, *chunk),
                )
            if built:
                self._mark_done(conn, ns_id, *built)
            self._put_records(conn, namespace, put)

    def _put_records(
        self, conn: sqlite3.Connection, namespace: str, records: Sequence[Derived]
    ) -> None:
        if records:
            # Links may name records later in the same batch: checked once, at the end.
            ns_id = self._create_ns(namespace)
            now = _now()
            for rec in records:
                if rec.namespace != namespace:
                    raise StoreError(
                        f"record {rec.id} belongs to namespace {rec.namespace!r}, not {namespace!r}"
                    )
                data = rec.model_dump_json()
                created = _iso(rec.created_at) or now
                conn.execute(
                    "INSERT INTO records(id, namespace_id, kind, data, created_at, updated_at) "
                    "VALUES (?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET data=excluded.data, "
                    "updated_at=excluded.updated_at",
                    (rec.id, ns_id, rec.kind, data, created, now),
                )
                self._put_kind_columns(conn, rec)
                conn.execute("DELETE FROM provenance WHERE record_id=?", (rec.id,))
                for span in rec.sources:
                    row = conn.execute(
                        "SELECT id FROM episodes WHERE namespace_id=? AND external_id=?",
                        (ns_id, span.episode),
                    ).fetchone()
                    if row is None:
                        raise StoreError(
                            f"record {rec.id} cites episode {span.episode!r}, "
                            f"which is not in namespace {namespace!r}"
                        )
                    conn.execute(
                        "INSERT OR IGNORE INTO provenance VALUES (?,?,?,?)",
                        (rec.id, row[0], span.start, span.end),
                    )
            if conn.execute("PRAGMA foreign_key_check(category_links)").fetchone():
                missing = sorted(
                    r[0]
                    for r in conn.execute(
                        "SELECT DISTINCT child_id FROM category_links WHERE child_id NOT IN "
                        "(SELECT id FROM records) UNION SELECT DISTINCT parent_id FROM "
                        "category_links WHERE parent_id NOT IN (SELECT id FROM records)"
                    )
                )
                raise StoreError(
                    f"category links name records that do not exist: {missing[:5]}; write "
                    "children before or together with their categories"
                )

    def records_stamp(self, namespace: str) -> tuple[int, str]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return (0, "")
            row = self._conn.execute(
                "SELECT COUNT(*), COALESCE(MAX(updated_at), '') FROM records WHERE namespace_id=?",
                (ns_id,),
            ).fetchone()
            return (int(row[0]), str(row[1]))

    @staticmethod
    def _put_kind_columns(conn: sqlite3.Connection, rec: Derived) -> None:
        if isinstance(rec, Entity):
            conn.execute("INSERT OR REPLACE INTO entities VALUES (?,?)", (rec.id, rec.name))
        elif isinstance(rec, Fact):
            conn.execute(
                "INSERT OR REPLACE INTO facts VALUES (?,?,?,?,?)",
                (rec.id, rec.subject_id, rec.object_id, _iso(rec.valid_at), _iso(rec.invalid_at)),
            )
        elif isinstance(rec, Category):
            conn.execute("INSERT OR REPLACE INTO categories VALUES (?,?)", (rec.id, rec.layer))
            conn.execute("DELETE FROM category_links WHERE parent_id=?", (rec.id,))
            conn.executemany(
                "INSERT OR IGNORE INTO category_links VALUES (?,?)",
                [(rec.id, child) for child in rec.child_ids],
            )
        elif isinstance(rec, TreeNode):
            conn.execute(
                "INSERT OR REPLACE INTO tree_nodes VALUES (?,?,?)",
                (rec.id, rec.parent_id, rec.depth),
            )
        elif isinstance(rec, ConceptEdge):
            conn.execute(
                "INSERT OR REPLACE INTO concept_edges VALUES (?,?,?)",
                (rec.id, rec.source_id, rec.target_id),
            )

    def get_records(
        self, namespace: str, kind: str, ids: Sequence[str] | None = None
    ) -> list[Derived]:
        model = DERIVED_KINDS.get(kind)
        if model is None:
            raise StoreError(f"unknown record kind {kind!r}; known: {sorted(DERIVED_KINDS)}")
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            if ids is None:
                rows = self._conn.execute(
                    "SELECT data FROM records WHERE namespace_id=? AND kind=? ORDER BY rowid",
                    (ns_id, kind),
                ).fetchall()
            else:
                rows = []
                for chunk in _chunks(list(ids), 500):
                    marks = ",".join("?" * len(chunk))
                    rows.extend(
                        self._conn.execute(
                            f"SELECT data FROM records WHERE namespace_id=? AND kind=? "
                            f"AND id IN ({marks})",
                            (ns_id, kind, *chunk),
                        ).fetchall()
                    )
            return [model.model_validate_json(r[0]) for r in rows]

    def _follow_provenance(self, conn: sqlite3.Connection, affected: set[str]) -> None:
        """After episodes went: records whose every source is gone go with them; others
        just lose those spans."""
        gone: set[str] = set()
        for rec_id in affected:
            left = conn.execute(
                "SELECT 1 FROM provenance WHERE record_id=? LIMIT 1", (rec_id,)
            ).fetchone()
            if left is None:
                gone.add(rec_id)
            else:
                self._resync_sources(conn, rec_id)
        if gone:
            self._unlink(conn, gone)
            for chunk in _chunks(sorted(gone), 500):
                marks = ",".join("?" * len(chunk))
                conn.execute(f"DELETE FROM records WHERE id IN ({marks})", tuple(chunk))

    @staticmethod
    def _unlink(conn: sqlite3.Connection, gone: set[str]) -> None:
        """Categories linked to records about to go drop them from ``child_ids`` and
        ``parent_ids``, so the JSON stays in step with ``category_links`` (whose rows the
        deletion cascades) and no reader meets a dangling id."""
        linked: set[str] = set()
        for chunk in _chunks(sorted(gone), 500):
            marks = ",".join("?" * len(chunk))
            linked.update(
                r[0]
                for r in conn.execute(
                    f"SELECT parent_id FROM category_links WHERE child_id IN ({marks}) "
                    f"UNION SELECT child_id FROM category_links WHERE parent_id IN ({marks})",
                    (*chunk, *chunk),
                )
            )
        now = _now()
        for rec_id in sorted(linked - gone):
            row = conn.execute(
                "SELECT data FROM records WHERE id=? AND kind='category'", (rec_id,)
            ).fetchone()
            if row is None:
                continue
            data = json.loads(row[0])
            for key in ("child_ids", "parent_ids"):
                data[key] = [i for i in data.get(key, []) if i not in gone]
            conn.execute(
                "UPDATE records SET data=?, updated_at=? WHERE id=?",
                (json.dumps(data), now, rec_id),
            )

    def _resync_sources(self, conn: sqlite3.Connection, rec_id: str) -> None:
        row = conn.execute("SELECT data FROM records WHERE id=?", (rec_id,)).fetchone()
        spans = conn.execute(
            'SELECT e.external_id, p.start, p."end" FROM provenance p JOIN episodes e '
            "ON e.id=p.episode_id WHERE p.record_id=?",
            (rec_id,),
        ).fetchall()
        data = json.loads(row[0])
        data["sources"] = [{"episode": s[0], "start": s[1], "end": s[2]} for s in spans]
        conn.execute(
            "UPDATE records SET data=?, updated_at=? WHERE id=?", (json.dumps(data), _now(), rec_id)
        )
