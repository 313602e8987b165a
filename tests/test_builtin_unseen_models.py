"""Constructs of whole models outside the bundled suites that the builtin front end once
refused or got wrong, each on a small model run end to end on the CPU: a slice write
(``out[..., a:b] = v``); attention masks computed by a comparison (bool in torch, 0/1 floats
in the builder: once added to the scores instead of masking them); nn.TransformerEncoder with
a key padding mask, and ``.to(x.dtype)``; nn.EmbeddingBag with offsets and per-sample weights,
and a row reduction over a dim that only an arange gives (its launcher once sized the rows
from the tensor operands alone); Tensor.repeat and torch.tile, once refused. From the models
60-69: padding modules (RWKV's token shift), & | ^ of masks and casts to bool, nan_to_num and
isnan/isinf/isfinite, a stack of argmax ids as an int64 output (a CRF's Viterbi backtrace),
a spatial transformer's affine_grid and grid_sample, torch.fft.rfft/irfft (Hyena's long convolution)."""

import pytest

from builtin_case import evaluate_task, explain, ok, write_task
from evokernel.builtin import Unsupported, analyze


# ShiftViT's token shift: channel groups rolled and written into a copy by slice; an integer
# index, a negative slice and a scalar write besides
SLICE_WRITES = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, y):
        out = x.clone()
        out[..., 0:2] = torch.roll(x[..., 0:2], shifts=1, dims=1)
        out[..., 2:4] = torch.roll(x[..., 2:4], shifts=-1, dims=2)
        out[:, 1] = y
        out[:, :, -2:, 5] = 0.5
        return self.proj(out)


