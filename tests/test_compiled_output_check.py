"""torch.compile's own output held to the candidate's check: a speedup over a compiler whose result the
executor would reject is flagged in the bench's results, never folded into the candidate's verdict."""

import torch

from backends._evaluate import compiled_output_check
from backends._result import Baselines, EvalResult, LatencySource, Verdict
from evokernel.bench._metrics import compute_metrics, task_row
from evokernel.loop._types import Attempt, TaskOutcome


def _conv_task():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(8, 16, 3)
    x = torch.randn(2, 8, 12, 12)
    with torch.no_grad():
        expected = conv(x)
        exact = torch.nn.functional.conv2d(x.double(), conv.weight.double(), conv.bias.double())
    return conv, x, expected, exact


def _tf32(t: torch.Tensor) -> torch.Tensor:
    """t rounded to TF32's 10 mantissa bits (what a TF32 convolution does to its operands)."""
    bits = t.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def test_a_compiled_output_as_accurate_as_the_reference_passes():
    conv, x, expected, exact = _conv_task()
    check = compiled_output_check(conv, [x], expected, (1e-4, 1e-4), exact, None)
    assert check.compile_correct is True
    assert check.compile_check.startswith("within the check")


def test_a_tf32_compiled_convolution_fails_the_candidates_check():
    conv, x, expected, exact = _conv_task()

    def tf32_conv(inp):
        return torch.nn.functional.conv2d(_tf32(inp), _tf32(conv.weight), conv.bias)

    check = compiled_output_check(tf32_conv, [x], expected, (1e-4, 1e-4), exact, None)
    assert check.compile_correct is False
    assert check.compile_check and "\n" not in check.compile_check


def test_a_compiled_model_that_fails_to_run_is_not_checked_and_not_raised():
    conv, x, expected, exact = _conv_task()

    def broken(inp):
        raise RuntimeError("inductor gave up\nsecond line")

    check = compiled_output_check(broken, [x], expected, (1e-4, 1e-4), exact, None)
    assert check.compile_correct is None
    assert check.compile_check == "not checked: RuntimeError: inductor gave up"


def test_the_check_survives_a_results_round_trip_and_reaches_the_suite_metrics():
    result = EvalResult(Verdict.WRONG_RESULT, latency_source=LatencySource.MEASURED_GPU,
                        baselines=Baselines(eager_ms=2.0, compile_ms=1.0, compile_correct=False,
                                            compile_check="3% of elements past tolerance"))
    again = EvalResult.from_dict(result.to_dict())
    assert again.baselines == result.baselines
    wrong, right = TaskOutcome("conv_task", "k1", "conv_task.py"), TaskOutcome("matmul_task", "k2", "matmul_task.py")
    # recorded from a rejected candidate too: the baseline is the task's
    wrong.record(Attempt.from_result(again, step=1, stage="draft"))
    right.record(Attempt.from_result(EvalResult(Verdict.OK, latency_ms=1.0, latency_source=LatencySource.MEASURED_GPU,
                                                baselines=Baselines(2.0, 1.0, True, "within the check")),
                                     step=1, stage="draft"))
    assert (wrong.compile_correct, right.compile_correct) == (False, True)
    assert task_row(wrong)["compile_check"] == "3% of elements past tolerance"
    metrics = compute_metrics([wrong, right], device="cuda:0")
    assert metrics["compile_wrong_tasks"] == ["conv_task"]
    assert metrics["compile_checked_tasks"] == 2
    # the like-for-like figure counts only correct tasks whose torch.compile output passed the check
    tf32_beaten = TaskOutcome("conv_fast", "k3", "conv_fast.py")
    tf32_beaten.record(Attempt.from_result(EvalResult(Verdict.OK, latency_ms=0.25, latency_source=LatencySource.MEASURED_GPU,
                                                      baselines=Baselines(2.0, 1.0, False, "TF32")), step=1, stage="draft"))
    metrics = compute_metrics([wrong, right, tf32_beaten], device="cuda:0")
    assert metrics["geomean_speedup_compile"] == 2.0  # sqrt(1.0 * 4.0) over both correct tasks
    assert (metrics["geomean_speedup_compile_checked"], metrics["n_speedup_compile_checked"]) == (1.0, 1)
