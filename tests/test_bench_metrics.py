"""Benchmark metrics on hand-made outcomes: fast_p and its denominator,
geometric means and medians, CPU marking; plus suite resolution and the
independent-samples wrapper, none of which runs a kernel."""

from __future__ import annotations

import dataclasses
import math

import pytest

from evokernel.bench import (
    SuiteError,
    compute_metrics,
    fast_key,
    geomean,
    resolve_tasks,
    speed_comparability,
    task_row,
)
from backends import EvalResult, LatencySource, Verdict
from evokernel.bench import _runner
from evokernel.loop import Attempt, MemoryNote, Proposal, StartPointView, StepContext, TaskOutcome


def outcome(name, *, correct=True, best=None, first=None, eager=None, compile_ms=None, first_at=1, attempts=3,
            compiled=3, source="measured-gpu", stopped=None, statuses=None, tokens=(0, 0), cost=0.0):
    return TaskOutcome(
        name=name, task_key=name, path=f"/tasks/{name}.py", correct=correct, attempts=attempts,
        first_correct_attempt=first_at if correct else None, first_latency_ms=first if correct else None,
        best_latency_ms=best if correct else None, latency_source=source if correct else "none", eager_ms=eager,
        compile_ms=compile_ms, stopped=stopped, compile_ok_attempts=compiled,
        statuses=statuses if statuses is not None else (["ok"] * attempts if correct else ["wrong_result"] * attempts),
        tokens_in=tokens[0], tokens_out=tokens[1], cost_usd=cost,
    )


def suite():
    """Four tasks: speedups over eager 2.0, 1.2 and 0.7, and one the policy stopped on."""
    return [
        outcome("a", best=0.5, first=1.5, eager=1.0, compile_ms=1.5, first_at=1),
        outcome("b", best=1.0, first=1.0, eager=1.2, compile_ms=0.9, first_at=3),
        outcome("c", best=1.0, first=2.0, eager=0.7, compile_ms=0.5, first_at=2),
        outcome("d", correct=False, attempts=0, compiled=0, stopped="outside the builtin families", statuses=[]),
    ]


def test_fast_p_counts_all_tasks_and_is_strict():
    m = compute_metrics(suite(), device="cuda:0")
    fast = m["fast_eager"]
    assert list(fast) == ["fast_0", "fast_0.5", "fast_0.8", "fast_1", "fast_1.5", "fast_2"]
    assert fast["fast_0"] == pytest.approx(3 / 4)  # the stopped task is in the denominator
    assert fast["fast_0.8"] == pytest.approx(2 / 4)
    assert fast["fast_1"] == pytest.approx(2 / 4)
    assert fast["fast_1.5"] == pytest.approx(1 / 4)
    assert fast["fast_2"] == 0.0  # 2.0x is not > 2
    compile_speedups = [3.0, 0.9, 0.5]
    assert m["fast_compile"]["fast_1"] == pytest.approx(1 / 4)
    assert m["geomean_speedup_compile"] == pytest.approx(math.prod(compile_speedups) ** (1 / 3))


def test_geomean_and_median_over_correct_tasks_with_a_measurement():
    m = compute_metrics(suite(), device="cuda:0")
    assert m["geomean_speedup_eager"] == pytest.approx((2.0 * 1.2 * 0.7) ** (1 / 3))
    assert m["median_speedup_eager"] == pytest.approx(1.2)
    assert m["n_speedup_eager"] == 3
    assert m["median_speedup_over_first"] == pytest.approx(2.0)  # 3.0, 1.0, 2.0
    assert m["geomean_speedup_over_first"] == pytest.approx(6.0 ** (1 / 3))


def test_rates_and_attempts():
    m = compute_metrics(suite(), device="cuda:0")
    assert (m["tasks"], m["correct"], m["correct_rate"]) == (4, 3, 0.75)
    assert (m["compiled"], m["compile_rate"]) == (3, 0.75)
    assert m["stopped"] == 1
    assert m["attempts"] == 9
    assert m["attempts_to_first_correct"] == {"mean": 2.0, "median": 2, "n": 3}
    assert m["speed_comparable"] is True and m["speed_note"] is None
    assert m["llm"] is None


def test_a_correct_task_without_a_baseline_is_not_fast_but_counts():
    outs = [outcome("a", best=1.0, first=1.0, eager=3.0), outcome("b", best=1.0, first=1.0)]
    m = compute_metrics(outs, device="cuda:0")
    assert m["fast_eager"]["fast_1"] == 0.5
    assert m["n_speedup_eager"] == 1
    assert m["fast_compile"]["fast_0"] is None  # no task has a compile baseline at all


