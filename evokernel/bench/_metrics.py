"""Benchmark metrics from task outcomes (the README's "Benchmarks"). Pure: no I/O.

Conventions, so that numbers from different runs mean the same thing:

- Rates (`correct_rate`, `compile_rate`, every `fast_p`) have ALL tasks as
  their denominator, tasks the policy stopped on included.
- `fast_p` against a baseline is the share of tasks that are correct and whose
  best speedup over that baseline is greater than p. A task with no measured
  baseline counts as not fast. When no task has that baseline measured at all
  (a CPU run: baselines are timed on a GPU only), the value is None, not 0.
- Geometric means and medians of speedups are over the correct tasks that have
  the measurement; `n` beside them says how many. Degenerate tasks (outputs that
  cannot tell a kernel from a no-op, with no stress trial that helps) are left
  out of them, and never count as fast in `fast_p`; `degenerate_tasks` lists them.
- Speedups measured anywhere but on a GPU are not comparable with published
  numbers: `speed_comparable` says so and `speed_note` says why.
"""

from __future__ import annotations

import math
import re
import statistics
from typing import Any, Iterable, Sequence

from backends import LatencySource

FAST_PS: tuple[float, ...] = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
BASELINES: tuple[str, ...] = ("eager", "compile")
_SOURCE_NOTES = {
    LatencySource.INTERPRETED_CPU: "latencies are wall-clock times of Triton's CPU interpreter, not GPU numbers",
    LatencySource.MODELLED_910B: "latencies come from a cost model of the Ascend 910B, not measurements",
}


def fast_key(p: float) -> str:
    """`fast_1`, `fast_1.5`, `fast_0.8`: the name of the fast_p metric for p."""
    return f"fast_{p:g}"


