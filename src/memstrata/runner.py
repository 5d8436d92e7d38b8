"""The synchronous facades (:class:`~memstrata.Memory`, :class:`~memstrata.RemoteMemory`):
an async core run on one event loop that lives on a private thread.

A facade that runs its core with ``loop.run_until_complete`` on a loop of its own
breaks as soon as two threads call it at once ("This event loop is already running"),
and a facade shared by the threads of a web application is the common case. Here the
loop runs forever on a daemon thread of its own and each call is handed to it with
``run_coroutine_threadsafe``; the calling thread waits for the result. Calls from many
threads run side by side on that loop, as the async core allows (it is what a server's
requests do), and a facade also works from inside someone else's running loop.

The verbs are made from the core's own (:func:`blocking`): one definition, so the sync
and async signatures, defaults and docstrings cannot drift apart.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import itertools
import threading
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_names = itertools.count(1)


class LoopThread:
    """An event loop running on its own thread until :meth:`close`. ``closed`` makes the
    error a call after close raises."""

    def __init__(self, closed: Callable[[], Exception]) -> None:
        self._closed_error = closed
        self._loop = asyncio.new_event_loop()
        self._lock = threading.Lock()
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._closed = False
        self._thread = threading.Thread(
            target=self._serve, name=f"memstrata-loop-{next(_names)}", daemon=True
        )
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result (or its exception), from any
        thread but the loop's own."""
        with self._lock:
            if self._closed or threading.current_thread() is self._thread:
                coro.close()  # never started: no "was never awaited" warning
                if self._closed:
                    raise self._closed_error()
                raise RuntimeError(
                    "a synchronous facade was called from its own event loop; await the "
                    "async class there (AsyncMemory, AsyncRemoteMemory)"
                )
            future = asyncio.run_coroutine_threadsafe(coro, self._loop)
            self._pending.add(future)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # interrupted while waiting (Ctrl-C): the call stops too
            raise
        finally:
            with self._lock:
                self._pending.discard(future)

    def close(self, last: Callable[[], Coroutine[Any, Any, Any]] | None = None) -> None:
        """Let the calls already handed over finish, run ``last()`` (the core's close),
        then stop the loop and join its thread. Closing twice is harmless."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pending = list(self._pending)
        if threading.current_thread() is self._thread:
            # on the loop itself (the collector ran a dropped facade's finalizer here):
            # waiting would never end, so the close runs as a task that stops the loop
            self._loop.create_task(_then_stop(last, self._loop))
            return
        try:
            concurrent.futures.wait(pending)
            if last is not None:
                asyncio.run_coroutine_threadsafe(last(), self._loop).result()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()


async def _then_stop(
    last: Callable[[], Coroutine[Any, Any, Any]] | None, loop: asyncio.AbstractEventLoop
) -> None:
    try:
        if last is not None:
            await last()
    finally:
        loop.stop()


class Blocking:
    """Base of a synchronous facade over the async ``_inner``; use ``with``, or call
    :meth:`close`. Safe to share between threads."""

    _inner: Any
    _runner: LoopThread

    def _start(self, inner: Any, runner: LoopThread) -> None:
        self._inner = inner
        self._runner = runner
        # a facade dropped without close still ends its thread (and closes the core)
        weakref.finalize(self, runner.close, inner.close).atexit = False

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._runner.run(coro)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection or store, then the facade's thread; closing twice is
        harmless, any other verb after it raises :class:`~memstrata.StoreClosedError`."""
        self._runner.close(self._inner.close)


def blocking(
    verb: Callable[Concatenate[Any, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[Blocking, P], T]:
    """The synchronous twin of the async method ``verb``: the same name, signature and
    docstring, run on the facade's loop with the facade's own core."""

    @functools.wraps(verb)
    def call(self: Blocking, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(verb(self._inner, *args, **kwargs))

    return call
