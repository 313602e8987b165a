"""Small ops real models write, lowered to the pointwise and reduction primitives: rounding
(halves to even, as torch), remainder and fmod (sign of the divisor, of the dividend), lerp,
addcmul/addcdiv, hypot, frac, any/all, diff, one_hot, outer; and modules that are another
op in eval mode (Dropout2d, RReLU, Softmax2d). Checked by the executor (interpreter values,
sm_90 compile)."""

from builtin_case import Case, correctness_checks

CASES = [
    # exact halves both ways: round to even, not away from zero
    Case("round_halves_to_even", "x: return torch.round(x) + torch.frac(x) * 10.0",
         "[torch.randint(-8, 8, (4, 6)).float() / 2]"),
    Case("remainder_and_fmod_signs", "x, y: return torch.remainder(x, y) + 10.0 * torch.fmod(x, y)",
         "[torch.randn(4, 6) * 5, torch.where(torch.rand(4, 6) > 0.5, 1.5, -1.25)]"),
    Case("lerp_addcmul_addcdiv_hypot",
         "x, y, z: return torch.lerp(x, y, 0.3) + torch.addcmul(x, y, z, value=0.5) "
         "+ torch.addcdiv(x, y, z.abs() + 1.0, value=-2.0) + torch.hypot(x, z)",
         "[torch.randn(4, 6), torch.randn(4, 6), torch.randn(4, 6)]"),
    Case("any_all_diff", "x: return (x > 0).any(dim=-1).float() + (x > -1).all(dim=-1).float() + "
         "torch.diff(x, dim=-1).sum(-1)", "[torch.randn(4, 7)]"),
    Case("one_hot_outer", "t, v: return F.one_hot(t, 5).float() * 2.0 + torch.outer(v, v[:5])",
         "[torch.randint(0, 5, (6,)), torch.randn(6)]"),
    Case("eval_mode_modules", "x: return self.sm(self.act(self.drop(x)))", "[torch.randn(2, 3, 4, 4)]",
         init="self.drop = nn.Dropout2d(0.5)\nself.act = nn.RReLU(0.1, 0.3)\nself.sm = nn.Softmax2d()\nself.eval()"),
]

results, kernelbench_results, test_idiom_is_correct, test_idiom_is_correct_under_kernelbench_rules = correctness_checks(
    CASES, "idioms", ())
