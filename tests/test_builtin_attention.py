"""Attention and the ops models put between layers: nn.MultiheadAttention and the
transformer encoder lowered to matmuls, rows and pointwise kernels, the fused
attention kernel (online softmax, masks, grouped-query heads, ReLU attention)
whether the reference calls F.scaled_dot_product_attention or writes it out, and
unfold/split/chunk/repeat_interleave of live buffers. Each case runs on the CPU
executor (Triton's interpreter, and the sm_90 compile of every launched kernel)."""

import pytest

from builtin_case import Case, Lazy, explain, ok, params, write
from evokernel.builtin import analyze, generate

_QKV = "[torch.randn(2, 3, {t}, {e}), torch.randn(2, 3, {s}, {e}), torch.randn(2, 3, {s}, {e})]"

CASES = [
    Case("mha_seq_first", "x: out, _ = self.attn(x, x, x)\nreturn self.norm(out + x)",
         "[torch.randn(5, 2, 16)]", "self.attn = nn.MultiheadAttention(16, 4)\nself.norm = nn.LayerNorm(16)"),
    Case("mha_batch_first_weights", "q, kv: out, w = self.attn(q, kv, kv)\nreturn out.sum(-1, keepdim=True) * w",
         "[torch.randn(2, 5, 16), torch.randn(2, 7, 16)]",
         "self.attn = nn.MultiheadAttention(16, 2, batch_first=True)", slow=True),
    Case("mha_separate_weights_masks", "q, k, v, pad, m: out, _ = self.attn(q, k, v, key_padding_mask=pad, "
         "attn_mask=m, need_weights=False)\nreturn out",
         "[torch.randn(5, 2, 16), torch.randn(7, 2, 12), torch.randn(7, 2, 10), "
         "torch.tensor([[False] * 6 + [True], [False] * 7]), torch.randn(5, 7)]",
         "self.attn = nn.MultiheadAttention(16, 2, kdim=12, vdim=10)", slow=True),
    Case("encoder_layer", "x: return self.layer(x)", "[torch.randn(2, 6, 16)]",
         "self.layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)", slow=True),
    Case("encoder_norm_first_gelu", "x: return self.enc(x)", "[torch.randn(6, 2, 16)]",
         "self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 24, dropout=0.0, activation='gelu', "
         "norm_first=True), 2, enable_nested_tensor=False)", slow=True),
    Case("sdpa_causal", "q, k, v: return F.scaled_dot_product_attention(q, k, v, is_causal=True)",
         _QKV.format(t=9, s=9, e=16)),
    Case("sdpa_additive_mask", "q, k, v, m: return F.scaled_dot_product_attention(q, k, v, attn_mask=m)",
         _QKV.format(t=5, s=11, e=16)[:-1] + ", torch.randn(5, 11)]", slow=True),
    Case("sdpa_bool_mask", "q, k, v, m: return F.scaled_dot_product_attention(q, k, v, attn_mask=m)",
         _QKV.format(t=6, s=10, e=8)[:-1] + ", torch.rand(2, 1, 6, 10) > 0.3]"),
    Case("sdpa_gqa", "q, k, v: return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)",
         "[torch.randn(1, 4, 7, 16), torch.randn(1, 2, 9, 16), torch.randn(1, 2, 9, 16)]"),
    Case("gqa_projected", "x: k, v = self.kv(x).view(2, 9, 2, 2, 8).permute(2, 0, 3, 1, 4)\n"
         "q = x.view(2, 9, 4, 8).transpose(1, 2)\n"
         "return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)",
         "[torch.randn(2, 9, 32)]", "self.kv = nn.Linear(32, 32)"),
    Case("sdpa_head_dim_80", "q, k, v: return F.scaled_dot_product_attention(q, k, v, scale=0.3)",
         _QKV.format(t=5, s=7, e=80), slow=True),
    Case("sdpa_head_dim_256_half", "q, k, v: return F.scaled_dot_product_attention(q, k, v)",
         "[torch.randn(1, 2, 5, 256, dtype=torch.float16), torch.randn(1, 2, 6, 256, dtype=torch.float16), "
         "torch.randn(1, 2, 6, 256, dtype=torch.float16)]", slow=True),
    Case("handwritten_causal", "x, mask: q, k, v = self.qkv(x).split(16, dim=2)\n"
         "q = q.view(2, 7, 2, 8).transpose(1, 2)\nk = k.view(2, 7, 2, 8).transpose(1, 2)\n"
         "v = v.view(2, 7, 2, 8).transpose(1, 2)\n"
         "att = (q @ k.transpose(-2, -1)) * (1.0 / 8 ** 0.5)\n"
         "att = att.masked_fill(mask == 0, float('-inf'))\n"
         "att = F.softmax(att, dim=-1)\ny = att @ v\nreturn y.transpose(1, 2).contiguous().view(2, 7, 16)",
         "[torch.randn(2, 7, 16), torch.tril(torch.ones(7, 7)).view(1, 1, 7, 7)]", "self.qkv = nn.Linear(16, 48)"),
    Case("handwritten_relu", "q, k, v, mask: att = (q @ k.transpose(-2, -1)) * 0.25\n"
         "att = att.masked_fill(mask == 0, float('-inf'))\nreturn F.relu(att) @ v",
         _QKV.format(t=6, s=6, e=16)[:-1] + ", torch.tril(torch.ones(6, 6)).view(1, 1, 6, 6)]"),
    Case("unfold_patches", "img: x = img.unfold(2, 4, 4).unfold(3, 4, 4).reshape(2, -1, 48)\nreturn self.fc(x)",
         "[torch.randn(2, 3, 8, 12)]", "self.fc = nn.Linear(48, 8)"),
    Case("im2col", "x: return F.unfold(x, 3, dilation=(1, 2), padding=1, stride=2) * 2.0",
         "[torch.randn(2, 3, 7, 9)]"),
    Case("pad_computed_and_input", "x: y = F.pad(torch.relu(x), [0, 0, 2, 1, -1, 1], value=0.5)\n"
         "return y[:, 1:] + F.pad(x, [0, 0, 2, 1, 0, 0])[:, 1:].narrow(1, 0, 4)",
         "[torch.randn(2, 5, 3, 4)]"),
    Case("stack_live_buffers", "x, y: return torch.stack([torch.relu(x), y * 2.0, x], dim=1).sum(-1)",
         "[torch.randn(3, 5, 4), torch.randn(3, 5, 4)]"),
    Case("channel_shuffle_chunk", "x: x = torch.relu(x)\nb, c, h, w = x.size()\n"
         "x = x.view(b, 2, c // 2, h, w).transpose(1, 2).contiguous().view(b, c, h, w)\n"
         "l, r = x.chunk(2, dim=1)\nreturn l * r.repeat_interleave(2, dim=2)[:, :, :h]",
         "[torch.randn(2, 8, 3, 4)]"),
]


