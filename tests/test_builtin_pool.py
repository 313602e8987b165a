"""Pooling (max, average, adaptive; 1d-3d; strided, padded, dilated, ceil mode,
divisor rules) and its fused epilogue, checked by the executor on the CPU."""

import pytest

from builtin_case import Case, Lazy, explain, ok, params, write
from evokernel.builtin import analyze

CASES = [
    Case("max2d_dilated_relu", "x: return torch.relu(F.max_pool2d(x, 3, stride=2, padding=1, dilation=2) - 0.1)",
         "[torch.randn(2, 3, 11, 12)]", full="[torch.rand(32, 64, 512, 512)]"),
    Case("avg3d_ceil_no_pad_count", "x: return F.avg_pool3d(x, 3, stride=2, padding=1, ceil_mode=True, "
         "count_include_pad=False)", "[torch.randn(1, 2, 7, 8, 9)]"),
    Case("avg1d_pad_divisor", "x: return F.avg_pool2d(x, (2, 3), stride=1, padding=1, divisor_override=5)",
         "[torch.randn(2, 3, 6, 7)]", slow=True),
    Case("max1d_ceil", "x: return self.pool(x)", "[torch.randn(2, 3, 20)]",
         "self.pool = nn.MaxPool1d(4, stride=3, padding=2, dilation=2, ceil_mode=True)", slow=True),
    Case("adaptive_avg2d", "x: return F.adaptive_avg_pool2d(x, (3, 4)) * 2", "[torch.randn(2, 3, 11, 10)]"),
    Case("adaptive_max1d", "x: return self.pool(x)", "[torch.randn(2, 3, 17)]",
         "self.pool = nn.AdaptiveMaxPool1d(5)", slow=True),
    # rows of 701 outputs in tiles of 512 (two column tiles, the second mostly masked)
    Case("avg1d_long_rows", "x: return F.avg_pool1d(x, 8, stride=1, padding=4)", "[torch.randn(2, 3, 700)]",
         full="[torch.rand(64, 128, 65536)]"),
]


@pytest.fixture(scope="module")
def results(cpu_executor, tmp_path_factory):
    return Lazy(cpu_executor, CASES, tmp_path_factory.mktemp("pool"))


@pytest.mark.parametrize("name", params(CASES))
def test_pool_candidate_is_correct(results, name):
    assert ok(results[name]), explain(results[name])


def test_global_pooling_is_a_reduction(tmp_path):
    case = Case("global", "x: return F.adaptive_avg_pool2d(x, 1)", "[torch.randn(2, 3, 5, 5)]")
    assert analyze(write(case, tmp_path)).family == "rows"
