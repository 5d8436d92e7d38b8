"""``memstrata bench explorer`` on small stores: the bundled conversation as a LoCoMo
file built by every recipe, and a 300-entity synthetic Mnemis graph; every check of the
page ran and passed, nothing in the console. Counts are asserted, never times."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.cli.main import app
from memstrata.eval import bench_explorer as be
from memstrata.eval import explorer_stores, invariants
from memstrata.importers import jsonl
from memstrata.store import open_store

pytestmark = pytest.mark.slow  # a server, a browser and five builds


def locomo_file(folder: Path) -> Path:
    """The bundled conversation in LoCoMo's format: two sessions, one question."""
    path = resources.files("memstrata.data").joinpath("sample_conversation.jsonl")
    turns = [item for _, item in jsonl.read(Path(str(path))) if isinstance(item, dict)]
    sessions: dict[str, list[dict[str, str]]] = {}
    for n, turn in enumerate(turns):
        session = f"session_{1 + n * 2 // len(turns)}"
        dia = f"D{session[-1]}:{len(sessions.get(session, [])) + 1}"
        sessions.setdefault(session, []).append(
            {"speaker": turn["speaker"], "dia_id": dia, "text": turn["text"]}
        )
    conversation: dict[str, object] = {"speaker_a": "Maya", "speaker_b": "Tomas"}
    for name, said in sessions.items():
        conversation[name] = said
        conversation[f"{name}_date_time"] = "10:15 am on 2 March, 2024"
    question = {"question": "What is the name of Tomas's dog?", "answer": "Pepper"}
    sample = {
        "sample_id": "sample",
        "conversation": conversation,
        "qa": [{**question, "evidence": ["D1:6"], "category": 4}],
    }
    folder.mkdir()
    (folder / "locomo-dev.json").write_text(json.dumps([sample]))
    return folder


def test_every_view_checks_out_and_the_graph_is_drawn(tmp_path: Path) -> None:
    db = tmp_path / "explorer.db"
    report = be.run(
        data=locomo_file(tmp_path / "locomo"),
        entities=300,
        limits=(be.PAGE_LIMIT, 300),
        loads=1,
        graph_loads=1,
        db=db,
    )
    rows = report["views"]
    namespaces = {r["namespace"] for r in rows}
    assert namespaces == {f"sample-{r}" for r in explorer_stores.RECIPES}
    for ns in namespaces:
        views = {r["view"] for r in rows if r["namespace"] == ns}
        assert {"namespaces", "episodes", "search", "ask"} < views
        assert any(v.startswith("designs: ") for v in views), ns
    assert {r["view"] for r in rows} >= {
        "designs: mnemis-graph",
        "designs: mnemis-categories",
        "designs: memtree",
        "designs: mindgraph",
        "designs: personalai",
        "designs: higmem",
    }
    assert all(r["total"] > 0 and r["failed"] == [] for r in rows), [
        (r["namespace"], r["view"], r["failed"]) for r in rows if r["failed"]
    ]
    assert [c for r in rows for c in r["console"]] == []
    assert sum(r["total"] for r in rows) == sum(r["passed"] for r in rows) > 60

    graphs = report["graph"]
    assert [(g["limit"], g["nodes"], g["total_nodes"]) for g in graphs] == [
        (150, 150, 300),
        (300, 300, 300),
    ]
    assert all(g["circles_ok"] and g["console"] == [] and g["edges"] > 0 for g in graphs)
    assert not be.failed(report)

    store = open_store(db)  # the synthetic records' provenance and links are sound
    try:
        ns = report["synthetic"]["namespace"]
        findings = invariants.Findings()
        episodes = invariants.all_episodes(store, ns)
        records = invariants.check_records(store, ns, "mnemis", episodes, findings)
        assert not (findings.dangling or findings.orphans or findings.duplicates)
        assert (
            len(records) == 300 + report["synthetic"]["facts"] + report["synthetic"]["categories"]
        )
    finally:
        store.close()


def test_the_command_needs_something_to_look_at() -> None:
    result = CliRunner().invoke(app, ["bench", "explorer"])
    assert result.exit_code == 2 and "--data, --entities or both" in result.output
