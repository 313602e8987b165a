"""Channels-last convolutions under the kernelbench rules: the library's 2-D and 3-D convolutions,
forward and transposed, run NHWC/NDHWC where every value computed from them reaches a reader that
takes any layout (our pointwise kernels, torch.cat, our pooling's channels-last tiles, a global pooling
reduction, a reduction over the channels, a flatten) and it pays (see _schedule._channels_last); our pointwise kernels lay out their
result as their full-size operand is laid out."""

from __future__ import annotations

import pytest
import torch

from builtin_case import Case, check_in_interpreter, explain, ok, run_cases, write
from evokernel.builtin import analyze, generate

CNN = Case(
    "cnn_nhwc",
    "x: y = self.pool(torch.relu(self.bn(self.conv1(x))))\n"
    "y = torch.cat([torch.relu(self.conv2(y)), y], dim=1)\n"
    "return self.fc(torch.flatten(self.gap(y), 1))",
    "[torch.randn(2, 3, 12, 12)]",
    init="self.conv1 = nn.Conv2d(3, 64, 3, padding=1)\nself.bn = nn.BatchNorm2d(64)\n"
         "self.bn.running_mean.uniform_()\nself.bn.running_var.uniform_(0.5, 2)\n"
         "self.pool = nn.MaxPool2d(3, 2, 1)\nself.conv2 = nn.Conv2d(64, 64, 3, padding=1)\n"
         "self.gap = nn.AdaptiveAvgPool2d(1)\nself.fc = nn.Linear(128, 5)",
)
# a softmax over a row of pixels reads its rows at the channel stride: the graph stays NCHW
SOFTMAX_AFTER_CONV = Case("softmax_after_conv", "x: return torch.softmax(self.conv(x) + 1.0, dim=-1)",
                          "[torch.randn(2, 16, 6, 7)]", init="self.conv = nn.Conv2d(16, 8, 3, padding=1)")
# a grouped convolution stays ours (see test_builtin_library_choice): the graph stays NCHW
GROUPED_AFTER_CONV = Case("grouped_after_conv", "x: return self.g(torch.relu(self.conv(x)))",
                          "[torch.randn(2, 16, 6, 6)]",
                          init="self.conv = nn.Conv2d(16, 8, 3, padding=1)\nself.g = nn.Conv2d(8, 8, 1, groups=2)")


def _source(tmp_path, case: Case, rules: str = "kernelbench") -> str:
    return generate(analyze(str(write(case, tmp_path)), rules))


def test_a_cnn_runs_its_convolutions_and_pools_channels_last_and_stays_correct(cpu_executor, tmp_path):
    source = _source(tmp_path, CNN)
    assert "memory_format=torch.channels_last" in source
    # the task's NCHW input copied by our tiled kernel (torch's copy only where its positions are not one run)
    assert "_cl = _conv_channels_last(x, False)" in source and "_library_conv_s0(_cl, " in source and "_launch(_conv_nhwc_kernel" in source
    assert "torch.empty_permuted(out_shape, (0, 2, 3, 1)" in source  # the pool's channels-last output
    result = run_cases(cpu_executor, [CNN], tmp_path, rules="kernelbench")[CNN.name]
    assert ok(result), explain(result)


# every pooling geometry the channels-last tiles compute, each after two channels-last convolutions
# of 64 channels (the first reads the task's input, whose copy to channels-last the 64-channel
# convolutions' saving must outweigh: see LONE_BLOCK)
TWO_CONVS = "self.conv = nn.Conv2d(3, 64, 3, padding=1)\nself.conv2 = nn.Conv2d(64, 64, 3, padding=1)\n"
FEATURES = "y = self.conv2(torch.relu(self.conv(x)))\n"
POOLS = [
    Case("nhwc_max_dilated_ceil", "x: " + FEATURES + "return self.pool(torch.relu(y)) * 2.0", "[torch.randn(2, 3, 11, 9)]",
         init=TWO_CONVS + "self.pool = nn.MaxPool2d(3, 2, 1, dilation=2, ceil_mode=True)"),
    Case("nhwc_avg_no_pad_count", "x: " + FEATURES + "return self.pool(y - 1.0)", "[torch.randn(2, 3, 10, 7)]",
         init=TWO_CONVS + "self.pool = nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)"),
    Case("nhwc_avg_divisor", "x: " + FEATURES + "return F.avg_pool2d(y, 2, divisor_override=3)", "[torch.randn(2, 3, 8, 8)]",
         init=TWO_CONVS),
    Case("nhwc_adaptive_max", "x: " + FEATURES + "return F.adaptive_max_pool2d(torch.relu(y), (3, 2))",
         "[torch.randn(2, 3, 10, 7)]", init=TWO_CONVS),
]


