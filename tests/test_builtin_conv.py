"""Convolutions: implicit GEMM (2d/1d/3d, transposed, grouped, strided, dilated,
padded) and the direct depthwise kernel, checked by the executor on the CPU
(Triton's interpreter and the sm_90 compile of every launched kernel)."""

import pytest

from builtin_case import Case, Lazy, check_in_interpreter, explain, ok, params
from evokernel.builtin import analyze, default_config, generate

CASES = [
    Case("conv2d_relu", "x: return torch.relu(self.conv(x))", "[torch.randn(2, 3, 9, 11)]",
         "self.conv = nn.Conv2d(3, 16, 3, padding=1)", full="[torch.rand(16, 3, 256, 256)]"),
    Case("conv1d_dilated_strided", "x: return self.conv(x)", "[torch.randn(2, 4, 40)]",
         "self.conv = nn.Conv1d(4, 16, 3, stride=3, dilation=4, bias=False)", slow=True),
    Case("conv3d_asymmetric", "x: return self.conv(x) * 0.5", "[torch.randn(2, 3, 5, 7, 6)]",
         "self.conv = nn.Conv3d(3, 16, (3, 5, 2), padding=(1, 2, 0))", slow=True),
    Case("convt2d_grouped", "x: return self.conv(x)", "[torch.randn(2, 8, 5, 6)]",
         "self.conv = nn.ConvTranspose2d(8, 16, (3, 5), stride=(2, 3), padding=(1, 2), dilation=(2, 1), groups=2)"),
    Case("convt3d_output_padding", "x: return self.conv(x)", "[torch.randn(1, 4, 3, 4, 5)]",
         "self.conv = nn.ConvTranspose3d(4, 16, 3, stride=2, padding=1, output_padding=1)", slow=True),
    Case("depthwise_asymmetric", "x: return self.conv(x)", "[torch.randn(2, 8, 9, 7)]",
         "self.conv = nn.Conv2d(8, 8, (3, 1), stride=2, padding=(1, 0), groups=8)"),
    Case("separable", "x: return self.pw(self.dw(x))", "[torch.randn(2, 8, 7, 6)]",
         "self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)\nself.pw = nn.Conv2d(8, 16, 1)", slow=True),
]


@pytest.fixture(scope="module")
def results(cpu_executor, tmp_path_factory):
    return Lazy(cpu_executor, CASES, tmp_path_factory.mktemp("conv"))


@pytest.mark.parametrize("name", params(CASES))
def test_conv_candidate_is_correct(results, name):
    assert ok(results[name]), explain(results[name])


def test_the_tf32_choice_follows_the_reference(tmp_path):
    """On a GPU the kernel rounds to TF32 exactly when cuDNN would (its switch on, fp32 inputs);
    precision='ieee' never does."""
    from builtin_case import write
    from evokernel.builtin import Config, search_space

    plan = analyze(write(CASES[0], tmp_path))
    source = generate(plan)
    assert "torch.backends.cudnn.allow_tf32" in source and 'input_precision="tf32"' in source
    ieee = next(c for c in search_space(plan) if c.precision == "ieee")
    assert isinstance(ieee, Config) and "_conv_tf32(_x, cin_g, 'ieee')" in generate(plan, ieee)
    # the default tile in each rounding first: a wrong draft is retried with the next rounding
    assert [c.precision for c in search_space(plan)[:3]] == ["auto", "trunc", "ieee"]
    assert search_space(plan)[0] == default_config(plan)


def _candidate_module(source, tmp_path, name):
    from backends._task import import_file

    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return import_file(path, name)


