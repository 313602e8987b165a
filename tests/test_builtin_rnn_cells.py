"""One-step recurrent cells: nn.GRUCell, nn.LSTMCell and nn.RNNCell (tanh, relu) lowered
to two linear layers and the gates' pointwise math, called once or in a loop over time
steps, with and without biases, the state given or omitted (zeros), LSTMCell's (h, c)
pair, batched and unbatched inputs, on the torch.fx path and on dynamo's (a loop over
``range(x.size(0))``, where the cell arrives as torch.gru_cell & co.). Each case runs on
the CPU executor (Triton's interpreter, the sm_90 compile of every launched kernel)."""

from builtin_case import Case, correctness_checks, write
from evokernel.builtin import analyze

_LOOP = """outs = []
for t in range({steps}):
    {step}
    outs.append(h)
return torch.stack(outs, 1)"""

CASES = [
    Case("gru_cell_loop", "x, h: " + _LOOP.format(steps=3, step="h = self.cell(x[t], h)"),
         "[torch.randn(3, 4, 8), torch.randn(4, 16)]", init="self.cell = nn.GRUCell(8, 16)"),
    Case("lstm_cell_loop_zero_state", "x: " + _LOOP.format(
        steps=3, step="h, c = self.cell(x[t]) if t == 0 else self.cell(x[t], (h, c))").replace(
            "return torch.stack(outs, 1)", "return torch.cat([torch.stack(outs, 1), c.unsqueeze(1)], 1)"),
         "[torch.randn(3, 2, 6)]", init="self.cell = nn.LSTMCell(6, 12)"),
    Case("rnn_cells_tanh_relu_no_bias", "x, h: return self.tanh_cell(x, h) + self.relu_cell(x)",
         "[torch.randn(4, 8), torch.randn(4, 16)]",
         init="self.tanh_cell = nn.RNNCell(8, 16, bias=False)\n"
              "self.relu_cell = nn.RNNCell(8, 16, nonlinearity='relu')"),
    Case("cells_unbatched", "x, h, c: hl, cl = self.lstm(x, (h, c))\nreturn self.gru(x, hl) + cl + self.gru(x)",
         "[torch.randn(8), torch.randn(16), torch.randn(16)]",
         init="self.lstm = nn.LSTMCell(8, 16, bias=False)\nself.gru = nn.GRUCell(8, 16, bias=False)"),
    # range(x.size(0)) stops torch.fx: dynamo captures forward, inlining the cells
    Case("cells_loop_captured", "x, h: c = torch.zeros_like(h)\nhl = h\n" + _LOOP.format(
        steps="x.size(0)", step="h = self.gru(x[t], h)\n    hl, c = self.lstm(x[t], (hl, c))\n    h = h + hl"),
         "[torch.randn(3, 2, 8), torch.randn(2, 16)]",
         init="self.gru = nn.GRUCell(8, 16)\nself.lstm = nn.LSTMCell(8, 16)"),
    Case("gru_cell_unbatched_captured", "x, h: hs = [self.gru(x[t], h) for t in range(x.size(0))]\n"
         "return hs[-1] + self.gru(x[0])",
         "[torch.randn(2, 8), torch.randn(16)]", init="self.gru = nn.GRUCell(8, 16)"),
]
KERNELBENCH = ("gru_cell_loop", "cells_loop_captured")

results, kernelbench_results, test_cell_is_correct, test_cell_is_correct_under_kernelbench_rules = \
    correctness_checks(CASES, "rnn_cells", KERNELBENCH)


def test_cell_loop_fuses_the_gates(tmp_path):
    """A step is the two products and one pointwise stage for the gates, not a stage per gate."""
    plan = analyze(write(CASES[0], tmp_path))
    assert plan, plan.reason
    families = [s.family for s in plan.stages]
    assert families.count("matmul") == 2 * 3 and families.count("elementwise") <= 3 + 1, families


def test_unsupported_cells_say_why(tmp_path):
    double = Case("gru_cell_double", "x: return self.cell(x)", "[torch.randn(2, 4, dtype=torch.float64)]",
                  init="self.cell = nn.GRUCell(4, 8).double()")
    plan = analyze(write(double, tmp_path))
    assert not plan and "nn.GRUCell" in plan.reason and "float64" in plan.reason and "\n" not in plan.reason