@pytest.mark.parametrize("case", POOLS, ids=lambda c: c.name)
def test_channels_last_pools_are_correct(cpu_executor, tmp_path, case):
    assert "torch.empty_permuted(out_shape, (0, 2, 3, 1)" in _source(tmp_path, case)
    result = run_cases(cpu_executor, [case], tmp_path, rules="kernelbench")[case.name]
    assert ok(result), explain(result)


# a lone block whose convolutions read the task's NCHW input (GoogleNet's inception module: three
# convolutions of one large input) would copy it to channels-last for each: it stays NCHW; and so
# does a cat of a channels-last value with the input (DenseNet's dense block)
LONE_BLOCK = Case("lone_block", "x: return torch.cat([self.a(x), self.b(x), self.c(x)], 1)", "[torch.randn(2, 32, 6, 6)]",
                  init="self.a = nn.Conv2d(32, 8, 1)\nself.b = nn.Conv2d(32, 8, 1)\nself.c = nn.Conv2d(32, 8, 1)")
# a transposed or 3-D convolution whose result is normalised by its own spatial statistics keeps the
# task's layout (channels-last was slower there on the H100: InstanceNorm, a subtracted spatial mean)
TRANSPOSED_NORM = Case("transposed_norm", "x: y = torch.relu(self.up(x))\nreturn y - torch.mean(y, dim=(2, 3), keepdim=True)",
                       "[torch.randn(2, 16, 6, 6)]", init="self.up = nn.ConvTranspose2d(16, 32, 3, stride=2)")
# ...and one only pooled over its pixels runs channels-last (the rows kernels' adjacent-row tiles)
TRANSPOSED_GAP = Case("transposed_gap", "x: return torch.mean(torch.relu(self.up(x)), dim=(2, 3), keepdim=True) * 2.0",
                      "[torch.randn(2, 16, 6, 6)]", init="self.up = nn.ConvTranspose2d(16, 32, 3, stride=2)")
# transposed and 3-D convolutions whose results reach only pointwise kernels run channels-last
TRANSPOSED = Case("transposed", "x: return torch.tanh(self.up(torch.relu(self.conv(x)))) * 2.0", "[torch.randn(2, 3, 6, 6)]",
                  init="self.conv = nn.Conv2d(3, 64, 3, padding=1)\nself.up = nn.ConvTranspose2d(64, 64, 2, stride=2)")
TRANSPOSED_3D = Case("transposed_3d", "x: return torch.clamp(self.up(x), min=-0.5) / 2.0 + self.b",
                     "[torch.randn(2, 16, 3, 4, 5)]",
                     init="self.up = nn.ConvTranspose3d(16, 8, 3, stride=2, padding=1)\nself.b = nn.Parameter(torch.randn(8, 1, 1, 1))")
CONV_3D = Case("conv_3d", "x: return torch.sigmoid(torch.relu(self.conv(x)) * 3.0)", "[torch.randn(2, 16, 5, 6, 4)]",
               init="self.conv = nn.Conv3d(16, 8, 3, padding=1)")


@pytest.mark.parametrize("case,layout", [(TRANSPOSED, "channels_last"), (TRANSPOSED_3D, "channels_last_3d"),
                                         (CONV_3D, "channels_last_3d"), (TRANSPOSED_GAP, "channels_last")],
                         ids=lambda c: getattr(c, "name", c))
def test_transposed_and_3d_convolutions_before_pointwise_work_or_pooling_run_channels_last_and_stay_correct(
        cpu_executor, tmp_path, case, layout):
    _check_channels_last_and_correct(cpu_executor, tmp_path, case, layout)


def _check_channels_last_and_correct(cpu_executor, tmp_path, case: Case, layout: str) -> None:
    assert f"memory_format=torch.{layout})" in _source(tmp_path, case)
    result = run_cases(cpu_executor, [case], tmp_path, rules="kernelbench")[case.name]
    assert ok(result), explain(result)