def test_tf32_only_where_cudnn_uses_it(tmp_path):
    """The candidate's own precision choice, as it makes it on a GPU: TF32 for fp32 inputs with
    cuDNN's switch on and 16+ input channels a group; IEEE for fewer (cuDNN's own choice on the
    H200), for precision='ieee', for other dtypes and with the switch off."""
    from types import SimpleNamespace

    import torch

    from builtin_case import write

    mod = _candidate_module(generate(analyze(write(CASES[0], tmp_path))), tmp_path, "conv_tf32_choice")
    gpu32 = SimpleNamespace(is_cuda=True, dtype=torch.float32)
    assert mod._conv_tf32(gpu32, 16, "auto") and mod._conv_tf32(gpu32, 64, "auto")
    assert not mod._conv_tf32(gpu32, 3, "auto") and not mod._conv_tf32(gpu32, 8, "auto")
    assert mod._conv_tf32(gpu32, 3, "trunc") and not mod._conv_tf32(gpu32, 64, "ieee")
    assert not mod._conv_tf32(SimpleNamespace(is_cuda=True, dtype=torch.float16), 64, "auto")
    assert not mod._conv_tf32(SimpleNamespace(is_cuda=False, dtype=torch.float32), 64, "auto")
    previous = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        assert not mod._conv_tf32(gpu32, 64, "auto")
    finally:
        torch.backends.cudnn.allow_tf32 = previous


_ROUNDING_CHECK = """
import torch
x = torch.randn(3, 5, 7, 11)
ties = ((x.view(torch.int32) & -8192) | 0x1000).view(torch.float32)  # half-way between two TF32 values
x = torch.cat([x.flatten(), ties.flatten(), torch.tensor([0.0, -0.0, 1.0, -2.5])])
got = mod._tf32_rounded(x).view(torch.int32)
want = (x.view(torch.int32) + 0x1000) & -8192
assert torch.equal(got, want), (got != want).sum()
assert (got & 8191).eq(0).all()  # the 13 low bits clear: representable in TF32
tie = ties.flatten()
assert (mod._tf32_rounded(tie).abs() > tie.abs()).all()  # ties go away from zero
print("rounding ok")
"""


def test_tf32_pre_rounding_rounds_as_cudnn(tmp_path):
    """The pass before the GEMM rounds each value to TF32 half away from zero on the 13 dropped
    bits (what the kernel's K loop did before), exactly, ties and negatives included."""
    from builtin_case import write

    check_in_interpreter(tmp_path, _ROUNDING_CHECK, generate(analyze(write(CASES[0], tmp_path))), "rounding ok")


_RESIDUAL_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        return self.conv(x) + x


def get_inputs():
    return [torch.randn(2, 8, 9, 7)]


def get_init_inputs():
    return []
"""

_RESIDUAL_CHECK = """
import torch
import torch.nn.functional as F
mod._conv_tf32 = lambda x, cin_g, precision: True  # the choice it makes on a GPU, here in the interpreter
torch.manual_seed(0)
new = mod.ModelNew()
x = torch.randn(2, 8, 9, 7) * 10
tf32 = lambda t: ((t.contiguous().view(torch.int32) + 0x1000) & -8192).view(torch.float32).double()
want = F.conv2d(tf32(x), tf32(new.conv.weight.detach()), new.conv.bias.detach().double(), padding=1) + x.double()
# contiguous: rounded in a pass before the GEMM; a strided view of the same values: rounded in its K loop
# (gather "nhwc": copied channels-last and rounded in one pass); channels-last: rounded where it is
for given in (x, x.transpose(2, 3).contiguous().transpose(2, 3), x.contiguous(memory_format=torch.channels_last)):
    err = (new(given).double() - want).abs().max().item()
    assert err < 1e-4, f"max error {err}: the epilogue must read x itself, the GEMM x rounded to TF32"
