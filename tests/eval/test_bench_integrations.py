"""``memstrata bench integrations`` measures both paths on the same work: each writes,
reads and searches its own copy of the items (in process here; the command adds REST)."""

from __future__ import annotations

from pathlib import Path

from memstrata import Memory
from memstrata.embed import MiniLMEmbedder
from memstrata.eval import bench_integrations as bi


def test_both_paths_do_the_same_work(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as memory:
        report = bi.measure(memory, 12, 4)
        assert memory.namespaces() == ["bench.a", "bench.b"]
        for ns in ("bench.a", "bench.b"):
            assert len(memory.list(namespace=ns).episodes) == 12
        adapter = memory.get("k00003", namespace="bench.a")[0]
        bare = memory.get("k00003", namespace="bench.b")[0]
        assert adapter.text.replace(" (a)", "") == bare.text.replace(" (b)", "")
    assert {v: row["calls"] for v, row in report.items()} == {"put": 12, "get": 4, "search": 4}
    text = bi.markdown({"items": 12, "queries": 4, "in-process": report, "rest": report})
    assert text.count("| in-process |") == 3 and text.count("| rest |") == 3
