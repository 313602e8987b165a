"""Recurrent loops written out in forward (KernelBench level3 34's Elman cell): rolled back up into
one recurrent stage, and a stack of one module over the states into one call, checked by the
executor (interpreter values, sm_90 compile) under both rule sets; loops outside the pattern stay
unrolled and correct."""

import pytest

from builtin_case import Case, correctness_checks, explain, write

_INIT = "self.i2h = nn.Linear(6 + 8, 8)\nself.h2o = nn.Linear(8, 5)"
CASES = [
    # 34_VanillaRNNHidden's forward: the states' outputs stacked
    Case("elman_outputs_stacked", """x, h0: hidden = h0.to(x.device)
outputs = []
for t in range(x.size(0)):
    hidden = torch.tanh(self.i2h(torch.cat((x[t], hidden), dim=1)))
    outputs.append(self.h2o(hidden))
return torch.stack(outputs, dim=0)""", "[torch.rand(7, 3, 6), torch.rand(3, 8)]", init=_INIT),
    # the state first in the cat, relu, the last state returned
    Case("elman_hidden_first_relu_last_state", """x, h0: hidden = h0
for t in range(x.shape[0]):
    hidden = F.relu(self.i2h(torch.cat([hidden, x[t]], 1)))
return hidden * 2.0""", "[torch.rand(5, 2, 6), torch.rand(2, 8)]", init="self.i2h = nn.Linear(8 + 6, 8, bias=False)"),
    # each step's pre-activation is also returned: not the cell, stays unrolled
    Case("loop_outside_the_pattern", """x, h0: hidden = h0
pre = []
for t in range(x.size(0)):
    z = self.i2h(torch.cat((x[t], hidden), dim=1))
    pre.append(z)
    hidden = torch.tanh(z)
return torch.stack(pre, dim=0) + hidden""", "[torch.rand(3, 2, 6), torch.rand(2, 8)]", init=_INIT, slow=True),
]
KERNELBENCH = ("elman_outputs_stacked",)


results, kernelbench_results, test_rerolled_candidate_is_correct, test_rerolled_candidate_is_correct_under_kernelbench_rules = correctness_checks(
    CASES, "reroll", KERNELBENCH)


@pytest.mark.parametrize("name, families", [
    ("elman_outputs_stacked", ["rnn", "matmul"]),
    ("elman_hidden_first_relu_last_state", ["rnn", "elementwise"]),
])
def test_a_written_out_loop_is_one_recurrent_stage(tmp_path, name, families):
    from evokernel.builtin import analyze

    plan = analyze(write(next(c for c in CASES if c.name == name), tmp_path))
    assert plan, explain(plan)
    assert [s.family for s in plan.stages] == families


def test_a_loop_outside_the_pattern_stays_unrolled(tmp_path):
    from evokernel.builtin import analyze

    plan = analyze(write(CASES[2], tmp_path))
    assert plan, explain(plan)
    assert "rnn" not in [s.family for s in plan.stages] and len(plan.stages) > 6
