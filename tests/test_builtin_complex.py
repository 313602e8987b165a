"""Complex values as pairs of real ones (_canon_complex): rotary embeddings in Meta's LLaMA
form (view_as_complex of pairs, times a complex buffer sliced and viewed for broadcast,
view_as_real back), sums and products of complex values, and a clear reason for the rest."""

from builtin_case import Case, correctness_checks, write

ROPE_INIT = ("freqs = torch.outer(torch.arange(8).float(), 1.0 / (100.0 ** (torch.arange(0, 6, 2).float() / 6)))\n"
             "self.register_buffer('freqs_cis', torch.polar(torch.ones_like(freqs), freqs))")
CASES = [
    Case("rope_complex_form",
         "x: z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))\n"
         "f = self.freqs_cis[:x.shape[1]].view(1, x.shape[1], 1, 3)\n"
         "return torch.view_as_real(z * f).flatten(3).type_as(x) * 2.0",
         "[torch.randn(2, 5, 3, 6)]", init=ROPE_INIT),
    Case("complex_sum_and_product",
         "a, b: za = torch.view_as_complex(torch.tanh(a))\nzb = torch.view_as_complex(b)\n"
         "return torch.view_as_real(za * zb + za - zb * 0.5)",
         "[torch.randn(3, 4, 2), torch.randn(3, 4, 2)]"),
]

results, kernelbench_results, test_complex_is_correct, test_complex_is_correct_under_kernelbench_rules = correctness_checks(
    CASES, "complex", ("rope_complex_form",))


def test_other_complex_operations_say_why(tmp_path):
    from evokernel.builtin import analyze

    case = Case("complex_abs", "x: return torch.view_as_complex(x).abs()", "[torch.randn(3, 2)]")
    plan = analyze(write(case, tmp_path))
    assert not plan and "of a complex tensor is not supported" in plan.reason, plan
