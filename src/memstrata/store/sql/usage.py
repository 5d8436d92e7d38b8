"""The accounting of LLM calls (``llm_calls``): one row per call, summed per stage."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from memstrata.store.sql.host import SQLCore

if TYPE_CHECKING:
    from memstrata.llm.types import LLMCallRecord

#: a call's columns, in the order :meth:`LLMAccounting.record_llm_call` and copies write them
CALL_COLS = (
    "namespace, stage, backend, model, prompt_tokens, completion_tokens, latency_ms, cached, "
    "ok, error, attempts, request_hash, created_at, outcome, truncated, rejected, dropped, "
    "reasoning_tokens"
)
_COUNTS = ("failures", "cached", "prompt_tokens", "completion_tokens")
_OUTCOMES = ("kept", "repaired", "truncated", "rejected", "cut_off", "reasoning_tokens")


class LLMAccounting(SQLCore):
    """Part of a SQL store: what each stage's LLM calls cost."""

    def record_llm_call(self, record: LLMCallRecord) -> None:
        with self._write() as conn:
            conn.execute(
                self._sql(f"INSERT INTO llm_calls({CALL_COLS}) VALUES ({','.join('?' * 18)})"),
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
        d = self.dialect
        kept, repaired = d.flag_sum("outcome='kept'"), d.flag_sum("outcome='repaired'")
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        rows = self._rows(
            "SELECT stage, COUNT(*), SUM(1-ok), SUM(cached), SUM(prompt_tokens), "
            f"SUM(completion_tokens), SUM(latency_ms), {kept}, {repaired}, SUM(truncated), "
            "SUM(rejected), "
            f"SUM(COALESCE({d.json_int('dropped', 'cut_off')}, 0)), SUM(reasoning_tokens) "
            f"FROM llm_calls {where} GROUP BY stage",
            args,
        )
        out: dict[str, dict[str, Any]] = {}
        for r in rows:
            entry: dict[str, Any] = {"calls": int(r[1])}
            entry.update({k: int(v) for k, v in zip(_COUNTS, r[2:6], strict=True)})
            entry["latency_ms"] = round(float(r[6]), 1)
            entry.update({k: int(v) for k, v in zip(_OUTCOMES, r[7:], strict=True)})
            out[r[0]] = entry
        return out
