"""Tasks run in fp16 and bf16 (issue 31): the executor casts as KernelBench's harness does, the
builtin writes kernels for the precision, and the accuracy oracle judges them against the
low-precision reference's own error.

On the CPU, Triton's interpreter keeps bf16 values as their raw bits (NumPy has no bf16); the
backend's hooks make it compute them as the GPU does (backends/_interpreter_bf16.py, checked
here against torch's own rounding), so bf16 kernels run end to end in the interpreter, and each
launched kernel is also compiled for sm_90 (the executor's compile check)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from backends import EvalOptions, Verdict, assess_task, cast_model, cast_values, compare, load_task_module
from backends._interpreter_bf16 import to_bits, to_float32
from backends._precision import cast_dtype

from builtin_case import Case, write
from evokernel.builtin import search_space
from executor_candidates import HEADER
from test_oracle import row_sum

CASES = Path(__file__).parent / "executor_cases"


# ---------------------------------------------------------------- options and casting


def test_precision_options_and_their_default_tolerance():
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        EvalOptions(precision="fp8")
    assert EvalOptions().tolerance(None) is None  # fp32: each output dtype's default (1e-4)
    assert EvalOptions(precision="bf16").tolerance(None) == (1e-2, 1e-2)
    assert EvalOptions(precision="fp16").tolerance((1e-3, 1e-3)) == (1e-3, 1e-3)  # the task's TOLERANCE wins
    assert EvalOptions(precision="bf16", atol=0.05).tolerance((1e-3, 1e-3)) == (0.05, 1e-3)  # then the options'
    assert EvalOptions.from_dict(EvalOptions(precision="bf16").to_dict()).precision == "bf16"


class _Mixed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)
        self.register_buffer("steps", torch.arange(3))
        self.scale = torch.tensor(0.5)  # a plain attribute: cast too, or forward would mix dtypes


def test_models_and_inputs_are_cast_floating_tensors_only():
    model = cast_model(_Mixed(), "bf16")
    assert model.linear.weight.dtype == model.scale.dtype == torch.bfloat16 and model.steps.dtype == torch.int64
    x, idx, rest = cast_values([torch.randn(2), torch.arange(2), [torch.randn(1, dtype=torch.float64), 3.0]], "fp16")
    assert x.dtype == rest[0].dtype == torch.float16 and idx.dtype == torch.int64 and rest[1] == 3.0
    kept = torch.randn(2)
    assert cast_values([kept], "fp32")[0] is kept and cast_dtype("fp32") is None  # fp32: the task as written


def test_the_interpreter_rounds_bf16_as_torch_does():
    # every rounding case: ties to even both ways, the largest finite values rounding to inf, NaN, subnormals
    bits = np.array([0x3F808000, 0x3F818000, 0x3F80C000, 0x7F7FFFFF, 0xFF7F8000, 0x7FC00001, 0x00012345,
                     0x80000001, 0x7F800000], dtype=np.uint32)
    values = np.concatenate([bits.view(np.float32), np.random.default_rng(0).standard_normal(10000).astype(np.float32)])
    want = torch.from_numpy(values).to(torch.bfloat16)
    got = torch.from_numpy(to_bits(values).view(np.int16)).view(torch.bfloat16)
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got[~want.isnan()], want[~want.isnan()])
    assert np.array_equal(to_float32(to_bits(values[9:])), want[9:].float().numpy())


# ---------------------------------------------------------------- the oracle's rule at bf16


def _normalised_sigmoid(x: torch.Tensor) -> torch.Tensor:
    """level2/21's tail: a sigmoid whose rows a normalisation then stretches (bf16 rounding amplified)."""
    s = torch.sigmoid(x)
    centred = s - s.mean(-1, keepdim=True)
    return centred / (centred.square().mean(-1, keepdim=True) + 1e-5).sqrt()


def test_a_bf16_kernel_at_least_as_accurate_as_the_bf16_reference_passes_where_it_misses_the_tolerance():
    torch.manual_seed(0)
    x = (torch.randn(64, 128) * 0.05).bfloat16()  # sigmoid(x) ~ 0.5 with a small spread: a large stretch
    reference = _normalised_sigmoid(x)  # eager bf16: every op rounds to bf16
    exact = _normalised_sigmoid(x.double())
    fused = _normalised_sigmoid(x.float()).bfloat16()  # fp32 registers, rounded once
    assert not compare(reference, fused, (1e-2, 1e-2)).ok, "the reference's own rounding fails the tolerance"
    cmp = compare(reference, fused, (1e-2, 1e-2), exact)
    assert cmp.ok and cmp.by_accuracy, cmp.feedback
    assert cmp.reference_error > 1e-2 and cmp.candidate_error < cmp.reference_error / 5
    # a kernel rounding at every op as the reference does, with its sigmoid spelled out (other roundings),
    # is about as far from the float64 output as the reference: where the two differ, it fails
    spelled = 1.0 / (1.0 + torch.exp(-x))  # bf16 arithmetic, each op rounded
    centred = spelled - spelled.mean(-1, keepdim=True)
    other = centred / (centred.square().mean(-1, keepdim=True) + 1e-5).sqrt()
    cmp = compare(reference, other, (1e-2, 1e-2), exact)
    assert not cmp.ok and cmp.candidate_error > cmp.reference_error / 3, cmp.feedback


