"""Names in every language and script: ``show`` finds the leaves that hold them, however
the name is typed, Chinese and Japanese in sentences without spaces included (issue 59,
item 1)."""

from __future__ import annotations

from pathlib import Path

from tests.designs.multilingual import names_everywhere


def test_show_finds_the_leaves_holding_a_name_in_any_script(tmp_path: Path, embedder) -> None:
    leaves = names_everywhere(tmp_path, embedder, "memtree", "tree_node")
    assert any("東京に住んでいます" in n.content for n in leaves)