def test_cpu_run_is_marked_not_comparable():
    outs = [outcome("a", best=300.0, first=600.0, source="interpreted-cpu")]
    m = compute_metrics(outs, device="cpu")
    assert m["speed_comparable"] is False
    assert "interpreter" in m["speed_note"] and "not comparable" in m["speed_note"]
    assert all(v is None for v in m["fast_eager"].values())  # baselines are timed on a GPU only
    assert m["median_speedup_over_first"] == pytest.approx(2.0)  # still reported, marked by the flag


def test_modelled_latency_is_not_comparable_even_without_a_device():
    ok, note = speed_comparability([outcome("a", best=1.0, first=1.0, source="modelled-910b")])
    assert not ok and "cost model" in note
    assert speed_comparability([outcome("a", best=1.0, first=1.0)], "cuda:1") == (True, None)


def test_llm_tokens_and_cost_per_solved_task():
    outs = [outcome("a", best=1.0, first=1.0, tokens=(100, 50), cost=0.02),
            outcome("b", correct=False, tokens=(300, 70), cost=0.04)]
    llm = compute_metrics(outs, is_llm=True)["llm"]
    assert (llm["tokens_in"], llm["tokens_out"]) == (400, 120)
    assert llm["cost_usd"] == pytest.approx(0.06)
    assert llm["cost_per_solved_usd"] == pytest.approx(0.06)
    assert llm["tokens_per_solved"] == 520


def test_no_tasks_and_no_correct_tasks():
    empty = compute_metrics([])
    assert empty["tasks"] == 0 and empty["correct_rate"] == 0.0 and empty["median_speedup_over_first"] is None
    none_ok = compute_metrics([outcome("a", correct=False)], device="cuda:0")
    assert none_ok["correct_rate"] == 0.0 and none_ok["attempts_to_first_correct"]["mean"] is None


def test_task_row():
    row = task_row(suite()[0])
    assert row["correct"] and row["compiled"] and row["attempts"] == 3
    assert row["speedup_eager"] == pytest.approx(2.0) and row["speedup_over_first"] == pytest.approx(3.0)
    assert row["fast_eager"]["fast_1.5"] is True and row["fast_eager"]["fast_2"] is False
    assert row["correct_rate"] == 1.0 and row["compile_rate"] == 1.0
    stopped = task_row(suite()[3])
    assert stopped["stopped"] and stopped["compile_rate"] == 0.0 and not any(stopped["fast_eager"].values())


def test_helpers():
    assert [fast_key(p) for p in (0.0, 0.5, 1.0, 1.5, 2.0)] == ["fast_0", "fast_0.5", "fast_1", "fast_1.5", "fast_2"]
    assert geomean([]) is None and geomean([4.0, 1.0]) == pytest.approx(2.0)


# --- suites ---------------------------------------------------------------------


def test_resolve_tasks_sorted_limited_private_skipped(tmp_path):
    for name in ("b.py", "a.py", "_helper.py", "notes.txt"):
        (tmp_path / name).write_text("")
    assert [p.name for p in resolve_tasks(tmp_path)] == ["a.py", "b.py"]
    assert [p.name for p in resolve_tasks(tmp_path, limit=1)] == ["a.py"]
    assert resolve_tasks(tmp_path / "b.py") == [tmp_path / "b.py"]


def test_resolve_tasks_errors(tmp_path, monkeypatch):
    with pytest.raises(SuiteError, match="neither a bundled suite"):
        resolve_tasks("level9")
    with pytest.raises(SuiteError, match="no task files"):
        resolve_tasks(tmp_path)
    monkeypatch.setattr(_runner, "benchmarks_root", lambda: tmp_path / "nowhere")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SuiteError, match="bundled suite 'level1' is not here"):
        resolve_tasks("level1")


def test_bundled_suite_resolves_next_to_the_package():
    root = _runner.benchmarks_root()
    if not (root / "level1").is_dir():
        pytest.skip("no checkout of the suites")
    assert resolve_tasks("level1", limit=2) == sorted((root / "level1").glob("*.py"))[:2]


# --- independent samples ------------------------------------------------------------


class Recorder:
    name = "recorder"
    is_llm = True

    def __init__(self):
        self.seen = []

    def propose(self, ctx):
        self.seen.append(ctx)
        return Proposal("source")




