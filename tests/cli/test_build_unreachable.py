"""`memstrata build` against an LLM server that is not there (a closed loopback port):
it stops after three calls that could not connect, says why, what it left queued and
the command that goes on, exits 1; `memstrata stats` shows the same."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memstrata.eval.bench_scale import synthetic_turns
from unreachable import closed_port


def run(env: dict[str, str], *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "memstrata", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == code, proc.stderr + proc.stdout
    return proc


def test_build_stops_at_an_unreachable_server_and_says_how_to_go_on(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = {
        **subprocess_env,
        "MEMSTRATA_LLM__KIND": "openai",
        "MEMSTRATA_LLM__BASE_URL": url,
        "MEMSTRATA_LLM__MODEL": "m",
        "MEMSTRATA_LLM__MAX_RETRIES": "0",  # one attempt a call: no backoff to wait out
        "MEMSTRATA_BUILD__MODE": "manual",
    }
    rows = tmp_path / "in.jsonl"
    rows.write_text(
        "".join(
            json.dumps({**t, "occurred_at": t["occurred_at"].isoformat()}) + "\n"
            for t in synthetic_turns(30)
        )
    )
    db = str(tmp_path / "m.db")
    run(env, "import", str(rows), "--db", db, "-n", "t")
    built = run(env, "build", "--db", db, "--recipe", "mnemis", code=1)
    err = built.stderr
    assert "t mnemis: tier llm, 3 new episodes, 3 failed (stopped)" in built.stdout
    assert "stopped: the LLM server could not be reached (3 calls in a row" in err
    assert f"cannot reach {url}/chat/completions" in err
    assert "still queued in t: 27 episodes for mnemis (not counted as failed)" in err
    assert f"go on with: memstrata build --db {db} --recipe mnemis (or a worker)" in err

    stats = json.loads(run(env, "stats", "--db", db, "--json").stdout)
    (space,) = stats["namespaces"]
    assert space["builds"]["mnemis"] == {"done": 0, "failed": 3, "dead": 0, "queued": 27}
    assert stats["llm"]["mnemis.entities"]["calls"] == 3  # three requests, then none
    assert stats["llm"]["mnemis.entities"]["failures"] == 3
    shown = run(env, "stats", "--db", db).stderr
    assert "cannot reach" in shown and "memstrata retry" in shown and "memstrata build" in shown
