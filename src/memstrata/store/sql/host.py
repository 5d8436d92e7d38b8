"""The base class every part of a SQL store derives from, on both backends.

A store is one class made of parts (records, builds, jobs, ...), each a class of its
own module so that modules stay small. Each part derives from the backend's host class
(``SQLiteBase``, ``PostgresBase``), which derives from :class:`SQLCore`: the attributes and
the cross-part methods are declared here once, for real, so a part names what it uses
without redeclaring its host, and the shared rules run on either backend.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from memstrata.errors import StoreError
from memstrata.models import Episode
from memstrata.redact import redact
from memstrata.store.base import RemovedEpisode, SearchFilters, Store
from memstrata.store.sql.common import speaker_deltas, ts
from memstrata.store.sql.dialect import Dialect


class SQLCore:
    """Connection, lock and dialect of a SQL store, and what its parts call on each other.

    One connection guarded by a lock: the engine calls the store from worker threads, and
    a write's statements must go through one transaction."""

    dialect: ClassVar[Dialect]
    url: str
    _conn: Any
    _lock: threading.RLock

    @property
    def _where(self) -> str:
        """The store as its error messages name it."""
        return self.url

    @property
    def _shown(self) -> str:
        """The store as messages show it (no password)."""
        return redact(self.url)

    # what each backend provides ---------------------------------------------------------
    def _write(self) -> AbstractContextManager[Any]:
        """One write transaction on the connection: all or nothing."""
        raise NotImplementedError

    def _snapshot(self) -> AbstractContextManager[Any]:
        """One read transaction: a writer meanwhile is not half seen."""
        raise NotImplementedError

    def _ns_id(self, namespace: str) -> int | None:
        raise NotImplementedError

    def _create_ns(self, conn: Any, namespace: str) -> int:
        """The namespace's id, made if missing, inside the caller's write transaction."""
        raise NotImplementedError

    def _lock_ns(self, conn: Any, namespace: str) -> int | None:
        """The namespace's id, its row held until the write ends (where rows are locked
        one by one; SQLite's write already holds the whole database)."""
        row = conn.execute(
            self._sql(f"SELECT id FROM namespaces WHERE name=?{self.dialect.for_update}"),
            (namespace,),
        ).fetchone()
        return None if row is None else int(row[0])

    # what parts call on each other ------------------------------------------------------
    def _mark_done(self, conn: Any, ns_id: int, builder: str, keys: Sequence[int]) -> None:
        raise NotImplementedError

    def _follow_provenance(
        self, conn: Any, ns_id: int, affected: set[str], removed: Sequence[RemovedEpisode]
    ) -> None:
        raise NotImplementedError

    def _build_counts(self, ns_id: int) -> dict[str, dict[str, int]]:
        raise NotImplementedError

    def _stored_episode(self, ns_id: int, external_id: str) -> Episode | None:
        raise NotImplementedError

    def repair_backlog(self, namespace: str) -> dict[str, int]:
        raise NotImplementedError

    def _count_speakers(
        self,
        conn: Any,
        ns_id: int,
        added: Iterable[str | None] = (),
        removed: Iterable[str | None] = (),
    ) -> None:
        """Keep ``speaker_counts`` in step with episodes written in the caller's
        transaction: one upsert per speaker of the batch, in name order (two writers take
        the rows in the same order), and a speaker with no episode left is dropped."""
        for speaker, n in speaker_deltas(added, removed):
            conn.execute(
                self._sql(
                    "INSERT INTO speaker_counts(namespace_id, speaker, n) VALUES (?,?,?) "
                    "ON CONFLICT (namespace_id, speaker) DO UPDATE "
                    "SET n = speaker_counts.n + EXCLUDED.n"
                ),
                (ns_id, speaker, n),
            )
            if n < 0:
                conn.execute(
                    self._sql(
                        "DELETE FROM speaker_counts WHERE namespace_id=? AND speaker=? AND n <= 0"
                    ),
                    (ns_id, speaker),
                )

    def _filter_sql(self, filters: SearchFilters | None) -> tuple[str, list[Any]]:
        """`` AND ...`` over episodes ``e`` for a search's filters, in the driver's SQL."""
        if filters is None or filters.is_empty():
            return "", []
        clauses: list[str] = []
        args: list[Any] = []
        for column, wanted in (("speaker", filters.speakers), ("session", filters.sessions)):
            if wanted:
                fragment, bound = self.dialect.in_all(list(wanted))
                clauses.append(f"e.{column} {fragment}")
                args.extend(bound)
        if filters.since:
            clauses.append("e.occurred_ts >= ?")
            args.append(ts(filters.since))
        if filters.until:
            clauses.append("e.occurred_ts <= ?")
            args.append(ts(filters.until))
        return self._sql(" AND " + " AND ".join(clauses)), args

    # running the rules' SQL -------------------------------------------------------------
    def _sql(self, text: str) -> str:
        return self.dialect.sql(text)

    def _all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """Rows of ``sql`` written for the driver (see :meth:`_rows` for the rules' SQL)."""
        with self._lock:
            return list(self._conn.execute(sql, args).fetchall())

    def _one(self, sql: str, args: Sequence[Any] = ()) -> Any:
        with self._lock:
            return self._conn.execute(sql, args).fetchone()

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return self._all(self._sql(sql), args)

    def _row(self, sql: str, args: Sequence[Any] = ()) -> Any:
        return self._one(self._sql(sql), args)

    def _in(
        self,
        conn: Any,
        sql: str,
        values: Sequence[Any],
        lead: Sequence[Any] = (),
        tail: Sequence[Any] = (),
    ) -> list[Any]:
        """Rows of ``sql`` whose ``{in}`` slot tests a column against ``values``, bound as
        the dialect binds a list (see :meth:`Dialect.in_list`)."""
        rows: list[Any] = []
        for fragment, bound in self.dialect.in_list(values):
            cur = conn.execute(self._sql(sql.format(in_=fragment)), (*lead, *bound, *tail))
            if cur.description is not None:
                rows.extend(cur.fetchall())
        return rows

    def _in_changed(
        self, conn: Any, sql: str, values: Sequence[Any], lead: Sequence[Any] = ()
    ) -> int:
        """How many rows the write ``sql`` (with an ``{in_}`` slot, as :meth:`_in`) changed."""
        changed = 0
        for fragment, bound in self.dialect.in_list(values):
            changed += conn.execute(self._sql(sql.format(in_=fragment)), (*lead, *bound)).rowcount
        return changed


def speak_store_errors(
    cls: type[SQLCore], driver_error: type[Exception], translate: Callable[[Any, str], StoreError]
) -> None:
    """Every public method of the store contract raises :class:`StoreError`, never the
    driver's exception: wrapped here once for every backend."""
    for name in [n for n in vars(Store) if not n.startswith("_")] + ["schema_version"]:
        setattr(cls, name, _guard(getattr(cls, name), driver_error, translate))


def _guard(
    method: Callable[..., Any],
    driver_error: type[Exception],
    translate: Callable[[Any, str], StoreError],
) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(self: SQLCore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except driver_error as exc:
            raise translate(exc, self._where) from exc

    return wrapper
