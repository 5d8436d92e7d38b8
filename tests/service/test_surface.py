"""The service's outside stays as it was: the OpenAPI document and the MCP tool list
(names, descriptions, schemas, order) are compared with the copies in ``surface/``, text
for text. Run this file as a script to write the copies again after a deliberate change."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from memstrata.config import Config
from memstrata.service.mcp_optional import mcp_missing_reason

HERE = Path(__file__).parent / "surface"


def openapi_text(store: Path) -> str:
    from memstrata.service import create_app

    return json.dumps(create_app(Config.load(store=str(store))).openapi(), indent=1) + "\n"


def mcp_text(store: Path) -> str:
    from memstrata.service.mcp import build_server

    server = build_server(Config.load(store=str(store)))
    tools: list[Any] = asyncio.run(server.list_tools())
    shown = {
        "name": server.name,
        "instructions": server.instructions,
        "tools": [t.model_dump(mode="json", exclude_none=True) for t in tools],
    }
    return json.dumps(shown, indent=1) + "\n"


def test_the_openapi_document_is_unchanged(tmp_path: Path) -> None:
    assert openapi_text(tmp_path / "m.db") == (HERE / "openapi.json").read_text()


def test_the_mcp_tools_are_unchanged(tmp_path: Path) -> None:
    why = mcp_missing_reason()
    assert why is None, why  # the suite's venv has the extra `mcp` (make test installs it)
    assert mcp_text(tmp_path / "m.db") == (HERE / "mcp_tools.json").read_text()


if __name__ == "__main__":  # write the copies: python tests/service/test_surface.py
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        (HERE / "openapi.json").write_text(openapi_text(Path(tmp) / "m.db"))
        (HERE / "mcp_tools.json").write_text(mcp_text(Path(tmp) / "m.db"))
    sys.exit(0)
