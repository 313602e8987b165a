"""Which convolutions the kernelbench rules hand to the library: not a grouped one that is not
depthwise (cuDNN runs its groups on streams of its own on the H200, which the side-stream rule
rejects), but a plain or depthwise one."""

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
