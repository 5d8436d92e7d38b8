"""The PostgreSQL store's derived records: writes with provenance and links, reads,
cascades and the repair log (as ``sqlite_records`` does for SQLite).

Records keep their full JSON in ``records.data``; ``record_links`` holds the links a
record kind declares (``Derived.link_fields``), for the cascade that keeps their lists
free of dangling ids.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg

from memstrata.errors import StoreError
from memstrata.models import Derived, load_kinds, record_kind
from memstrata.store.base import RemovedEpisode
from memstrata.store.links import children, without
from memstrata.store.postgres.common import PostgresBase
from memstrata.store.sql.common import iso as _iso
from memstrata.store.sql.common import now as _now
from memstrata.store.sql.records import RecordRules, check_record


class DerivedRecords(RecordRules, PostgresBase):
    """Part of :class:`~memstrata.store.postgres.store.PostgresStore` (with
    ``sql.records``)."""

    def _put_records(
        self,
        conn: psycopg.Connection[Any],
        ns_id: int,
        namespace: str,
        records: Sequence[Derived],
        owner: str,
    ) -> None:
        if not records:
            return
        now = _now()
        for rec in records:
            check_record(rec, namespace, owner)
        cited = sorted({s.episode for rec in records for s in rec.sources})
        keys = dict(
            conn.execute(
                "SELECT external_id, id FROM episodes WHERE namespace_id=%s "
                "AND external_id = ANY(%s)",
                (ns_id, cited),
            ).fetchall()
        )
        for rec in records:
            for span in rec.sources:
                if span.episode not in keys:
                    raise StoreError(
                        f"record {rec.id} cites episode {span.episode!r}, "
                        f"which is not in namespace {namespace!r}"
                    )
        with conn.cursor() as cur:
            for rec in records:
                rec.builder = owner
                cur.execute(
                    "INSERT INTO records(namespace_id, id, kind, builder, data, created_at, "
                    "updated_at) VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (namespace_id, id) "
                    "DO UPDATE SET data=EXCLUDED.data, updated_at=EXCLUDED.updated_at",
                    (
                        ns_id,
                        rec.id,
                        rec.kind,
                        owner,
                        rec.model_dump_json(exclude={"builder"}),
                        _iso(rec.created_at) or now,
                        now,
                    ),
                )
            ids = [r.id for r in records]
            cur.execute(
                "DELETE FROM provenance WHERE namespace_id=%s AND record_id = ANY(%s)", (ns_id, ids)
            )
            spans = {
                (rec.id, keys[s.episode], s.start, s.end) for rec in records for s in rec.sources
            }
            cur.executemany(
                'INSERT INTO provenance(namespace_id, record_id, episode_id, start, "end") '
                "VALUES (%s,%s,%s,%s,%s)",
                [(ns_id, *span) for span in sorted(spans)],
            )
            linking = [r for r in records if type(r).link_fields is not None]
            if linking:
                cur.execute(
                    "DELETE FROM record_links WHERE namespace_id=%s AND parent_id = ANY(%s)",
                    (ns_id, [r.id for r in linking]),
                )
                links = {(r.id, child) for r in linking for child in children(r)}
                cur.executemany(
                    "INSERT INTO record_links VALUES (%s,%s,%s)",
                    [(ns_id, *link) for link in sorted(links)],
                )
                named = sorted({child for _, child in links})
                found = {
                    r[0]
                    for r in cur.execute(
                        "SELECT id FROM records WHERE namespace_id=%s AND id = ANY(%s)",
                        (ns_id, named),
                    ).fetchall()
                }
                missing = [c for c in named if c not in found]
                if missing:
                    raise StoreError(
                        f"record links name records that do not exist: {missing[:5]}; write "
                        "children before or together with the records that link them"
                    )

    def records_stamp(self, namespace: str) -> tuple[int, str]:
        row = self._one(
            "SELECT count(r.*), COALESCE(max(r.updated_at), '') FROM records r "
            "JOIN namespaces n ON n.id=r.namespace_id WHERE n.name=%s",
            (namespace,),
        )
        return (int(row[0]), str(row[1]))

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
        sql = (
            "SELECT r.data, r.builder FROM records r JOIN namespaces n ON n.id=r.namespace_id "
            "WHERE n.name=%s AND r.kind=%s"
        )
        args: list[Any] = [namespace, kind]
        if builder is not None:
            sql += " AND r.builder=%s"
            args.append(builder)
        if ids is not None:
            sql += " AND r.id = ANY(%s)"
            args.append(list(ids))
        rows = self._all(sql + " ORDER BY r.ord", args)
        out = []
        for data, owner in rows:
            rec = model.model_validate_json(data)
            rec.builder = owner
            out.append(rec)
        return out

    def _follow_provenance(
        self,
        conn: psycopg.Connection[Any],
        ns_id: int,
        affected: set[str],
        removed: Sequence[RemovedEpisode],
    ) -> None:
        """After episodes went (or lost their old text): records whose every source is
        gone go with them; others just lose those spans. What each builder lost goes into
        the repair log, in this transaction, for it to re-derive its aggregates."""
        ids = sorted(affected)
        left = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT record_id FROM provenance WHERE namespace_id=%s "
                "AND record_id = ANY(%s)",
                (ns_id, ids),
            ).fetchall()
        }
        gone = set(ids) - left
        changed = set(left)
        for rec_id in sorted(left):
            self._resync_sources(conn, ns_id, rec_id)
        if gone:
            changed |= self._unlink(conn, ns_id, gone)
        now = _now()
        log: list[tuple[int, str, str, str, str | None, str]] = []
        for rec_id, builder, kind, data in conn.execute(
            "SELECT id, builder, kind, data FROM records WHERE namespace_id=%s "
            "AND id = ANY(%s) ORDER BY id",
            (ns_id, sorted(gone)),
        ).fetchall():
            tomb = json.dumps({"kind": kind, "record": json.loads(data)})
            log.append((ns_id, builder, "dropped", rec_id, tomb, now))
        conn.execute(
            "DELETE FROM records WHERE namespace_id=%s AND id = ANY(%s)", (ns_id, sorted(gone))
        )
        for rec_id, builder, kind in conn.execute(
            "SELECT id, builder, kind FROM records WHERE namespace_id=%s AND id = ANY(%s) "
            "ORDER BY id",
            (ns_id, sorted(changed - gone)),
        ).fetchall():
            log.append((ns_id, builder, "changed", rec_id, kind, now))
        builders = {entry[1] for entry in log}
        builders.update(
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT builder FROM records WHERE namespace_id=%s", (ns_id,)
            ).fetchall()
        )
        for builder in sorted(builders):
            for ep in removed:
                log.append((ns_id, builder, "episode", ep.id, ep.model_dump_json(), now))
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO repairs(namespace_id, builder, what, ref, data, created_at) "
                "VALUES (%s,%s,%s,%s,%s,%s)",
                log,
            )

    @staticmethod
    def _unlink(conn: psycopg.Connection[Any], ns_id: int, gone: set[str]) -> set[str]:
        """Records linked to records about to go drop them from their link fields, so the
        JSON stays in step with ``record_links`` (whose rows the deletion cascades);
        returns the ids changed."""
        ids = sorted(gone)
        linked = {
            r[0]
            for r in conn.execute(
                "SELECT parent_id FROM record_links WHERE namespace_id=%s AND child_id = ANY(%s) "
                "UNION SELECT child_id FROM record_links WHERE namespace_id=%s "
                "AND parent_id = ANY(%s)",
                (ns_id, ids, ns_id, ids),
            ).fetchall()
        }
        now = _now()
        changed: set[str] = set()
        for rec_id in sorted(linked - gone):
            row = conn.execute(
                "SELECT kind, data FROM records WHERE namespace_id=%s AND id=%s", (ns_id, rec_id)
            ).fetchone()
            data = None if row is None else without(row[0], row[1], gone)
            if data is None:
                continue
            conn.execute(
                "UPDATE records SET data=%s, updated_at=%s WHERE namespace_id=%s AND id=%s",
                (data, now, ns_id, rec_id),
            )
            changed.add(rec_id)
        return changed

    @staticmethod
    def _resync_sources(conn: psycopg.Connection[Any], ns_id: int, rec_id: str) -> None:
        row = conn.execute(
            "SELECT data FROM records WHERE namespace_id=%s AND id=%s", (ns_id, rec_id)
        ).fetchone()
        spans = conn.execute(
            'SELECT e.external_id, p.start, p."end" FROM provenance p JOIN episodes e '
            "ON e.namespace_id=p.namespace_id AND e.id=p.episode_id "
            'WHERE p.namespace_id=%s AND p.record_id=%s ORDER BY p.episode_id, p.start, p."end"',
            (ns_id, rec_id),
        ).fetchall()
        assert row is not None
        data = json.loads(row[0])
        data["sources"] = [{"episode": s[0], "start": s[1], "end": s[2]} for s in spans]
        conn.execute(
            "UPDATE records SET data=%s, updated_at=%s WHERE namespace_id=%s AND id=%s",
            (json.dumps(data), _now(), ns_id, rec_id),
        )