def test_task_row_keeps_the_last_verdict_and_the_attempts():
    from backends import Baselines, Verdict
    from evokernel.loop._types import Attempt, TaskOutcome

    outcome = TaskOutcome(name="relu", task_key="relu-0", path="relu.py")
    outcome.record(Attempt(step=1, stage="draft", verdict=Verdict.COMPILE_ERROR, message="syntax error at line 3",
                           latency_ms=None, latency_source="none", baselines=Baselines()))
    outcome.record(Attempt(step=2, stage="draft", verdict=Verdict.TASK_ERROR, message="the task does not fit: ...",
                           latency_ms=None, latency_source="none", baselines=Baselines()))
    row = task_row(outcome)
    assert (row["last_status"], row["last_message"]) == ("task_error", "the task does not fit: ...")
    assert [(a["step"], a["status"]) for a in row["attempt_log"]] == [(1, "compile_error"), (2, "task_error")]


def test_degenerate_tasks_stay_out_of_geometric_means_and_fast_p():
    from backends import Baselines, Verdict
    from evokernel.bench import compute_metrics
    from evokernel.loop import Attempt, TaskOutcome

    def outcome(name: str, eager_ms: float, degenerate: str = "") -> TaskOutcome:
        o = TaskOutcome(name=name, task_key=name, path=f"{name}.py")
        o.record(Attempt(step=1, stage="draft", verdict=Verdict.OK, message="", latency_ms=1.0,
                         latency_source="measured-gpu", baselines=Baselines(eager_ms=eager_ms), degenerate=degenerate))
        return o

    honest, zeros = outcome("honest", 2.0), outcome("zeros", 50.0, degenerate="every output is 0")
    m = compute_metrics([honest, zeros], device="cuda:0")
    assert m["degenerate_tasks"] == ["zeros"]
    assert m["geomean_speedup_eager"] == pytest.approx(2.0) and m["n_speedup_eager"] == 1
    assert m["fast_eager"]["fast_1"] == pytest.approx(0.5)  # the degenerate task's 50x is not a fast task
    assert m["correct"] == 2  # it still counts as correct: its verdict stands


def test_task_row_names_the_best_kernels_slowest_kernel():
    """The best timed attempt's slowest kernel (its GPU profile) and its share reach the task's row
    and the attempt log; an attempt without a profile says nothing of it."""
    from backends import Baselines, EvalResult, LatencySource, Verdict
    from evokernel.loop._types import Attempt, TaskOutcome

    def attempt(step, ms, slowest, share):
        result = EvalResult(Verdict.OK, "correct", latency_ms=ms, latency_source=LatencySource.MEASURED_GPU,
                            baselines=Baselines(eager_ms=2.0), slowest_kernel=slowest, slowest_kernel_share=share)
        return Attempt.from_result(result, step=step, stage="refine")

    outcome = TaskOutcome(name="conv", task_key="conv-0", path="conv.py")
    outcome.record(attempt(1, 1.5, "_conv_gemm_kernel", 0.9))
    outcome.record(attempt(2, 1.0, "_conv_taps_kernel", 0.8))
    outcome.record(attempt(3, 1.2, "_conv_gemm_kernel", 0.95))  # slower: not the best
    row = task_row(outcome)
    assert (row["slowest_kernel"], row["slowest_kernel_share"]) == ("_conv_taps_kernel", 0.8)
    assert row["attempt_log"][1]["slowest_kernel"] == "_conv_taps_kernel"
    bare = TaskOutcome(name="relu", task_key="relu-0", path="relu.py")
    bare.record(attempt(1, 1.0, "", None))
    assert task_row(bare)["slowest_kernel"] is None and "slowest_kernel" not in task_row(bare)["attempt_log"][0]


def test_tasks_below_half_of_torch_compile_are_named_with_their_slowest_kernel():
    slow = outcome("slow", best=4.0, eager=3.0, compile_ms=1.0)
    slow.slowest_kernel, slow.slowest_kernel_share = "_conv_gemm_kernel", 0.93
    slow.compile_correct = False  # and whether torch.compile's own output passed the same check
    unexplained = outcome("unexplained", best=3.0, eager=3.0, compile_ms=1.0)
    slow.speed_limits = ("IEEE fp32 products on the FMA units", "another")  # what the kernel's policy knows
    tasks = suite() + [slow, unexplained, outcome("half", best=2.0, eager=1.0, compile_ms=1.0)]  # 0.5x: not below
    below = compute_metrics(tasks)["below_half_of_compile"]
    assert below == [{"task": "slow", "speedup_compile": 0.25, "slowest_kernel": "_conv_gemm_kernel",
                      "slowest_kernel_share": 0.93, "compile_correct": False,
                      "reason": "IEEE fp32 products on the FMA units; another"},
                     {"task": "unexplained", "speedup_compile": pytest.approx(1 / 3), "slowest_kernel": None,
                      "slowest_kernel_share": None, "compile_correct": None, "reason": None}]


