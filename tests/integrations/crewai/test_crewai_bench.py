"""``memstrata bench integrations --adapter crewai`` (run in this venv) measures the
adapter and the bare verbs on the same work."""

from __future__ import annotations

from pathlib import Path

from tests.eval.test_bench_integrations import same_work

from memstrata.embed import MiniLMEmbedder


def test_the_crewai_probe_does_the_bare_verbs_work(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    same_work(tmp_path, embedder, "crewai")