# reductions over the channels (a min, a softmax's statistics) read a pixel's channels, contiguous
# channels-last: the graph runs channels-last (cuDNN's own layout conversions were ~38% of such level2 drafts)
CHANNEL_MIN = Case("channel_min", "x: return torch.tanh(torch.min(self.conv(x), dim=1, keepdim=True)[0]) * 2.0",
                   "[torch.randn(2, 16, 6, 7)]", init="self.conv = nn.Conv2d(16, 24, 3, padding=1)")
CHANNEL_SOFTMAX = Case("channel_softmax", "x: return torch.sigmoid(torch.softmax(self.up(x), dim=1) + self.b)",
                       "[torch.randn(2, 16, 3, 4, 5)]",
                       init="self.up = nn.ConvTranspose3d(16, 24, 3, stride=2)\nself.b = nn.Parameter(torch.randn(24, 1, 1, 1))")


@pytest.mark.parametrize("case,layout", [(CHANNEL_MIN, "channels_last"), (CHANNEL_SOFTMAX, "channels_last_3d")],
                         ids=lambda c: getattr(c, "name", c))
def test_reductions_over_the_channels_run_channels_last_and_stay_correct(cpu_executor, tmp_path, case, layout):
    _check_channels_last_and_correct(cpu_executor, tmp_path, case, layout)


MIXED_CAT = Case("mixed_cat", "x: return torch.cat([x, torch.relu(self.conv(x))], 1) * 2.0", "[torch.randn(2, 16, 6, 6)]",
                 init="self.conv = nn.Conv2d(16, 8, 3, padding=1)")
# convolutions of fewer than 16 input channels a group only: cuDNN's task-layout kernels compute them
# in IEEE fp32 and its channels-last ones in TF32, far less accurate than the reference
FEW_CHANNELS = Case("few_channels", "x: return torch.relu(self.conv(x)) * 2.0", "[torch.randn(2, 8, 6, 6)]",
                    init="self.conv = nn.Conv2d(8, 64, 3)")
# a convolution of a value our kernels wrote in the task's layout: its copy is weighed (here it does not pay)
COMPUTED_INPUT = Case("computed_input", "x: return torch.relu(self.conv(torch.relu(x) * 2.0)) + 1.0",
                      "[torch.randn(2, 16, 6, 6)]", init="self.conv = nn.Conv2d(16, 32, 3)")


@pytest.mark.parametrize("case", [SOFTMAX_AFTER_CONV, GROUPED_AFTER_CONV, LONE_BLOCK, MIXED_CAT, TRANSPOSED_NORM,
                                  FEW_CHANNELS, COMPUTED_INPUT],
                         ids=lambda c: c.name)
def test_a_reader_that_needs_the_plain_layout_keeps_the_graph_nchw(tmp_path, case):
    assert "channels_last" not in _source(tmp_path, case)


def test_a_few_channel_convolution_in_bf16_runs_channels_last_and_stays_correct(cpu_executor, tmp_path):
    """TF32 is an fp32 switch: in bf16 cuDNN takes tensor-core products of bf16 in either layout, so the
    few-channel rule (FEW_CHANNELS) does not hold the graph in the task's layout."""
    from backends import EvalOptions
    from evokernel.builtin import default_config

    path = write(FEW_CHANNELS, tmp_path)
    assert "channels_last" not in generate(analyze(str(path), "kernelbench", precision="fp32"))
    plan = analyze(str(path), "kernelbench", precision="bf16")
    source = generate(plan, default_config(plan))
    assert "memory_format=torch.channels_last" in source
    options = EvalOptions.from_dict({"rules": "kernelbench", "precision": "bf16", "timing": False, "baselines": False,
                                     "trials": 1})
    result = cpu_executor.evaluate(path, source, backend="triton", options=options)
    assert ok(result), explain(result)


def test_the_same_blocks_with_more_channels_or_the_task_input_run_channels_last(tmp_path):
    wider = Case("wider", FEW_CHANNELS.forward, "[torch.randn(2, 16, 6, 6)]", init="self.conv = nn.Conv2d(16, 64, 3)")
    task_input = Case("task_input", "x: return torch.relu(self.conv(x) * 2.0) + 1.0", COMPUTED_INPUT.inputs,
                      init=COMPUTED_INPUT.init)
    for case in (wider, task_input):
        assert "memory_format=torch.channels_last" in _source(tmp_path, case), case.name