def geomean(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def median(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(vals) if vals else None


def _speedup(outcome: Any, baseline: str) -> float | None:
    return outcome.speedup_eager if baseline == "eager" else outcome.speedup_compile


def task_row(outcome: Any) -> dict[str, Any]:
    """One task's numbers, flat, for tables and the `tasks` list of a result."""
    attempts = outcome.attempts
    row: dict[str, Any] = {
        "name": outcome.name,
        "path": outcome.path,
        "correct": bool(outcome.correct),
        "compiled": outcome.compile_ok_attempts > 0,
        "attempts": attempts,
        "compile_rate": outcome.compile_ok_attempts / attempts if attempts else 0.0,
        "correct_rate": sum(s in ("ok", "compiled") for s in outcome.statuses) / attempts if attempts else 0.0,
        "first_correct_attempt": outcome.first_correct_attempt,
        "started_from_item_id": outcome.started_from_item_id,  # None unless it started from an earlier run's kernel
        "first_latency_ms": outcome.first_latency_ms,
        "best_latency_ms": outcome.best_latency_ms,
        "latency_source": LatencySource(outcome.latency_source).value,
        "eager_ms": outcome.eager_ms,
        "compile_ms": outcome.compile_ms,
        "compile_correct": getattr(outcome, "compile_correct", None),
        "compile_check": getattr(outcome, "compile_check", ""),
        "speedup_eager": outcome.speedup_eager,
        "speedup_compile": outcome.speedup_compile,
        "speedup_over_first": outcome.speedup_over_first,
        "stopped": outcome.stopped,
        "statuses": list(outcome.statuses),
        # Why the task ended where it did, without opening the memory: the last verdict and every attempt.
        "last_status": outcome.last_status,
        "last_message": outcome.last_message,
        "attempt_log": [a.to_dict() for a in outcome.history],
        "own_kernel_share": outcome.own_kernel_share,
        "slowest_kernel": outcome.slowest_kernel or None,
        "slowest_kernel_share": outcome.slowest_kernel_share,
        "speed_limits": list(getattr(outcome, "speed_limits", ())),
        "degenerate": outcome.degenerate,
        "stress_tested": outcome.stress_tested,
        "tokens_in": outcome.tokens_in,
        "tokens_out": outcome.tokens_out,
        "cost_usd": outcome.cost_usd,
        "achieved_gbps": outcome.achieved_gbps,
        "copy_gbps": outcome.copy_gbps,
        "bandwidth_vs_copy": (outcome.achieved_gbps / outcome.copy_gbps)
        if outcome.achieved_gbps and outcome.copy_gbps else None,
    }
    for base in BASELINES:
        s = _speedup(outcome, base)
        row[f"fast_{base}"] = {fast_key(p): bool(outcome.correct and s is not None and s > p) for p in FAST_PS}
    return row


def speed_comparability(outcomes: Sequence[Any], device: str | None = None) -> tuple[bool, str | None]:
    """Whether the run's latencies can stand beside GPU numbers, and if not, why."""
    sources = sorted({LatencySource(o.latency_source) for o in outcomes if o.correct and o.best_latency_ms})
    odd = [s for s in sources if s is not LatencySource.MEASURED_GPU]
    if device is not None and not device.startswith("cuda"):
        why = "; ".join(_SOURCE_NOTES.get(s, s) for s in odd) or "no GPU was used"
        return False, f"run on {device}: {why}. Speed metrics are not comparable with GPU results."
    if odd:
        why = "; ".join(_SOURCE_NOTES.get(s, f"latency source {s}") for s in odd)
        return False, f"{why}. Speed metrics are not comparable with GPU results."
    return True, None


def evaluation_seconds(outcomes: Sequence[Any], top: int = 12) -> dict[str, Any]:
    """Where the executor's time went over every attempt: the total, and the `top` steps by
    their summed seconds (input-set and trial numbers folded, so "running the candidate on
    trial 3" counts as "running the candidate on trial N")."""
    total, by_step = 0.0, {}
    for o in outcomes:
        for a in getattr(o, "history", ()):
            total += getattr(a, "seconds", 0.0) or 0.0
            for name, sec in (getattr(a, "step_seconds", None) or {}).items():
                key = re.sub(r"\b\d+\b", "N", name)
                by_step[key] = by_step.get(key, 0.0) + sec
    ranked = sorted(by_step.items(), key=lambda kv: -kv[1])[:top]
    return {"total": round(total, 1), "by_step": {k: round(v, 1) for k, v in ranked}}


def below_half_line(entry: dict[str, Any]) -> str:
    """One `below_half_of_compile` entry as a report line: the task, its speedup, its slowest kernel
    and share, and the reason ("none recorded" where no policy knew one)."""
    share = entry.get("slowest_kernel_share")
    return (f"below half of torch.compile: {entry['task']} {entry['speedup_compile']:.2f}x; slowest kernel "
            f"{entry.get('slowest_kernel') or '–'}" + (f" ({100 * share:.1f}% of the time)" if share is not None else "")
            + f"; reason: {entry.get('reason') or 'none recorded'}")


def compute_metrics(outcomes: Sequence[Any], *, device: str | None = None, is_llm: bool = False) -> dict[str, Any]:
    """Suite-level metrics from per-task outcomes (`TaskOutcome` or anything shaped like it)."""
    n = len(outcomes)
    correct = [o for o in outcomes if o.correct]
    attempts = sum(o.attempts for o in outcomes)

    def share(k: int) -> float:
        return k / n if n else 0.0

    comparable, note = speed_comparability(outcomes, device)
    m: dict[str, Any] = {
        "tasks": n,
        "correct": len(correct),
        "correct_rate": share(len(correct)),
        "compiled": sum(o.compile_ok_attempts > 0 for o in outcomes),
        "compile_rate": share(sum(o.compile_ok_attempts > 0 for o in outcomes)),
        "stopped": sum(o.stopped is not None for o in outcomes),
        "attempts": attempts,
        "attempt_compile_rate": sum(o.compile_ok_attempts for o in outcomes) / attempts if attempts else 0.0,
        "attempt_correct_rate": (
            sum(s in ("ok", "compiled") for o in outcomes for s in o.statuses) / attempts if attempts else 0.0
        ),
        "speed_comparable": comparable,
        "speed_note": note,
    }
    m["degenerate_tasks"] = [o.name for o in outcomes if o.degenerate]
    m["stress_tested_tasks"] = [o.name for o in outcomes if o.stress_tested]
    for base in BASELINES:
        speedups = [_speedup(o, base) for o in correct if not o.degenerate]
        measured = [s for s in speedups if s is not None]
        any_baseline = any(_speedup(o, base) is not None for o in outcomes)
        m[f"fast_{base}"] = {
            fast_key(p): (share(sum(s > p for s in measured)) if any_baseline else None) for p in FAST_PS
        }
        m[f"geomean_speedup_{base}"] = geomean(measured)
        m[f"median_speedup_{base}"] = median(measured)
        m[f"n_speedup_{base}"] = len(measured)
    # issue 30's floor: a correct task below half of torch.compile's speed is named with where its time
    # goes (the best kernel's slowest kernel in the profiled call and that kernel's share of the time)
    # and the reason, where the policy that wrote the kernel knows one (None: no reason is known)
    slow = sorted(((s, o) for o in correct if not o.degenerate
                   for s in [_speedup(o, "compile")] if s is not None and s < 0.5), key=lambda so: so[0])
    m["below_half_of_compile"] = [
        {"task": o.name, "speedup_compile": s, "slowest_kernel": o.slowest_kernel or None,
         "slowest_kernel_share": o.slowest_kernel_share, "compile_correct": getattr(o, "compile_correct", None),
         "reason": "; ".join(getattr(o, "speed_limits", ())) or None}
        for s, o in slow]
    # torch.compile held to the candidates' check: where its own output fails it, the speedup over it
    # compares against a result this executor would reject (TF32 convolutions, reordered reductions)
    m["compile_wrong_tasks"] = [o.name for o in outcomes if getattr(o, "compile_correct", None) is False]
    m["compile_checked_tasks"] = sum(getattr(o, "compile_correct", None) is not None for o in outcomes)
    # the speedup over torch.compile where its output passed that check: the like-for-like figure, beside
    # the one over every task (None while no task was checked)
    held = [s for o in correct if not o.degenerate and getattr(o, "compile_correct", None) is True
            for s in [_speedup(o, "compile")] if s is not None]
    m["geomean_speedup_compile_checked"] = geomean(held)
    m["n_speedup_compile_checked"] = len(held)
    m["evaluation_seconds"] = evaluation_seconds(outcomes)
    over_first = [o.speedup_over_first for o in correct if o.speedup_over_first is not None]
    m["median_speedup_over_first"] = median(over_first)
    m["geomean_speedup_over_first"] = geomean(over_first)
    m["n_speedup_over_first"] = len(over_first)
    firsts = [o.first_correct_attempt for o in outcomes if o.first_correct_attempt is not None]
    m["attempts_to_first_correct"] = {
        "mean": statistics.fmean(firsts) if firsts else None,
        "median": median(firsts),
        "n": len(firsts),
    }
    if is_llm:
        tokens_in = sum(o.tokens_in for o in outcomes)
        tokens_out = sum(o.tokens_out for o in outcomes)
        cost = sum(o.cost_usd or 0.0 for o in outcomes)
        m["llm"] = {
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost_usd": cost,
            "tokens_per_solved": (tokens_in + tokens_out) / len(correct) if correct else None,
            "cost_per_solved_usd": cost / len(correct) if correct else None,
        }
    else:
        m["llm"] = None
    return m
