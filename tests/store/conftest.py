"""Fixtures of the store tests: every test taking ``store`` or ``open_backend`` runs once per
backend of ``test_conformance.BACKENDS``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_conformance import BACKENDS

import pgtest
from memstrata.store import Store


@pytest.fixture(params=sorted(BACKENDS))
def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Opens (another) store object on this test's data; all are closed at teardown."""
    opened: list[Store] = []

    def factory() -> Store:
        s = BACKENDS[request.param](tmp_path)
        opened.append(s)
        return s

    yield factory
    for s in opened:
        s.close()
    if request.param == "postgres":
        pgtest.drop(tmp_path)


@pytest.fixture
def store(open_backend: Callable[[], Store]) -> Store:
    return open_backend()
