"""The SQLite store's accounting of LLM calls (``llm_calls``): what each stage cost."""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from memstrata.llm.types import LLMCallRecord


class LLMAccounting:
    """Mixin of :class:`~memstrata.store.sqlite.SQLiteStore`."""

    if TYPE_CHECKING:
        _conn: sqlite3.Connection
        _lock: threading.RLock

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def record_llm_call(self, record: LLMCallRecord) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO llm_calls(namespace, stage, backend, model, prompt_tokens, "
                "completion_tokens, latency_ms, cached, ok, error, attempts, request_hash, "
                "created_at, outcome, truncated, rejected, dropped, reasoning_tokens) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    record.namespace,
                    record.stage,
                    record.backend,
                    record.model,
                    record.prompt_tokens,
                    record.completion_tokens,
                    record.latency_ms,
                    int(record.cached),
                    int(record.ok),
                    record.error,
                    record.attempts,
                    record.request_hash,
                    record.created_at.isoformat(),
                    record.outcome,
                    record.truncated,
                    record.rejected,
                    json.dumps(record.dropped, sort_keys=True) if record.dropped else None,
                    record.reasoning_tokens,
                ),
            )

    def llm_usage(self, namespace: str | None = None) -> dict[str, dict[str, Any]]:
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        with self._lock:
            rows = self._conn.execute(
                "SELECT stage, COUNT(*), SUM(1-ok), SUM(cached), SUM(prompt_tokens), "
                "SUM(completion_tokens), SUM(latency_ms), SUM(outcome='kept'), "
                "SUM(outcome='repaired'), SUM(truncated), SUM(rejected), "
                "SUM(COALESCE(json_extract(dropped, '$.cut_off'), 0)), SUM(reasoning_tokens) "
                f"FROM llm_calls {where} GROUP BY stage",
                args,
            ).fetchall()
        return {
            r[0]: {
                "calls": r[1],
                "failures": r[2],
                "cached": r[3],
                "prompt_tokens": r[4],
                "completion_tokens": r[5],
                "latency_ms": round(r[6], 1),
                "kept": r[7],
                "repaired": r[8],
                "truncated": r[9],
                "rejected": r[10],
                "cut_off": r[11],
                "reasoning_tokens": r[12],
            }
            for r in rows
        }
