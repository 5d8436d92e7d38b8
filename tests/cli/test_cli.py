"""The command line, run as a real process (``python -m memstrata``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent.parent / "data"


def run(
    env: dict[str, str], *args: str, ok: bool = True, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "memstrata", *args],
        capture_output=True,
        text=True,
        env=env,
        input=stdin,
        timeout=300,
    )
    if ok:
        assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


ROWS = [
    {
        "id": "1",
        "text": "I planted basil and mint on the balcony.",
        "speaker": "Ana",
        "at": "2024-04-01T10:00:00",
        "session": "s1",
    },
    {
        "id": "2",
        "text": "My brother is learning to fly small planes.",
        "speaker": "Ben",
        "at": "2024-04-01T10:01:00",
        "session": "s1",
        "metadata": {"mood": "proud"},
    },
    {
        "id": "3",
        "text": "We adopted a tabby cat called Biscuit.",
        "speaker": "Ana",
        "at": "2024-04-02T09:00:00",
        "session": "s2",
    },
]


@pytest.mark.slow
def test_import_search_stats_delete_roundtrip(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    db = str(tmp_path / "m.db")
    src = write_jsonl(tmp_path / "in.jsonl", ROWS)
    first = run(subprocess_env, "import", str(src), "--db", db, "--namespace", "home")
    assert "imported 3 new" in first.stdout
    again = run(subprocess_env, "import", str(src), "--db", db, "--namespace", "home")
    assert "imported 0 new episodes, 3 already present" in again.stdout

    queries = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"id": "pet", "query": "what is the cat called?"},
            {"id": "fly", "query": "who is learning to fly", "namespace": "home"},
        ],
    )
    res = run(
        subprocess_env,
        "search",
        "--db",
        db,
        "--namespace",
        "home",
        "--k",
        "2",
        "--queries",
        str(queries),
        "--json",
    )
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["pet", "fly"]
    assert lines[0]["hits"][0]["sources"] == ["3"]
    assert lines[1]["hits"][0]["sources"] == ["2"]
    assert set(lines[0]["hits"][0]) == {"kind", "text", "score", "sources"}
    assert len(lines[0]["hits"]) == 2

    single = run(subprocess_env, "search", "basil balcony", "--db", db, "-n", "home", "--json")
    assert json.loads(single.stdout)["hits"][0]["sources"] == ["1"]
    args = ["search", "basil balcony", "--db", db, "-n", "home", "--json", "--adaptive"]
    cut = json.loads(run(subprocess_env, *args).stdout)["hits"]
    assert cut[0]["sources"] == ["1"] and len(cut) < len(json.loads(single.stdout)["hits"])

    stats = json.loads(run(subprocess_env, "stats", "--db", db, "--json").stdout)
    assert stats["namespaces"][0] == {
        "namespace": "home",
        "episodes": 3,
        "records": {},
        "records_by_builder": {},
        "repairs": {},
        "embedded": 3,
        "builds": {},
        "failures": [],
    }
    assert stats["recipe"] == "default" and stats["build_mode"] == "inline"

    deleted = run(subprocess_env, "delete", "--db", db, "-n", "home", "--id", "2", "--yes")
    assert "deleted 1 episode" in deleted.stdout
    gone = run(subprocess_env, "delete", "--db", db, "-n", "home", "--yes")
    assert "deleted 2 episode" in gone.stdout
    missing = run(subprocess_env, "search", "cat", "--db", db, "-n", "home", ok=False)
    assert missing.returncode == 2 and "unknown namespace 'home'" in missing.stderr


@pytest.mark.slow
def test_bad_jsonl_lines_are_reported_and_good_ones_kept(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    src = tmp_path / "mixed.jsonl"
    src.write_bytes(
        b'{"id": "ok1", "text": "fine line"}\n'
        b'{"id": "bad-utf8", "text": "caf\xe9"}\n'
        b'{"id": "broken", "text": \n'
        b'{"id": "empty", "text": "   "}\n'
        b'{"text": "no id"}\n'
        b'{"id": "ok2", "text": "another fine line", "at": "2024-01-01"}\n'
        b'{"id": "when", "text": "a vague time", "at": "yesterday-ish"}\n'
        b'{"id": "typo", "text": "a misspelt key", "speakr": "Ana"}\n'
    )
    db = str(tmp_path / "m.db")
    proc = run(subprocess_env, "import", str(src), "--db", db, ok=False)
    assert proc.returncode == 1
    assert "imported 2 new" in proc.stdout
    err = proc.stderr
    assert "line 2:" in err and "invalid UTF-8" in err
    assert "line 3:" in err and "invalid JSON" in err
    assert "line 4:" in err and "empty text" in err
    assert "line 5:" in err and 'missing "id"' in err
    assert "line 7: invalid episode: at: " in err and "'yesterday-ish'" in err
    assert "occurred_at:" not in err
    assert "line 8: unknown key 'speakr'" in err
    assert "6 lines not imported" in err


def test_config_masks_secrets(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    toml = tmp_path / "m.toml"
    toml.write_text(
        'store = "x.db"\n[llm]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'model = "m"\napi_key = "sk-very-secret"\n'
    )
    env = dict(subprocess_env, MEMSTRATA_BUDGETS__EPISODES="7")
    proc = run(env, "config", "--config", str(toml))
    data = json.loads(proc.stdout)
    assert "sk-very-secret" not in proc.stdout
    assert data["llm"]["api_key"] == "********"
    assert data["budgets"]["episodes"] == 7 and data["store"] == "x.db"


def test_config_shows_the_budgets_of_the_configured_model(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    toml = tmp_path / "m.toml"
    toml.write_text(
        '[llm]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
        'reasoning_effort = "low"\n'
    )
    chat = json.loads(run(subprocess_env, "config", "--config", str(toml)).stdout)
    assert chat["llm"]["reasoning_effort"] == "low"
    budgets = chat["llm_budgets"]
    assert (budgets["profile"], budgets["context_tokens"], budgets["max_output_tokens"]) == (
        "chat",
        131072,
        16384,
    )
    assert budgets["stages"]["mnemis.facts"] == 8192 and budgets["bounds"]["mnemis.facts"] == 24
    env = dict(
        subprocess_env,
        MEMSTRATA_LLM__KIND="gguf",
        MEMSTRATA_LLM__MAX_TOKENS="200",  # the ceiling every stage then gets
    )
    small = json.loads(run(env, "config").stdout)["llm_budgets"]
    assert small["profile"] == "small" and small["ceiling"] == 200
    assert small["stages"]["mnemis.facts"] == 200 and small["stages"]["mnemis.entities"] == 120
    assert small["bounds"]["mnemis.facts"] == 6
    assert "llm_budgets" not in json.loads(run(subprocess_env, "config").stdout)  # no LLM
    from memstrata.llm.budgets import markdown_table

    assert run(subprocess_env, "config", "--profiles").stdout == markdown_table()
    bad = run(dict(subprocess_env, MEMSTRATA_LLM__PROFILE="large"), "config", ok=False)
    assert bad.returncode == 2 and "unknown llm.profile 'large'; valid: small, chat" in bad.stderr


def test_usage_errors_are_clear(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = run(subprocess_env, "search", "--db", str(tmp_path / "m.db"), ok=False)
    assert proc.returncode == 2 and "give either a QUERY or --queries" in proc.stderr
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not sqlite" * 100)
    proc = run(subprocess_env, "stats", "--db", str(corrupt), ok=False)
    assert proc.returncode == 2 and "corrupt" in proc.stderr


@pytest.mark.slow
def test_demo_runs_offline(subprocess_env: dict[str, str]) -> None:
    proc = run(subprocess_env, "demo")
    assert "32 turns imported" in proc.stdout
    assert "Pepper" in proc.stdout
    assert "mnemis build:" in proc.stdout and "│ fact " in proc.stdout  # the kind column


@pytest.mark.slow
def test_bench_locomo_and_scale_print_numbers(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    out = tmp_path / "out"
    run(subprocess_env, "bench", "locomo", str(DATA / "tiny_locomo.json"), "--out", str(out))
    report = json.loads((out / "locomo.json").read_text())
    assert set(report["systems"]) == {"bm25", "rag", "default"}
    overall = report["systems"]["default"]["metrics"]["overall"]
    assert overall["n"] == 5 and 0.0 <= overall["R@10"] <= 1.0
    assert "| default | overall (1-4) |" in (out / "locomo.md").read_text()

    tiny = "locomo:" + str(DATA / "tiny_locomo.json")
    args = ("--sizes", "150,300", "--ann-threshold", "200", "--text-threshold", "200")
    args += ("--queries", "6", "--data", tiny)
    run(subprocess_env, "bench", "scale", *args, "--out", str(out))
    scale = json.loads((out / "scale.json").read_text())
    small, large = scale["sizes"]
    assert (small["episodes"], large["episodes"]) == (150, 300) and scale["queries"] == 6
    # below the threshold exact search only; above it the graph holds every vector
    assert small["index"]["graph"] == 0 and small["index_bytes_per_episode"] == 0
    assert large["index"] == {"graph": 300, "exact": 0, "outdated": 0, "building": False}
    assert large["index_bytes_per_episode"] > 384  # float16 vectors and their links
    # and the full-text index every document, against FTS5 with every term
    assert small["text_index"]["indexed"] == 0 and small["text_index_bytes_per_episode"] == 0
    assert large["text_index"] == {"indexed": 300, "delta": 0, "building": False}
    assert large["text_index_bytes_per_episode"] > 0 and large["text_build_s"] is not None
    assert large["vs_exact"]["recall_dense"] >= 0.9 and large["vs_exact"]["recall_bm25"] >= 0.9
    for row in (small, large):
        assert row["ingest_episodes_per_s"] > 0 and row["bare_embedder_texts_per_s"] > 0
        assert row["bytes_per_episode"] > 100 and row["open"]["ready_s"] > 0
        assert {"rag", "default", "bm25_alone", "dense_alone"} <= set(row["search"])
    bad = run(subprocess_env, "bench", "scale", "--sizes", "300,100", "--out", str(out), ok=False)
    assert bad.returncode == 2 and "increasing" in bad.stderr


@pytest.mark.slow
def test_bench_build_reports_build_and_insert_latency(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    out = tmp_path / "out"
    data = str(DATA / "tiny_locomo.json")
    args = ("bench", "build", data, "--recipe", "mnemis", "--conversation", "tiny-1")
    args += ("--turns", "3")
    run(subprocess_env, *args, "--inserts", "2", "--out", str(out))
    report = json.loads((out / "build-mnemis.json").read_text())
    assert report["tier"] == "heuristic" and report["turns"] == 3
    assert report["build"]["episodes"] == 3
    assert report["build"]["builders"]["mnemis"]["entity"] > 0
    assert report["problems"] == [] and report["llm_stages"] == {}
    assert report["inserts"]["n"] == 2 and report["inserts"]["add_ms"]["p50"] > 0
    assert report["inserts"]["problems"] == []
    assert "| add + build |" in (out / "build-mnemis.md").read_text()
    nothing = run(subprocess_env, "bench", "build", data, "--recipe", "rag", ok=False)
    assert nothing.returncode == 2 and "builds nothing" in nothing.stderr
    bad = run(subprocess_env, *args, "--inserts", "5", "--out", str(out), ok=False)
    assert bad.returncode == 2 and "tiny-1 has 5 turns" in bad.stderr
