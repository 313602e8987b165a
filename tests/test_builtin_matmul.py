"""Matmul shapes: split-K, matrix-vector and vector-matrix as reductions,
diagonal scaling, triangular outputs, einsum, transposed and broadcast
operands, attention; with the full-size tasks' configurations."""

import pytest

from builtin_case import Case, Lazy, explain, ok, params, write
from evokernel.builtin import analyze, default_config

CASES = [
    Case("split_k", "a, b: return torch.matmul(a, b)", "[torch.randn(20, 300), torch.randn(300, 24)]",
         full="[torch.rand(256, 524288), torch.rand(524288, 256)]"),
    Case("matvec", "a, b: return torch.matmul(a, b)", "[torch.randn(9, 300), torch.randn(300, 1)]"),
    Case("vecmat_1d", "a, b: return torch.matmul(a, b)", "[torch.randn(30), torch.randn(30, 7)]", slow=True),
    Case("diag", "a, b: return torch.diag(a) @ b", "[torch.randn(9), torch.randn(9, 7)]", slow=True),
    Case("triu_transposed", "a, b: return torch.triu(torch.matmul(a.T, b.T), diagonal=1)",
         "[torch.randn(21, 19), torch.randn(19, 21)]", full="[torch.rand(4096, 4096), torch.rand(4096, 4096)]"),
    Case("einsum", "a, b: return torch.einsum('bijl,lk->bijk', a, b)", "[torch.randn(2, 3, 5, 7), torch.randn(7, 6)]", slow=True),
    Case("bmm_broadcast_tril", "a, b: return torch.tril(a @ b)", "[torch.randn(2, 3, 9, 8), torch.randn(3, 8, 9)]", slow=True),
    Case("causal_attention", "q, k, v: return F.scaled_dot_product_attention(q, k, v, is_causal=True)",
         "[torch.randn(2, 9, 16), torch.randn(2, 9, 16), torch.randn(2, 9, 16)]", slow=True),
]


@pytest.fixture(scope="module")
def results(cpu_executor, tmp_path_factory):
    return Lazy(cpu_executor, CASES, tmp_path_factory.mktemp("matmul"))


@pytest.mark.parametrize("name", params(CASES))
def test_matmul_candidate_is_correct(results, name):
    assert ok(results[name]), explain(results[name])


def test_tile_choice_follows_the_shape(tmp_path):
    big = Case("big", "a, b: return a @ b", "[torch.rand(4096, 4096), torch.rand(4096, 4096)]")
    long_k = Case("long_k", "a, b: return a @ b", "[torch.rand(256, 524288), torch.rand(524288, 256)]")
    assert default_config(analyze(write(big, tmp_path))).block_m == 128
    cfg = default_config(analyze(write(long_k, tmp_path)))
    assert cfg.split_k > 1 and cfg.block_m == 64


def test_matrix_vector_is_a_row_reduction(tmp_path):
    assert analyze(write(CASES[1], tmp_path)).family == "rows"
