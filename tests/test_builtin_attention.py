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
         "self.attn = nn.MultiheadAttention(16, 2, batch_first=True)"),
    Case("encoder_layer", "x: return self.layer(x)", "[torch.randn(2, 6, 16)]",
         "self.layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)"),
    Case("encoder_norm_first_gelu", "x: return self.enc(x)", "[torch.randn(6, 2, 16)]",
         "self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 24, dropout=0.0, activation='gelu', "
         "norm_first=True), 2, enable_nested_tensor=False)", slow=True),
    Case("sdpa_causal", "q, k, v: return F.scaled_dot_product_attention(q, k, v, is_causal=True)",
         _QKV.format(t=9, s=9, e=16)),
    Case("sdpa_additive_mask", "q, k, v, m: return F.scaled_dot_product_attention(q, k, v, attn_mask=m)",
         _QKV.format(t=5, s=11, e=16)[:-1] + ", torch.randn(5, 11)]"),
    Case("sdpa_bool_mask", "q, k, v, m: return F.scaled_dot_product_attention(q, k, v, attn_mask=m)",
         _QKV.format(t=6, s=10, e=8)[:-1] + ", torch.rand(2, 1, 6, 10) > 0.3]"),
    Case("sdpa_gqa", "q, k, v: return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)",
         "[torch.randn(1, 4, 7, 16), torch.randn(1, 2, 9, 16), torch.randn(1, 2, 9, 16)]"),
    Case("sdpa_head_dim_80", "q, k, v: return F.scaled_dot_product_attention(q, k, v, scale=0.3)",
         _QKV.format(t=5, s=7, e=80)),
    Case("sdpa_head_dim_256_half", "q, k, v: return F.scaled_dot_product_attention(q, k, v)",
         "[torch.randn(1, 2, 5, 256, dtype=torch.float16), torch.randn(1, 2, 6, 256, dtype=torch.float16), "
         "torch.randn(1, 2, 6, 256, dtype=torch.float16)]"),
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
