"""Scans: cumsum and cumprod along any dim, reverse (flip-cumsum-flip), masked
(a fused prologue), exclusive (a copy in forward), checked by the executor."""

import pytest

from builtin_case import Case, Lazy, explain, ok, params

CASES = [
    Case("cumsum_long_rows", "x: return torch.cumsum(x, dim=1)", "[torch.randn(3, 70)]",
         full="[torch.rand(32768, 32768)]"),
    Case("cumprod", "x: return torch.cumprod(x, dim=-1)", "[torch.rand(3, 50) + 0.5]", slow=True),
    Case("reverse_dim0", "x: return torch.cumsum(x.flip(0), 0).flip(0)", "[torch.randn(40, 5)]", slow=True),
    Case("masked", "x, m: return torch.cumsum(x * m, dim=1)", "[torch.randn(3, 37), torch.randint(0, 2, (3, 37)).bool()]"),
    Case("exclusive", "x: cs = torch.cumsum(x.narrow(dim=1, start=0, length=x.size(1) - 1), dim=1)\n"
         "return torch.cat((torch.zeros_like(x.select(1, 0).unsqueeze(1)), cs), dim=1)", "[torch.randn(3, 20)]", slow=True),
]


@pytest.fixture(scope="module")
def results(cpu_executor, tmp_path_factory):
    return Lazy(cpu_executor, CASES, tmp_path_factory.mktemp("scan"))


@pytest.mark.parametrize("name", params(CASES))
def test_scan_candidate_is_correct(results, name):
    assert ok(results[name]), explain(results[name])