@pytest.fixture(scope="module")
def verdicts(cpu_executor, tmp_path_factory):
    return Lazy(cpu_executor, CASES, tmp_path_factory.mktemp("attention"))


@pytest.mark.parametrize("name", params(CASES))
def test_attention_case_is_correct(verdicts, name):
    assert ok(verdicts[name]), explain(verdicts[name])


FUSED = ["mha_seq_first", "encoder_layer", "sdpa_causal", "sdpa_additive_mask", "sdpa_bool_mask", "sdpa_gqa",
         "sdpa_head_dim_80", "sdpa_head_dim_256_half", "handwritten_causal", "handwritten_relu", "gqa_projected"]


@pytest.mark.parametrize("name", FUSED)
def test_attention_is_one_fused_kernel(tmp_path, name):
    """The scores never reach memory: one attention stage replaces matmul, softmax and matmul."""
    plan = analyze(write(next(c for c in CASES if c.name == name), tmp_path))
    stages = plan.stages or (plan,)
    assert [s.family for s in stages].count("attention") == 1, [s.family for s in stages]
    assert not any(s.family == "rows" and s.reduce.stop == len(s.reduce.full_shape) and
                   len(s.reduce.full_shape) == 4 for s in stages)
    assert "_attention_kernel" in generate(plan)


