"""The two rule sets end to end on the CPU: candidates of each kind judged
under `strict` and `kernelbench`, the rule recorded in every verdict,
KernelBench's adversarial kernels (our own equivalents, each file carrying
the task's `get_inputs`) rejected by the runtime checks for the right
reason, and a reference the candidate cannot reach."""

from __future__ import annotations

from pathlib import Path

import pytest

from backends import RULES, RULE_SETS, EvalOptions, EvalResult, Verdict, describe_rules
from backends._rules import explain, verdict_for
from backends._share import DeviceActivity, is_own, kernel_identifiers, split_activities

from executor_candidates import DISALLOWED, EXPECTED_KERNELBENCH, FAILURES, HACKS, HEADER, HONEST, MATMUL_KERNEL

CASES = Path(__file__).parent / "executor_cases"


def fast(rules: str, **kw) -> EvalOptions:
    return EvalOptions(trials=2, cpu_reps=1, rules=rules, **kw)


@pytest.fixture(scope="module")
def executor(cpu_executor):
    # The session's warm worker (conftest): these tests need a worker, not a fresh one.
    return cpu_executor


# ---------------------------------------------------------------- the rule table


def test_every_rule_is_cheating_or_outside_the_rules():
    for rule in RULES.values():
        assert rule.verdict in (Verdict.HACK, Verdict.DISALLOWED), rule.name
        assert rule.allowed_in <= set(RULE_SETS)
        if rule.verdict is Verdict.HACK:
            assert not rule.allowed_in, f"cheating is allowed nowhere: {rule.name}"


def test_what_kernelbench_allows():
    assert verdict_for("torch-compute", "strict") is Verdict.DISALLOWED
    assert verdict_for("torch-compute", "kernelbench") is None
    assert verdict_for("library-call", "kernelbench") is None
    assert verdict_for("try-except", "kernelbench") is Verdict.DISALLOWED
    assert verdict_for("no-launch", "kernelbench") is Verdict.DISALLOWED
    assert verdict_for("stream", "kernelbench") is Verdict.HACK
    assert "--rules kernelbench allows it" in explain("torch-compute", "strict")
    assert "allows it" not in explain("stream", "strict")
    for rules in RULE_SETS:
        text = describe_rules(rules)
        assert rules in text and "hack" in text


# ---------------------------------------------------------------- both rule sets, end to end


@pytest.mark.parametrize("name", sorted(DISALLOWED))
def test_rule_violations_are_disallowed_not_hacks(executor, name):
    task, source, fragment = DISALLOWED[name]
    strict = executor.evaluate(CASES / task, source, backend="triton", options=fast("strict"))
    assert strict.status == Verdict.DISALLOWED, f"{name}: {strict.status} {strict.message}"
    assert fragment.lower() in (strict.message + strict.feedback).lower(), strict.feedback
    assert strict.rules == "strict"
    kb = executor.evaluate(CASES / task, source, backend="triton", options=fast("kernelbench"))
    assert kb.status.value == EXPECTED_KERNELBENCH[name], f"{name}: {kb.status} {kb.message}"
    assert kb.rules == "kernelbench"
    if strict.status != kb.status:
        assert "--rules kernelbench allows it" in strict.message


@pytest.mark.parametrize("name", sorted(HACKS))
def test_cheating_is_a_hack_under_kernelbench_too(executor, name):
    task, source, rule = HACKS[name]
    result = executor.evaluate(CASES / task, source, backend="triton", options=fast("kernelbench"))
    assert result.status == Verdict.HACK, f"{name}: {result.status} {result.message}"
    assert rule.lower() in (result.message + result.feedback).lower(), result.feedback
    assert result.rules == "kernelbench"


