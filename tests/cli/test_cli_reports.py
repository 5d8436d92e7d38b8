"""What users ran into, reproduced through the real command (``python -m memstrata``):
stored text shown as markup, reading commands that created databases, failures that did
not say how to go on, long commands silent in logs, ``search -k`` returning more than k.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import memstrata
from memstrata.config import Config
from memstrata.errors import ConfigError, StoreNotFoundError
from memstrata.store import open_store

SRC = Path(__file__).resolve().parents[2] / "src"
SAMPLE = SRC / "memstrata" / "data" / "sample_conversation.jsonl"

NS = "[b]team[/b]"
WHITEBOARD = "Ana wrote [/] on the whiteboard and [/bold] under it."
LABEL = "the label reads [red]x[/red] in the kitchen"
PHOTO = "[shared a photo: a red bowl] Ana bought a bowl at the market."
CAPTION = "[shared a photo: [b]sunflowers[/b] by the [/] fence]"  # how a caption reads
ROWS = [
    {"id": "m1", "speaker": "Ana", "text": WHITEBOARD, "at": "2024-05-01T10:00:00"},
    {"id": "m2", "speaker": "Ben", "text": f"Ben said {LABEL}.", "at": "2024-05-01T10:01:00"},
    {"id": "m3", "speaker": "Ana", "text": PHOTO, "at": "2024-05-01T10:02:00"},
    {
        "id": "m4",
        "speaker": "Ben",
        "text": "Ben loves the garden.",
        "at": "2024-05-01T10:03:00",
        "metadata": {"image_caption": "[b]sunflowers[/b] by the [/] fence"},
    },
]


def child_env(**extra: str) -> dict[str, str]:
    """Like the ``subprocess_env`` fixture (usable from module-scoped fixtures), with wide
    tables (COLUMNS) so that every row is one line and assertions see whole texts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRATA_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    return {**env, "COLUMNS": "400", **extra}


