"""The SQLite store's derived records: writes with provenance and links, reads, cascades.

Records keep their full JSON in ``records.data``; the per-kind tables only hold the few
columns queries filter on, and ``provenance`` ties each record to the episode spans it rests
on, so deleting episodes can take along the records left without any source.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from memstrata.errors import StoreError
from memstrata.models import Derived, load_kinds, record_kind
from memstrata.store.base import RemovedEpisode
from memstrata.store.links import children, without
from memstrata.store.sql.common import chunks as _chunks
from memstrata.store.sql.common import iso as _iso
from memstrata.store.sql.common import now as _now
from memstrata.store.sql.records import RecordRules, check_record
from memstrata.store.sqlite_base import SQLiteBase


class DerivedRecords(RecordRules, SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore` (with ``sql.records``)."""

    def _put_records(
        self,
        conn: sqlite3.Connection,
        ns_id: int,
        namespace: str,
        records: Sequence[Derived],
        owner: str,
    ) -> None:
        if records:
            # Links may name records later in the same batch: checked once, at the end.
            now = _now()
            for rec in records:
                check_record(rec, namespace, owner)
                rec.builder = owner
                data = rec.model_dump_json(exclude={"builder"})
                created = _iso(rec.created_at) or now
                conn.execute(
                    "INSERT INTO records(id, namespace_id, kind, data, created_at, updated_at, "
                    "builder) VALUES (?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
                    "data=excluded.data, updated_at=excluded.updated_at",
                    (rec.id, ns_id, rec.kind, data, created, now, owner),
                )
                self._put_links(conn, ns_id, rec)
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
            if conn.execute("PRAGMA foreign_key_check(record_links)").fetchone():
                missing = sorted(
                    r[0]
                    for r in conn.execute(
                        "SELECT DISTINCT child_id FROM record_links WHERE child_id NOT IN "
                        "(SELECT id FROM records) UNION SELECT DISTINCT parent_id FROM "
                        "record_links WHERE parent_id NOT IN (SELECT id FROM records)"
                    )
                )
                raise StoreError(
                    f"record links name records that do not exist: {missing[:5]}; write "
                    "children before or together with the records that link them"
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
    def _put_links(conn: sqlite3.Connection, ns_id: int, rec: Derived) -> None:
        """The record's links (a kind with ``link_fields``), replacing its earlier ones."""
        if type(rec).link_fields is None:
            return
        conn.execute("DELETE FROM record_links WHERE parent_id=?", (rec.id,))
        conn.executemany(
            "INSERT OR IGNORE INTO record_links VALUES (?,?,?)",
            [(ns_id, rec.id, child) for child in children(rec)],
        )

    def get_records(
        self,
        namespace: str,
        kind: str,
        ids: Sequence[str] | None = None,
        *,
        builder: str | None,
    ) -> list[Derived]:
        model = record_kind(kind)
        if model is None:
            raise StoreError(f"unknown record kind {kind!r}; known: {sorted(load_kinds())}")
        owned, args = ("", ()) if builder is None else (" AND builder=?", (builder,))
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            if ids is None:
                rows = self._conn.execute(
                    f"SELECT data, builder FROM records WHERE namespace_id=? AND kind=?{owned} "
                    "ORDER BY rowid",
                    (ns_id, kind, *args),
                ).fetchall()
            else:
                rows = []
                for chunk in _chunks(list(ids), 500):
                    marks = ",".join("?" * len(chunk))
                    rows.extend(
                        self._conn.execute(
                            f"SELECT data, builder FROM records WHERE namespace_id=? AND kind=?"
                            f"{owned} AND id IN ({marks})",
                            (ns_id, kind, *args, *chunk),
                        ).fetchall()
                    )
        out = []
        for data, owner in rows:
            rec = model.model_validate_json(data)
            rec.builder = owner
            out.append(rec)
        return out

    def _follow_provenance(
        self,
        conn: sqlite3.Connection,
        ns_id: int,
        affected: set[str],
        removed: Sequence[RemovedEpisode],
    ) -> None:
        """After episodes went (or lost their old text): records whose every source is
        gone go with them; others just lose those spans. What each builder lost goes
        into the repair log, in this transaction, for it to re-derive its aggregates."""
        gone: set[str] = set()
        changed: set[str] = set()
        for rec_id in affected:
            left = conn.execute(
                "SELECT 1 FROM provenance WHERE record_id=? LIMIT 1", (rec_id,)
            ).fetchone()
            if left is None:
                gone.add(rec_id)
            else:
                changed.add(rec_id)
                self._resync_sources(conn, rec_id)
        if gone:
            changed |= self._unlink(conn, gone)
        now = _now()
        log: list[tuple[int, str, str, str, str | None, str]] = []
        for chunk in _chunks(sorted(gone), 500):
            marks = ",".join("?" * len(chunk))
            for rec_id, builder, kind, data in conn.execute(
                f"SELECT id, builder, kind, data FROM records WHERE id IN ({marks})",
                tuple(chunk),
            ):
                tomb = json.dumps({"kind": kind, "record": json.loads(data)})
                log.append((ns_id, builder, "dropped", rec_id, tomb, now))
            conn.execute(f"DELETE FROM records WHERE id IN ({marks})", tuple(chunk))
        for chunk in _chunks(sorted(changed - gone), 500):
            marks = ",".join("?" * len(chunk))
            for rec_id, builder, kind in conn.execute(
                f"SELECT id, builder, kind FROM records WHERE id IN ({marks})", tuple(chunk)
            ):
                log.append((ns_id, builder, "changed", rec_id, kind, now))
        builders = {entry[1] for entry in log}
        builders.update(
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT builder FROM records WHERE namespace_id=?", (ns_id,)
            )
        )
        for builder in sorted(builders):
            for ep in removed:
                log.append((ns_id, builder, "episode", ep.id, ep.model_dump_json(), now))
        conn.executemany(
            "INSERT INTO repairs(namespace_id, builder, what, ref, data, created_at) "
            "VALUES (?,?,?,?,?,?)",
            log,
        )

    @staticmethod
    def _unlink(conn: sqlite3.Connection, gone: set[str]) -> set[str]:
        """Records linked to records about to go drop them from their link fields, so the
        JSON stays in step with ``record_links`` (whose rows the deletion cascades) and no
        reader meets a dangling id. Returns the ids changed."""
        linked: set[str] = set()
        for chunk in _chunks(sorted(gone), 500):
            marks = ",".join("?" * len(chunk))
            linked.update(
                r[0]
                for r in conn.execute(
                    f"SELECT parent_id FROM record_links WHERE child_id IN ({marks}) "
                    f"UNION SELECT child_id FROM record_links WHERE parent_id IN ({marks})",
                    (*chunk, *chunk),
                )
            )
        now = _now()
        changed: set[str] = set()
        for rec_id in sorted(linked - gone):
            row = conn.execute("SELECT kind, data FROM records WHERE id=?", (rec_id,)).fetchone()
            data = None if row is None else without(row[0], row[1], gone)
            if data is None:
                continue
            conn.execute("UPDATE records SET data=?, updated_at=? WHERE id=?", (data, now, rec_id))
            changed.add(rec_id)
        return changed

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
