"""Fixtures of the service tests (see service_helpers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from service_helpers import served

import pgtest

__all__ = ["served", "store_url"]


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store of each backend: an SQLite file, or a PostgreSQL database of its own
    (its URL holds the server's password)."""
    if request.param == "sqlite":
        yield str(tmp_path / "served.db")
        return
    try:
        yield pgtest.database_url(tmp_path)
    finally:
        pgtest.drop(tmp_path)