@pytest.mark.parametrize("name, reason", [
    ("kb_zeroed_inputs", "writes into its input"),
    ("kb_uninitialised_output", "never written"),
    ("kb_side_stream_at_runtime", "used a side stream"),
])
def test_kernelbench_adversarial_kernels_fall_to_the_runtime_checks(executor, name, reason):
    task, source, _ = HACKS[name]
    assert "def get_inputs" in source and "torch.rand" in source
    result = executor.evaluate(CASES / task, source, backend="triton", options=fast("strict"))
    assert result.status == Verdict.HACK
    assert not result.message.startswith("static check"), "must get past the static rules"
    assert reason in result.message, result.message


def test_honest_kernel_carrying_get_inputs_is_accepted(executor):
    task, source = HONEST["kb_style_matmul"]
    assert "torch.rand" in source and "N = 2048 * 2" in source
    for rules in RULE_SETS:
        result = executor.evaluate(CASES / task, source, backend="triton", options=fast(rules))
        assert result.status == Verdict.OK, result.feedback
        assert result.rules == rules and result.own_kernel_share is None  # no GPU time to share out here


def test_rules_are_recorded_on_crashes_too(executor):
    task, source, _, _ = FAILURES["exits"]
    result = executor.evaluate(CASES / task, source, backend="triton", options=fast("kernelbench"))
    assert result.status == Verdict.CRASH and result.rules == "kernelbench"
    again = EvalResult.from_dict(result.to_dict())
    assert again.rules == "kernelbench" and again.own_kernel_share is None and again.degenerate == ""


def test_reference_is_out_of_the_candidates_reach(executor):
    # The candidate redefines the task's N and get_inputs and trusts its own N: the reference keeps the
    # task's sizes (48), so the candidate's 8x8 answer is the wrong shape. (KernelBench's CUDA path runs
    # candidates in the reference's globals, where this shrinks the reference too.)
    source = HEADER + MATMUL_KERNEL + """

N = 8


def get_inputs():
    return [torch.zeros(N, N), torch.zeros(N, N)]


class ModelNew(nn.Module):
    def forward(self, A, B):
        return matmul(A[:N, :N].contiguous(), B[:N, :N].contiguous())
"""
    result = executor.evaluate(CASES / "task_matmul.py", source, backend="triton", options=fast("strict"))
    assert result.status == Verdict.WRONG_RESULT
    assert "shape (8, 8), expected (48, 48)" in result.message


def test_min_own_share_needs_a_gpu_to_mean_anything(executor):
    task, source, _ = DISALLOWED["submodule_call"]
    result = executor.evaluate(CASES / task, source, backend="triton", options=fast("kernelbench", min_own_share=0.5))
    assert result.status == Verdict.OK and result.own_kernel_share is None


def test_options_refuse_unknown_rule_sets():
    with pytest.raises(ValueError, match="unknown rule set"):
        EvalOptions(rules="lenient")
    with pytest.raises(ValueError, match="min_own_share"):
        EvalOptions(min_own_share=1.5)


# ---------------------------------------------------------------- own-kernel share (profiler events, synthetic)


def test_profiler_names_are_matched_to_own_kernels():
    assert {"add_relu_kernel"} <= kernel_identifiers("void add_relu_kernel<float>(float const*, float*, int)")
    assert is_own("void ns::fused_epilogue(float*, int)", {"fused_epilogue"})
    assert is_own("matmul_kernel", {"matmul_kernel"})
    assert not is_own("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32", {"matmul_kernel"})
    assert not is_own("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)", {"fill"})


