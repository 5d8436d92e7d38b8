"""``bench qa`` end to end through the API: a LongMemEval-format fixture on every
registered recipe, the result cache, ``--resume``, and answers and judges from a scripted
LLM (costs, money, a judge reply that never validates)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Config
from memstrata.embed import MiniLMEmbedder
from memstrata.errors import InvalidInputError
from memstrata.eval.qa import bench as qb
from memstrata.eval.qa.run import Options
from memstrata.eval.qa.rundir import ResultCache
from memstrata.llm import LLMClient, ScriptedBackend
from memstrata.llm.fence import unfence
from memstrata.llm.types import Message
from memstrata.memory import AsyncMemory
from memstrata.store import Store


async def _bench(
    db: Path,
    data: Path,
    out: Path,
    embedder: MiniLMEmbedder,
    *,
    recipes: str = "all",
    config: Config | None = None,
    cache: ResultCache | None = None,
    **kw: Any,
) -> dict[str, Any]:
    memory = await AsyncMemory.open(db, config=config, embedder=embedder)
    try:
        names = qb.resolve_recipes(memory, recipes)
        options = kw.pop("options", None) or Options(names, ["locomo"])
        return await qb.bench(memory, data, "longmemeval", options, out, cache=cache, **kw)
    finally:
        await memory.close()


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]


def test_longmemeval_fixture_end_to_end_on_every_recipe(
    tmp_path: Path, lme_file: Path, embedder: MiniLMEmbedder
) -> None:
    out = tmp_path / "run"
    cache = ResultCache(tmp_path / "results.sqlite")
    report = asyncio.run(_bench(tmp_path / "m.db", lme_file, out, embedder, cache=cache))
    registered = Config().recipes  # configured ones: none here
    assert not registered
    recipes = report["recipes"]
    assert {"rag", "default"} <= set(recipes) and len(recipes) >= 3  # the whole registry
    assert report["samples"] == 3 and report["questions"] == 3
    for name, e in recipes.items():
        # overall leaves out the abstention question: two questions with evidence
        assert e["with_evidence"] == 2, name
        assert e["abstention.n"] == 1
        assert 0.0 <= e["session_recall_all@5"] <= e["session_recall_any@5"] <= 1.0
        assert e["latency_ms"]["p95"] >= e["latency_ms"]["p50"]
        assert set(e["cost"]) == {"ingestion", "retrieval", "answer", "judge"}
        assert e["answers"]["extractive"] == 3 and e["answers"]["generated"] == 0
        assert set(e["by_category"]) == {"single-session-user", "multi-session"}
    # the flat baseline finds the lexically obvious answer turns
    rag = {r["qid"]: r for r in rows(out) if r["recipe"] == "rag"}
    assert rag["dog"]["ranked"][0] == "a1:0"
    assert rag["dog"]["retrieval"]["turn_recall_any@5"] == 1.0
    assert rag["dog"]["retrieval"]["session_ndcg@5"] == 1.0
    trips = rag["trips"]["retrieval"]
    assert trips["session_recall_all@5"] == 1.0 and trips["turn_recall_all@5"] == 1.0
    assert rag["car_abs"]["abstain"] and rag["car_abs"]["retrieval"] == {}
    # the extractive answer quotes sentences: it does not abstain (LoCoMo's rule gives 0)
    assert rag["car_abs"]["scores"] == {"f1": 0.0, "abstention": 0.0}
    # compaction: the answer stage's input tokens over the haystack's tokens (here the
    # rendered context, with dates and speakers, outweighs a tiny haystack). The dog's
    # haystack is 78 MiniLM word pieces: the four filler questions 11 + 9 + 9 + 10
    # ("sourdough" is sour ##dou ##gh, "repot" rep ##ot), four "Sure, here is some
    # advice." at 7, "I adopted a beagle puppy named Max." 9 (bea ##gle), "Lovely!" 2.
    assert rag["dog"]["compaction_ratio"] == round(rag["dog"]["context_tokens"] / 78, 5)
    # reports: summary as a script reads it, Markdown that says what needs an LLM, HTML
    summary = json.loads((out / "summary.json").read_text())
    assert summary["recipes"]["rag"]["recall@1"] == recipes["rag"]["recall@1"]
    assert summary["needs_llm"] == ["judge", "answer (generated, not extractive)"]
    md = (out / "report.md").read_text()
    assert "Without an LLM these columns are empty: judge" in md and "| rag |" in md
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 4
    run = json.loads((out / "run.json").read_text())
    assert run["data_sha256"] and run["versions"]["memstrata"] and run["config"]["budgets"]

    # a second run on the same data is served from the result cache, with the same rows
    again = tmp_path / "again"
    report2 = asyncio.run(_bench(tmp_path / "m.db", lme_file, again, embedder, cache=cache))
    assert report2["served_from_cache"] == 3 * len(recipes)
    strip = ("cached",)
    first = sorted(json.dumps({k: v for k, v in r.items() if k not in strip}) for r in rows(out))
    second = sorted(json.dumps({k: v for k, v in r.items() if k not in strip}) for r in rows(again))
    assert first == second
    for name in recipes:
        assert report2["recipes"][name]["recall@5"] == recipes[name]["recall@5"]
    cache.close()
    # the run directory is not overwritten
    with pytest.raises(InvalidInputError, match="already holds a run; use --resume"):
        asyncio.run(_bench(tmp_path / "m.db", lme_file, out, embedder))


def test_resume_continues_an_interrupted_run(
    tmp_path: Path, lme_file: Path, embedder: MiniLMEmbedder
) -> None:
    out = tmp_path / "run"
    seen = []

    def stop_after_two(n: int) -> None:
        seen.append(n)
        if sum(seen) >= 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(
            _bench(
                tmp_path / "m.db", lme_file, out, embedder, recipes="rag", progress=stop_after_two
            )
        )
    assert len(rows(out)) == 2 and not (out / "summary.json").exists()
    with pytest.raises(InvalidInputError, match="other data, recipes, options"):
        asyncio.run(
            _bench(tmp_path / "m.db", lme_file, out, embedder, recipes="rag,default", resume=True)
        )
    report = asyncio.run(
        _bench(tmp_path / "m.db", lme_file, out, embedder, recipes="rag", resume=True)
    )
    done = rows(out)
    assert len(done) == 3 and len({r["qid"] for r in done}) == 3
    assert report["recipes"]["rag"]["questions"] == 2  # the abstention question apart
    with pytest.raises(InvalidInputError, match="holds no run"):
        asyncio.run(_bench(tmp_path / "m.db", lme_file, tmp_path / "none", embedder, resume=True))


def _answer(messages: list[Message]) -> str:
    text = messages[-1].content
    if "beagle" in text:
        return json.dumps({"answer": "A beagle.", "sources": ["a1:0"]})
    if "Lisbon" in text:
        return json.dumps({"answer": "Lisbon", "sources": ["b1:0"]})
    return json.dumps({"answer": "NO_ANSWER", "sources": []})


def test_scripted_llm_answers_judges_and_costs(
    tmp_path: Path, lme_file: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = ScriptedBackend([_answer] * 3, model="answer-model")

    def scripted_llm(config: Config, store: Store, namespace: str | None = None) -> LLMClient:
        return LLMClient(answers, usage=store, namespace=namespace)

    monkeypatch.setattr("memstrata.memory.make_llm", scripted_llm)
    # judges: locomo for each of the two answerable questions; mindgraph's cascade takes
    # both without a call ("A beagle." is an exact match, "Lisbon" has key-phrase F1 0.67)
    judge_backend = ScriptedBackend(
        [
            {"reasoning": "same breed", "label": "CORRECT"},
            {"reasoning": "one city is missing", "label": "WRONG"},
        ],
        model="judge-model",
    )
    judge_llm = LLMClient(judge_backend, max_retries=2)
    config = Config(
        llm={"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "answer-model"},
        eval={
            "prices": {
                "answer-model": {"prompt": 1.0, "completion": 2.0},
                "judge-model": {"prompt": 10.0, "completion": 20.0},
            }
        },
    )
    out = tmp_path / "run"
    options = Options(["rag"], ["locomo", "mindgraph"], build_tier="heuristic")
    cache = ResultCache(tmp_path / "results.sqlite")
    report = asyncio.run(
        _bench(
            tmp_path / "m.db",
            lme_file,
            out,
            embedder,
            config=config,
            options=options,
            judge_llm=judge_llm,
            cache=cache,
        )
    )
    assert answers.remaining == 0 and judge_backend.remaining == 0
    rag = report["recipes"]["rag"]
    assert rag["judge.locomo"] == 0.5 and rag["judge.locomo.n"] == 2
    assert rag["judge.mindgraph"] == 1.0 and rag["judge.mindgraph.n"] == 2
    assert rag["answers"]["generated"] == 3 and rag["abstention"] == 1.0
    # the one abstention was due, and no answerable question abstained
    assert rag["abstention_recall"] == 1.0 and rag["abstention_precision"] == 1.0
    assert rag["false_abstention"] == 0.0
    assert report["needs_llm"] == []
    by_q = {r["qid"]: r for r in rows(out)}
    assert by_q["dog"]["scores"]["exact_match"] == 1.0  # "A beagle." vs "a beagle"
    assert "judge_errors" not in by_q["trips"]
    assert by_q["trips"]["scores"]["f1"] == pytest.approx(2 * 1 * (1 / 2) / (1 + 1 / 2))
    assert by_q["dog"]["answer_prompt_tokens"] > 0
    # judge prompts are the papers' texts
    first = unfence(judge_backend.requests[0].messages[0].content)
    assert "label an answer to a question as 'CORRECT' or 'WRONG'" in first
    assert "Gold answer: a beagle" in first and "Generated answer: A beagle." in first
    assert all("strict but fair" not in r.messages[0].content for r in judge_backend.requests)
    # cost per stage: calls and tokens from the accounting, money from the price table
    c = rag["cost"]
    assert c["answer"]["calls"] == 3 and c["answer"]["prompt_tokens"] > 0
    expected = (c["answer"]["prompt_tokens"] * 1.0 + c["answer"]["completion_tokens"] * 2.0) / 1e6
    assert c["answer"]["money"] == pytest.approx(expected, abs=1e-6)
    assert c["judge"]["calls"] == 2 and c["judge"]["failures"] == 0  # the cascade spared two
    jexp = (c["judge"]["prompt_tokens"] * 10 + c["judge"]["completion_tokens"] * 20) / 1e6
    assert c["judge"]["money"] == pytest.approx(jexp, abs=1e-6)
    assert c["ingestion"]["calls"] == 0 and c["retrieval"]["calls"] == 0
    # a rerun from the result cache calls no LLM (both scripts are spent) and reports what
    # the cached rows cost when they were made; this run's own cost is kept apart
    report2 = asyncio.run(
        _bench(
            tmp_path / "m.db",
            lme_file,
            tmp_path / "again",
            embedder,
            config=config,
            options=options,
            judge_llm=judge_llm,
            cache=cache,
        )
    )
    cache.close()
    rag2 = report2["recipes"]["rag"]
    assert rag2["served_from_cache"] == 3
    for stage in ("answer", "judge"):
        for f in ("calls", "failures", "prompt_tokens", "completion_tokens"):
            assert rag2["cost"][stage][f] == pytest.approx(c[stage][f], abs=1e-3)
        assert rag2["cost"][stage]["money"] == pytest.approx(c[stage]["money"], abs=1e-6)
        assert rag2["cost_this_run"][stage]["calls"] == 0
    assert rag2["cost"]["ingestion"]["seconds"] == pytest.approx(
        c["ingestion"]["seconds"], abs=0.01
    )
    assert rag["cost_this_run"] == rag["cost"]


def test_rows_made_by_other_code_are_not_served(
    tmp_path: Path, lme_file: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache key holds a digest of the source: code changed in place (an editable
    install) gets fresh rows, not those its previous state made."""
    from memstrata.eval.qa import run as qa_run
    from memstrata.eval.qa.rundir import code_version, source_digest

    cache = ResultCache(tmp_path / "results.sqlite")
    first = asyncio.run(
        _bench(tmp_path / "a.db", lme_file, tmp_path / "a", embedder, recipes="rag", cache=cache)
    )
    assert first["served_from_cache"] == 0
    same = asyncio.run(
        _bench(tmp_path / "a.db", lme_file, tmp_path / "b", embedder, recipes="rag", cache=cache)
    )
    assert same["served_from_cache"] == 3
    monkeypatch.setattr(qa_run, "code_version", lambda: code_version() + "-edited")
    other = asyncio.run(
        _bench(tmp_path / "a.db", lme_file, tmp_path / "c", embedder, recipes="rag", cache=cache)
    )
    assert other["served_from_cache"] == 0
    cache.close()
    # the digest follows the files' contents and names
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    before = source_digest(pkg)
    (pkg / "sub" / "b.py").write_text("y = 3\n")
    assert source_digest(pkg) != before
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    assert source_digest(pkg) == before
    (pkg / "sub" / "b.py").rename(pkg / "sub" / "c.py")
    assert source_digest(pkg) != before