def test_grouped_query_heads_read_keys_unrepeated(tmp_path):
    plan = analyze(write(next(c for c in CASES if c.name == "gqa_projected"), tmp_path))
    att = next(s for s in plan.stages if s.family == "attention").main_stage
    att = att.node(att.anchor_id)
    assert att.attr("kv_group") == 2 and att.attr("k_layout") == "k"


def test_returned_attention_weights_keep_the_probabilities(tmp_path):
    """need_weights=True whose weights are used: the probabilities are a buffer, so no fusion."""
    plan = analyze(write(next(c for c in CASES if c.name == "mha_batch_first_weights"), tmp_path))
    assert "attention" not in [s.family for s in plan.stages]


def test_a_two_layer_mlp_is_not_taken_for_attention(tmp_path):
    case = Case("mlp", "x: return self.fc2(torch.relu(self.fc1(x)))", "[torch.randn(4, 6, 16)]",
                "self.fc1 = nn.Linear(16, 32)\nself.fc2 = nn.Linear(32, 16)")
    assert "attention" not in [s.family for s in analyze(write(case, tmp_path)).stages]


BLOCKS = [
    Case("causal_blocks", "q, k, v: return F.scaled_dot_product_attention(q, k, v, is_causal=True)",
         "[torch.randn(1, 2, 40, 16), torch.randn(1, 2, 37, 16), torch.randn(1, 2, 37, 16)]"),
    Case("tensor_mask_blocks", "q, k, v, m: s = (q @ k.transpose(-2, -1)).masked_fill(m == 0, float('-inf'))\n"
         "return torch.softmax(s, dim=-1) @ v",
         "[torch.randn(1, 2, 40, 16), torch.randn(1, 2, 40, 16), torch.randn(1, 2, 40, 16), "
         "torch.tril(torch.ones(40, 40)).view(1, 1, 40, 40)]"),
]


@pytest.mark.parametrize("case", BLOCKS, ids=[c.name for c in BLOCKS])
def test_masked_key_blocks_are_skipped_and_the_result_holds(cpu_executor, tmp_path, case):
    """Small tiles over 40 queries: key blocks above the diagonal are skipped, by the loop bound for
    is_causal and at run time for a mask tensor, and the result still matches (3xTF32 and IEEE)."""
    from backends import EvalOptions
    from evokernel.builtin import Config

    path = write(case, tmp_path)
    plan = analyze(path)
    att = plan.node(plan.anchor_id)
    assert (att.attr("causal"), att.attr("skip_unless") is not None) in ((0, False), (None, True))
    options = EvalOptions.from_dict({"rules": "strict", "timing": False, "baselines": False, "trials": 1})
    for precision in ("3xtf32", "auto"):
        config = Config("attention", block_m=16, block_n=16, num_warps=4, num_stages=1, precision=precision)
        source = generate(plan, config)
        assert "hi = tl.minimum(Tk, (pid_m + 1) * BLOCK_M + 0)" in source or "if tl.sum(tl.where(s_mask" in source
        result = cpu_executor.evaluate(path, source, backend="triton", options=options)
        assert ok(result), explain(result)


def test_attention_writes_the_layout_its_readers_permute_to(tmp_path):
    """MultiheadAttention reads heads back beside the dim: the kernel writes (L, N, heads, dim) so the
    out-projection's .permute(2, 0, 1, 3).reshape copies nothing (mha_seq_first runs it)."""
    plan = analyze(write(next(c for c in CASES if c.name == "mha_seq_first"), tmp_path))
    att = next(s for s in plan.stages if s.family == "attention")
    assert att.node(att.anchor_id).attr("out_perm") == (2, 0, 1, 3)
