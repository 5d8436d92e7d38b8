"""4 writers, 2 workers and a searcher on one store at once, for 10 seconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.embed import MiniLMEmbedder
from memstrata.eval import faults_concurrency


@pytest.mark.slow
def test_writers_workers_and_a_searcher_at_once(
    tmp_path: Path, embedder: MiniLMEmbedder, child_env: dict[str, str]
) -> None:
    report = faults_concurrency.run(tmp_path, child_env, embedder, recipe="mnemis", seconds=10)
    assert report.errors == []
    assert report.adds > 0 and report.repeated_adds > 0 and report.searches > 0
    assert report.visible_once == report.adds  # each add stored once, with its text
    assert report.episodes == report.adds + faults_concurrency.SEED_TURNS + 2
    assert report.built == report.episodes  # the drain left nothing queued
    assert report.problems == {}
