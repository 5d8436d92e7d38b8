"""Who may write a derived record, and the repair log: rules both SQL stores share.

A record belongs to the builder that wrote it, in its namespace: a builder writes and
deletes only its own (``write_records`` refuses any other before changing anything), and
records from before owners were kept are adopted or dropped by name. How records, their
provenance and their links are stored is each backend's (``sqlite_records``,
``postgres/records``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memstrata.errors import StoreError
from memstrata.models import Derived, record_kind
from memstrata.store.base import RemovedEpisode, Repairs
from memstrata.store.sql.host import SQLCore


def check_record(rec: Derived, namespace: str, owner: str) -> None:
    """Refuse a record written into another namespace or naming another builder."""
    if rec.namespace != namespace:
        raise StoreError(
            f"record {rec.id} belongs to namespace {rec.namespace!r}, not {namespace!r}"
        )
    if rec.builder and rec.builder != owner:
        raise StoreError(f"record {rec.id} names builder {rec.builder!r}, not {owner!r}")


class RecordRules(SQLCore):
    """Part of a SQL store: record ownership and the repair log."""

    def _put_records(
        self, conn: Any, ns_id: int, namespace: str, records: Sequence[Derived], owner: str
    ) -> None:
        raise NotImplementedError

    def put_records(self, namespace: str, records: Sequence[Derived], *, owner: str) -> None:
        self.write_records(namespace, records, owner=owner)

    def write_records(
        self,
        namespace: str,
        put: Sequence[Derived],
        delete: Sequence[str] = (),
        built: tuple[str, Sequence[int]] | None = None,
        *,
        owner: str | None = None,
    ) -> None:
        if not put and not delete and not built:
            return
        owner = owner or (built[0] if built else None)
        if not owner:
            raise StoreError("derived records need an owner: the builder that writes them")
        with self._write() as conn:
            if self.dialect.defer_links:
                conn.execute(self.dialect.defer_links)
            ns_id = self._create_ns(conn, namespace)
            ids = list(dict.fromkeys([*delete, *(r.id for r in put)]))
            self._check_owner(conn, ns_id, owner, ids)
            self._in(
                conn,
                "DELETE FROM records WHERE namespace_id=? AND builder=? AND id {in_}",
                list(delete),
                lead=(ns_id, owner),
            )
            if built:
                self._mark_done(conn, ns_id, *built)
            self._put_records(conn, ns_id, namespace, put, owner)

    def _check_owner(self, conn: Any, ns_id: int, owner: str, ids: list[str]) -> None:
        """Refuse to touch a record another builder (or namespace) owns."""
        for row in self._in(
            conn,
            "SELECT id, builder, namespace_id FROM records WHERE id {in_} "
            "AND (builder<>? OR namespace_id<>?) LIMIT 1",
            ids,
            tail=(owner, ns_id),
        )[:1]:
            whose = "another namespace" if row[2] != ns_id else f"builder {row[1]!r}"
            raise StoreError(
                f"record {row[0]} belongs to {whose}; builder {owner!r} may only write "
                "and delete its own records"
            )

    def unowned_records(self) -> dict[str, dict[str, int]]:
        rows = self._rows(
            "SELECT n.name, r.kind, COUNT(*) FROM records r JOIN namespaces n "
            "ON n.id=r.namespace_id WHERE r.builder='' GROUP BY n.name, r.kind"
        )
        out: dict[str, dict[str, int]] = {}
        for name, kind, n in rows:
            out.setdefault(name, {})[kind] = int(n)
        return out

    def adopt_records(self, namespace: str, kind: str, builder: str | None) -> int:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return 0
            args: tuple[object, ...]
            if builder is None:
                sql, args = "DELETE FROM records WHERE", (ns_id, kind)
            else:
                sql, args = "UPDATE records SET builder=? WHERE", (builder, ns_id, kind)
            cur = conn.execute(self._sql(f"{sql} namespace_id=? AND kind=? AND builder=''"), args)
            return int(cur.rowcount)

    # the repair log ---------------------------------------------------------------------
    def pending_repairs(self, namespace: str, builder: str, limit: int = 10_000) -> Repairs:
        rows = self._rows(
            "SELECT r.id, r.what, r.ref, r.data FROM repairs r JOIN namespaces n "
            "ON n.id=r.namespace_id WHERE n.name=? AND r.builder=? ORDER BY r.id LIMIT ?",
            (namespace, builder, limit),
        )
        out = Repairs()
        for entry, what, ref, data in rows:
            out.ids.append(int(entry))
            if what == "episode":
                out.episodes.append(RemovedEpisode.model_validate_json(data))
            elif what == "changed":
                out.changed[ref] = data
            else:
                tomb = json.loads(data)
                model = record_kind(tomb["kind"])
                if model is not None:
                    rec = model.model_validate(tomb["record"])
                    rec.builder = builder
                    out.dropped.append(rec)
        return out

    def repair_backlog(self, namespace: str) -> dict[str, int]:
        rows = self._rows(
            "SELECT r.builder, COUNT(*) FROM repairs r JOIN namespaces n ON n.id=r.namespace_id "
            "WHERE n.name=? GROUP BY r.builder",
            (namespace,),
        )
        return {b: int(n) for b, n in rows}

    def clear_repairs(self, namespace: str, ids: Sequence[int]) -> None:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is not None:
                self._in(
                    conn,
                    "DELETE FROM repairs WHERE namespace_id=? AND id {in_}",
                    [int(i) for i in ids],
                    lead=(ns_id,),
                )