print("residual ok")
"""


@pytest.mark.parametrize("gather", ["flat", "taps", "nhwc"])
def test_pre_rounding_leaves_the_epilogue_its_own_operands(tmp_path, gather):
    """Only the GEMM reads TF32-rounded operands (rounded before it, or in its K loop for a strided
    input; the tap-major loops' weights as they are rearranged): an epilogue that adds the
    convolution's input (a residual) reads the input itself."""
    from dataclasses import replace

    task = tmp_path / "conv_residual.py"
    task.write_text(_RESIDUAL_TASK)
    plan = analyze(task)
    check_in_interpreter(tmp_path, _RESIDUAL_CHECK, generate(plan, replace(default_config(plan), gather=gather)),
                         "residual ok")


# the tap-major K loops over each geometry: channels a multiple of BLOCK_K or not (masked), strided,
# dilated, padded, grouped, transposed with output phases, 1-3d
EVEN = Case("conv2d_even_channels", "x: return self.conv(x) - 0.5", "[torch.randn(2, 16, 9, 8)]",
            "self.conv = nn.Conv2d(16, 32, 3, stride=2, padding=2, dilation=2)")
TAPS = [("conv2d_relu", "taps"), ("conv2d_relu", "nhwc"), ("convt2d_grouped", "taps"), ("convt2d_grouped", "nhwc"),
        ("conv2d_even_channels", "taps"), ("conv2d_even_channels", "nhwc"), ("conv1d_dilated_strided", "nhwc"),
        pytest.param("convt3d_output_padding", "nhwc", marks=pytest.mark.slow),
        pytest.param("conv3d_asymmetric", "taps", marks=pytest.mark.slow)]


@pytest.mark.parametrize("name, gather", TAPS)
def test_tap_major_gathers_are_correct(cpu_executor, tmp_path, name, gather):
    """Each case drafted with the K loop a tap at a time (the input as it is, or a channels-last
    copy), small tiles so the loops take several trips; interpreter and the sm_90 compile."""
    from dataclasses import replace

    from backends import EvalOptions
    from builtin_case import write

    case = next(c for c in CASES + [EVEN] if c.name == name)
    path = write(case, tmp_path)
    plan = analyze(path)
    config = replace(default_config(plan), gather=gather, block_m=32, block_n=16, block_k=16)
    source = generate(plan, config)
    assert "_conv_taps_kernel" in source and "_conv_gemm_kernel" not in source
    result = cpu_executor.evaluate(path, source, backend="triton", options=EvalOptions.from_dict(
        {"rules": "strict", "timing": False, "baselines": False, "trials": 1}))
    assert ok(result), explain(result)


_SPLIT3_CHECK = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
new = mod.ModelNew()
with torch.no_grad():  # weights over four decades: a dropped low part shows
    new.conv.weight.mul_(torch.logspace(-2, 2, new.conv.weight.shape[1]).view(1, -1, 1, 1))
x = torch.randn(2, 8, 9, 8) * 3
w, b = new.conv.weight.detach(), new.conv.bias.detach()
want = F.conv2d(x.double(), w.double(), b.double(), padding=1)
tf32 = lambda t: ((t.view(torch.int32) + 0x1000) & -8192).view(torch.float32).double()
one_product = F.conv2d(tf32(x), tf32(w), b.double(), padding=1)
scale = want.abs().max().item()
err = (new(x).double() - want).abs().max().item()
assert err < 2e-6 * scale, f"max error {err / scale:.2e} of the largest output"
assert (one_product - want).abs().max().item() > 30 * err  # TF32 products alone are much further off
print("split3 ok")
"""


@pytest.mark.parametrize("gather", ["flat", "taps", "nhwc"])
def test_3xtf32_convolution_is_fp32_accurate(tmp_path, gather):
    """precision "3xtf32": each K step's fp32 tiles split into TF32 high and low parts and three
    products taken, so the result stays within 2e-6 of the float64 convolution where TF32 products
    alone are off by far more; nothing rounded before the GEMM (the interpreter computes a dot in
    IEEE, so the explicit split is what shows)."""
    from dataclasses import replace

    from builtin_case import write

    path = write(Case("conv_split3", "x: return self.conv(x)", "[torch.randn(2, 8, 9, 8)]",
                      "self.conv = nn.Conv2d(8, 16, 3, padding=1)"), tmp_path)
    plan = analyze(path)
    config = replace(default_config(plan), precision="3xtf32", gather=gather, block_m=32, block_n=16, block_k=16)
    source = generate(plan, config)
    assert "SPLIT3=_x.dtype == torch.float32" in source and "tf32 = False" in source
    check_in_interpreter(tmp_path, _SPLIT3_CHECK, source, "split3 ok")


@pytest.mark.parametrize("gather", ["flat", "nhwc"])
def test_3xtf32_convolution_passes_the_executor(cpu_executor, tmp_path, gather):
    """The split K loop with an epilogue through the executor: correct in the interpreter and built by
    Triton's sm_90 compile (three TF32 dots a K step), flat and tap-major."""
    from dataclasses import replace

    from backends import EvalOptions
    from builtin_case import write

    path = write(Case("conv_split3_relu", "x: return torch.relu(self.conv(x)) * 0.5", "[torch.randn(2, 8, 9, 8)]",
                      "self.conv = nn.Conv2d(8, 16, 3, padding=1)"), tmp_path)
    plan = analyze(path)
    config = replace(default_config(plan), precision="3xtf32", gather=gather, block_m=32, block_n=16, block_k=16)
    result = cpu_executor.evaluate(path, generate(plan, config), backend="triton", options=EvalOptions.from_dict(
        {"rules": "strict", "timing": False, "baselines": False, "trials": 1}))
    assert ok(result), explain(result)


def test_3xtf32_is_in_the_convolution_search_for_fp32_only(tmp_path):
    from builtin_case import write
    from evokernel.builtin import search_space

    path = write(Case("conv_space", "x: return self.conv(x)", "[torch.randn(2, 8, 9, 8)]",
                      "self.conv = nn.Conv2d(8, 16, 3, padding=1)"), tmp_path)
    assert {c.precision for c in search_space(analyze(path))} == {"auto", "trunc", "ieee", "3xtf32"}
    assert {c.precision for c in search_space(analyze(path, "strict", "bf16"))} == {"auto"}


# (init, input, default gather): a full K step (32) of input channels a group and more than one tap walk a
# channels-last copy; a strided transposed convolution does from 8 channels a group; few channels and a 1x1
# kernel keep the flat K loop; half precision follows the same rule (see _config._channels_last_gather)
GATHER_DEFAULTS = [
    ("nn.Conv2d(32, 64, 3, padding=1)", "torch.randn(2, 32, 9, 8)", "nhwc"),
    ("nn.ConvTranspose3d(32, 32, 3, stride=2, groups=4)", "torch.randn(1, 32, 3, 4, 5)", "nhwc"),
    ("nn.ConvTranspose2d(32, 16, 3)", "torch.randn(1, 32, 5, 6)", "nhwc"),
    ("nn.Conv2d(16, 64, 3, padding=1)", "torch.randn(2, 16, 9, 8)", "flat"),
    ("nn.Conv3d(3, 64, 3)", "torch.randn(1, 3, 5, 6, 7)", "flat"),
    ("nn.Conv2d(64, 128, 1)", "torch.randn(2, 64, 9, 8)", "flat"),
    ("nn.ConvTranspose2d(8, 16, 3, stride=2, groups=2)", "torch.randn(1, 8, 5, 6)", "flat"),
]


@pytest.mark.parametrize("init, inputs, gather", GATHER_DEFAULTS)
def test_default_gather_follows_the_geometry(tmp_path, init, inputs, gather):
    from builtin_case import write

    path = write(Case("conv_gather", "x: return self.conv(x)", f"[{inputs}]", f"self.conv = {init}"), tmp_path)
    assert default_config(analyze(path)).gather == gather
    assert default_config(analyze(path, "strict", "bf16")).gather == gather
    source = generate(analyze(path))
    assert ("_conv_taps_kernel" in source) == (gather == "nhwc")


def test_depthwise_takes_the_direct_kernel(tmp_path):
    from builtin_case import write

    source = generate(analyze(write(CASES[5], tmp_path)))
    assert "_conv_direct_kernel" in source


def test_a_convolution_drafted_again_tries_another_rounding(tmp_path):
    """A wrong draft is retried with a rounding not tried yet, even when the memory holds a
    correct configuration of another convolution in the rounding that just failed (on the H200,
    KernelBench's 3D convolutions failed twice in TF32 rounding before this)."""
    from builtin_case import write
    from evokernel.builtin import Config, search_space
    from evokernel.loop import MemoryNote, StepContext
    from evokernel.policies._builtin import TritonBuiltinPolicy
    from evokernel.policies._search import PlanCache

    path = write(CASES[0], tmp_path)
    plan = analyze(path)
    default = default_config(plan)
    other_tile = next(c for c in search_space(plan) if c.precision == default.precision
                      and (c.block_m, c.block_n, c.block_k) != (default.block_m, default.block_n, default.block_k))
    remembered = MemoryNote(id=3, kind="trace", task_key="another-conv", backend="triton", key_text="", content="",
                            status="ok", latency_ms=1.0, value=0.9, extra={"config": other_tile.to_dict(), "family": "conv"})

    def ctx(tried):
        return StepContext(task_name="conv2d_relu", task_key="conv2d_relu", task_path=str(path),
                           task_source=path.read_text(), category="", backend="triton", stage="draft", step=2,
                           memories=[remembered], feedback="wrong result", start_point=None, tried=tried, run_id=1,
                           size="small")

    policy = TritonBuiltinPolicy(PlanCache())
    first = Config.from_dict(policy.propose(ctx(frozenset())).extra["config"])
    assert first == other_tile  # a first draft starts from the remembered configuration, as before
    tried = frozenset({"builtin:" + __import__("json").dumps(first.to_dict(), sort_keys=True)})
    second = Config.from_dict(policy.propose(ctx(tried)).extra["config"])
    assert second.precision != first.precision


def test_the_tap_major_tiles_the_autotuner_times():
    """On a GPU: the configuration's tile first, tiles wider than twice the group's output channels
    left out (a 32-channel convolution times no 128-wide tile), stages trimmed to shared memory;
    on the CPU the configuration's alone."""
    from types import SimpleNamespace

    import triton

    from evokernel.builtin._gen_conv import CONV_TILES
    from evokernel.builtin._gen_matmul import TILES_HELPER

    gpu = SimpleNamespace(is_cuda=True, device="cuda:0")
    fake_torch = SimpleNamespace(cuda=SimpleNamespace(
        get_device_properties=lambda device: SimpleNamespace(shared_memory_per_block_optin=232448)))
    space = {"torch": fake_torch, "triton": triton}
    exec(TILES_HELPER, space)
    configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
               for bm, bn, w, s in [(128, 128, 8, 3), *CONV_TILES]]
    kept = space["_gemm_tiles"](configs, {"_cx_ptr": gpu, "COUT_G": 32}, BLOCK_K=32)
    assert kept[0].kwargs["BLOCK_N"] == 128  # the configuration's own, always
    assert all(c.kwargs["BLOCK_N"] <= 32 for c in kept[1:]) and len(kept) == 2
    wide = space["_gemm_tiles"](configs, {"_cx_ptr": gpu, "COUT_G": 256}, BLOCK_K=32)
    assert len(wide) == len(configs) and all(c.num_stages >= 1 for c in wide)
    cpu = SimpleNamespace(is_cuda=False)
    assert len(space["_gemm_tiles"](configs, {"_cx_ptr": cpu, "COUT_G": 256}, BLOCK_K=32)) == 1


