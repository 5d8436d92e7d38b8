"""A recipe written only in the TOML configuration runs end to end.

``facts-first`` is System-1 over Mnemis facts and over episodes, with its own weights,
RRF constant, budgets and kind order, and it is the configured recipe, so inline mode
builds its Mnemis structures inside ``add_many``. Variants in the same file show that the
weights reach the fusion. An invalid recipe is refused when the configuration loads,
with a message that names the problem.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Config
from memstrata.errors import ConfigError
from memstrata.importers import jsonl
from memstrata.memory import Memory
from memstrata.models import Hit

SAMPLE = Path(str(resources.files("memstrata.data").joinpath("sample_conversation.jsonl")))
RRF_K = 30
QUERIES = ["Where is Maya flying for the conference?", "What pet did Tomas adopt?"]

FUSION = (
    f"fusion = {{ rrf_k = {RRF_K}, budgets = {{ episode = 1, fact = 2 }}, "
    'kind_order = ["fact", "episode"] }'
)


def facts_first(name: str, fact_weight: float) -> str:
    return f"""
[recipes.{name}]
description = "System-1 over facts and episodes, facts weighted up"
builders = [{{ name = "mnemis" }}]
routes = [
  {{ name = "records", params = {{ kind = "fact" }}, weight = {fact_weight} }},
  {{ name = "system1", weight = 1.0 }},
]
{FUSION}
"""


def two_fact_routes(name: str, dense: float, words: float) -> str:
    """Facts ranked by a dense-only and a BM25-only records route, weighted ``dense`` and
    ``words``: which one leads the fused order depends on the weights alone."""
    return f"""
[recipes.{name}]
builders = [{{ name = "mnemis" }}]
routes = [
  {{ name = "records", params = {{ kind = "fact", bm25_weight = 0.0 }}, weight = {dense} }},
  {{ name = "records", params = {{ kind = "fact", dense_weight = 0.0 }}, weight = {words} }},
]
{FUSION}
"""


TOML = (
    'recipe = "facts-first"\n'
    + facts_first("facts-first", 2.0)
    + facts_first("facts-unweighted", 0.0)
    + two_fact_routes("facts-by-meaning", 1.0, 0.0)
    + two_fact_routes("facts-by-words", 0.0, 1.0)
)

INVALID = {
    "unknown route": (
        '{ name = "no-such-route" }',
        ["recipe 'facts-first' names parts no design provides: no-such-route"],
    ),
    "bad param type": (
        '{ name = "records", params = { kind = "fact", candidates = "many" } }',
        ["recipe 'facts-first': route 'records': invalid parameters", "candidates"],
    ),
    "unknown param": (
        '{ name = "records", params = { kind = "fact", colour = "red" } }',
        ["recipe 'facts-first': route 'records': invalid parameters", "colour"],
    ),
    "unknown key": (
        '{ name = "records", colour = "red" }',
        ["unknown key 'recipes.facts-first.routes.1.colour'", "valid keys here: name, params"],
    ),
}


@pytest.fixture
def toml(tmp_path: Path) -> Path:
    path = tmp_path / "memstrata.toml"
    path.write_text(TOML)
    return path


def sample() -> list[dict[str, Any]]:
    return [item for _, item in jsonl.read(SAMPLE) if isinstance(item, dict)]


def kinds(hits: list[Hit]) -> list[str]:
    return [h.kind for h in hits]


def fused(hit: Hit) -> float:
    """The recipe's fused score of a hit (``score`` is its relevance)."""
    assert hit.why is not None
    return hit.why.fused