def cli(env: dict[str, str], *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "memstrata", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == code, proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def cli_all(env: dict[str, str], *commands: list[str]) -> list[tuple[int, str, str]]:
    """Run several commands at once (each is a fresh process): (status, stdout, stderr)."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "memstrata", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for args in commands
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        results.append((p.returncode, out, err))
    return results


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def team_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """ROWS imported into namespace NS and built with the mnemis recipe."""
    tmp = tmp_path_factory.mktemp("team")
    db = str(tmp / "m.db")
    env = child_env()
    imported = cli(env, "import", str(write_jsonl(tmp / "in.jsonl", ROWS)), "--db", db, "-n", NS)
    assert f"into 1 namespace: {NS}" in imported.stdout
    built = cli(env, "build", "--db", db, "-n", NS, "--recipe", "mnemis")
    assert f"{NS} mnemis: tier heuristic, 4 new episodes, 0 failed" in built.stdout
    return db


# 1. stored text is never markup -------------------------------------------------------
@pytest.mark.slow
def test_stored_text_and_names_print_literally_everywhere(team_db: str) -> None:
    db = ("--db", team_db)
    # 20 hits: mnemis shares them 1 : 2 : 2, so its 4 episodes are all among them
    query = ("search", "whiteboard label bowl garden", "-n", NS, *db, "--explain", "-k", "20")
    commands = [
        [*query, "--recipe", "default"],
        [*query, "--recipe", "mnemis"],
        ["show", "Ana", "-n", NS, *db],
        ["ask", "What does the label read?", "-n", NS, *db],
        ["stats", *db],
        ["show", "[/]", "-n", NS, *db],
        ["search", "bowl", "-n", "[b]tea[/b]", *db],
    ]
    results = cli_all(child_env(), *commands)
    for args, (status, out, err) in zip(commands, results, strict=True):
        assert status == (2 if args[1] in {"[/]", "bowl"} else 0), (args, out, err)
        assert "Traceback" not in err, err
    (_, default, _), (_, mnemis, _), (_, shown, _), (_, answer, _), (_, stats, _) = results[:5]
    for text in (WHITEBOARD, LABEL, PHOTO, CAPTION):
        assert text in default and text in mnemis, (text, default, mnemis)
    assert WHITEBOARD in shown and PHOTO in shown
    assert LABEL in " ".join(answer.split())
    assert f"│ {NS} " in stats
    assert f"nothing named '[/]' in namespace '{NS}'" in results[5][2]
    # an unknown namespace names the ones that exist, brackets and all
    assert (
        "unknown namespace '[b]tea[/b]' (nothing has been added to it); namespaces: [b]team[/b]"
        in results[6][2]
    )


# 5. search -k ---------------------------------------------------------------------------
@pytest.mark.slow
def test_search_k_counts_every_hit_and_says_how_the_kinds_share_it(team_db: str) -> None:
    env, db = child_env(), team_db
    args = ("search", "whiteboard label bowl garden", "--db", db, "-n", NS, "-k", "10")
    line = json.loads(cli(env, *args, "--recipe", "mnemis", "--json").stdout)
    by_kind: dict[str, list[float]] = {}
    for hit in line["hits"]:
        by_kind.setdefault(hit["kind"], []).append(hit["score"])
    assert list(by_kind) == ["episode", "fact", "entity"]  # kinds in one block each
    assert [len(by_kind[k]) for k in by_kind] == [2, 4, 4]  # 10 hits, shared 1 : 2 : 2

    table = cli(env, *args, "--recipe", "mnemis").stdout
    assert "-k 10 returns 10 hits at most; the kinds share them: episode 1, fact 2, entity 2" in (
        " ".join(table.split())
    )
    assert len(re.findall(r"│ episode +│", table)) == 2
    assert len(re.findall(r"│ fact +│", table)) == 4

    plain = cli(env, *args[:-1], "2", "--recipe", "default").stdout
    assert "returns" not in plain
    assert len(re.findall(r"^│ +\d+ │", plain, flags=re.M)) == 2


# 2. commands that need a store never create one -----------------------------------------
@pytest.mark.slow  # nine processes
def test_reading_commands_never_create_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "m.db"
    db = ("--db", str(missing))
    commands = [
        ["build", *db],  # a mistyped path has nothing to build
        ["build", "-n", "home", "--recipe", "mnemis", *db],
        ["stats", *db],
        ["search", "cats", *db],
        ["show", "Ana", *db],
        ["ask", "what?", *db],
        ["delete", "-n", "home", "--yes", *db],
        ["retry", *db],
        ["search", "cats", "--db", f"sqlite:///{missing}"],
    ]
    for args, (status, out, err) in zip(commands, cli_all(child_env(), *commands), strict=True):
        assert status == 2, (args, out, err)
        assert f"no memstrata database at {missing}" in err, (args, err)
        assert "Traceback" not in err
    as_json = cli(child_env(), "stats", "--json", *db, code=2)
    assert json.loads(as_json.stdout) == {
        "error": f"no memstrata database at {missing}",
        "kind": "StoreNotFoundError",
    }
    assert not (tmp_path / "typo").exists()

    with pytest.raises(StoreNotFoundError, match="no memstrata database at"):
        open_store(missing, create=False)
    assert not (tmp_path / "typo").exists()
    open_store(":memory:", create=False).close()


def test_an_empty_import_file_is_an_error_and_creates_no_store(tmp_path: Path) -> None:
    db = tmp_path / "new" / "m.db"
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n   \n\t\n\n")
    no_conversations = tmp_path / "none.json"
    no_conversations.write_text("[]")
    files = [empty, blank, no_conversations]
    commands = [["import", str(f), "--db", str(db)] for f in files]
    for f, (status, out, err) in zip(files, cli_all(child_env(), *commands), strict=True):
        assert status == 2, (f, out, err)
        assert f"error: {f} holds no episodes; nothing was imported" in err, err
        assert out == "" and "Traceback" not in err
    assert not (tmp_path / "new").exists()


def test_recipes_off_a_terminal_prints_every_field_whole(tmp_path: Path) -> None:
    long_name = "a-recipe-name-long-enough-that-an-80-column-table-would-cut-it-short"
    toml = tmp_path / "m.toml"
    toml.write_text(
        f'[recipes."{long_name}"]\ndescription = "System-1 over episodes, configured with '
        'a description far longer than any terminal line, so a table would wrap it."\n'
        'routes = [{ name = "system1" }]\n'
    )
    env = {**child_env(), "COLUMNS": "80"}  # what rich assumes when stdout is a pipe
    listed = json.loads(cli(env, "recipes", "--json", "--config", str(toml)).stdout)
    lines = cli(env, "recipes", "--config", str(toml)).stdout.splitlines()
    assert lines[0].split("\t") == ["recipe", "builds", "routes", "from", "description"]
    rows = [line.split("\t") for line in lines[1:]]
    assert [row[0] for row in rows] == [r["name"] for r in listed]
    assert all(len(row) == 5 for row in rows)
    mine = rows[[row[0] for row in rows].index(long_name)]
    assert mine[1:] == ["-", "system1", "config", listed[-1]["description"]]


def test_recipes_on_a_terminal_is_a_table() -> None:
    leader, follower = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memstrata", "recipes"],
        stdout=follower,
        stderr=subprocess.PIPE,
        env={**child_env(), "COLUMNS": "200", "TERM": "xterm"},
    )
    os.close(follower)
    shown = b""
    try:
        while chunk := _read_pty(leader):  # read as it comes: a full terminal blocks
            shown += chunk
    finally:
        os.close(leader)
    assert proc.wait(timeout=300) == 0
    text = re.sub(r"\x1b\[[0-9;]*m", "", shown.decode())  # without colours and bold
    assert "┃ recipe" in text and "│ mnemis" in text and "\t" not in text


def _read_pty(fd: int) -> bytes:
    """What a pseudo-terminal holds; b"" once its other end is closed and drained."""
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the writer has gone
        return b""


# 3. errors that say what happened and how to go on --------------------------------------
def test_config_typos_name_the_closest_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'recipee' \(from MEMSTRATA_RECIPEE\)"):
        Config.load(env={"MEMSTRATA_RECIPEE": "rag"})
    with pytest.raises(ConfigError, match=r"'llm\.modle' \(from MEMSTRATA_LLM__MODLE\); did"):
        Config.load(env={"MEMSTRATA_LLM__MODLE": "m"})
    toml = tmp_path / "m.toml"
    toml.write_text(
        'recipe = "r"\n[llm]\nmodle = "m"\n'
        '[recipes.r]\nroutes = [{ name = "system1", wieght = 2 }]\n'
    )
    with pytest.raises(ConfigError) as info:
        Config.load(toml, env={})
    text = str(info.value)
    assert f"unknown key 'llm.modle' (in {toml}); did you mean 'llm.model'?" in text
    assert "unknown key 'recipes.r.routes.0.wieght'" in text
    assert "did you mean 'recipes.r.routes.0.weight'?" in text
    with pytest.raises(ConfigError, match="did you mean 'budgets.max_tokens'"):
        Config.load(env={}, **{"budgets.max_token": 10})
    with pytest.raises(ConfigError, match="valid keys here: store, namespace, recipe"):
        Config.load(env={"MEMSTRATA_ZZZ": "1"})

    env = child_env(MEMSTRATA_RECIPEE="rag")
    (s1, o1, e1), (s2, o2, _), (s3, o3, _) = cli_all(
        env,
        ["config"],
        ["search", "cats", "--db", str(tmp_path / "x.db"), "--json"],
        ["--version"],
    )
    assert s1 == 2 and "did you mean 'recipe'?" in e1 and "Traceback" not in e1
    assert s2 == 2 and json.loads(o2) == {
        "error": "invalid configuration: unknown key 'recipee' (from MEMSTRATA_RECIPEE); "
        "did you mean 'recipe'?",
        "kind": "ConfigError",
    }
    assert s3 == 0 and o3 == f"memstrata {memstrata.__version__}\n"
    assert re.fullmatch(r"\d+\.\d+.*", memstrata.__version__)


def _interrupt(env: dict[str, str], args: list[str], first: str) -> tuple[int, str]:
    """Start a command, wait for the first progress line matching ``first``, press Ctrl-C
    (SIGINT); return the exit status and stderr. The child gets SIGINT's default action
    back: a suite started in the background of a shell inherits SIGINT ignored, and
    Python then installs no handler."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memstrata", "--progress-every", "0.05", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if re.match(first, line):
            break
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    return proc.returncode, "".join(seen) + rest


@pytest.mark.slow
def test_ctrl_c_says_what_was_committed_and_the_same_command_resumes(tmp_path: Path) -> None:
    env, db, n = child_env(), str(tmp_path / "m.db"), 600
    rows = [
        {
            "id": f"t{i}",
            "speaker": ("Maya", "Tomas")[i % 2],
            "text": f"Turn {i}: we talked about gardening, cats and the weather on day {i}.",
        }
        for i in range(n)
    ]  # enough for the mnemis build to take a few seconds
    src = str(write_jsonl(tmp_path / "big.jsonl", rows))
    args = ["import", src, "--db", db, "-n", "big", "--batch-size", "16"]

    status, err = _interrupt(env, args, r"importing: [1-9]")
    assert status == 130 and "Traceback" not in err, err
    said = re.search(rf"interrupted: importing (\d+)/{n} committed; re-run the same command", err)
    assert said, err
    stored = json.loads(cli(env, "stats", "--db", db, "--json").stdout)["namespaces"][0]
    assert int(said[1]) <= stored["episodes"] < n  # a batch in flight may have finished too

    again = cli(env, *args)
    left = n - stored["episodes"]
    new = f"{left} new episode" + ("" if left == 1 else "s")
    assert f"imported {new}, {stored['episodes']} already present" in again.stdout
    assert f"importing: {n}/{n}" in again.stderr  # the final count, stderr being no terminal

    build = ["build", "--db", db, "-n", "big", "--recipe", "mnemis"]
    # Ctrl-C lets the batch being written finish, so the count said is exact.
    status, err = _interrupt(env, build, r"building big: [1-9]")
    assert status == 130 and "Traceback" not in err, err
    assert "Ctrl-C: stopping after the current batch" in err
    said = re.search(rf"interrupted: building big (\d+)/{n} committed; re-run the same", err)
    assert said and "builds are resumable" in err, err
    left = n - int(said[1])
    counted = f"{left} episode" + ("" if left == 1 else "s")
    assert left > 0 and f"still queued in big: {counted} for mnemis" in err
    resumed = cli(env, *build)
    new = int(re.search(r"big mnemis: tier heuristic, (\d+) new episodes?,", resumed.stdout)[1])
    assert new == left
    assert f"building big: {new}/{new}" in resumed.stderr


# 4. progress on a stderr that is not a terminal ------------------------------------------
@pytest.mark.slow
def test_long_commands_print_progress_lines_and_a_failed_build_says_how_to_retry(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "q.db")
    queue = child_env(MEMSTRATA_BUILD__MODE="queue")
    fast = ("--progress-every", "0.05")
    imported = cli(queue, *fast, "import", str(SAMPLE), "--db", db, "-n", "demo")
    assert re.search(r"^importing: 32/32 \(\d+ s\)$", imported.stderr, flags=re.M)
    worked = cli(queue, *fast, "worker", "--db", db, "--recipe", "mnemis", "--once")
    assert re.search(r"^folding in demo: 32 \(\d+ s\)$", worked.stderr, flags=re.M)
    assert "worker: 32 episodes folded in" in worked.stdout

    # an LLM nobody answers: every episode fails, and the output says what to run next
    broken = child_env(
        MEMSTRATA_LLM__KIND="openai",
        MEMSTRATA_LLM__BASE_URL="http://127.0.0.1:9/v1",
        MEMSTRATA_LLM__MODEL="m",
        MEMSTRATA_LLM__MAX_RETRIES="0",
        MEMSTRATA_BUILD__MODE="manual",
    )
    small = str(tmp_path / "small.db")
    src = str(write_jsonl(tmp_path / "in.jsonl", ROWS[:2]))
    cli(broken, "import", src, "--db", small, "-n", NS)
    failed = cli(broken, *fast, "build", "--db", small, "--recipe", "mnemis", code=1)
    assert f"building {NS}: 2/2" in failed.stderr
    assert "2 episodes failed; to try them again now:" in failed.stderr
    assert f"memstrata retry --db {small} -n '{NS}'" in failed.stderr
    assert f"memstrata build --db {small} -n '{NS}' --recipe mnemis" in failed.stderr
    retried = cli(broken, "retry", "--db", small, "-n", NS)
    assert "2 episodes queued again" in retried.stdout