def test_strict_rules_never_change_the_layout(tmp_path):
    # (a convolution may still walk a channels-last copy of its input inside its own launcher: gather "nhwc")
    assert "memory_format=torch.channels_last" not in _source(tmp_path, CNN, "strict")
    assert "memory_format=torch.channels_last" in _source(tmp_path, CNN, "kernelbench")


def _layout_helpers() -> dict:
    from evokernel.builtin._gen_elementwise import LAYOUT_HELPER

    scope = {"torch": torch}
    exec(LAYOUT_HELPER, scope)
    return scope


def test_a_pointwise_result_takes_the_layout_of_its_first_dense_full_size_operand():
    h = _layout_helpers()
    x = torch.randn(2, 3, 4, 5)
    nhwc = x.contiguous(memory_format=torch.channels_last)
    bias = torch.randn(3, 1, 1)
    shape = (2, 3, 4, 5)
    assert h["_dense_order"](shape, bias, nhwc, x) == [0, 2, 3, 1]
    assert h["_dense_order"](shape, x, nhwc) is None  # the first full-size operand is plain
    assert h["_dense_order"](shape, bias) is None  # none has the full shape
    # a slice is not dense: the next full-size operand decides
    wide = torch.randn(2, 3, 4, 10)[..., :5]
    assert h["_dense_order"](shape, wide, nhwc) == [0, 2, 3, 1]
    out = h["_empty_in"](shape, [0, 2, 3, 1], torch.float32, "cpu")
    assert out.shape == shape and out.is_contiguous(memory_format=torch.channels_last)


def test_a_pointwise_kernel_on_a_channels_last_input_writes_channels_last_and_is_correct(tmp_path):
    case = Case("pointwise_nhwc", "x, b: return torch.relu(x * 2.0 + b)",
                "[torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last), torch.randn(3, 1, 1)]")
    source = _source(tmp_path, case, "strict")
    check = ("import torch\n"
             "x = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)\n"
             "b = torch.randn(3, 1, 1)\n"
             "out = mod.ModelNew()(x, b)\n"
             "assert out.is_contiguous(memory_format=torch.channels_last), out.stride()\n"
             "assert torch.allclose(out, torch.relu(x * 2.0 + b))\n"
             "print('nhwc ok')\n")
    check_in_interpreter(tmp_path, check, source, "nhwc ok")


@pytest.mark.slow  # 9M elements through the interpreter: the rows must outgrow the one-pass and few-rows paths
def test_long_rows_of_a_channels_last_tensor_reduced_over_its_pixels_are_read_in_tiles_of_adjacent_channels(tmp_path):
    """More than 512 rows longer than the one-pass kernel's tile: the loop kernel takes 32 rows a
    program where the rows (channels) lie next to each other and their pixels do not, one row a
    program on the same tensor in the plain layout; both correct."""
    case = Case("gap_nhwc", "x, b: return torch.mean(torch.nn.functional.gelu(x + b), dim=(2, 3))",
                "[torch.randn(4, 160, 130, 130), torch.randn(160, 1, 1)]")
    source = _source(tmp_path, case, "strict")
    check = ("import torch\n"
             "b = torch.randn(160, 1, 1)\n"
             "seen = []\n"
             "pick = mod._adjacent_rows\n"
             "mod._adjacent_rows = lambda *a: seen.append(pick(*a)) or seen[-1]\n"
             "for x, rows in ((torch.randn(4, 160, 130, 130).contiguous(memory_format=torch.channels_last), 32),\n"
             "                (torch.randn(4, 160, 130, 130), 1)):\n"
             "    seen.clear()\n"
             "    out = mod.ModelNew()(x, b)\n"
             "    assert seen == [rows], seen\n"
             "    want = torch.mean(torch.nn.functional.gelu(x + b), dim=(2, 3))\n"
             "    assert torch.allclose(out, want, atol=1e-5), (out - want).abs().max()\n"
             "print('adjacent ok')\n")
    check_in_interpreter(tmp_path, check, source, "adjacent ok")
