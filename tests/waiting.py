"""Waiting on a condition, never for a time.

A test that needs another process or thread to get somewhere (a server up, a batch
committed, a job ended) waits until it can see that it has: the check is repeated
until it holds. The deadline is a safety net that turns a hang into a failure naming
what never happened; no test passes or fails by how long something took.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
import pytest

T = TypeVar("T")

#: generous: a loaded 2-core CI machine starts a server in seconds, not minutes
DEADLINE_S = 120.0


def until(
    check: Callable[[], T | None],
    what: str | Callable[[], str],
    *,
    timeout: float = DEADLINE_S,
    every: float = 0.01,
) -> T:
    """``check()``'s first truthy value. ``what`` names the awaited state for the failure
    message (a callable is asked only then, e.g. to read a child's log)."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what() if callable(what) else what}")
        time.sleep(every)  # the poll interval: how often to look, not how long to wait


async def until_async(
    check: Callable[[], Awaitable[T | None]],
    what: str,
    *,
    timeout: float = DEADLINE_S,
    every: float = 0.01,
) -> T:
    """:func:`until` for a check that is awaited, on the caller's event loop."""
    deadline = time.monotonic() + timeout
    while True:
        got = await check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(every)  # the poll interval


def until_served(
    url: str,
    proc: subprocess.Popen[Any],
    output: Callable[[], str],
    *,
    timeout: float = DEADLINE_S,
) -> None:
    """Wait until ``url`` answers 200, as the server ``proc`` starts. If it exits first,
    or never answers (it is then killed), the failure quotes ``output()``, what the
    server wrote."""

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited ({proc.returncode}):\n{output()}")
        try:
            return httpx.get(url, timeout=2.0).status_code == 200
        except httpx.TransportError:
            return False

    try:
        until(up, url, timeout=timeout, every=0.05)
    except AssertionError:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            raise AssertionError(f"{url} never answered:\n{output()}") from None
        raise


class Clock:
    """Time that passes only when code sleeps on it (or the test calls :meth:`advance`),
    at once. It stands for both clocks a lease is timed by: ``monotonic`` and ``sleep``
    are handed to the code that waits, and the wall clock the stores date leases by
    (``time.time``) is moved along with them for the test's duration."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.passed = 0.0
        self.slept: list[float] = []
        wall = time.time
        monkeypatch.setattr(time, "time", lambda: wall() + self.passed)

    def monotonic(self) -> float:
        return self.passed

    def advance(self, seconds: float) -> None:
        self.passed += seconds

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)
        await asyncio.sleep(0)  # a sleep still lets the loop's other tasks run
