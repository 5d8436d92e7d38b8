"""On-disk response cache, so re-running an ingest or a benchmark costs no tokens.

SQLite in WAL mode with a busy timeout lets several processes (parallel CLI runs, eval
workers) share one file; writes are single-row upserts, so contention stays short.

A reply is derived from its prompt, so a reply made from a text that is later deleted
must go with it (docs/engine.md, "Deleted means gone"). Each entry is filed under short
hashes of its prompt's content words (:func:`prompt_terms`); :meth:`ResponseCache.purge`
drops every entry whose prompt had any word of the removed texts. A prompt that quoted a
removed text, or a record derived from it, holds its words, so nothing made from it
stays; an entry that merely shares a word goes too, which costs a call, never a leak.
Entries written before terms were kept cannot be told apart and go on the first purge.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from memstrata.retrieval.text import content_terms, word_key

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS responses (
    hash TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL
)
""",
    # the words an entry's prompt held, as 32-bit hashes: a collision only purges more
    """
CREATE TABLE IF NOT EXISTS response_terms (
    term INTEGER NOT NULL,
    response INTEGER NOT NULL,
    PRIMARY KEY (term, response)
) WITHOUT ROWID
""",
    "CREATE INDEX IF NOT EXISTS response_terms_response ON response_terms(response)",
)


def prompt_terms(texts: Iterable[str]) -> set[str]:
    """The content words (lower case, stopwords left out) an entry is filed under."""
    return {t for text in texts for t in content_terms(text.lower())}


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
            # a purged reply's bytes are overwritten, not left on a free page
            self._conn.execute("PRAGMA secure_delete = ON")
            self._set_up(time.monotonic() + timeout)

    def _set_up(self, deadline: float) -> None:
        """WAL and the tables, retried while another process sets up the same new file:
        switching the journal mode can fail as locked at once, without the busy handler
        being consulted. Every step is idempotent."""
        delay = 0.005
        while True:
            try:
                if self._conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = NORMAL")
                for statement in _SCHEMA:
                    self._conn.execute(statement)
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

    def put(self, request_hash: str, text: str, terms: Iterable[str] = ()) -> None:
        """Keep ``text`` as the reply to ``request_hash``, filed under ``terms`` (the
        prompt's content words, :func:`prompt_terms`)."""
        now = datetime.now(UTC).isoformat()
        keys = sorted({word_key(t) for t in terms})
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                old = self._conn.execute(
                    "SELECT rowid FROM responses WHERE hash = ?", (request_hash,)
                ).fetchone()
                if old is not None:
                    self._conn.execute("DELETE FROM response_terms WHERE response = ?", old)
                    self._conn.execute("DELETE FROM responses WHERE rowid = ?", old)
                row = self._conn.execute(
                    "INSERT INTO responses (hash, text, created_at) VALUES (?, ?, ?)",
                    (request_hash, text, now),
                ).lastrowid
                self._conn.executemany(
                    "INSERT OR IGNORE INTO response_terms (term, response) VALUES (?, ?)",
                    [(k, row) for k in keys],
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def purge(self, texts: Iterable[str]) -> int:
        """Drop every reply whose prompt held a content word of ``texts`` (and any kept
        without terms; all of them when a text has no content word), then empty the WAL
        so no copy is left in the files. Returns how many replies went."""
        words = [prompt_terms([t]) for t in texts]
        everything = any(not w for w in words)
        keys = sorted({word_key(t) for w in words for t in w})
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                gone: set[int] = set()
                for start in range(0, len(keys), 500):
                    chunk = keys[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    gone.update(
                        r[0]
                        for r in self._conn.execute(
                            f"SELECT response FROM response_terms WHERE term IN ({marks})", chunk
                        )
                    )
                untracked = (
                    ""
                    if everything
                    else (" WHERE rowid NOT IN (SELECT response FROM response_terms)")
                )
                gone.update(
                    r[0] for r in self._conn.execute(f"SELECT rowid FROM responses{untracked}")
                )
                rows = sorted(gone)
                for start in range(0, len(rows), 500):
                    chunk = rows[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    self._conn.execute(
                        f"DELETE FROM response_terms WHERE response IN ({marks})", chunk
                    )
                    self._conn.execute(f"DELETE FROM responses WHERE rowid IN ({marks})", chunk)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return len(rows)

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
