"""One build off the search path, taken by a later search once it is done.

The SQLite store's vector graph and full-text index are both written this way: a search
that finds its index missing or behind starts a build on a thread and goes on with the
exact path; a later search takes the finished index. A build that raises is logged and
not tried again by this connection, so the exact path keeps answering.

A build is never left running when its process ends: the builds are in native code
(usearch, tantivy) on threads of their own, and an interpreter that exits under them
aborts (``terminate called without an active exception``, exit 134). Closing the store
abandons its running builds, and so does the end of the process for a store never closed:
each build looks at its :class:`BuildControl` between steps, stops there and leaves no
file behind (what it writes is named by a manifest replaced last).
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

logger = logging.getLogger(__name__)


class BuildAbandoned(Exception):
    """Raised inside a build that was asked to stop; it ends the build quietly."""


class BuildControl:
    """What a running build and the rest of the process share: a request to stop, and how
    far the build has come (``done`` of ``total`` steps, vectors or documents)."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self.done = 0
        self.total = 0
        #: called with (done, total) as the build moves (``memstrata build``'s progress),
        #: about every 1% of it: usearch reports every vector
        self.listener: Callable[[int, int], None] | None = None
        self._told = 0

    @property
    def abandoned(self) -> bool:
        return self._stop.is_set()

    def abandon(self) -> None:
        self._stop.set()

    def check(self) -> None:
        """Raise :class:`BuildAbandoned` once a stop was asked for."""
        if self._stop.is_set():
            raise BuildAbandoned

    def advance(self, done: int, total: int) -> bool:
        """Record progress; False once the build should stop (usearch's progress callback
        takes that as the signal to end the insert)."""
        self.done, self.total = done, total
        listener = self.listener
        if listener is not None and (done - self._told >= max(1, total // 100) or done >= total):
            self._told = done
            listener(done, total)
        return not self._stop.is_set()

    def each(self, items: Iterable[R], total: int, every: int = 256) -> Iterator[R]:
        """``items``, with a stop check and a progress step every ``every`` of them."""
        n = 0
        for item in items:
            yield item
            n += 1
            if n % every == 0:
                self.check()
                self.advance(n, total)
        self.advance(n, max(total, n))


_RUNNING: weakref.WeakSet[Background[object]] = weakref.WeakSet()


class Background(Generic[T]):
    """At most one running build, and what it made until someone takes it."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._made: T | None = None
        self.control = BuildControl()
        self.failed = False
        self.abandoned = False  # the last build was stopped before its end

    @property
    def pending(self) -> bool:
        """A build was started and its result not taken yet (running or finished)."""
        return self._thread is not None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(
        self,
        name: str,
        work: Callable[[BuildControl], T | None],
        logger: logging.Logger,
        failure: str,
    ) -> None:
        """Run ``work`` on a daemon thread; ``None`` from it means nothing to take (another
        process is writing the same index). ``failure`` is logged with the traceback."""
        if self._thread is not None:
            raise RuntimeError(f"{name}: a build is already pending")
        control = self.control = BuildControl()
        self.abandoned = False

        def run() -> None:
            try:
                self._made = work(control)
            except BuildAbandoned:
                self.abandoned = True
                logger.info("%s: build abandoned (the store was closed or the process ended)", name)
            except Exception:
                if control.abandoned:  # a native step that stopped on the request
                    self.abandoned = True
                    logger.info("%s: build abandoned", name)
                else:
                    self.failed = True
                    logger.exception(failure)

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        _RUNNING.add(self)  # type: ignore[arg-type]
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
        """Let a running build finish (``memstrata build``, benchmarks and tests; searches
        never wait)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def abandon(self) -> None:
        """Ask a running build to stop and wait until it has: its result is dropped and
        nothing it wrote is named by a manifest."""
        thread = self._thread
        if thread is None:
            return
        self.control.abandon()
        thread.join()


def abandon_all() -> None:
    """Stop every build of this process that still runs (at exit)."""
    for job in list(_RUNNING):
        if job.running:
            job.abandon()


# Runs before the interpreter tears down under the daemon threads (atexit handlers come
# after the wait for non-daemon threads, while daemon ones still run).
atexit.register(abandon_all)
