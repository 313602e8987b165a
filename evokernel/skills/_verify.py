"""Verification before admission: the kernels before and after a proposed skill,
re-timed in alternation in one worker, must reproduce the speedup.

The executor's `retime` (backends/_retime.py) imports both kernels side by
side in one worker, checks them against the reference, and times them round
after round with the order flipped each round. The skill is admitted when the
speedup of every alternation is at least `SkillOptions.min_speedup` (the
median is the one reported) and the re-timing's latency source is one the
options admit. Every alternation, not the median alone: on a loaded machine a
change that does nothing (a warp count, in the CPU interpreter) can reach a
1.2x median by chance, rarely three times in a row.

On a CPU the latencies are the Triton interpreter's wall clock, labelled
`interpreted-cpu`: the re-timing says so, and a skill admitted there is only
ever selected for runs with the same latency source, never for a GPU run.
"""

from __future__ import annotations

from backends import EvalOptions, ExecutorProtocol

from ._types import SkillOptions, Verification


def verify(executor: ExecutorProtocol, task_path: str, before_code: str, after_code: str, *, backend: str,
           eval_options: EvalOptions | None, options: SkillOptions) -> Verification:
    """Re-time before and after; the verdict on admission with its numbers."""
    report = executor.retime(task_path, before_code, after_code, backend=backend, options=eval_options,
                             rounds=options.reruns)
    if not report.ok:
        return Verification(None, None, None, report.reruns, report.latency_source, False,
                            f"re-timing did not finish ({report.status.value}): {report.message}", options.min_speedup)
    speedup = float(report.speedup)
    ratios = [b / c for b, c in report.rounds if c > 0]
    held = sum(r >= options.min_speedup for r in ratios)
    if report.latency_source not in options.admit_sources:
        admitted, reason = False, f"latencies of source {report.latency_source} do not admit skills here"
    elif ratios and held == len(ratios):
        admitted, reason = True, (f"the speedup reproduced in every alternation: {speedup:.3g}x "
                                  f"(lowest {min(ratios):.3g}x) >= {options.min_speedup:g}x")
    else:
        admitted, reason = False, (f"the speedup did not reproduce: {speedup:.3g}x, {held} of {len(ratios)} "
                                   f"alternations at {options.min_speedup:g}x or more")
    if admitted and report.latency_source.interpreted:
        reason += " (interpreted CPU wall clock, not GPU speed: used only by runs with the same latency source)"
    return Verification(report.baseline_ms, report.candidate_ms, speedup, report.reruns, report.latency_source,
                        admitted, reason, options.min_speedup, report.rounds, report.timing_method)
