"""One build off the search path, taken by a later search once it is done.

The SQLite store's vector graph and full-text index are both written this way: a search
that finds its index missing or behind starts a build on a thread and goes on with the
exact path; a later search takes the finished index. A build that raises is logged and
not tried again by this connection, so the exact path keeps answering.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """At most one running build, and what it made until someone takes it."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._made: T | None = None
        self.failed = False

    @property
    def pending(self) -> bool:
        """A build was started and its result not taken yet (running or finished)."""
        return self._thread is not None

    def start(
        self, name: str, work: Callable[[], T | None], logger: logging.Logger, failure: str
    ) -> None:
        """Run ``work`` on a daemon thread; ``None`` from it means nothing to take (another
        process is writing the same index). ``failure`` is logged with the traceback."""
        if self._thread is not None:
            raise RuntimeError(f"{name}: a build is already pending")

        def run() -> None:
            try:
                self._made = work()
            except Exception:
                self.failed = True
                logger.exception(failure)

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def take(self) -> T | None:
        """The finished build's result, once (``None`` while it runs or if it made none);
        after this a new build may start."""
        thread = self._thread
        if thread is None or thread.is_alive():
            return None
        self._thread = None
        made, self._made = self._made, None
        return made

    def wait(self, timeout: float | None = None) -> None:
        """Let a running build finish (benchmarks and tests; searches never wait)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