def test_share_splits_own_from_library_time_and_finds_side_streams():
    acts = [
        DeviceActivity("spin_kernel", 1.0, stream=7),
        DeviceActivity("sm90_xmma_gemm_f32f32_nn", 75.0, stream=7),
        DeviceActivity("void relu_epilogue(float*, int)", 25.0, stream=7),
        DeviceActivity("spin_kernel", 1.0, stream=7),
    ]
    report = split_activities(acts, {"relu_epilogue"})
    assert report.share == pytest.approx(0.25)
    assert report.side_streams == 0 and report.own_kernels == ("void relu_epilogue",)
    assert "25.0%" in report.describe() and "sm90_xmma_gemm" in report.describe()
    hidden = acts[:2] + [DeviceActivity("void relu_epilogue(float*, int)", 25.0, stream=13)] + acts[3:]
    assert split_activities(hidden, {"relu_epilogue"}).side_streams == 1
    assert split_activities([], {"k"}).share is None
    # the slowest activity, own or library, by name: launches of one kernel add up
    assert report.slowest == "sm90_xmma_gemm_f32f32_nn" and report.slowest_share == pytest.approx(0.75)
    assert "slowest kernel: sm90_xmma_gemm_f32f32_nn (75.0% of the GPU time)" in report.describe()
    twice = acts[:2] + [DeviceActivity("void relu_epilogue(float*, int)", 40.0, stream=7)] * 2 + acts[3:]
    assert split_activities(twice, {"relu_epilogue"}).slowest == "void relu_epilogue"
    assert split_activities([], {"k"}).slowest_share is None


# ---------------------------------------------------------------- the share's verdicts (a GPU profile, faked)


@pytest.mark.parametrize("report, rules, min_share, status, fragment", [
    (("relu_epilogue", 25.0, 75.0, 0), "kernelbench", 0.3, "disallowed", "lazy: own kernels did 25.0%"),
    (("relu_epilogue", 25.0, 75.0, 0), "kernelbench", 0.2, "ok", ""),
    (("relu_epilogue", 25.0, 75.0, 0), "strict", 0.3, "ok", ""),  # the share is a kernelbench rule
    (("relu_epilogue", 25.0, 75.0, 1), "kernelbench", 0.0, "hack", "stream other than the harness's"),
    (("relu_epilogue", 0.0, 75.0, 0), "kernelbench", 0.0, "disallowed", "none of the candidate's own kernels ran"),
])
def test_share_verdicts(monkeypatch, report, rules, min_share, status, fragment):
    import torch

    from backends import _evaluate
    from backends._share import ShareReport

    name, own, lib, side = report
    fake = ShareReport(own, lib, (name,), ("sm90_xmma_gemm",), side, "sm90_xmma_gemm", lib)
    monkeypatch.setattr(_evaluate._share, "measure", lambda call, names, device: fake)
    result = EvalResult(Verdict.OK, "correct")
    input_set = _evaluate.InputSet("trial 1", lambda: [])
    try:
        _evaluate._own_share(result, None, input_set, None, None, torch.device("cuda"), fast(rules, min_own_share=min_share), None)
        got, message = "ok", ""
    except _evaluate._Reject as rej:
        got, message = rej.result.status.value, rej.result.message
    assert got == status and fragment in message, message
    if got == "ok":
        assert result.own_kernel_share == pytest.approx(own / (own + lib))
        assert result.slowest_kernel == fake.slowest and result.slowest_kernel_share == fake.slowest_share


def test_the_profiled_call_holds_the_candidates_forward_and_not_the_harness_input_copies(monkeypatch):
    """Inputs are cloned before the profile starts: copies inside it counted as library time
    and halved an honest elementwise kernel's share on the H200 (51% for ReLU)."""
    import torch

    from backends import _evaluate
    from backends._backend import LaunchLog
    from backends._share import ShareReport

    events = []
    real_clone = _evaluate._clone
    monkeypatch.setattr(_evaluate, "_clone", lambda xs: events.append("clone") or real_clone(xs))

    def measure(call, names, device):
        events.append("profile starts")
        call()
        events.append("profile ends")
        return ShareReport(1.0, 0.0, ("k",), (), 0)

    monkeypatch.setattr(_evaluate._share, "measure", measure)

    class Model:
        def __call__(self, x):
            events.append("forward")
            return x

    result = EvalResult(Verdict.OK, "correct")
    input_set = _evaluate.InputSet("trial 1", lambda: [torch.ones(3)])
    _evaluate._own_share(result, Model(), input_set, None, LaunchLog(), torch.device("cuda"), fast("kernelbench"), None)
    assert events == ["clone", "profile starts", "forward", "profile ends"]
    assert result.own_kernel_share == 1.0
