"""Names in every language and script, found whole by the heuristic build and by
``show`` (issue 59, item 1)."""

from __future__ import annotations

from pathlib import Path

from tests.designs.multilingual import names_everywhere


def test_names_in_every_script_are_mnemis_entities_and_show_finds_them(
    tmp_path: Path, embedder
) -> None:
    names_everywhere(tmp_path, embedder, "mnemis", "entity", "name")
