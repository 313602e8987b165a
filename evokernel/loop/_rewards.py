"""The executor's verdicts as rewards: +1/-1 for a draft, tanh(log best - log latency) for a refinement."""

from __future__ import annotations

import math


def draft_reward(feasible: bool) -> float:
    """+1 for a feasible kernel (no hack, compiles, correct), else -1."""
    return 1.0 if feasible else -1.0


def refine_reward(feasible: bool, latency_ms: float | None, best_ms: float | None) -> float:
    """-1 if infeasible, else tanh(log b - log latency) with b the best latency so far.

    A feasible kernel without a comparable time (compile-only) neither gains nor
    loses: 0.
    """
    if not feasible:
        return -1.0
    if not latency_ms or not best_ms or not math.isfinite(latency_ms) or latency_ms <= 0:
        return 0.0
    return math.tanh(math.log(best_ms) - math.log(latency_ms))
