"""One pause shared by every call to a provider.

With many calls in flight, a rate limit (429) or an overloaded server (5xx)
on one of them says the provider wants fewer requests from all of them. So
the wait a retry chooses is held for every call to that provider in this
process: calls about to be sent wait it out too, and the run slows down
instead of each call burning its retries against the limit.
"""

from __future__ import annotations

import threading
import time
from typing import Callable


class SharedBackoff:
    """`wait()` before each request; `sleep(delay)` is a retry's pause, held for all."""

    def __init__(self, *, clock: Callable[[], float] | None = None, sleep: Callable[[float], None] | None = None):
        # Looked up at each use unless given, so a test's patched time.sleep applies.
        self._clock = clock or (lambda: time.monotonic())
        self._sleep = sleep or (lambda s: time.sleep(s))
        self._until = 0.0
        self._lock = threading.Lock()
        self.holds = 0  # how many times a failure made everyone wait

    def remaining_s(self) -> float:
        with self._lock:
            return max(0.0, self._until - self._clock())

    def hold(self, delay_s: float) -> None:
        """Nobody sends before `delay_s` from now (an existing longer hold stands)."""
        with self._lock:
            self._until = max(self._until, self._clock() + max(0.0, delay_s))
            self.holds += 1

    def wait(self) -> None:
        """Return once no hold is in force."""
        while True:
            remaining = self.remaining_s()
            if remaining <= 0:
                return
            self._sleep(remaining)

    def sleep(self, delay_s: float) -> None:
        """A retry's pause (`call_with_retries(sleep=...)`): held for every call, then waited out."""
        self.hold(delay_s)
        self.wait()


_SHARED: dict[str, SharedBackoff] = {}
_SHARED_LOCK = threading.Lock()


def shared_backoff(provider: str) -> SharedBackoff:
    """The process's one backoff for `provider` (rate limits are per account, not per call)."""
    with _SHARED_LOCK:
        return _SHARED.setdefault(provider, SharedBackoff())
