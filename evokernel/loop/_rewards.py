"""The executor's verdicts as rewards: +1/-1 for a draft; for a refinement +1 for a new best beyond
timing noise, -1 for a failure or a kernel slower beyond it, 0 for a tie within it."""

from __future__ import annotations

import math


def draft_reward(feasible: bool) -> float:
    """+1 for a feasible kernel (no hack, compiles, correct), else -1."""
    return 1.0 if feasible else -1.0


# A refinement within this share of the best is a tie, not a new best nor a loss. The executor's
# timings repeat to 0.18-0.28% on small kernels and to 3% on a matmul (executor-h200.json); on the
# learning rerun (learning-h100.json) each of the 12 "new bests" of 72 held-out refinements was
# 0.00-0.27% faster than the best: noise, which no memory's value can predict, crediting whatever
# items happened to be in the context.
TIMING_TIE = 0.01


def refine_reward(feasible: bool, latency_ms: float | None, best_ms: float | None, tie: float = TIMING_TIE) -> float:
    """+1 if the kernel is feasible and faster than `best_ms` (the task's best so far) by more than
    the share `tie`; -1 if it is not feasible or slower than the best by more than that; 0 for a tie
    within it (timing noise: neither progress nor a loss).

    A feasible kernel that cannot be compared (compile-only, or no timed best yet) neither
    gains nor loses either: 0.

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
    if latency_ms * (1.0 + tie) < best_ms:
        return 1.0
    return -1.0 if latency_ms > best_ms * (1.0 + tie) else 0.0
