"""call_with_retries: bounded, jittered, and honest about what failed."""

from __future__ import annotations

import random

import pytest
from llm_server import llm_env  # noqa: F401

from evokernel.llm import LLMError, ProviderCallError, RetryPolicy, call_with_retries


def test_delays_grow_are_jittered_and_capped():
    policy = RetryPolicy(max_attempts=10, base_delay_s=1.0, max_delay_s=5.0)
    rng = random.Random(0)
    for retry, cap in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (8, 5.0)]:
        delays = [policy.delay_s(retry, rng) for _ in range(200)]
        assert 0.0 <= min(delays) and max(delays) <= cap
        assert len(set(delays)) > 100  # jitter, not a fixed schedule
    assert policy.delay_s(1, rng, retry_after_s=3.0) >= 3.0
    assert policy.delay_s(1, rng, retry_after_s=999.0) <= 5.0


def test_retries_then_succeeds_and_reports_attempts():
    failures = [ProviderCallError("busy", status=529, retryable=True)] * 2
    slept: list[float] = []

    def flaky():
        if failures:
            raise failures.pop()
        return "done"

    result, attempts = call_with_retries(
        flaky, policy=RetryPolicy(max_attempts=5, base_delay_s=0.5), provider="p", model="m",
        sleep=slept.append, rng=random.Random(1),
    )
    assert (result, attempts, len(slept)) == ("done", 3, 2)


def test_non_retryable_fails_at_once():
    def bad():
        raise ProviderCallError("no", status=401, retryable=False)

    with pytest.raises(LLMError) as info:
        call_with_retries(bad, policy=RetryPolicy(), provider="p", model="m", sleep=lambda s: None)
    assert (info.value.status, info.value.attempts) == (401, 1)


def test_policy_from_a_given_environment():
    from evokernel.llm import retry_policy

    environ = {"EVOKERNEL_LLM_MAX_ATTEMPTS": "2", "EVOKERNEL_LLM_BACKOFF_S": "0.01"}
    assert retry_policy(environ) == RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=60.0)
    assert retry_policy({}) == RetryPolicy()