def test_toml_recipe_runs_end_to_end(tmp_path: Path, toml: Path, embedder) -> None:
    cfg = Config.load(toml, env={})
    assert cfg.recipe == "facts-first" and cfg.build_mode == "inline"
    k = 9
    with Memory.open(tmp_path / "m.db", embedder=embedder, config=cfg) as m:
        m.add_many(sample())  # inline: the configured recipe's mnemis builder runs here
        ns = m.stats()["namespaces"][0]
        assert ns["builds"]["mnemis"]["done"] == 32 and ns["records"]["fact"] > 5

        listed = {r["name"]: r for r in m.recipes()}
        assert listed["facts-first"] == {
            "name": "facts-first",
            "description": "System-1 over facts and episodes, facts weighted up",
            "builders": ["mnemis"],
            "routes": ["records", "system1"],
            "answerer": "grounded",
            "origin": "config",
        }

        for query in QUERIES:
            r = m.search(query, k=k, max_tokens=None)  # the configured recipe
            assert r.pending == 0
            facts = [h for h in r.hits if h.kind == "fact"]
            episodes = [h for h in r.hits if h.kind == "episode"]
            # kind_order: every fact, then every episode; budgets: facts 2, episodes 1 of k
            assert kinds(r.hits) == ["fact"] * len(facts) + ["episode"] * len(episodes)
            assert len(facts) == 2 * k // 3 and len(episodes) == k // 3  # enough of both
            for h in facts:
                assert h.sources and h.spans and h.ranks.keys() == {"records"}
                cited = m.get(h.sources)
                assert [e.id for e in cited] == h.sources
                span = h.spans[0]
                assert span.end <= len(next(e.text for e in cited if e.id == span.episode))
            assert all(h.ranks.keys() == {"system1"} for h in episodes)

            # Each kind comes from one route here, so its fused score is exactly
            # weight / (rrf_k + rank): facts carry the TOML weight 2, episodes weight 1.
            for h in facts:
                assert fused(h) == pytest.approx(2.0 / (RRF_K + h.ranks["records"]), abs=1e-6)
            for h in episodes:
                assert fused(h) == pytest.approx(1.0 / (RRF_K + h.ranks["system1"]), abs=1e-6)
            assert min(fused(h) for h in facts) > max(fused(h) for h in episodes)

            # Weight 0: the same facts (ties keep the route's order), all scored 0;
            # the episodes are untouched.
            zero = m.search(query, k=k, max_tokens=None, recipe="facts-unweighted")
            zf = [h for h in zero.hits if h.kind == "fact"]
            assert [h.id for h in zf] == [h.id for h in facts]
            assert {fused(h) for h in zf} == {0.0}
            assert [(h.id, fused(h)) for h in zero.hits if h.kind == "episode"] == [
                (h.id, fused(h)) for h in episodes
            ]

        # Two routes over the same kind: the weights alone decide which one's ranking leads.
        query = QUERIES[0]
        orders = {}
        for name, led_by in (("facts-by-meaning", "records#1"), ("facts-by-words", "records#2")):
            r = m.search(query, k=k, max_tokens=None, recipe=name)
            assert kinds(r.hits) == ["fact"] * k  # no episode route: the facts fill k
            leading = [h.ranks[led_by] for h in r.hits if led_by in h.ranks]
            assert leading == sorted(leading) and leading[0] == 1
            orders[name] = [h.id for h in r.hits]
        assert orders["facts-by-meaning"] != orders["facts-by-words"]

        answer = m.ask(QUERIES[0], k=k)
        assert answer.extractive and answer.sources
        assert set(answer.sources) <= {s for h in answer.hits for s in h.sources}


def run(
    env: dict[str, str], cwd: Path, *args: str, ok: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "memstrata", *args],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "300"},
        cwd=cwd,
        timeout=300,
    )
    if ok:
        assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


@pytest.mark.slow
def test_toml_recipe_through_the_cli(
    tmp_path: Path, toml: Path, subprocess_env: dict[str, str]
) -> None:
    env, conf, db = subprocess_env, ("--config", str(toml)), ("--db", str(tmp_path / "m.db"))
    listed = {
        r["name"]: r for r in json.loads(run(env, tmp_path, "recipes", "--json", *conf).stdout)
    }
    assert listed["facts-first"]["origin"] == "config"
    assert listed["facts-first"]["routes"] == ["records", "system1"]
    assert {"default", "mnemis", "facts-unweighted"} <= set(listed)

    assert "imported 32 new" in run(env, tmp_path, "import", str(SAMPLE), *conf, *db).stdout
    found = run(
        env,
        tmp_path,
        "search",
        QUERIES[1],
        *(*conf, *db, "--recipe", "facts-first", "-k", "6", "--json", "--explain"),
    )
    line = json.loads(found.stdout)
    assert line["pending"] == 0  # built inline by the import: facts-first is configured
    hits = line["hits"]
    assert [h["kind"] for h in hits] == ["fact"] * 4 + ["episode"] * 2
    assert all(h["sources"] for h in hits)
    assert hits[0]["ranks"] == {"records": 1} and hits[-1]["ranks"].keys() == {"system1"}
    assert hits[0]["why"]["fused"] == pytest.approx(2.0 / (RRF_K + 1), abs=1e-6)
    assert 0.0 < hits[0]["score"] < 1.0


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_toml_recipe_is_a_clear_config_error(tmp_path: Path, case: str) -> None:
    route, expected = INVALID[case]
    path = tmp_path / "bad.toml"
    path.write_text(TOML.replace('{ name = "system1", weight = 1.0 }', route, 1))
    with pytest.raises(ConfigError) as err:
        cfg = Config.load(path, env={})  # a recipe's shape is checked as the file is read,
        Memory.open(tmp_path / "m.db", config=cfg)  # its routes when a memory opens
    assert not (tmp_path / "m.db").exists()
    message = str(err.value)
    assert message.startswith("invalid configuration: ")
    for piece in expected:
        assert piece in message


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_toml_recipe_makes_search_exit_2(
    tmp_path: Path, case: str, subprocess_env: dict[str, str]
) -> None:
    route, expected = INVALID[case]
    path = tmp_path / "bad.toml"
    path.write_text(TOML.replace('{ name = "system1", weight = 1.0 }', route, 1))
    proc = run(
        subprocess_env,
        tmp_path,
        "search",
        "anything",
        *("--config", str(path), "--db", str(tmp_path / "m.db")),
        ok=False,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    message = " ".join(proc.stderr.split())
    assert message.startswith("error: invalid configuration: ")
    for piece in expected:
        assert piece in message
    assert not (tmp_path / "m.db").exists()  # refused before anything was opened
