"""Names in every language and script: turn keywords that hold them whole, and ``show``
that finds the turns by them (issue 59, item 1)."""

from __future__ import annotations

from pathlib import Path

from tests.designs.multilingual import expected, names_everywhere

from memstrata.designs.higmem.records import TurnNote


def test_names_in_every_script_are_keywords_and_show_finds_them(tmp_path: Path, embedder) -> None:
    notes = names_everywhere(tmp_path, embedder, "higmem", "turn_note")
    keywords = {k for n in notes if isinstance(n, TurnNote) for k in n.keywords}
    words = {w.casefold() for name in expected() for w in name.replace("-", " ").split()}
    assert not words - keywords, sorted(words - keywords)
    assert not {"caf", "jos", "z", "mlad"} & keywords
