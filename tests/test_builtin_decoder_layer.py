"""nn.TransformerDecoderLayer and nn.TransformerDecoder lowered like the encoder layer:
masked self-attention, attention to ``memory`` (its keys and values one GEMM) and the
feed-forward block, each with its residual and layer norm (before the block when
norm_first), relu or gelu, batch_first either way, eval mode. Each case runs on the CPU
executor (Triton's interpreter, the sm_90 compile of every launched kernel)."""

from builtin_case import Case, correctness_checks, write
from evokernel.builtin import analyze

_CAUSAL = "self.register_buffer('causal', nn.Transformer.generate_square_subsequent_mask(6))"

CASES = [
    Case("decoder_layer_causal", "tgt, memory: return self.layer(tgt, memory, tgt_mask=self.causal)",
         "[torch.randn(2, 6, 16), torch.randn(2, 9, 16)]",
         init="self.layer = nn.TransformerDecoderLayer(16, 4, 32, dropout=0.0, batch_first=True)\n" + _CAUSAL),
    Case("decoder_layer_norm_first_gelu_hint",
         "tgt, memory, pad: return self.layer(tgt, memory, tgt_mask=self.causal, tgt_is_causal=True, "
         "memory_key_padding_mask=pad)",
         "[torch.randn(2, 6, 16), torch.randn(2, 5, 16), torch.tensor([[False] * 4 + [True], [False] * 5])]",
         init="self.layer = nn.TransformerDecoderLayer(16, 2, 24, dropout=0.0, activation='gelu', norm_first=True, "
              "batch_first=True)\n" + _CAUSAL),
    Case("decoder_stack_seq_first", "tgt, memory: return self.dec(tgt, memory, tgt_mask=self.causal)",
         "[torch.randn(6, 2, 16), torch.randn(7, 2, 16)]",
         init="self.dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(16, 2, 32, dropout=0.1), 2, "
              "norm=nn.LayerNorm(16))\nself.eval()\n" + _CAUSAL),
]
KERNELBENCH = ("decoder_layer_causal",)

results, kernelbench_results, test_decoder_is_correct, test_decoder_is_correct_under_kernelbench_rules = \
    correctness_checks(CASES, "decoder_layer", KERNELBENCH)


def test_decoder_layer_stages(tmp_path):
    """Two fused attention kernels; memory's keys and values one GEMM; no stage per op."""
    plan = analyze(write(CASES[0], tmp_path))
    assert plan, plan.reason
    families = [s.family for s in plan.stages]
    assert families.count("attention") == 2 and families.count("matmul") == 7 and len(families) <= 13, families


def test_unsupported_decoder_options_say_why(tmp_path):
    silu = Case("decoder_silu", "tgt, memory: return self.layer(tgt, memory)",
                "[torch.randn(2, 3, 8), torch.randn(2, 4, 8)]",
                init="self.layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, activation=F.silu, "
                     "batch_first=True)")
    plan = analyze(write(silu, tmp_path))
    assert not plan and "TransformerDecoderLayer activation" in plan.reason and "\n" not in plan.reason
    hint = Case("decoder_hint_without_mask", "tgt, memory: return self.layer(tgt, memory, tgt_is_causal=True)",
                "[torch.randn(2, 3, 8), torch.randn(2, 4, 8)]",
                init="self.layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True)")
    plan = analyze(write(hint, tmp_path))
    assert not plan and "is_causal" in plan.reason
