"""Retries with exponential backoff and full jitter.

Jitter matters here: a batch of tasks shares one rate limit, and without it
every task that got a 429 would come back at the same instant.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from ._secrets import logger
from ._types import LLMError, ProviderCallError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry one call.

    The n-th wait is drawn from `[0, min(max_delay_s, base_delay_s * 2**(n-1))]`
    (full jitter); a server's Retry-After, when longer, wins up to `max_delay_s`.
    """

    max_attempts: int = 5
    base_delay_s: float = 2.0
    max_delay_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"LLM attempts must be at least 1, got {self.max_attempts}")
        if not 0 <= self.base_delay_s < float("inf"):
            raise ValueError(f"LLM backoff must be a non-negative number of seconds, got {self.base_delay_s:g}")

    def delay_s(self, retry: int, rng: random.Random, retry_after_s: float | None = None) -> float:
        cap = min(self.max_delay_s, self.base_delay_s * (2 ** (retry - 1)))
        delay = rng.uniform(0.0, cap)
        if retry_after_s is not None:
            delay = max(delay, min(retry_after_s, self.max_delay_s))
        return delay


def call_with_retries(
    fn: Callable[[], T],
    *,
    policy: RetryPolicy,
    provider: str,
    model: str,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> tuple[T, int]:
    """Run `fn` until it succeeds; return its result and the attempts used.

    Retries only `ProviderCallError`s marked retryable; anything else, or the
    last failure, becomes an `LLMError` naming provider, model, status and
    attempts.
    """
    rng = rng or random.Random()
    attempts = max(1, policy.max_attempts)
    for attempt in range(1, attempts + 1):
        try:
            return fn(), attempt
        except ProviderCallError as exc:
            if not exc.retryable or attempt == attempts:
                what = "giving up after retries" if exc.retryable else "request failed"
                raise LLMError(
                    f"{what}: {exc}",
                    provider=provider,
                    model=model,
                    status=exc.status,
                    attempts=attempt,
                ) from exc
            delay = policy.delay_s(attempt, rng, exc.retry_after_s)
            logger.warning(
                "%s:%s attempt %d/%d failed (status %s); retrying in %.2fs",
                provider, model, attempt, attempts, exc.status, delay,
            )
            sleep(delay)
    raise AssertionError("unreachable")  # the loop always returns or raises
