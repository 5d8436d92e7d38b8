"""On-disk response cache, so re-running an ingest or a benchmark costs no tokens.

SQLite in WAL mode with a busy timeout lets several processes (parallel CLI runs, eval
workers) share one file; writes are single-row upserts, so contention stays short.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    hash TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL
)
"""


class ResponseCache:
    """Maps a request hash to the validated response text."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # One connection shared across threads (the client calls us via to_thread).
        self._conn = sqlite3.connect(
            self.path, timeout=timeout, check_same_thread=False, isolation_level=None
        )
        self._lock = threading.Lock()
        with self._lock:
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._set_up(time.monotonic() + timeout)

    def _set_up(self, deadline: float) -> None:
        """WAL and the table, retried while another process sets up the same new file:
        switching the journal mode can fail as locked at once, without the busy handler
        being consulted. Every step is idempotent."""
        delay = 0.005
        while True:
            try:
                if self._conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = NORMAL")
                self._conn.execute(_SCHEMA)
                return
            except sqlite3.OperationalError as exc:
                text = str(exc)
                if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                    raise
                time.sleep(delay + random.random() * delay)
                delay = min(delay * 2, 0.2)

    def get(self, request_hash: str) -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT text FROM responses WHERE hash = ?", (request_hash,)
            ).fetchone()
        return None if row is None else str(row[0])

    def put(self, request_hash: str, text: str) -> None:
        now = datetime.now(UTC).isoformat()
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (hash, text, created_at) VALUES (?, ?, ?)",
                (request_hash, text, now),
            )

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(count)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
