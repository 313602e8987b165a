"""The executor's verdicts as rewards: +1/-1 for a draft, +1 for a refinement that makes a new best, else -1."""

from __future__ import annotations

import math


def draft_reward(feasible: bool) -> float:
    """+1 for a feasible kernel (no hack, compiles, correct), else -1."""
    return 1.0 if feasible else -1.0


def refine_reward(feasible: bool, latency_ms: float | None, best_ms: float | None) -> float:
    """+1 if the kernel is feasible and faster than `best_ms` (the task's best so far), else -1.

    A feasible kernel that cannot be compared (compile-only, or no timed best yet) neither
    gains nor loses: 0.

    Not tanh(log best - log latency), the reward before: its size is set by how much of the
    task's headroom is left, not by what the step's memories did. Good memories close the gap
    early and are then credited with the small or negative rewards of the later steps, so in
    benchmarks/learning_sim.py the mean tanh reward of an item anti-correlated with its utility
    (-0.32, -0.17, -0.04 on the seeds tried, in a world where only the memories decide the
    outcome), and on the H200 learning run
    a replayed value carried into each refine step correlated -0.20 with its success, +0.18 with
    this reward. The sign, did the task get faster, is what a memory can be credited with.
    """
    if not feasible:
        return -1.0
    if not latency_ms or not best_ms or not math.isfinite(latency_ms) or latency_ms <= 0:
        return 0.0
    return 1.0 if latency_ms < best_ms else -1.0
