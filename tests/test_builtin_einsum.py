"""einsum with any number of operands (contracted left to right: matmuls, broadcast products,
sums of indices one operand alone has), implicit outputs, single operands; the boolean masks
and segment sums of Mamba2's chunked scan (~mask, masked_fill with -inf) and the scan itself,
checked by the executor (interpreter values, sm_90 compile) under both rule sets."""

import pytest

from builtin_case import Case, correctness_checks

_SEGSUM = """T = x.size(-1)
c = torch.cumsum(x, dim=-1)
s = c[..., :, None] - c[..., None, :]
mask = torch.tril(torch.ones(T, T, device=x.device, dtype=bool), diagonal=0)
return torch.exp(s.masked_fill(~mask, -torch.inf))"""

# Mamba2's SSD (KernelBench level3 48/49) at small sizes, rearranges written as reshapes
_SSD_INIT = """self.A = nn.Parameter(torch.randn(2, 12, 3) * 0.5)
self.B = nn.Parameter(torch.randn(2, 12, 3, 4))
self.C = nn.Parameter(torch.randn(2, 12, 3, 4))"""
_SSD = """def segsum(x):
    T = x.size(-1)
    c = torch.cumsum(x, dim=-1)
    s = c[..., :, None] - c[..., None, :]
    mask = torch.tril(torch.ones(T, T, device=x.device, dtype=bool), diagonal=0)
    return s.masked_fill(~mask, -torch.inf)
Xb, Bb, Cb = (t.reshape(t.shape[0], 3, 4, *t.shape[2:]) for t in (X, self.B, self.C))
Ab = self.A.reshape(2, 3, 4, 3).permute(0, 3, 1, 2)
A_cumsum = torch.cumsum(Ab, dim=-1)
L = torch.exp(segsum(Ab))
Y_diag = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", Cb, Bb, L, Xb)
decay_states = torch.exp(A_cumsum[:, :, :, -1:] - A_cumsum)
states = torch.einsum("bclhn,bhcl,bclhp->bchpn", Bb, decay_states, Xb)
states = torch.cat([torch.zeros_like(states[:, :1]), states], dim=1)
decay_chunk = torch.exp(segsum(F.pad(A_cumsum[:, :, :, -1], (1, 0))))
new_states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)
"""

CASES = [
    Case("four_operands", "c, b, l, x: return torch.einsum('bclhn,bcshn,bhcls,bcshp->bclhp', c, b, l, x)",
         "[torch.randn(2, 2, 4, 3, 5), torch.randn(2, 2, 4, 3, 5), torch.rand(2, 3, 2, 4, 4), torch.randn(2, 2, 4, 3, 6)]"),
    Case("index_of_one_operand_summed", "a, b: return torch.einsum('ijk,jl->il', a, b)",
         "[torch.randn(5, 6, 7), torch.randn(6, 4)]"),
    Case("outer_product_implicit_output", "a, b: return torch.einsum('i,j', a, b) * 2.0",
         "[torch.randn(9), torch.randn(7)]", slow=True),
    Case("one_operand", "a: return torch.einsum('ijk->kj', a)", "[torch.randn(4, 5, 6)]", slow=True),
    Case("segment_sum_masked", f"x: {_SEGSUM}", "[torch.randn(2, 3, 8)]"),
    Case("mamba2_chunked_scan_y", "X: " + _SSD + """states = new_states[:, :-1]
Y_off = torch.einsum('bclhn,bchpn,bhcl->bclhp', Cb, states, torch.exp(A_cumsum))
return (Y_diag + Y_off).reshape(2, 12, 3, 5)""", "[torch.rand(2, 12, 3, 5)]", init=_SSD_INIT),
    Case("mamba2_chunked_scan_state", "X: " + _SSD + "return new_states[:, -1]", "[torch.rand(2, 12, 3, 5)]",
         init=_SSD_INIT, slow=True),
]
KERNELBENCH = ("four_operands", "mamba2_chunked_scan_y")


results, kernelbench_results, test_einsum_candidate_is_correct, test_einsum_candidate_is_correct_under_kernelbench_rules = correctness_checks(
    CASES, "einsum", KERNELBENCH)


@pytest.mark.parametrize("call, reason", [
    ("torch.einsum('ii->i', a)", "diagonal"), ("torch.einsum('...ij,jk->...ik', a, b)", "ellipsis"),
    ("torch.einsum('ij,jk->ik', a[:, :1], b)", "broadcasting")])
def test_einsum_outside_says_why(tmp_path, call, reason):
    from builtin_case import write
    from evokernel.builtin import analyze

    plan = analyze(write(Case("e", f"a, b: return {call}", "[torch.randn(4, 4), torch.randn(4, 4)]"), tmp_path))
    assert not plan and reason in plan.reason, plan