def test_a_bf16_output_far_less_accurate_than_the_bf16_reference_fails_inside_the_tolerance():
    # fp8 (e5m2: 2 mantissa bits) probabilities of a wide softmax sit far inside atol=1e-2
    torch.manual_seed(0)
    x = torch.randn(4, 4096).bfloat16()
    reference, exact = torch.softmax(x, -1), torch.softmax(x.double(), -1)
    fp8 = torch.softmax(x.float(), -1).to(torch.float8_e5m2).bfloat16()
    cmp = compare(reference, fp8, (1e-2, 1e-2), exact)
    assert not cmp.ok and "less accurate than the reference" in cmp.feedback
    assert compare(reference, fp8, (1e-2, 1e-2)).ok, "the tolerance alone passes it"


# ---------------------------------------------------------------- the builtin, end to end on the executor

LEVEL1_STYLE = [
    Case("p_matmul", "a, b: return a @ b", "[torch.randn(33, 40), torch.randn(40, 24)]"),
    # rows of 2-byte elements not 16-byte aligned (K = 37, N = 270): copied K-contiguous, K padded with zeros
    Case("p_matmul_unaligned", "a, b: return torch.relu(a @ b)", "[torch.randn(260, 37), torch.randn(37, 270)]"),
    Case("p_conv", "x: return self.conv(x)", "[torch.randn(2, 4, 9, 9)]", init="self.conv = nn.Conv2d(4, 16, 3)"),
    # a full K step of input channels: the channels-last copy walked a tap at a time, standard and transposed
    Case("p_conv_taps", "x: return self.conv(x)", "[torch.randn(1, 32, 5, 5)]", init="self.conv = nn.Conv2d(32, 8, 3)"),
    Case("p_conv_transposed_taps", "x: return self.conv(x)", "[torch.randn(1, 32, 3, 4)]",
         init="self.conv = nn.ConvTranspose2d(32, 8, 3, stride=2, padding=1)"),
    Case("p_layernorm", "x: return self.norm(x)", "[torch.randn(8, 64)]", init="self.norm = nn.LayerNorm(64)"),
    Case("p_softmax", "x: return torch.softmax(x, dim=-1)", "[torch.randn(8, 100)]"),
    Case("p_sum", "x: return x.sum(dim=1)", "[torch.randn(16, 300)]"),
    Case("p_chain", "x, y: return torch.sigmoid(torch.relu(x * 2.0 + y) - 0.5) * y",
         "[torch.randn(7, 33), torch.randn(33)]"),
]


@pytest.fixture(scope="module")
def builtin_verdicts(cpu_executor, tmp_path_factory):
    from evokernel.builtin import analyze, generate

    directory = tmp_path_factory.mktemp("precision")
    verdicts = {}
    for case in LEVEL1_STYLE:
        path = write(case, directory)
        for precision in ("bf16", "fp16"):
            plan = analyze(path, "strict", precision)
            assert plan, f"{case.name} {precision}: {getattr(plan, 'reason', '')}"
            source = generate(plan)
            options = EvalOptions(trials=1, timing=False, baselines=False, precision=precision)
            verdicts[case.name, precision] = plan, source, cpu_executor.evaluate(path, source, backend="triton",
                                                                                  options=options)
    return verdicts


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.parametrize("name", [c.name for c in LEVEL1_STYLE])
def test_the_builtin_writes_kernels_for_the_precision_and_they_pass(builtin_verdicts, name, precision):
    plan, source, result = builtin_verdicts[name, precision]
    dtype = {"bf16": "bfloat16", "fp16": "float16"}[precision]
    assert {leaf.spec.dtype for leaf in plan.leaves if leaf.spec.dtype.startswith(("float", "bfloat"))} == {dtype}
    assert plan.out_spec.dtype == dtype
    assert result.status == Verdict.OK, f"{result.status}: {result.feedback}"
    assert result.precision == precision and f"run in {precision}" in result.feedback
    assert result.candidate_error is not None and result.oracle_unavailable == ""
    assert result.kernels, "every launched kernel compiled for sm_90"
    if name in ("p_matmul", "p_matmul_unaligned", "p_conv"):  # half-precision operands go to the tensor cores as they are, in fp32 sums
        # no 3xTF32 split: the matmul's launcher makes no split parts and never splits in registers,
        # the convolution's K loop is told not to split
        assert "_tf32_split(" not in source and "SPLIT3=not tf32" not in source
        assert name != "p_conv" or "SPLIT3=False" in source
    launched = {k.name.split("_s")[0] for k in result.kernels}
    assert (name == "p_matmul_unaligned") == any(k.startswith("_k_padded_kernel") for k in launched), launched
    if name.endswith("_taps"):
        assert "_launch(_conv_taps_kernel," in source and "_launch(_conv_gemm_kernel," not in source
        assert "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)" in source
        assert {c.precision for c in search_space(plan)} == {"auto"}, "no TF32 roundings to search"


