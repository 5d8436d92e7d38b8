"""When to stop calling an LLM server that is not there.

A call whose attempts all fail to connect (refused, or no connection within the timeout)
is retried as configured, like any failure (``llm.max_retries``, with backoff). But a
build over a server that is down would do that for every episode: 30 episodes, three
attempts each, 47 seconds to learn nothing. So the client counts the calls that ended
unable to reach the server, in a row; at ``limit`` it stops sending: every call fails at
once with :class:`~memstrata.llm.types.LLMUnavailableError` (a builder leaves those
episodes queued, see ``Engine.drain``), until ``cooldown_s`` have passed, when one call is
tried again. Any reply, even an error status, shows the server is there and resets the
count. A cached reply never needs the server, so it is served either way.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from memstrata.llm.types import LLMBackendError


class Breaker:
    """Shared by a client and its scoped copies: one server, one count."""

    def __init__(
        self, limit: int = 3, cooldown_s: float = 30.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit  # 0: never stop calling
        self.cooldown_s = cooldown_s
        self.clock = clock
        self.failures = 0  # calls in a row that could not reach the server
        self.opened_at: float | None = None
        self.trips = 0  # times it opened
        self.why = ""

    @property
    def is_open(self) -> bool:
        return self.opened_at is not None and self.clock() - self.opened_at < self.cooldown_s

    def refusal(self) -> str | None:
        """Why a call must not be sent now, or None. Past the cool-down the breaker lets
        calls through again, one failure away from opening once more."""
        if self.opened_at is None:
            return None
        if self.is_open:
            return self.why
        self.opened_at = None
        self.failures = max(0, self.limit - 1)
        return None

    def unreached(self, error: LLMBackendError) -> None:
        """A call ended (its retries spent) without reaching the server."""
        self.failures += 1
        if self.limit and self.failures >= self.limit and self.opened_at is None:
            self.opened_at = self.clock()
            self.trips += 1
            self.why = (
                f"{self.failures} calls in a row could not reach it, the last: {error}; "
                f"the next call goes out after {self.cooldown_s:g} s"
            )

    def reached(self) -> None:
        """The server answered (whatever it said)."""
        self.failures = 0
        self.opened_at = None