# the tiled direct kernel: depthwise with a bias epilogue, stride and padding; a nearly-depthwise
# grouped convolution (two input channels a group); planes cut short at both edges of a tile
TILED = [Case("dw_tiled", "x: return torch.relu(self.conv(x)) + 1.0", "[torch.randn(2, 6, 19, 70)]",
              "self.conv = nn.Conv2d(6, 6, (3, 5), stride=(2, 1), padding=(1, 2), groups=6)"),
         Case("grouped_tiled", "x: return self.conv(x)", "[torch.randn(1, 8, 9, 11)]",
              "self.conv = nn.Conv2d(8, 4, 3, padding=1, dilation=2, groups=4, bias=False)")]


@pytest.mark.parametrize("case", TILED, ids=lambda c: c.name)
def test_the_tiled_direct_kernel_is_correct(cpu_executor, tmp_path, case):
    from dataclasses import replace

    from backends import EvalOptions
    from builtin_case import write
    from evokernel.builtin import search_space

    path = write(case, tmp_path)
    plan = analyze(path)
    assert [c.tile2d for c in search_space(plan)[:2]] == [False, True]  # the direct kernel's one other choice
    source = generate(plan, replace(default_config(plan), tile2d=True))
    assert "_conv_tile_kernel" in source and "_conv_direct_kernel" not in source
    result = cpu_executor.evaluate(path, source, backend="triton", options=EvalOptions.from_dict(
        {"rules": "strict", "timing": False, "baselines": False, "trials": 1}))
    assert ok(result), explain(result)


