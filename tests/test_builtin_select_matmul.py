"""A select or slice of computed work pushed into it (only the kept rows are computed), tiny
einsum contractions as a broadcast product summed in a rows kernel (no tensor-core tiles, no
copy of a permuted operand), and zero parts of a cat left out of a contraction: the pattern of a
chunked state-space recurrence's final state, ``einsum('bhzc,bchpn->bzhpn', decay,
cat([zeros, states]))[:, -1]``. Checked by the executor (interpreter values, sm_90 compile) and
on the plans and sources the generator writes."""

import pytest

from builtin_case import Case, correctness_checks, write
from evokernel.builtin import analyze, generate

# decay (b, h, z, c) over z, c chunk boundaries; states (b, c, h, p, n) after a pointwise step
_RECURRENCE = """s = torch.sigmoid(s) * 2.0
s = torch.cat([{first}(s[:, :1]), s], dim=1)
new = torch.einsum("bhzc,bchpn->bzhpn", torch.exp(-d.abs()), s)
"""
_INPUTS = "[torch.randn(2, 3, 4, 4), torch.randn(2, 3, 3, 8, 5)]"

CASES = [
    Case("final_row_of_a_tiny_contraction", "d, s: " + _RECURRENCE.format(first="torch.zeros_like")
         + "return new[:, -1]", _INPUTS),
    Case("leading_rows_of_a_tiny_contraction", "d, s: " + _RECURRENCE.format(first="torch.zeros_like")
         + "return new[:, :-1] * 0.5", _INPUTS),
    # a first part of ones is no zero: the cat stays whole
    Case("cat_of_ones_kept", "d, s: " + _RECURRENCE.format(first="torch.ones_like") + "return new[:, -1]",
         _INPUTS, slow=True),
    Case("last_row_of_a_matmul", "a, b: return torch.relu(torch.matmul(a, b))[:, -1]",
         "[torch.randn(3, 20, 24), torch.randn(3, 24, 17)]"),
    Case("column_of_a_softmax", "x: return torch.softmax(x * 2.0, dim=-1)[:, 1]", "[torch.randn(4, 5, 33)]",
         slow=True),
]
KERNELBENCH = ("final_row_of_a_tiny_contraction",)

results, kernelbench_results, test_select_candidate_is_correct, test_select_candidate_is_correct_under_kernelbench_rules = \
    correctness_checks(CASES, "select", KERNELBENCH)

BY_NAME = {c.name: c for c in CASES}


def _plan(tmp_path, name, rules="strict"):
    plan = analyze(write(BY_NAME[name], tmp_path), rules)
    assert plan, plan
    return plan


def _ops(plan):
    stages = plan.stages if plan.family == "pipeline" else (plan,)
    return [op for stage in stages for op in stage.ops]


@pytest.mark.parametrize("rules", ["strict", "kernelbench"])
def test_final_row_is_one_rows_kernel_over_the_nonzero_chunks(tmp_path, rules):
    """No matmul (tiled or library), no cat of the zero block, one chunk row of three computed."""
    plan = _plan(tmp_path, "final_row_of_a_tiny_contraction", rules)
    ops = _ops(plan)
    assert "matmul" not in ops and "libmm" not in ops and "cat" not in ops, ops
    assert ops.count("reduce_sum") == 1, ops
    assert plan.out_spec.shape == (2, 3, 8, 5)
    source = generate(plan)
    assert "_matmul_kernel" not in source and "torch.cat" not in source
    # the rows kernel reads the states' three non-zero chunks of four, permuted, without a copy
    assert ".narrow(3, 1, 3)" in source and "[:, 3]" in source


def test_leading_rows_compute_only_those_rows(tmp_path):
    plan = _plan(tmp_path, "leading_rows_of_a_tiny_contraction")
    rows = [s for s in plan.stages if s.family == "rows"] if plan.family == "pipeline" else [plan]
    assert len(rows) == 1 and rows[0].reduce.full_shape[1] == 3, rows[0].reduce  # z: 3 of 4 rows


def test_cat_with_a_nonzero_part_is_kept(tmp_path):
    assert "cat" in _ops(_plan(tmp_path, "cat_of_ones_kept"))


def test_matmul_row_pick_reaches_its_left_operand(tmp_path):
    plan = _plan(tmp_path, "last_row_of_a_matmul")
    stages = plan.stages if plan.family == "pipeline" else (plan,)
    lefts = [leaf for stage in stages for leaf in stage.leaves if leaf.source.startswith("a")]
    assert [leaf.spec.shape for leaf in lefts] == [(3, 1, 24)], lefts
    assert plan.out_spec.shape == (3, 17)


def test_larger_contractions_stay_matmuls(tmp_path):
    """32 terms, or two free sides of 8 values: a tiled matmul, as before."""
    for inputs in ("[torch.randn(2, 3, 4, 32), torch.randn(2, 32, 3, 8, 5)]",
                   "[torch.randn(2, 3, 8, 4), torch.randn(2, 4, 3, 8, 5)]"):
        case = Case("larger", "d, s: return torch.einsum('bhzc,bchpn->bzhpn', d, s)", inputs)
        ops = _ops(analyze(write(case, tmp_path)))
        assert "matmul" in ops and "reduce_sum" not in ops, ops


@pytest.mark.parametrize("body", [
    # the softmax's sums run over the picked dim: they read every product whatever is kept
    "x, w: return torch.softmax(torch.matmul(x, w), dim=1)[:, :4]",
    # the value is also used whole, by work traced before the pick (a later use is not seen then)
    "x, w: y = torch.relu(torch.matmul(x, w))\ns = y.sum(dim=1)\nreturn y[:, -1] + s",
])
def test_a_pick_of_work_needed_whole_anyway_is_not_computed_twice(tmp_path, body):
    case = Case("whole_anyway", body, "[torch.randn(3, 20, 24), torch.randn(24, 6)]")
    ops = _ops(analyze(write(case, tmp_path)))
    assert ops.count("matmul") + ops.count("libmm") == 1, ops
