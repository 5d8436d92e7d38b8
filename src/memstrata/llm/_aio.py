"""Per-event-loop asyncio primitives.

asyncio locks and semaphores bind to the loop that first waits on them, so an object that
outlives one ``asyncio.run`` (a CLI calling it twice, a test suite) would fail on the next.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

P = TypeVar("P")


class LoopLocal(Generic[P]):
    """Lazily builds one ``P`` for the running loop and rebuilds it when the loop changes."""

    def __init__(self, factory: Callable[[], P]) -> None:
        self._factory = factory
        self._loop: asyncio.AbstractEventLoop | None = None
        self._value: P | None = None

    def get(self) -> P:
        loop = asyncio.get_running_loop()
        if self._value is None or self._loop is not loop:
            self._loop, self._value = loop, self._factory()
        return self._value