def test_a_depthwise_convolution_with_planes_of_a_whole_tile_drafts_the_tiled_kernel(cpu_executor, tmp_path):
    """The default takes the tiled direct kernel for 2-d depthwise convolutions whose output planes hold a
    whole tile (1.73-3.46x faster than an element per lane on level1's 82-85 in bf16 on an H100); smaller
    planes, transposed and 3-d ones keep the element kernel, which the search still holds."""
    from backends import EvalOptions
    from builtin_case import write
    from evokernel.builtin import search_space

    big = Case("dw_big", "x: return self.conv(x) * 2.0", "[torch.randn(1, 4, 34, 36)]",  # 32 x 34 = 1088 outputs
               "self.conv = nn.Conv2d(4, 4, 3, groups=4)")
    path = write(big, tmp_path)
    plan = analyze(path)
    assert default_config(plan).tile2d
    assert [c.tile2d for c in search_space(plan)[:2]] == [True, False]
    source = generate(plan, default_config(plan))
    assert "_conv_tile_kernel" in source and "_conv_direct_kernel" not in source
    result = cpu_executor.evaluate(path, source, backend="triton", options=EvalOptions.from_dict(
        {"rules": "strict", "timing": False, "baselines": False, "trials": 1}))
    assert ok(result), explain(result)
    others = [("dw_small", "[torch.randn(1, 4, 33, 33)]", "nn.Conv2d(4, 4, 3, groups=4)"),  # 31 x 31 = 961
              ("dw_transposed", "[torch.randn(1, 4, 40, 40)]", "nn.ConvTranspose2d(4, 4, 3, groups=4)"),
              ("dw_3d", "[torch.randn(1, 4, 4, 20, 20)]", "nn.Conv3d(4, 4, 3, groups=4)")]
    for name, inputs, module in others:
        sub = tmp_path / name
        sub.mkdir()
        plan = analyze(write(Case(name, "x: return self.conv(x)", inputs, f"self.conv = {module}"), sub))
        assert not default_config(plan).tile2d, name


