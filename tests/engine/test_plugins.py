"""A third-party design, installed for real, used through the API and the CLI.

``tests/data/tiny_design`` is a design package of its own (a builder, a route, a ``show``
hook and the ``tiny`` recipe). It is packed into a wheel here, without network or build
backend, and installed with pip into a folder that goes on the path; the engine finds it
through the ``memstrata.designs`` entry-point group only. A plug-in that fails to load is
reported and left out; the library keeps working.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memstrata.config import Config
from memstrata.engine import ENTRY_POINT_GROUP, Registry
from memstrata.memory import Memory

TINY = Path(__file__).parents[1] / "data" / "tiny_design" / "tiny_design" / "__init__.py"
BUILTIN_RECIPES = {"default", "rag", "mnemis", "memtree"}

ROWS = [
    {"id": "1", "text": "I planted basil and mint on the balcony.", "speaker": "Ana"},
    {"id": "2", "text": "My brother is learning to fly small planes.", "speaker": "Ben"},
    {"id": "3", "text": "We adopted a tabby cat called Biscuit.", "speaker": "Ana"},
]
# The keywords builder's thesis of each row: its three longest words, longest first.
THESES = {
    "1": "planted balcony basil",
    "2": "learning brother planes",
    "3": "adopted biscuit called",
}

BROKEN = {
    # the module raises on import
    "raises": 'raise RuntimeError("tiny_broken fails on import")\n',
    # it loads, but its recipe names a route no design provides
    "bad-recipe": (
        "from memstrata.engine import Design, Recipe, RouteSpec\n"
        "design = Design(name='broken', recipes=[\n"
        "    Recipe(name='broken', routes=[RouteSpec(name='no-such-route')])])\n"
    ),
}


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(folder: Path, dist: str, files: dict[str, bytes], entry_points: str) -> Path:
    """A pure-Python wheel with ``files`` and a ``dist-info`` (METADATA, WHEEL, RECORD,
    entry_points.txt), as a build backend would write it."""
    info = f"{dist}-0.1.dist-info"
    files = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n".encode(),
        f"{info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: memstrata-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
        f"{info}/entry_points.txt": entry_points.encode(),
    }
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()]
    record.append(f"{info}/RECORD,,")
    wheel = folder / f"{dist}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def pip_install(wheel: Path, site: Path) -> Path:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps"]
        + ["--disable-pip-version-check", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PIP_NO_INPUT": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return site


@pytest.fixture(scope="session")
def tiny_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny design installed from its wheel into a folder of its own."""
    folder = tmp_path_factory.mktemp("tiny")
    wheel = write_wheel(
        folder,
        "tiny_design",
        {"tiny_design/__init__.py": TINY.read_bytes()},
        f"[{ENTRY_POINT_GROUP}]\ntiny = tiny_design:design\n",
    )
    site = pip_install(wheel, folder / "site")
    assert (site / "tiny_design" / "__init__.py").read_bytes() == TINY.read_bytes()
    assert (site / "tiny_design-0.1.dist-info" / "entry_points.txt").is_file()
    return site


@pytest.fixture(scope="session", params=sorted(BROKEN))
def broken_site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp(f"broken-{request.param}")
    wheel = write_wheel(
        folder,
        "tiny_broken",
        {"tiny_broken/__init__.py": BROKEN[request.param].encode()},
        f"[{ENTRY_POINT_GROUP}]\nbroken = tiny_broken:design\n",
    )
    return pip_install(wheel, folder / "site")


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], None]]:
    """Put an install folder on ``sys.path`` for this test; its modules are forgotten after."""

    def add(site: Path) -> None:
        monkeypatch.syspath_prepend(str(site))
        importlib.invalidate_caches()

    yield add
    for name in ("tiny_design", "tiny_broken"):
        sys.modules.pop(name, None)
    importlib.invalidate_caches()


def child_env(env: dict[str, str], site: Path) -> dict[str, str]:
    return {**env, "PYTHONPATH": os.pathsep.join((str(site), env["PYTHONPATH"])), "COLUMNS": "200"}


def run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "memstrata", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


