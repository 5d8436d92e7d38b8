"""One ``bench qa`` run: import, build, search, answer, score and judge, recipe by recipe.

Per sample (one namespace): the turns are imported once; then, for each recipe, its
builders run over the namespace, and for each question not already done (``--resume``)
or cached:

* one batched search with 50 hits per share of the recipe's kinds and no token budget
  gives the ranking for R@K/P@K and LongMemEval's figures;
* one search per question with 10 hits per share and no token budget gives the evidence
  set and the search latency. A search's ``k`` counts every hit, and the kinds of a
  recipe share it (``FusionSpec.total``): ``mnemis`` is asked for 50 hits to get 10
  episodes, 20 facts and 20 entities, so each kind keeps its depth;
* those hits fitted to the configured token budget (or the recipe answerer's own,
  ``AnswererSpec.context_tokens``) are what the recipe's answerer gets (as ``ask``
  fits them); the fitted context's tokens are the answer-stage context tokens;
* the answer is scored (:mod:`.metrics_answer`) and judged (:mod:`.judge`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memstrata.engine.contracts import QuestionInfo
from memstrata.eval.qa import cost, metrics_answer, metrics_retrieval
from memstrata.eval.qa.formats import QA, Sample
from memstrata.eval.qa.judge import judge
from memstrata.eval.qa.rundir import COSTS, ROWS, ResultCache, RunDir, code_version, digest
from memstrata.llm.base import LLMClient
from memstrata.llm.types import LLMError, MemoryUsageSink
from memstrata.memory import AsyncMemory
from memstrata.retrieval.context import count_tokens, fit_to_budget
from memstrata.store import is_postgres

HARNESS_VERSION = 3  # part of every result-cache key: bump when a row's content changes
EVIDENCE_K = 10
RANK_DEPTH = 50
Progress = Callable[[int], None]


@dataclass
class Options:
    recipes: list[str]
    judges: list[str] = field(default_factory=list)
    limit: int | None = None
    sample: int | None = None
    seed: int = 0
    answers: bool = True
    build_tier: str | None = None


def select(samples: list[Sample], limit: int | None, sample: int | None, seed: int) -> list[Sample]:
    """``limit``: the first N questions in file order; ``sample``: N drawn at random
    (``seed``), kept in file order. Samples left without questions are dropped."""
    pairs = [(i, j) for i, s in enumerate(samples) for j in range(len(s.qa))]
    if sample is not None and sample < len(pairs):
        pairs = sorted(random.Random(seed).sample(pairs, sample))
    if limit is not None:
        pairs = pairs[:limit]
    keep: dict[int, list[int]] = {}
    for i, j in pairs:
        keep.setdefault(i, []).append(j)
    return [
        Sample(id=samples[i].id, turns=samples[i].turns, qa=[samples[i].qa[j] for j in js])
        for i, js in keep.items()
    ]


class Runner:
    def __init__(
        self,
        memory: AsyncMemory,
        options: Options,
        run_dir: RunDir,
        *,
        cache: ResultCache | None = None,
        judge_llm: LLMClient | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.memory = memory
        self.options = options
        self.dir = run_dir
        self.cache = cache
        self.judge_llm = judge_llm
        self.judge_usage = MemoryUsageSink()
        if judge_llm is not None:
            self.judge_llm = judge_llm.scoped(usage=self.judge_usage)
        self.progress = progress or (lambda n: None)
        cfg = memory.config
        self.prices = cfg.eval.prices
        llm = memory.llm
        self.model = llm.backend.model if llm is not None else None
        self.judge_model = judge_llm.backend.model if judge_llm is not None else None
        # Rows made on PostgreSQL are kept apart from SQLite ones (a parity run compares
        # them); SQLite rows keep the key they had before the key named the backend.
        backend = {"store": "postgresql"} if is_postgres(memory.store.url) else {}
        self.config_key = digest(
            {
                **backend,
                "embedder": memory.embedder.model_id,
                "llm": cfg.llm.model_dump(mode="json", exclude={"api_key", "cache_dir"}),
                "budgets": cfg.budgets.model_dump(),
                # an unset tier is the behaviour rows had before the key existed
                "retrieval": cfg.retrieval.model_dump(
                    exclude={"tier"} if cfg.retrieval.tier is None else None
                ),
                "judge_model": self.judge_model,
                "judges": options.judges,
                "answers": options.answers,
                "v": HARNESS_VERSION,
                "memstrata": code_version(),  # a design's code decides its rows too
            }
        )

    # --------------------------------------------------------------------------------
    async def run(self, samples: list[Sample], done: list[dict[str, Any]]) -> None:
        # a question id is unique within its sample only (a QA set's "q1" in each)
        finished = {(r["recipe"], r["sample"], r["qid"]) for r in done}
        self.progress(len(finished))
        for sample in samples:
            await self._sample(sample, finished)

    def _key(self, sample_key: str, recipe_key: str, q: QA) -> str:
        return digest(
            [self.config_key, sample_key, recipe_key, q.id, q.question, q.answer]
            + ([q.stale, q.stale_answer] if q.stale or q.stale_answer else [])
        )

    async def _sample(self, sample: Sample, finished: set[tuple[str, str, str]]) -> None:
        sample_key = digest(
            [[t.id, t.text, t.speaker, str(t.at), t.session, t.metadata] for t in sample.turns]
        )
        todo: dict[str, list[tuple[QA, str]]] = {}
        for name in self.options.recipes:
            recipe_key = digest(self.memory.engine.recipe(name).model_dump(mode="json"))
            for q in sample.qa:
                if (name, sample.id, q.id) in finished:
                    continue
                key = self._key(sample_key, recipe_key, q)
                row = self.cache.get(key) if self.cache is not None else None
                if row is not None:
                    row["cached"] = True
                    for entry in row.get("cost", []):  # what the row cost when it was made
                        self.dir.append(COSTS, {**entry, "replayed": True})
                    self.dir.append(ROWS, row)
                    finished.add((name, sample.id, q.id))
                    self.progress(1)
                else:
                    todo.setdefault(name, []).append((q, key))
        if not todo:
            return
        ns = sample.id
        before, t0 = self._usage(ns), time.perf_counter()
        await self.memory.add_many([t.episode() for t in sample.turns], namespace=ns)
        imported = self._cost("*", ns, "ingestion", before, t0, {"turns": len(sample.turns)})
        shared = cost.share(imported, sum(len(items) for items in todo.values()))
        total_tokens = sum(count_tokens(t.text) for t in sample.turns)
        for name, items in todo.items():
            before, t0 = self._usage(ns), time.perf_counter()
            await self.memory.build(ns, recipe=name, tier=self.options.build_tier)
            built = self._cost(name, ns, "ingestion", before, t0)
            shares = [shared, cost.share(built, len(items))]
            await self._questions(name, sample, items, total_tokens, shares)

    async def _questions(
        self,
        recipe: str,
        sample: Sample,
        items: list[tuple[QA, str]],
        sample_tokens: int,
        shares: list[dict[str, Any]],
    ) -> None:
        """Search, answer and judge each question. A row keeps its own cost (its searches,
        answer and judge, and an even share of the import, build and batch search it
        rests on), so a rerun that serves it from the cache reports what it cost."""
        ns = sample.id
        session_of = sample.session_of()
        before, t0 = self._usage(ns), time.perf_counter()
        fusion = self.memory.engine.recipe(recipe).fusion
        deep = await self.memory.search_many(
            [q.question for q, _ in items],
            namespace=ns,
            k=fusion.total(RANK_DEPTH),
            recipe=recipe,
            max_tokens=None,
        )
        searched = self._cost(recipe, ns, "retrieval", before, t0)
        shares = [*shares, cost.share(searched, len(items))]
        # the recipe's answerer may set its own context budget (a paper's context length)
        answer_context = self.memory.engine.recipe(recipe).answerer.context_tokens
        budget = self.memory.config.budgets.max_tokens if answer_context is None else answer_context
        for (q, key), ranked_result in zip(items, deep, strict=True):
            before, t0 = self._usage(ns), time.perf_counter()
            start = time.perf_counter()
            (top,) = await self.memory.search_many(
                [q.question],
                namespace=ns,
                k=fusion.total(EVIDENCE_K),
                recipe=recipe,
                max_tokens=None,
            )
            latency_ms = (time.perf_counter() - start) * 1000
            own = [self._cost(recipe, ns, "retrieval", before, t0)]
            # the adaptive set is the same search's hits, cut (what search(adaptive=True) does)
            keep = self.memory.config.budgets.evidence_keep
            (cut,) = await asyncio.to_thread(
                self.memory.engine.evidence_sets, ns, [q.question], [top.hits], keep, EVIDENCE_K
            )
            ranked = _sources(ranked_result.hits)
            evset = _sources(top.hits)
            adaptive = _sources(cut)
            row: dict[str, Any] = {
                "recipe": recipe,
                "sample": ns,
                "qid": q.id,
                "question": q.question,
                "category": q.category,
                "gold": q.answer,
                "abstain": q.abstain,
                "evidence": q.evidence,
                "evidence_sessions": q.evidence_sessions,
                **({"stale": q.stale} if q.stale else {}),
                "ranked": ranked,
                "evidence_set": evset,
                "adaptive_set": adaptive,
                "latency_ms": round(latency_ms, 2),
                "retrieval": metrics_retrieval.question_metrics(
                    ranked,
                    evset,
                    q.evidence,
                    q.evidence_sessions,
                    session_of,
                    adaptive=adaptive,
                    stale=q.stale,
                ),
                "cached": False,
            }
            if self.options.answers:
                hits, _, tokens = await asyncio.to_thread(fit_to_budget, top.hits, budget)
                own += await self._answer(row, recipe, ns, q, hits, tokens, sample_tokens)
            row["cost"] = [*shares, *own]
            if self.cache is not None:
                self.cache.put(key, row)
            self.dir.append(ROWS, row)
            self.progress(1)

    async def _answer(
        self,
        row: dict[str, Any],
        recipe: str,
        ns: str,
        q: QA,
        hits: list[Any],
        context_tokens: int,
        sample_tokens: int,
    ) -> list[dict[str, Any]]:
        """Answer and judge one question into ``row``; returns the cost rows it made."""
        before, t0 = self._usage(ns), time.perf_counter()
        try:
            about = QuestionInfo(category=q.category, candidate=q.candidate)
            answer = await self.memory.engine.answer(ns, q.question, hits, recipe, about)
        except LLMError as exc:
            row["answer_error"] = f"{type(exc).__name__}: {exc}"[:300]
            return [self._cost(recipe, ns, "answer", before, t0)]
        spent = [self._cost(recipe, ns, "answer", before, t0)]
        prompt_tokens = answer.usage.get("prompt_tokens", 0)
        shown = prompt_tokens if answer.usage.get("calls") else context_tokens
        if answer.fallback is not None:
            row["answer_fallback"] = answer.fallback
        row.update(
            answer=answer.text,
            abstained=answer.abstained,
            extractive=answer.extractive,
            cited=answer.sources,
            context_tokens=context_tokens,
            answer_prompt_tokens=prompt_tokens,
            compaction_ratio=round(shown / sample_tokens, 5) if sample_tokens else None,
            scores=metrics_answer.scores(
                answer.text, answer.abstained, q.answer, q.category, q.abstain, q.stale_answer
            ),
        )
        if self.judge_llm is None or q.abstain or q.answer is None:
            return spent
        verdicts, errors = {}, {}
        predicted = "Not mentioned in the conversation." if answer.abstained else answer.text
        t1 = time.perf_counter()
        calls_before = len(self.judge_usage.records)
        for name in self.options.judges:
            score, error = await judge(self.judge_llm, name, q.question, q.answer, predicted)
            if score is not None:
                verdicts[name] = score
            if error is not None:
                errors[name] = error
        records = self.judge_usage.records[calls_before:]
        entry = {
            "calls": len(records),
            "cached": sum(r.cached for r in records),
            "failures": sum(not r.ok for r in records),
            "prompt_tokens": sum(r.prompt_tokens for r in records),
            "completion_tokens": sum(r.completion_tokens for r in records),
            "latency_ms": sum(r.latency_ms for r in records),
        }
        spent.append(self._cost_row(recipe, ns, "judge", entry, t1, self.judge_model))
        row["judge"] = verdicts
        if errors:
            row["judge_errors"] = errors
        return spent

    # accounting ----------------------------------------------------------------------
    def _usage(self, ns: str) -> dict[str, float]:
        if self.memory.config.llm.kind == "none":
            return {}
        return cost.totals(self.memory.store.llm_usage(ns))

    def _cost(
        self,
        recipe: str,
        ns: str,
        stage: str,
        before: dict[str, float],
        t0: float,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        entry = cost.delta(before, self._usage(ns))
        return self._cost_row(recipe, ns, stage, entry, t0, self.model, extra)

    def _cost_row(
        self,
        recipe: str,
        ns: str,
        stage: str,
        entry: dict[str, float],
        t0: float,
        model: str | None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        row = {
            "recipe": recipe,
            "sample": ns,
            "stage": stage,
            **entry,
            "seconds": round(time.perf_counter() - t0, 4),
            "money": cost.money(entry, model, self.prices),
            **(extra or {}),
        }
        self.dir.append(COSTS, row)
        return row


def _sources(hits: list[Any]) -> list[str]:
    return list(dict.fromkeys(s for h in hits for s in h.sources))


def total_questions(samples: list[Sample], recipes: list[str]) -> int:
    return len(recipes) * sum(len(s.qa) for s in samples)


__all__ = ["Options", "Runner", "select", "total_questions"]