def test_a_remembered_precision_the_space_no_longer_holds_still_has_neighbours(tmp_path):
    """A depthwise convolution's space holds no roundings (its direct kernel reads none): a start
    point remembered with another one still gets neighbours to refine."""
    from dataclasses import replace

    from builtin_case import write
    from evokernel.builtin import neighbours

    plan = analyze(write(CASES[5], tmp_path))
    assert neighbours(replace(default_config(plan), precision="trunc"), plan)


def test_a_few_channel_fp32_convolution_names_its_speed_limit_in_the_proposal(tmp_path):
    """Issue 30's floor: a convolution of fewer than 16 input channels a group keeps IEEE fp32 products
    (cuDNN's reference does), measured far slower than cuDNN; the builtin says so in its proposal, for the
    bench to name where the task is slow. Not for 16 or more channels (TF32 as cuDNN), a 3xTF32
    configuration, half precision, or the direct depthwise kernel."""
    from builtin_case import write
    from evokernel.builtin import Config, search_space, speed_limits
    from evokernel.loop import StepContext
    from evokernel.policies._builtin import TritonBuiltinPolicy
    from evokernel.policies._search import PlanCache

    few = analyze(write(CASES[0], tmp_path))  # 3 input channels
    (limit,) = speed_limits(few, default_config(few))
    assert "IEEE fp32 products" in limit and "3 input channel(s)" in limit
    assert speed_limits(few, next(c for c in search_space(few) if c.precision == "ieee"))
    assert not speed_limits(few, next(c for c in search_space(few) if c.precision == "3xtf32"))
    assert not speed_limits(few, Config("conv", precision="trunc"))
    wide = Case("conv_wide", "x: return self.conv(x)", "[torch.randn(2, 16, 6, 6)]", "self.conv = nn.Conv2d(16, 16, 3)")
    wide_plan = analyze(write(wide, tmp_path))
    assert not speed_limits(wide_plan, default_config(wide_plan))
    half = Case("conv_half", "x: return self.conv(x.half())", "[torch.randn(2, 3, 6, 6)]",
                "self.conv = nn.Conv2d(3, 16, 3).half()")
    half_plan = analyze(write(half, tmp_path))
    assert half_plan and not speed_limits(half_plan, default_config(half_plan))
    depthwise = analyze(write(CASES[5], tmp_path))
    assert not speed_limits(depthwise, default_config(depthwise))
    # a pipeline: its few-channel convolution counts whichever stage the configuration is for
    two = Case("conv_two", "x: return self.b(torch.relu(self.a(x)))", "[torch.randn(2, 16, 9, 9)]",
               "self.a = nn.Conv2d(16, 3, 3)\nself.b = nn.Conv2d(3, 16, 3)")
    two_plan = analyze(write(two, tmp_path))
    assert two_plan.family == "pipeline"
    assert speed_limits(two_plan, default_config(two_plan)) == (limit,)

    path = write(CASES[0], tmp_path)
    ctx = StepContext(task_name="conv2d_relu", task_key="conv2d_relu", task_path=str(path), task_source=path.read_text(),
                      category="", backend="triton", stage="draft", step=1, memories=[], feedback="", start_point=None,
                      tried=frozenset(), run_id=1, size="small")
    assert TritonBuiltinPolicy(PlanCache()).propose(ctx).extra["speed_limits"] == [limit]


