"""Which convolutions the kernelbench rules hand to the library: not a grouped one that is not
depthwise (cuDNN runs its groups on streams of its own on the H200, which the side-stream rule
rejects), but a plain or depthwise one; a grouped 1x1 one is a batched matmul (cuBLAS's)."""

from __future__ import annotations

import pytest

from builtin_case import Case, write
from evokernel.builtin import analyze


def _library_convs(tmp_path, groups: int) -> int:
    case = Case(f"conv_g{groups}", "x: return torch.relu(self.conv(x)) * 2.0", "[torch.randn(2, 4, 8, 8)]",
                init=f"self.conv = nn.Conv2d(4, 4, 3, padding=1, groups={groups}, bias=False)")
    plan = analyze(str(write(case, tmp_path)), "kernelbench")
    return sum(1 for s in plan.stages for n in s.nodes if n.op == "libconv")


@pytest.mark.parametrize("groups, library", [(1, 1), (4, 1), (2, 0)])
def test_a_grouped_convolution_that_is_not_depthwise_stays_ours(tmp_path, groups, library):
    assert _library_convs(tmp_path, groups) == library


# ShuffleNet's grouped 1x1 convolutions (stride 1, no padding) are batched matmuls: under the
# kernelbench rules cuBLAS's batched GEMM (one call, the current stream), under strict our matmul
GROUPED_1X1 = Case("grouped_1x1", "x: return torch.relu(self.bn(self.conv(x))) + 1.0", "[torch.randn(2, 12, 5, 7)]",
                   init="self.conv = nn.Conv2d(12, 9, 1, groups=3)\nself.bn = nn.BatchNorm2d(9)\n"
                        "self.bn.running_mean.uniform_()\nself.bn.running_var.uniform_(0.5, 2)")


@pytest.mark.parametrize("rules, op", [("kernelbench", "libmm"), ("strict", "matmul")])
def test_a_grouped_1x1_convolution_is_a_batched_matmul_and_correct(cpu_executor, tmp_path, rules, op):
    from builtin_case import explain, ok, run_cases

    plan = analyze(str(write(GROUPED_1X1, tmp_path)), rules)
    ops = [n.op for s in (plan.stages or [plan]) for n in s.nodes]
    assert op in ops and "conv" not in ops and "libconv" not in ops
    result = run_cases(cpu_executor, [GROUPED_1X1], tmp_path, rules=rules)[GROUPED_1X1.name]
    assert ok(result), explain(result)


@pytest.mark.parametrize("init", ["nn.Conv2d(12, 9, 1, groups=3, stride=2)", "nn.Conv2d(12, 9, 1, groups=3, padding=1)",
                                  "nn.Conv2d(12, 12, 1, groups=12)", "nn.Conv2d(12, 9, 3, groups=3)"])
def test_other_grouped_convolutions_stay_convolutions(tmp_path, init):
    case = Case("grouped_other", "x: return torch.relu(self.conv(x)) * 2.0", "[torch.randn(2, 12, 6, 6)]",
                init=f"self.conv = {init}")
    plan = analyze(str(write(case, tmp_path)), "strict")
    assert "conv" in [n.op for s in (plan.stages or [plan]) for n in s.nodes]
