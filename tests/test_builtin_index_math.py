"""What real models compute from positions and ids rather than load: aranges, eyes and integer
casts (T5's relative position buckets, ALiBi's distances, a timestep embedding's frequencies,
a graph's self loops) computed where they are read; tensors indexed by several index tensors
at once (DLRM's pair table, CLIP's end-of-text token); and the rearrangements models write
as views (pixel shuffle, channel shuffle, GLU's halves). Checked by the executor
(interpreter values, sm_90 compile) under both rule sets."""

import pytest

from builtin_case import Case, correctness_checks, write

CASES = [
    # T5's buckets: a distance from two aranges, integer casts that truncate, log-spaced buckets,
    # an embedding read at the computed ids
    Case("relative_buckets_to_embedding",
         "x: n = x.shape[1]\n"
         "pos = torch.arange(n, dtype=torch.long, device=x.device)\n"
         "rel = pos[None, :] - pos[:, None]\n"
         "far = 2 + (torch.log(rel.abs().float().clamp(min=1) / 2) / 1.5 * 3).to(torch.long)\n"
         "buckets = torch.where(rel.abs() < 2, rel.abs(), torch.min(far, torch.full_like(far, 7)))\n"
         "buckets = buckets + (rel > 0).long() * 8\n"
         "return x @ x.transpose(1, 2) + self.bias(buckets).permute(2, 0, 1)[:1]",
         "[torch.randn(2, 9, 4)]", init="self.bias = nn.Embedding(16, 3)"),
    # frequencies from an arange (a stage of index arithmetic alone), sin and cos joined
    Case("timestep_frequencies",
         "t: freqs = torch.exp(-2.3 * torch.arange(4, dtype=torch.float32, device=t.device) / 4)\n"
         "args = t[:, None].float() * freqs[None]\n"
         "return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)",
         "[torch.rand(3) * 10]"),
    # an eye added to a batch of matrices, a mask from a full(-inf) triangle
    Case("eye_and_masked_triangle",
         "a: n = a.shape[-1]\n"
         "mask = torch.full((n, n), float('-inf'), device=a.device).triu(1)\n"
         "return torch.softmax(a + torch.eye(n, device=a.device) + mask, dim=-1)",
         "[torch.randn(2, 5, 5)]"),
    # several index tensors at once: a buffer pair, and a per-row id
    Case("pairs_by_two_buffers", "z: return z[:, self.li, self.lj] * 2.0", "[torch.randn(2, 4, 4)]",
         init="li, lj = torch.tril_indices(4, 4, offset=-1)\n"
              "self.register_buffer('li', li)\nself.register_buffer('lj', lj)"),
    Case("row_at_its_argmax", "x, ids: return torch.tanh(x)[torch.arange(x.shape[0], device=x.device), ids.argmax(dim=-1)]",
         "[torch.randn(3, 6, 2), torch.randint(0, 6, (3, 6))]"),
    Case("pixel_shuffle_and_unshuffle",
         "x: y = torch.sigmoid(self.shuffle(self.conv(x)))\nreturn F.pixel_unshuffle(y, 2) + 1.0",
         "[torch.randn(2, 3, 4, 4)]", init="self.conv = nn.Conv2d(3, 8, 3, padding=1)\nself.shuffle = nn.PixelShuffle(2)"),
    Case("channel_shuffle_and_glu",
         "x: y = self.shuffle(torch.relu(self.conv(x)))\nreturn F.glu(y, dim=1) + self.glu(y.transpose(1, 3)).transpose(1, 3)",
         "[torch.randn(2, 3, 4, 4)]",
         init="self.conv = nn.Conv2d(3, 4, 1)\nself.shuffle = nn.ChannelShuffle(2)\nself.glu = nn.GLU(dim=-1)",
         slow=True),
]
KERNELBENCH = ("relative_buckets_to_embedding", "pairs_by_two_buffers", "pixel_shuffle_and_unshuffle")

results, kernelbench_results, test_index_math_is_correct, test_index_math_is_correct_under_kernelbench_rules = correctness_checks(
    CASES, "index_math", KERNELBENCH)


def test_index_arithmetic_is_computed_where_it_is_read(tmp_path):
    """An arange viewed with new size-1 dims is rebuilt at the view's shape (no buffer of it)."""
    from evokernel.builtin import analyze

    plan = analyze(write(CASES[2], tmp_path))
    assert plan, plan
    assert plan.family == "rows" and len(plan.stages) <= 1, [s.family for s in plan.stages]


@pytest.mark.parametrize("forward, reason", [
    ("x: return x[:, self.i, :, self.j]", "next to each other"),
    ("x: return x.to(torch.complex64).abs()", "complex64"),  # (a cast to bool is a mask: supported)
])
def test_index_forms_outside_say_why(tmp_path, forward, reason):
    from evokernel.builtin import analyze

    case = Case("outside", forward, "[torch.randn(2, 3, 4, 5)]",
                init="self.register_buffer('i', torch.tensor([0, 2]))\nself.register_buffer('j', torch.tensor([1, 4]))")
    plan = analyze(write(case, tmp_path))
    assert not plan and reason in plan.reason, plan
