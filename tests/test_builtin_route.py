"""Mixture-of-experts routing (torch.topk, scatter, scatter_add, index_add; see
evokernel/builtin/_canon_route.py), checked by the executor (interpreter values, sm_90
compile) under both rule sets: a router's top-2 turned into dense weights, topk of the
smallest values along a middle dim, k=1 and k=8 of a row longer than one block, a one-hot
mask written with a value, a token -> expert combine by index_add_ on a fresh tensor, and
an expert-choice layer (each expert's tokens by topk over the token dim, their rows read,
added back at their indices)."""

import pytest

from builtin_case import Case, correctness_checks, write

CASES = [
    # the dense-gate MoE's router: top-2 of a softmax, renormalised, scattered into a zero matrix
    Case("router_top2_dense_weights",
         "x: logits = self.gate(x)\n"
         "w, idx = torch.topk(torch.softmax(logits, dim=-1), 2, dim=-1)\n"
         "w = w / w.sum(dim=-1, keepdim=True)\n"
         "return torch.zeros_like(logits).scatter(1, idx, w)",
         "[torch.randn(24, 16)]", init="self.gate = nn.Linear(16, 8)"),
    # values and indices both used; the smallest along a middle dim of a strided (transposed) input
    Case("topk_smallest_middle_dim",
         "x: v, i = torch.topk(x.transpose(1, 2), 3, dim=1, largest=False)\nreturn v * 2.0 + i.float()",
         "[torch.randn(2, 5, 7)]"),
    Case("topk_k1_values", "x: return torch.topk(x + 1.0, 1).values * 3.0", "[torch.randn(6, 5)]"),
    # a row of 2500 (past one block of 2048): the indices themselves are the output, compared exactly
    Case("topk_k8_long_row", "x: return x.topk(8, dim=-1)[1]", "[torch.randn(2, 2500)]"),
    # a one-hot mask of each row's top 2 (a scalar value written into a zeros_like of the input)
    Case("scatter_value_one_hot",
         "x: idx = x.topk(2, dim=1).indices\nreturn torch.zeros_like(x).scatter_(1, idx, 1.0) * x",
         "[torch.randn(9, 6)]"),
    # token -> expert combine: each token's row added at its slot (repeated slots add up)
    Case("index_add_rows",
         "x: out = torch.zeros(5, 4, device=x.device)\nout.index_add_(0, self.slot, torch.tanh(x))\nreturn out",
         "[torch.randn(12, 4)]", init="self.register_buffer('slot', torch.tensor([0, 3, 3, 1, 4, 0, 2, 3, 1, 1, 4, 0]))"),
    Case("scatter_add_along_dim",
         "x, i: return torch.zeros(3, 5, device=x.device).scatter_add(1, i, x * 2.0)",
         "[torch.randn(3, 8), torch.randint(0, 5, (3, 8))]"),
    # expert-choice routing: each expert's 6 tokens by probability, its rows computed, added back
    Case("expert_choice_index_add",
         "x: probs = torch.softmax(self.gate(x), dim=-1)\n"
         "w, token = torch.topk(probs.t(), 6, dim=1)\n"
         "out = torch.zeros_like(x)\n"
         "for e in range(2):\n"
         "    out = out.index_add(0, token[e], torch.relu(x[token[e]]) * w[e].unsqueeze(-1))\n"
         "return out",
         "[torch.randn(10, 8)]", init="self.gate = nn.Linear(8, 2)"),
]
KERNELBENCH = ("router_top2_dense_weights", "expert_choice_index_add")


results, kernelbench_results, test_route_candidate_is_correct, test_route_candidate_is_correct_under_kernelbench_rules = \
    correctness_checks(CASES, "route", KERNELBENCH)


@pytest.mark.parametrize("forward, reason", [
    ("x: i, j = torch.where(x > 0)\nreturn x[i]", "torch.where(mask) (nonzero) is not supported"),
    ("x: return x[(x > 0).nonzero(as_tuple=True)[0]]", "nonzero is not supported"),
    ("x: return torch.topk(x, 3, sorted=False).values", "sorted=False"),
    ("x: return torch.zeros_like(x).scatter(1, x.topk(2).indices, x, reduce='multiply')", "reduce='multiply'"),
    ("x: return torch.zeros_like(x).half().scatter_add(1, x.topk(2).indices, x.half())", "atomic adds"),
])
def test_routing_outside_says_why(tmp_path, forward, reason):
    from evokernel.builtin import analyze

    plan = analyze(write(Case("outside", forward, "[torch.randn(4, 6)]"), tmp_path))
    assert not plan and reason in plan.reason and "\n" not in plan.reason, plan