# ---------------------------------------------------------------- hidden-style cases on a bf16 task


def fast_bf16() -> EvalOptions:
    return EvalOptions(trials=2, cpu_reps=1, timing=False, precision="bf16")


def sum_task(directory: Path, inputs: str) -> Path:
    path = directory / "task_row_sum.py"
    path.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                    f"        return x.sum(dim=1)\n\n\ndef get_inputs():\n    return [{inputs}]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    return path


def test_fp32_accumulation_on_a_bf16_task_is_accepted(cpu_executor, tmp_path):
    task = sum_task(tmp_path, "torch.randn(8, 4096) + 0.5")
    result = cpu_executor.evaluate(task, row_sum("tl.float32").replace(".to(tl.float32))", ".to(out_ptr.dtype.element_ty))"),
                                   backend="triton", options=fast_bf16())
    assert result.status == Verdict.OK, result.feedback
    assert result.precision == "bf16" and result.candidate_error <= 3 * max(result.reference_error, 2.0 ** -8)


def test_bf16_accumulation_on_a_bf16_task_is_rejected(cpu_executor, tmp_path):
    # 8 lanes each add 256 terms of ~0.75 in bf16, each addition rounded: past 128 (a unit apart in bf16)
    # each term counts as 1, and the sum lands ~10% high; torch's reference accumulates in fp32.
    # (Round-to-nearest bf16 sums of a few hundred signed terms stay within ~2.5 units of bf16
    # rounding, which the rule accepts: it takes terms a bf16 sum cannot hold to fail them.)
    task = sum_task(tmp_path, "torch.rand(1, 2048) * 0.1 + 0.7")
    source = row_sum("tl.bfloat16").replace(".to(tl.float32))", ".to(out_ptr.dtype.element_ty))")
    result = cpu_executor.evaluate(task, source.replace("BLOCK=1024", "BLOCK=8"), backend="triton", options=fast_bf16())
    assert result.status == Verdict.WRONG_RESULT, result.feedback
    assert "differs beyond" in result.message and result.candidate_error > 0.05 > 100 * result.reference_error


FP8_SOFTMAX = HEADER + '''
@triton.jit
def softmax_fp8_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    out = (num / tl.sum(num, axis=0)).to(tl.float8e5).to(tl.float32)
    tl.store(out_ptr + row * n_cols + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        rows = x.reshape(-1, x.shape[-1])
        out = torch.empty_like(rows)
        n_rows, n_cols = rows.shape
        softmax_fp8_kernel[(n_rows,)](rows, out, n_cols, rows.stride(0), BLOCK=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
'''


def test_a_kernel_computing_below_bf16_is_rejected_on_a_bf16_task(cpu_executor, tmp_path):
    task = tmp_path / "task_wide_softmax.py"
    task.write_text((CASES / "task_row_softmax.py").read_text().replace("torch.randn(3, 17, 333)", "torch.randn(2, 8, 4096)"))
    result = cpu_executor.evaluate(task, FP8_SOFTMAX, backend="triton", options=fast_bf16())
    assert result.status == Verdict.WRONG_RESULT, result.feedback
    assert result.precision == "bf16"


def test_degenerate_tasks_are_still_found_and_stressed_in_bf16():
    plan = assess_task(load_task_module(CASES / "task_matmul_sub_relu.py"), precision="bf16")
    assert any("close to zero" in r for r in plan.reasons) and plan.sets and not plan.degenerate
    x = plan.sets[0][1]()[0]
    assert x.dtype == torch.bfloat16 and float(x.min()) < 0
    fixed = assess_task(load_task_module(CASES / "task_ignores_inputs.py"), precision="bf16")
    assert not fixed.sets and "no stress distribution" in fixed.degenerate


def test_the_prompt_rules_do_not_call_a_bf16_task_s_own_type_cheating():
    from backends._rules import describe_rules

    text = describe_rules("strict")
    assert "fp16/bf16 casts" not in text and "lower precision than the task runs in" in text
