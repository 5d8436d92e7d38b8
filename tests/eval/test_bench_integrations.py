"""``memstrata bench integrations`` measures both paths on the same work: each writes,
reads and searches its own copy of the items (in process here; the command adds REST)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.embed import MiniLMEmbedder
from memstrata.eval import bench_integrations as bi


@pytest.mark.parametrize("adapter", sorted(set(bi.PROBES) - bi.APART))
def test_both_paths_do_the_same_work(
    tmp_path: Path, embedder: MiniLMEmbedder, adapter: str
) -> None:
    same_work(tmp_path, embedder, adapter)


def same_work(tmp_path: Path, embedder: MiniLMEmbedder, adapter: str) -> None:
    """The check, also run for the adapters measured in a venv of their own (there)."""
    with Memory.open(tmp_path / "m.db", embedder=embedder) as memory:
        report = bi.measure(memory, adapter, 12, 4)
        # the bare verbs' namespace, and the adapter's (named as its framework maps it)
        (ours,) = [ns for ns in memory.namespaces() if ns != bi.BARE]
        assert ours in ("bench.a", "bench/a", "/bench.a") and bi.BARE in memory.namespaces()
        for ns in (ours, bi.BARE):
            assert len(memory.list(namespace=ns).episodes) == 12
        mine = sorted(e.text.replace(" (a)", "") for e in memory.list(namespace=ours).episodes)
        theirs = sorted(e.text.replace(" (b)", "") for e in memory.list(namespace=bi.BARE).episodes)
        assert mine == theirs
    calls = {v: row["calls"] for v, row in report.items()}
    assert calls["put"] == 12 and calls["search"] == 4 and calls.get("get", 4) == 4
    text = bi.markdown(
        {"items": 12, "queries": 4, "adapters": {adapter: {"in-process": report, "rest": report}}}
    )
    assert text.count(f"| {adapter} | in-process |") == len(report)
    assert text.count(f"| {adapter} | rest |") == len(report)


def test_an_unknown_adapter_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown adapters"):
        bi.run(tmp_path, adapters=["nope"])
