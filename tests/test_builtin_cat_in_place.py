"""A cat whose parts are pointwise stages read by nothing else: the cat's tensor is made first and
each part written into its slice (no copy of the parts), its other operands copied into theirs.
Under the kernelbench rules a convolution's bias and activation are such a stage (the library's
convolution computes the rest): SqueezeNet's fire module, GoogleNet's inception branches."""

from __future__ import annotations

import re

import pytest

from builtin_case import Case, explain, ok, run_cases, write
from evokernel.builtin import analyze, generate

FIRE = Case(
    "fire", "x: x = torch.relu(self.squeeze(x))\n"
    "return torch.cat([torch.relu(self.e1(x)), torch.relu(self.e3(x))], 1)",
    "[torch.randn(2, 4, 7, 6)]",
    init="self.squeeze = nn.Conv2d(4, 3, 1)\nself.e1 = nn.Conv2d(3, 8, 1)\nself.e3 = nn.Conv2d(3, 5, 3, padding=1)")
# a part read again later is copied; the cat feeds more work (a buffer dropped after its last reader);
# a negative dim
PARTIAL = Case(
    "partial", "x: a = torch.tanh(self.c1(x))\nb = self.c2(x) * 2.0\n"
    "y = torch.cat([a, x, b], dim=-3)\nreturn y.sum(dim=1) + a[:, :1].sum(dim=1)",
    "[torch.randn(2, 3, 5, 4)]",
    init="self.c1 = nn.Conv2d(3, 4, 3, padding=1)\nself.c2 = nn.Conv2d(3, 6, 1)")
# channels-last convolutions (see test_builtin_channels_last): the cat's tensor is laid out as its parts
NHWC = Case(
    "nhwc_cat", "x: y = torch.relu(self.c0(x))\ny = torch.cat([torch.relu(self.c1(y)), torch.relu(self.c2(y))], 1)\n"
    "return self.c3(y)",
    "[torch.randn(2, 3, 8, 8)]",
    init="self.c0 = nn.Conv2d(3, 64, 3, padding=1)\nself.c1 = nn.Conv2d(64, 64, 3, padding=1)\n"
         "self.c2 = nn.Conv2d(64, 64, 1)\nself.c3 = nn.Conv2d(128, 64, 3, padding=1)")
# a scan written into its part (the strict rules): an exclusive cumsum, and a cat along the middle dim
# of a 3-d tensor (the scan's rows, its dim and the rest each one strided run of the slice)
EXCLUSIVE = Case("exclusive_cumsum", "x: return torch.cat([torch.zeros_like(x[:, :1]), torch.cumsum(x[:, :-1], 1)], 1)",
                 "[torch.randn(3, 37)]")
MIDDLE = Case("scan_middle", "x: return torch.cat([torch.cumsum(x, 1), torch.sigmoid(x)], 1)",
              "[torch.randn(2, 5, 7)]")
CASES = [FIRE, PARTIAL, NHWC]
STRICT = [EXCLUSIVE, MIDDLE, Case("fire_strict", FIRE.forward, FIRE.inputs, FIRE.init)]


@pytest.fixture(scope="module")
def results(cpu_executor, tmp_path_factory):
    return run_cases(cpu_executor, CASES, tmp_path_factory.mktemp("cat_in_place"), rules="kernelbench")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_parts_are_written_into_the_cat_and_the_candidate_is_correct(results, tmp_path, case):
    source = generate(analyze(str(write(case, tmp_path)), "kernelbench"))
    forward = source[source.index("def _launches"):]
    assert "_cat_slots(" in forward and "out=_slots" in forward and "fused_cat" not in forward
    # every buffer forward deletes was assigned before
    assigned = set(re.findall(r"(buf\d+)(?:, _slots\d+)? = ", forward))
    for line in re.findall(r"del (.*)", forward):
        assert set(re.findall(r"buf\d+", line)) <= assigned, line
    assert ok(results[case.name]), explain(results[case.name])


def test_a_part_read_again_is_copied(tmp_path):
    forward = generate(analyze(str(write(PARTIAL, tmp_path)), "kernelbench")).split("def _launches")[1]
    # tanh(c1(x)) is read by the cat and by a later slice: copied, as x is; c2(x) * 2 is written in place
    assert len(re.findall(r"_copy_\(_slots\d+\[\d\]", forward)) == 2
    assert len(re.findall(r"out=_slots\d+\[\d\]", forward)) == 1


def test_our_convolutions_write_into_the_cat_under_strict_rules(tmp_path):
    """Under strict rules the convolutions are ours, the bias and activation in their epilogues:
    each branch's convolution writes into its part of the cat."""
    forward = generate(analyze(str(write(FIRE, tmp_path)), "strict")).split("def _launches")[1]
    assert len(re.findall(r"fused_conv_s\d+\(.*out=_slots", forward)) == 2 and "fused_cat" not in forward


@pytest.fixture(scope="module")
def strict_results(cpu_executor, tmp_path_factory):
    return run_cases(cpu_executor, STRICT, tmp_path_factory.mktemp("cat_in_place_strict"), rules="strict")


@pytest.mark.parametrize("case", STRICT, ids=lambda c: c.name)
def test_scans_and_convolutions_are_written_into_their_parts(strict_results, tmp_path, case):
    forward = generate(analyze(str(write(case, tmp_path)), "strict")).split("def _launches")[1]
    assert re.search(r"fused_(scan|conv)_s\d+\(.*out=_slots", forward) and "fused_cat" not in forward
    assert ok(strict_results[case.name]), explain(strict_results[case.name])