def test_a_refinement_leaves_for_last_the_changes_that_lost_on_other_tasks_and_tries_first_those_that_paid(tmp_path):
    """Refinement orders its start point's neighbours by what remembered refinements of other tasks made of
    the same change: on KernelBench's convolutions (learning-h100-kb-conv-9d52f4a.json) the warm-up found
    gather flat and taps slower than nhwc on every task, and each held-out task still tried both first."""
    import json
    from dataclasses import replace

    from builtin_case import write
    from evokernel.builtin import Config
    from evokernel.loop import MemoryNote, StartPointView, StepContext
    from evokernel.policies._builtin import TritonBuiltinPolicy
    from evokernel.policies._search import PlanCache

    path = write(Case("conv_held_out", "x: return self.conv(x)", "[torch.randn(1, 32, 10, 10)]",
                      "self.conv = nn.Conv2d(32, 32, 3)"), tmp_path)
    default = default_config(analyze(path))
    assert default.gather == "nhwc"
    other_default = replace(default, block_m=64)  # another task's start point: the same change from there

    def note(i, change, reward, stage="refine"):
        return MemoryNote(id=i, kind="trace", task_key=f"other-{i}", backend="triton", key_text="", content="",
                          status="ok", latency_ms=1.0, value=-0.1, stage=stage, reward=reward,
                          extra={"config": replace(other_default, **change).to_dict(), "family": "conv",
                                 "default_config": other_default.to_dict(), "start_config": other_default.to_dict()})

    def refine(memories, tried=()):
        start = StartPointView(id=1, code="", latency_ms=1.0, speedup_eager=None, speedup_compile=None,
                               extra={"config": default.to_dict()})
        ctx = StepContext(task_name="conv_held_out", task_key="c", task_path=str(path), task_source=path.read_text(),
                          category="", backend="triton", stage="refine", step=2, memories=memories, feedback=None,
                          start_point=start, run_id=1, size="small",
                          tried=frozenset("builtin:" + json.dumps(c.to_dict(), sort_keys=True) for c in (default, *tried)))
        proposal = TritonBuiltinPolicy(PlanCache()).propose(ctx)
        credited.append(proposal.used_memory_ids)
        return Config.from_dict(proposal.extra["config"])

    credited: list = []  # each proposal's used memories: the evidence that placed its configuration
    alone = refine([])
    assert alone != default and credited[-1] == ()
    lost = {key: getattr(alone, key) for key in ("gather", "block_k", "num_stages", "num_warps", "block_n")
            if getattr(alone, key) != getattr(default, key)}
    assert lost  # the neighbour tried first on an empty memory changes something
    after_loss = refine([note(1, lost, -1.0), note(2, lost, -1.0)])
    assert after_loss != alone and {k: getattr(after_loss, k) for k in lost} != lost
    assert credited[-1] == (1, 2)  # the losses that moved the first neighbour behind it placed this one
    # a loss on a neighbour the task has already tried placed nothing: it would have been skipped anyway
    assert refine([note(1, lost, -1.0)], tried=[alone]) == after_loss and credited[-1] == ()
    # a change that paid elsewhere comes first, ahead of the neighbours' own order
    paid = {"block_n": default.block_n // 2}
    assert refine([note(3, paid, 1.0), note(7, lost, -1.0)]) == replace(default, **paid)
    assert credited[-1] == (3,)  # the loss elsewhere placed another neighbour: not credited with this step
    # a draft's trace, or the same change with mixed outcomes summing to nothing, moves no neighbour
    assert refine([note(4, lost, -1.0, stage="draft")]) == alone and credited[-1] == ()
    assert refine([note(5, lost, -1.0), note(6, lost, 1.0)]) == alone and credited[-1] == (5, 6)


def test_a_draft_credits_only_the_memories_whose_configuration_it_proposes(tmp_path):
    """The memories a builtin step names as used are those that put its configuration first, so only their
    values learn from its reward: the most valuable remembered configuration of the same shape class while
    untried, the next once it is, none for the default (on a held-out task every step retrieves the same
    memories; credited all together, their values fell with every failed step of some other configuration)."""
    import json

    from builtin_case import write
    from evokernel.builtin import search_space
    from evokernel.loop import MemoryNote, StepContext
    from evokernel.policies._builtin import TritonBuiltinPolicy
    from evokernel.policies._search import PlanCache

    path = write(Case("conv_draft", "x: return self.conv(x)", "[torch.randn(1, 32, 10, 10)]",
                      "self.conv = nn.Conv2d(32, 32, 3)"), tmp_path)
    default = default_config(analyze(path))
    a, b = [c for c in search_space(analyze(path)) if c != default][:2]

    def trace(i, config, value, kind="trace"):
        return MemoryNote(id=i, kind=kind, task_key=f"other-{i}", backend="triton", key_text="", content="",
                          status="ok", latency_ms=1.0, value=value, stage="draft", reward=1.0,
                          extra={"config": config.to_dict(), "family": "conv", "default_config": default.to_dict()})

    memories = [trace(1, b, 0.2), trace(2, a, 0.5), trace(3, a, 0.1), trace(4, a, 0.9, kind="experience")]
    proposals = []
    for tried in ([], [a], [a, b]):
        ctx = StepContext(task_name="conv_draft", task_key="c", task_path=str(path), task_source=path.read_text(),
                          category="", backend="triton", stage="draft", step=1 + len(tried), memories=memories,
                          feedback=None, start_point=None, run_id=1, size="small",
                          tried=frozenset("builtin:" + json.dumps(c.to_dict(), sort_keys=True) for c in tried))
        proposals.append(TritonBuiltinPolicy(PlanCache()).propose(ctx))
    assert [p.extra["config"] for p in proposals] == [a.to_dict(), b.to_dict(), default.to_dict()]
    # both traces of `a` vouched for it; the experience holds no configuration the builtin reads
    assert [p.used_memory_ids for p in proposals] == [(2, 3), (1,), ()]
    assert [p.extra.get("config_from") for p in proposals] == ["memory 2", "memory 1", None]


def test_a_half_precision_convolution_with_few_channels_a_group_takes_16_deep_k_steps(cpu_executor, tmp_path):
    """fp16/bf16 a tap at a time (gather "nhwc") with 16 or fewer input channels a group: 16-deep K steps,
    so less of each is padding (2.03x faster on level1's 72_conv_transposed_3D, 8 channels a group, in
    bf16 on an H100); the draft is first in the search and correct; fp32 and wider groups keep 32."""
    from backends import EvalOptions
    from builtin_case import write
    from evokernel.builtin import search_space

    case = Case("convt_g8", "x: return self.conv(x)", "[torch.randn(1, 16, 5, 6)]",
                "self.conv = nn.ConvTranspose2d(16, 16, 3, stride=2, padding=1, groups=2)")
    path = write(case, tmp_path)
    plan = analyze(path, precision="bf16")
    config = default_config(plan)
    assert (config.gather, config.block_k) == ("nhwc", 16)
    assert search_space(plan)[0] == config
    assert default_config(analyze(path, precision="fp32")).block_k == 32
    result = cpu_executor.evaluate(path, generate(plan, config), backend="triton", options=EvalOptions.from_dict(
        {"rules": "strict", "precision": "bf16", "timing": False, "baselines": False, "trials": 1}))
    assert ok(result), explain(result)
    wide = tmp_path / "wide"
    wide.mkdir()
    wider = Case("convt_g32", "x: return self.conv(x)", "[torch.randn(1, 64, 5, 6)]",
                 "self.conv = nn.ConvTranspose2d(64, 16, 3, stride=2, padding=1, groups=2)")
    assert default_config(analyze(write(wider, wide), precision="bf16")).block_k == 32
