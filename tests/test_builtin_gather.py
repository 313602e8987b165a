"""Indexed reads (x[idx] of an integer tensor, index_select, gather; negative indices; a
computed table read through a buffer of positions, as Swin V2's relative position bias)
and torch.roll, checked by the executor (interpreter values, sm_90 compile) under both
rule sets."""

import pytest

from builtin_case import Case, correctness_checks, write

CASES = [
    # Swin V2: a table computed by an MLP, read at a buffer of positions, viewed per head
    Case("computed_table_at_buffer_positions",
         "x: table = self.mlp(x).view(-1, 3)\n"
         "bias = table[self.index.view(-1)].view(4, 4, -1).permute(2, 0, 1).contiguous()\n"
         "return 16 * torch.sigmoid(bias)",
         "[torch.randn(1, 9, 2)]",
         init="self.mlp = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 3))\n"
              "self.register_buffer('index', torch.randint(0, 9, (4, 4)))"),
    Case("select_later_dim_negative", "x: return x[:, self.index] * 2.0", "[torch.randn(3, 7, 5)]",
         init="self.register_buffer('index', torch.tensor([[0, -1], [6, 2], [-7, 3]]))"),
    Case("index_select_input_index", "x, i: return torch.index_select(torch.relu(x), 0, i)",
         "[torch.randn(6, 5), torch.randint(0, 6, (9,))]", slow=True),
    Case("gather_along_dim", "x, i: return torch.gather(x + 1.0, 1, i)",
         "[torch.randn(4, 7, 3), torch.randint(0, 7, (4, 5, 3))]"),
    Case("roll_two_dims", "x: return torch.roll(x * 2.0, shifts=(-1, 2), dims=(1, 2))", "[torch.randn(2, 5, 6, 3)]"),
    Case("roll_input", "x: return torch.roll(x, 3, 0) + 1.0", "[torch.randn(7, 2)]", slow=True),
    # embeddings: the module (token ids in, rows out, a projection after), F.embedding and
    # torch.embedding (weight first) on a table computed in forward
    Case("embedding_module", "t: return self.proj(self.emb(t)).relu()", "[torch.randint(0, 11, (2, 5))]",
         init="self.emb = nn.Embedding(11, 6, padding_idx=0)\nself.proj = nn.Linear(6, 4)"),
    Case("embedding_functional", "t: w = self.table * 2.0\nreturn F.embedding(t, w) * torch.embedding(w, t.t()).transpose(0, 1)",
         "[torch.randint(0, 9, (3, 4))]", init="self.table = nn.Parameter(torch.randn(9, 5))"),
    # fixed-length bags of ids, averaged and maxed
    Case("embedding_bags", "t: return self.mean_bag(t) * self.max_bag(t)", "[torch.randint(0, 10, (4, 3))]",
         init="self.mean_bag = nn.EmbeddingBag(10, 5, mode='mean')\nself.max_bag = nn.EmbeddingBag(10, 5, mode='max')"),
]
KERNELBENCH = ("computed_table_at_buffer_positions", "gather_along_dim", "embedding_module")


results, kernelbench_results, test_gather_candidate_is_correct, test_gather_candidate_is_correct_under_kernelbench_rules = correctness_checks(
    CASES, "gather", KERNELBENCH)


@pytest.mark.parametrize("forward, init, reason", [
    ("x: return x[self.mask]", "self.register_buffer('mask', torch.tensor([True, False, True, True]))", "boolean mask"),
])
def test_indexed_reads_outside_say_why(tmp_path, forward, init, reason):
    from evokernel.builtin import analyze

    plan = analyze(write(Case("outside", forward, "[torch.randn(4, 4)]", init=init), tmp_path))
    assert not plan and reason in plan.reason, plan


def test_an_embedding_that_renormalises_its_weight_says_why(tmp_path):
    from evokernel.builtin import analyze

    case = Case("max_norm", "t: return self.emb(t)", "[torch.randint(0, 8, (4,))]",
                init="self.emb = nn.Embedding(8, 3, max_norm=1.0)")
    plan = analyze(write(case, tmp_path))
    assert not plan and "max_norm" in plan.reason, plan
