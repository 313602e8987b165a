"""Resampling (nn.Upsample and its subclasses, F.interpolate): the nearest, nearest-exact and
linear modes over 1-3 spatial dims, sizes and scale factors up and down, aligned corners,
recomputed scale factors, strided and channels-last inputs, and the work around it (a
convolution or a pointwise op before or after), checked by the executor (interpreter values,
sm_90 compile) under both rule sets; the modes without a kernel say why."""

import pytest

from builtin_case import Case, correctness_checks, write

CONVS = "self.c1 = nn.Conv2d(3, 4, 3, padding=1)\nself.c2 = nn.Conv2d(4, 2, 1)"
CASES = [
    # YOLO's neck: nn.Upsample(scale_factor=2) between pointwise work
    Case("nearest_2x_module", "x: return self.up(torch.relu(x)) * 2.0", "[torch.randn(2, 3, 5, 4)]",
         init="self.up = nn.Upsample(scale_factor=2, mode='nearest')"),
    Case("nearest_non_integer_size", "x: return F.interpolate(x, size=(7, 5))", "[torch.randn(1, 2, 4, 3)]"),
    # a factor whose output size doubles one dim and keeps the other: torch's CPU kernel reads these as
    # exact steps (a copy, a halving), not 1 / 2.1 and 1 / 1.1
    Case("nearest_kept_and_doubled_sizes", "x: return F.interpolate(x, scale_factor=(2.1, 1.1))",
         "[torch.randn(1, 2, 5, 7)]"),
    Case("nearest_exact_up_and_down", "x: return F.interpolate(x, scale_factor=(1.5, 0.6), mode='nearest-exact')",
         "[torch.randn(1, 2, 5, 8)]"),
    # a segmentation head's resize, an activation after it
    Case("bilinear_size", "x: return torch.relu(F.interpolate(x, size=(9, 7), mode='bilinear', align_corners=False))",
         "[torch.randn(1, 2, 4, 3)]"),
    Case("bilinear_size_aligned", "x: return F.interpolate(x, size=(9, 1), mode='bilinear', align_corners=True)",
         "[torch.randn(1, 2, 4, 3)]"),
    Case("bilinear_factor_down", "x: return F.interpolate(x, scale_factor=0.6, mode='bilinear')",
         "[torch.randn(1, 2, 8, 7)]"),
    Case("bilinear_module_aligned_up", "x: return self.up(x)", "[torch.randn(1, 2, 4, 5)]",
         init="self.up = nn.UpsamplingBilinear2d(scale_factor=1.5)"),
    # recomputed: the index rule takes input / output size, not 1 / 1.7; a dim whose size 1.1 keeps
    Case("bilinear_recomputed_factor", "x: return F.interpolate(x, scale_factor=(1.7, 1.1), mode='bilinear', "
         "recompute_scale_factor=True) + F.interpolate(x, scale_factor=(1.7, 1.1), mode='bilinear')",
         "[torch.randn(1, 2, 5, 6)]"),
    Case("linear_1d", "x: return F.interpolate(x, scale_factor=2.5, mode='linear')", "[torch.randn(2, 3, 6)]"),
    Case("trilinear_3d", "x: return F.interpolate(x, size=(3, 5, 4), mode='trilinear', align_corners=False)",
         "[torch.randn(1, 2, 2, 3, 5)]"),
    Case("nearest_3d_module", "x: return self.up(x)", "[torch.randn(1, 2, 2, 3, 2)]",
         init="self.up = nn.Upsample(scale_factor=(2, 1.5, 3))"),
    # an NHWC input viewed as NCHW (channels-last: the result is too), and a transposed one
    Case("channels_last_input", "x: return F.interpolate(x.permute(0, 3, 1, 2), scale_factor=2, mode='bilinear')",
         "[torch.randn(1, 4, 3, 5)]"),
    Case("strided_input", "x: return F.interpolate(x.transpose(2, 3), size=(5, 6), mode='nearest')",
         "[torch.randn(1, 3, 4, 3)]"),
    # the ops F.interpolate calls (a dynamo capture records these): factors or an output size
    Case("upsample_ops", "x: y = torch._C._nn.upsample_bilinear2d(x, None, False, [1.5, 2.0]) + "
         "torch._C._nn.upsample_nearest2d(x, None, [1.5, 2.0])\n"
         "return y + torch._C._nn._upsample_nearest_exact2d(x, [6, 6], None) + "
         "torch._C._nn.upsample_bilinear2d(x, [6, 6], True, None)",
         "[torch.randn(1, 2, 4, 3)]", slow=True),
    # an FPN-like step: convolution, resample, convolution
    Case("between_convolutions", "x: return self.c2(F.interpolate(torch.relu(self.c1(x)), scale_factor=2))",
         "[torch.randn(1, 3, 4, 4)]", init=CONVS),
]
KERNELBENCH = ("nearest_2x_module", "bilinear_size", "between_convolutions")


results, kernelbench_results, test_resample_candidate_is_correct, test_resample_candidate_is_correct_under_kernelbench_rules = correctness_checks(
    CASES, "resample", KERNELBENCH)


@pytest.mark.parametrize("call, mode", [
    ("F.interpolate(x, scale_factor=2, mode='bicubic', align_corners=False)", "bicubic"),
    ("F.interpolate(x, size=(2, 2), mode='area')", "area"),
    ("F.interpolate(x, scale_factor=2, mode='bilinear', antialias=True)", "bilinear"),
    ("self.up(x)", "bicubic"),
])
def test_modes_without_a_kernel_say_why(tmp_path, call, mode):
    from evokernel.builtin import analyze

    case = Case("outside", f"x: return {call}", "[torch.randn(1, 2, 4, 4)]",
                init="self.up = nn.Upsample(scale_factor=2, mode='bicubic')")
    plan = analyze(write(case, tmp_path))
    assert not plan and f"mode '{mode}'" in plan.reason and "\n" not in plan.reason, plan