@pytest.mark.slow
def test_installed_plugin_through_the_cli(
    tmp_path: Path, tiny_site: Path, subprocess_env: dict[str, str]
) -> None:
    env = child_env(subprocess_env, tiny_site)
    db = str(tmp_path / "m.db")

    listed = {r["name"]: r for r in json.loads(run(env, tmp_path, "recipes", "--json").stdout)}
    assert set(listed) >= BUILTIN_RECIPES
    tiny = listed["tiny"]
    assert tiny["builders"] == ["keywords"] and tiny["routes"] == ["keywords", "system1"]
    assert tiny["origin"] == "tiny" and tiny["answerer"] == "grounded"

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    assert "imported 3 new" in run(env, tmp_path, "import", str(src), "--db", db).stdout
    (report,) = json.loads(
        run(env, tmp_path, "build", "--db", db, "--recipe", "tiny", "--json").stdout
    )
    assert report["builder"] == "keywords" and report["episodes"] == 3
    assert report["failed"] == 0 and report["counts"] == {"keyword_set": 3}

    found = run(
        env,
        tmp_path,
        "search",
        "what grows on the balcony?",
        *("--db", db, "--recipe", "tiny", "-k", "3", "--json", "--explain"),
    )
    line = json.loads(found.stdout)
    assert line["pending"] == 0
    hits = line["hits"]
    why = hits[0].pop("why")
    assert why["fused"] == pytest.approx(2.0 / 61, abs=1e-6)  # weight 2 at rank 1, rrf_k 60
    assert 0.0 < hits[0].pop("score") < 1.0 and why["similarity"] is not None
    assert hits[0] == {
        "kind": "keyword_set",
        "text": THESES["1"],
        "sources": ["1"],
        "ranks": {"keywords": 1},
        "routes": ["keywords"],
    }
    assert [h["kind"] for h in hits[1:]] == ["episode", "episode"]
    assert hits[1]["sources"] == ["1"] and hits[1]["ranks"] == {"system1": 1}

    shown = run(env, tmp_path, "show", "Balcony", "--db", db).stdout
    assert "keyword balcony" in shown and f"{THESES['1']} [1]" in shown


def test_installed_plugin_through_the_api(
    tmp_path: Path, tiny_site: Path, on_path: Callable[[Path], None], embedder
) -> None:
    on_path(tiny_site)
    with Memory.open(tmp_path / "m.db", embedder=embedder, recipe="tiny") as m:
        m.add_many(ROWS)  # inline mode: the plug-in's builder runs inside add_many
        ns = m.stats()["namespaces"][0]
        assert ns["records"] == {"keyword_set": 3}
        assert ns["builds"]["keywords"]["done"] == 3

        r = m.search("who is learning to fly?", recipe="tiny", k=3, max_tokens=None)
        assert r.pending == 0
        assert [h.kind for h in r.hits] == ["keyword_set", "episode", "episode"]
        thesis = r.hits[0]
        assert thesis.text == THESES["2"] and thesis.sources == ["2"]
        assert thesis.ranks == {"keywords": 1} and thesis.spans[0].end == len(ROWS[1]["text"])
        assert r.hits[1].sources == ["2"] and r.hits[1].ranks == {"system1": 1}
        assert [e.id for e in m.get(thesis.sources)] == ["2"]
        # the configured recipe is the plug-in's: search and ask use it by default
        assert m.search("Biscuit the cat", k=1).hits[0].text == THESES["3"]

        answer = m.ask("Who is learning to fly?")
        assert answer.extractive and not answer.abstained
        assert "2" in answer.sources and any(h.kind == "keyword_set" for h in answer.hits)

        (node,) = m.show("biscuit")
        assert node.text == "keyword biscuit"
        assert [c.text for c in node.children] == [f"{THESES['3']} [3]"]
        assert m.show("nothing-by-this-name") == []

        recipes = {r["name"]: r for r in m.recipes()}
        assert recipes["tiny"]["origin"] == "tiny" and set(recipes) >= BUILTIN_RECIPES


def test_plugins_are_invisible_when_not_installed() -> None:
    reg = Registry.load()
    assert "tiny" not in reg.recipes and "keywords" not in reg.routes and reg.errors == []


def test_broken_plugin_leaves_the_library_working(
    broken_site: Path, on_path: Callable[[Path], None]
) -> None:
    on_path(broken_site)
    reg = Registry.load()
    assert set(reg.recipes) >= BUILTIN_RECIPES and "broken" not in reg.recipes
    assert {"system1", "records", "mnemis"} <= set(reg.routes)
    (problem,) = reg.errors
    assert problem.startswith("broken")
    assert "tiny_broken fails on import" in problem or "no-such-route" in problem
    assert Config.load(env={}, recipe="mnemis").recipe == "mnemis"


@pytest.mark.slow
def test_broken_plugin_makes_the_cli_warn_not_fail(
    tmp_path: Path, broken_site: Path, subprocess_env: dict[str, str]
) -> None:
    proc = run(child_env(subprocess_env, broken_site), tmp_path, "recipes")
    assert "default" in proc.stdout and "mnemis" in proc.stdout
    warning = " ".join(proc.stderr.split())
    assert "a design plug-in did not load: broken" in warning