def test_the_best_attempts_speed_limits_reach_the_task_row_live_and_from_a_stored_item():
    """A step's speed limits (the policy's, in the proposal's extra) follow the best timed attempt into the
    task's row, also when the attempt is rebuilt from the stored item (a resumed run)."""
    from types import SimpleNamespace

    from backends import Baselines

    def result(ms):
        return EvalResult(Verdict.OK, "correct", latency_ms=ms, latency_source=LatencySource.MEASURED_GPU,
                          baselines=Baselines(eager_ms=2.0))

    o = TaskOutcome(name="conv", task_key="conv-0", path="conv.py")
    o.record(Attempt.from_result(result(2.0), step=1, stage="draft", speed_limits=["few channels"]))
    assert task_row(o)["speed_limits"] == ["few channels"]
    assert task_row(o)["attempt_log"][0]["speed_limits"] == ["few channels"]
    o.record(Attempt.from_result(result(1.0), step=2, stage="refine"))  # faster, nothing known against it
    assert task_row(o)["speed_limits"] == [] and "speed_limits" not in task_row(o)["attempt_log"][1]
    # a stored trace as Attempt.from_item reads it
    stored = SimpleNamespace(id=7, status="ok", feedback=result(2.0).to_dict(), extra={"speed_limits": ["few channels"]})
    assert Attempt.from_item(stored, step=1, stage="draft").speed_limits == ("few channels",)


def test_evaluation_seconds_sum_each_step_over_attempts_with_trial_numbers_folded():
    def timed(step, seconds, steps):
        result = EvalResult(Verdict.OK, latency_ms=1.0, latency_source=LatencySource.MEASURED_GPU, seconds=seconds,
                            step_seconds=steps)
        return Attempt.from_result(EvalResult.from_dict(result.to_dict()), step=step, stage="draft")

    a = TaskOutcome(name="a", task_key="a-0", path="a.py")
    a.record(timed(1, 10.0, {"timing the candidate": 2.0, "running the candidate on trial 1": 3.0,
                             "running the candidate on trial 2": 1.0}))
    b = TaskOutcome(name="b", task_key="b-0", path="b.py")
    b.record(timed(1, 5.0, {"timing the candidate": 1.5}))
    spent = compute_metrics([a, b])["evaluation_seconds"]
    assert spent["total"] == 15.0
    assert spent["by_step"] == {"running the candidate on trial N": 4.0, "timing the candidate": 3.5}
    assert list(spent["by_step"]) == ["running the candidate on trial N", "timing the candidate"]  # largest first


def test_an_attempts_accuracy_measures_and_warnings_reach_its_log_live_and_from_a_stored_item():
    """A wrong result's log says what the float64 oracle measured, or why there was none, and the
    executor's warnings (a re-run with the GPU to itself) are there: a failed task in a results file
    can be told apart from a tolerance that could not see past the reference's own rounding."""
    from types import SimpleNamespace

    wrong = EvalResult(Verdict.WRONG_RESULT, "wrong result on trial 2",
                       oracle_unavailable="too little free device memory for the float64 reference: 16 GiB",
                       warnings=["run again with the GPU and all of its memory to itself: beside 1 other\nmore"])
    judged = EvalResult(Verdict.OK, "correct", latency_ms=1.0, latency_source=LatencySource.MEASURED_GPU,
                        reference_error=3e-3, candidate_error=1e-6)
    o = TaskOutcome(name="scan", task_key="scan-0", path="scan.py")
    o.record(Attempt.from_result(wrong, step=1, stage="draft"))
    o.record(Attempt.from_result(judged, step=2, stage="draft"))
    first, second = task_row(o)["attempt_log"]
    assert first["oracle_unavailable"].startswith("too little free device memory")
    assert first["warnings"] == ["run again with the GPU and all of its memory to itself: beside 1 other"]
    assert "candidate_error" not in first and "oracle_unavailable" not in second and "warnings" not in second
    assert (second["reference_error"], second["candidate_error"]) == (3e-3, 1e-6)
    stored = SimpleNamespace(id=3, status="wrong_result", feedback=wrong.to_dict(), extra={})
    assert Attempt.from_item(stored, step=1, stage="draft").to_dict()["oracle_unavailable"] == wrong.oracle_unavailable
