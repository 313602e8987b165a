"""Batch evaluation: one worker serves many candidates, in order, and each
verdict is the one a single call gives; a crash costs one worker, not the batch. (Candidates that leave output
memory unwritten are not used here: what they return depends on what the
allocator held before, which differs between a fresh and a reused worker.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from backends import EvalJob, EvalOptions, Executor, Verdict

from executor_candidates import DISALLOWED, FAILURES, HONEST

CASES = Path(__file__).parent / "executor_cases"
FAST = EvalOptions(trials=2, cpu_reps=1)

BATCH = [
    ("add_relu", HONEST["add_relu"]),
    ("torch_op_in_forward", DISALLOWED["torch_op_in_forward"][:2]),
    ("wrong_math", FAILURES["wrong_math"][:2]),
    ("two_launches", HONEST["two_launches"]),
]


def _jobs(batch):
    return [EvalJob(CASES / task, source, options=FAST) for _, (task, source) in batch]


@pytest.mark.slow
def test_one_worker_serves_the_batch_with_the_verdicts_of_single_calls():
    with Executor(device="cpu", timeout_s=120) as ex:
        batch = list(ex.evaluate_many(_jobs(BATCH)))
        assert ex.workers_started == 1
    assert [r.worker_reused for r in batch] == [False, True, True, True]
    with Executor(device="cpu", timeout_s=120, reuse_workers=False) as fresh:
        single = [fresh.evaluate(j.task_path, j.source, options=j.options) for j in _jobs(BATCH)]
        assert fresh.workers_started == len(BATCH)
    assert [r.status for r in batch] == [Verdict.OK, Verdict.DISALLOWED, Verdict.WRONG_RESULT, Verdict.OK]
    for (name, _), b, s in zip(BATCH, batch, single):
        assert (b.status, b.message, b.max_abs_error) == (s.status, s.message, s.max_abs_error), name


@pytest.mark.slow
def test_a_crash_costs_one_worker_and_the_batch_goes_on():
    batch = [BATCH[0], ("segfault", FAILURES["segfault"][:2]), BATCH[0], BATCH[0]]
    with Executor(device="cpu", timeout_s=120) as ex:
        stream = ex.evaluate_many(_jobs(batch))
        first = next(stream)  # results come as they finish, not at the end
        assert first.status == Verdict.OK and ex.workers_started == 1
        results = [first, *stream]
        assert ex.workers_started == 2
    assert [r.status for r in results] == [Verdict.OK, Verdict.CRASH, Verdict.OK, Verdict.OK]
    assert [r.worker_reused for r in results] == [False, True, False, True]