def test_bench_passes_each_questions_category_and_trap_to_the_answerer(
    tmp_path: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A LoCoMo file's adversarial question reaches the recipe's answerer with its
    category and the plausible answer the data set offers as a trap (what HiGMem's
    answer prompt branches on); an ordinary question with its category and no trap."""
    from memstrata.engine.engine import Engine

    turns = [
        {"speaker": "Maya", "dia_id": "D1:1", "text": "I adopted a beagle named Max."},
        {"speaker": "Tomas", "dia_id": "D1:2", "text": "Lovely! I have a cat called Pepper."},
    ]
    conversation = {
        "speaker_a": "Maya",
        "speaker_b": "Tomas",
        "session_1": turns,
        "session_1_date_time": "10:15 am on 2 March, 2024",
    }
    qa = [
        {
            "question": "What is Maya's dog called?",
            "answer": "Max",
            "evidence": ["D1:1"],
            "category": 4,
        },
        {
            "question": "What is Tomas's dog called?",
            "adversarial_answer": "Pepper",
            "evidence": ["D1:2"],
            "category": 5,
        },
    ]
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([{"sample_id": "s", "conversation": conversation, "qa": qa}]))
    seen: list[tuple[str, Any]] = []
    answer = Engine.answer

    async def spy(self, namespace, question, hits, recipe, about=None):  # type: ignore[no-untyped-def]
        seen.append((question, about))
        return await answer(self, namespace, question, hits, recipe, about)

    monkeypatch.setattr(Engine, "answer", spy)

    async def run() -> dict[str, Any]:
        memory = await AsyncMemory.open(tmp_path / "m.db", embedder=embedder)
        try:
            return await qb.bench(memory, data, "locomo", Options(["default"]), tmp_path / "out")
        finally:
            await memory.close()

    asyncio.run(run())
    about = {q: (a.category, a.candidate) for q, a in seen}
    assert about == {
        "What is Maya's dog called?": ("single-hop", None),
        "What is Tomas's dog called?": ("adversarial", "Pepper"),
    }