def get_inputs():
    return [torch.randn(2, 3, 5, 8), torch.randn(2, 5, 8)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("rules", ["strict", "kernelbench"])
def test_slice_writes_into_a_copy_are_correct(cpu_executor, tmp_path, rules):
    result = evaluate_task(cpu_executor, write_task(tmp_path, "slice_writes", SLICE_WRITES), rules)
    assert ok(result), explain(result)


@pytest.mark.parametrize("write, needle", [("out[idx] = 1.0", "tensor index"), ("out[:, ::2] = 1.0", "strided slice"),
                                           ("out.view(-1)[:3] = 1.0", "through a view")])
def test_an_unsupported_slice_write_says_why_in_one_line(tmp_path, write, needle):
    path = write_task(tmp_path, "bad_write", f"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, idx):
        out = x.clone()
        {write}
        return out * 2


def get_inputs():
    return [torch.randn(4, 6), torch.tensor([0, 2])]


def get_init_inputs():
    return []
""")
    plan = analyze(path, "strict")
    assert isinstance(plan, Unsupported) and "\n" not in plan.reason and needle in plan.reason, plan


# Masks computed in forward by comparisons: bool in torch (True keeps a score for SDPA, True
# hides a key for MultiheadAttention), 0.0/1.0 in the builder's arithmetic
COMPUTED_MASKS = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        with torch.no_grad():
            self.attn.in_proj_bias.normal_(0.0, 0.1)

    def forward(self, q, k, v, lengths):
        keep = torch.arange(k.size(2), device=k.device)[None, :] < lengths[:, None]
        x = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
        tokens = x.transpose(1, 2).reshape(x.size(0), x.size(2), -1)
        return self.attn(tokens, tokens, tokens, key_padding_mask=~keep[:, :tokens.size(1)], need_weights=False)[0]


def get_inputs():
    return [torch.randn(3, 2, 6, 4), torch.randn(3, 2, 6, 4), torch.randn(3, 2, 6, 4), torch.tensor([6, 3, 1])]


def get_init_inputs():
    return []
'''

# A pre-norm nn.TransformerEncoder under a key padding mask derived from a 0/1 integer
# attention mask, then masked mean pooling with the mask cast by .to(hidden.dtype)
MASKED_ENCODER = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, nn.MultiheadAttention):
                    m.in_proj_bias.normal_(0.0, 0.1)

    def forward(self, x, attention_mask):
        hidden = self.encoder(x, src_key_padding_mask=attention_mask == 0)
        weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(1) / weights.sum(1)


def get_inputs():
    return [torch.randn(3, 5, 8), (torch.arange(5)[None, :] < torch.tensor([5, 3, 1])[:, None]).long()]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("name, text", [("computed_masks", COMPUTED_MASKS), ("masked_encoder", MASKED_ENCODER)])
def test_masks_computed_in_forward_mask_the_scores(cpu_executor, tmp_path, name, text):
    result = evaluate_task(cpu_executor, write_task(tmp_path, name, text), "kernelbench")
    assert ok(result), explain(result)


def test_an_encoder_that_may_run_nested_tensors_under_a_padding_mask_says_why(tmp_path):
    # torch itself keeps nested tensors off for pre-norm layers: a post-norm encoder may use them
    text = MASKED_ENCODER.replace("enable_nested_tensor=False", "enable_nested_tensor=True").replace(
        "norm_first=True", "norm_first=False")
    path = write_task(tmp_path, "nested_encoder", text)
    plan = analyze(path, "strict")
    assert isinstance(plan, Unsupported) and "enable_nested_tensor=True" in plan.reason, plan


# Bags of varying length: offsets (an empty bag among them), per-sample weights, mean and sum;
# and the bag of each element counted by hand, a reduction over a dim only the arange has
EMBEDDING_BAGS = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.sum_bag = nn.EmbeddingBag(20, 4, mode="sum")
        self.mean_bag = nn.EmbeddingBag(20, 4, mode="mean")

    def forward(self, ids, offsets, weights):
        bag = (offsets[None, :] <= torch.arange(ids.size(0), device=ids.device)[:, None]).float().sum(1) - 1
        fixed = self.mean_bag(ids.view(3, 3)).sum(0)  # three bags of three
        return torch.cat([self.sum_bag(ids, offsets, per_sample_weights=weights) + fixed, self.mean_bag(ids, offsets),
                          bag[:5, None]], dim=1)


def get_inputs():
    return [torch.randint(0, 20, (9,)), torch.tensor([0, 1, 3, 3, 6]), torch.rand(9) + 0.1]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("rules", ["strict", "kernelbench"])
def test_embedding_bags_of_varying_length_are_correct(cpu_executor, tmp_path, rules):
    result = evaluate_task(cpu_executor, write_task(tmp_path, "embedding_bags", EMBEDDING_BAGS), rules)
    assert ok(result), explain(result)


# Tensor.repeat and torch.tile, of an input and of a computed value, with a new leading dim and
# sizes given as a tuple; checked against torch's tiling order (element k * n + j is element j)
TILED = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x, c):
        h = torch.relu(self.proj(x))                    # (2, 3, 6)
        a = h.repeat(1, 2, 1)                           # (2, 6, 6)
        b = torch.tile(c, (2, 1)) * 2.0                 # (6, 6): an input tiled, rows 0-2 again as 3-5
        d = c.repeat((2, 1, 1)).sum(0)                  # a new leading dim, reduced
        return a + b + d.repeat(2, 1)


def get_inputs():
    return [torch.randn(2, 3, 6), torch.randn(3, 6)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("rules", ["kernelbench", "strict"])
def test_repeat_and_tile_copy_in_torchs_tiling_order(cpu_executor, tmp_path, rules):
    result = evaluate_task(cpu_executor, write_task(tmp_path, "tiled", TILED), rules)
    assert ok(result), explain(result)


# RWKV's token shift: nn.ZeroPad2d((0, 0, 1, -1)) crops the last token and pads a zero one
# first, of a computed value and of an input; ConstantPad1d with a value
PAD_MODULES = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.pad = nn.ConstantPad1d((2, 1), 0.5)

    def forward(self, x):
        h = self.proj(x)
        return self.pad(self.time_shift(h) * h + self.time_shift(x))


def get_inputs():
    return [torch.randn(2, 5, 6)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("rules", ["kernelbench", "strict"])
def test_padding_modules_crop_and_pad(cpu_executor, tmp_path, rules):
    result = evaluate_task(cpu_executor, write_task(tmp_path, "pad_modules", PAD_MODULES), rules)
    assert ok(result), explain(result)


def test_a_reflection_pad_module_says_its_mode_in_one_line(tmp_path):
    path = write_task(tmp_path, "reflect_pad", PAD_MODULES.replace("nn.ConstantPad1d((2, 1), 0.5)",
                                                                    "nn.ReflectionPad1d((2, 1))"))
    plan = analyze(path, "strict")
    assert isinstance(plan, Unsupported) and "\n" not in plan.reason and "mode='reflect'" in plan.reason, plan


# Masks combined with &, |, ^ (Qwen2's sliding window: causal and near), a float cast to bool
# (RetNet's tril(ones).bool()), logical_and/or of values where nonzero is true
MASK_LOGIC = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, scores):
        idx = torch.arange(x.size(1), device=x.device)
        distance = idx[:, None] - idx[None, :]
        window = (distance >= 0) & (distance < 3)
        either = (distance == 0) | (distance > 4)
        keep = torch.tril(torch.ones(6, 6, device=x.device)).bool()
        out = scores.masked_fill(~(window & keep), -1.0) + (window ^ either).float()
        return out + 2 * torch.logical_and(scores, x).float() + (x > 0).logical_or(scores < -0.5).float()


def get_inputs():
    return [torch.randn(2, 6, 6).masked_fill(torch.rand(2, 6, 6) < 0.3, 0.0), torch.randn(2, 6, 6)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("rules", ["kernelbench", "strict"])
def test_masks_combine_with_and_or_xor_and_casts_to_bool(cpu_executor, tmp_path, rules):
    result = evaluate_task(cpu_executor, write_task(tmp_path, "mask_logic", MASK_LOGIC), rules)
    assert ok(result), explain(result)


def test_a_bitwise_and_of_integers_says_why_in_one_line(tmp_path):
    path = write_task(tmp_path, "int_and", MASK_LOGIC.replace("(distance >= 0) & (distance < 3)",
                                                              "(distance & 3) > 0"))
    plan = analyze(path, "strict")
    assert isinstance(plan, Unsupported) and "\n" not in plan.reason and "bitwise_and" in plan.reason, plan


# RetNet's decay mask: exp(inf * negative) and nan_to_num; isnan, isinf, isfinite beside it
NON_FINITE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = torch.log(x)  # nan below 0, -inf at 0
        z = 1.0 / x       # +inf at +0
        out = torch.nan_to_num(y, nan=0.5, neginf=-9.0) + torch.nan_to_num(z, posinf=7.0, neginf=-7.0)
        return out + torch.isnan(y).float() + 3 * torch.isinf(z).float() + 5 * torch.isfinite(y).float()


def get_inputs():
    return [torch.randn(4, 5).masked_fill(torch.rand(4, 5) < 0.3, 0.0)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("rules", ["kernelbench", "strict"])
def test_non_finite_values_are_found_and_replaced(cpu_executor, tmp_path, rules):
    result = evaluate_task(cpu_executor, write_task(tmp_path, "non_finite", NON_FINITE), rules)
    assert ok(result), explain(result)


# A CRF's Viterbi backtrace: argmax ids gathered step by step and stacked, an int64 output
# (the stack once promoted them to float, refused as a cast output)
VITERBI_TAGS = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.transitions = nn.Parameter(torch.randn(5, 5))

    def forward(self, emissions):
        score = emissions[:, 0]
        history = []
        for i in range(1, emissions.size(1)):
            score, indices = (score.unsqueeze(2) + self.transitions + emissions[:, i].unsqueeze(1)).max(dim=1)
            history.append(indices)
        best = score.argmax(dim=1)
        tags = [best]
        for hist in reversed(history):
            best = hist.gather(1, best.unsqueeze(1)).squeeze(1)
            tags.append(best)
        tags.reverse()
        return torch.stack(tags, dim=1)


def get_inputs():
    return [torch.randn(3, 4, 5)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("rules", ["kernelbench", "strict"])
def test_a_stack_of_argmax_ids_is_an_integer_output(cpu_executor, tmp_path, rules):
    result = evaluate_task(cpu_executor, write_task(tmp_path, "viterbi_tags", VITERBI_TAGS), rules)
    assert ok(result), explain(result)


# A spatial transformer's warp: theta regressed from the input, its grid at another output size,
# the input (computed) sampled there; positions past the border read zeros or the border
GRID_WARP = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Linear(32, 6)
        with torch.no_grad():
            self.loc.weight.normal_(0.0, 0.3)
            self.loc.bias.copy_(torch.tensor([1.2, 0.1, 0.0, -0.2, 0.9, 0.1]))

    def forward(self, x):
        theta = self.loc(x.flatten(1)).view(-1, 2, 3)
        grid = F.affine_grid(theta, (x.size(0), 2, 5, 6), align_corners=ALIGN)
        return F.grid_sample(x * 2.0, grid, mode=MODE, padding_mode=PADDING, align_corners=ALIGN)


def get_inputs():
    return [torch.randn(2, 1, 4, 4).expand(2, 2, 4, 4).contiguous() * torch.tensor([1.0, -0.5]).view(1, 2, 1, 1)]


def get_init_inputs():
    return []
'''


def _grid_warp(mode: str, padding: str, align: bool) -> str:
    return GRID_WARP.replace("MODE", repr(mode)).replace("PADDING", repr(padding)).replace("ALIGN", repr(align))


@pytest.mark.parametrize("mode, padding, align, rules", [("bilinear", "zeros", False, "kernelbench"),
                                                         ("bilinear", "zeros", False, "strict"),
                                                         ("bilinear", "border", True, "strict"),
                                                         ("nearest", "zeros", False, "strict")])
def test_affine_grid_and_grid_sample_warp_the_input(cpu_executor, tmp_path, mode, padding, align, rules):
    path = write_task(tmp_path, "grid_warp", _grid_warp(mode, padding, align))
    result = evaluate_task(cpu_executor, path, rules)
    assert ok(result), explain(result)


def test_a_grid_sample_padding_mode_without_a_form_says_so_in_one_line(tmp_path):
    path = write_task(tmp_path, "grid_reflect", _grid_warp("bilinear", "reflection", False))
    plan = analyze(path, "strict")
    assert isinstance(plan, Unsupported) and "\n" not in plan.reason and "'reflection'" in plan.reason, plan


# Hyena's long convolution by FFT: both signals zero-padded to twice the length, the spectra
# multiplied and scaled, irfft with norm="forward", cropped; an odd-length round trip under
# norm="ortho" and the default norm beside it
FFT_CONV = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = nn.Parameter(torch.randn(3, 7))

    def forward(self, u):
        L = u.shape[-1]
        n = 2 * L
        k_f = torch.fft.rfft(self.k, n=n) / n
        u_f = torch.fft.rfft(u, n=n)
        y = torch.fft.irfft(u_f * k_f, n=n, norm="forward")[..., :L]
        round_trip = torch.fft.irfft(torch.fft.rfft(u, norm="ortho"), n=L, norm="ortho")
        return y + 0.5 * round_trip + torch.fft.irfft(torch.fft.rfft(u * 2.0), n=L)


def get_inputs():
    return [torch.randn(2, 3, 7)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("rules", ["kernelbench", "strict"])
def test_rfft_and_irfft_convolve_as_torch_does(cpu_executor, tmp_path, rules):
    result = evaluate_task(cpu_executor, write_task(tmp_path, "fft_conv", FFT_CONV), rules)
    assert ok(result), explain(result)


def test_an_fft_along_another_dim_says_so_in_one_line(tmp_path):
    path = write_task(tmp_path, "fft_dim", FFT_CONV.replace("torch.fft.irfft(torch.fft.rfft(u * 2.0), n=L)",
                                                                 "torch.fft.irfft(torch.fft.rfft(u * 2.0, dim=1), n=3, dim=1)"))
    plan = analyze(path, "strict")
    assert isinstance(plan, Unsupported) and "\n" not in plan.reason and "other than the last" in plan.reason, plan
