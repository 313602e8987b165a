"""Honest Ascend C kernels on the CPU model, checked against torch."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from backends.ascendc import load_inline

from session_tmp import session_basetemp

KERNELS = Path(__file__).parent / "ascendc_kernels"


def shared_cache(factory: pytest.TempPathFactory) -> Path:
    # One cache per test session, so test modules that build the same kernel share the build.
    return session_basetemp(factory) / "evk_cache" / "ascendc"


BUILDS = {
    # fixture key: (build name, kernel file, entries, extra flags)
    "add": ("add_tiled", "add_tiled.cpp", ["add_half", "add_float"], ()),
    "softmax": ("softmax", "softmax.cpp", ["softmax_rows_float", "softmax_rows_half", "softmax_whole64"], ()),
    "fused": ("fused_chain", "fused_chain.cpp", ["fused_float", "fused_half"], ()),
    "repeat": ("repeat_ops", "repeat_ops.cpp", ["repeat_ops"], ()),
    "soft_half": ("add_tiled", "add_tiled.cpp", ["add_half"], ("-DEVK_SOFT_HALF",)),
    "coverage": ("ops_coverage", "ops_coverage.cpp", ["cast_probe", "reduce_probe", "copy_probe"], ()),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    # g++ dominates this module's time: build everything at once on all cores.
    cache = shared_cache(tmp_path_factory)

    def one(spec):
        name, file, functions, flags = spec
        return load_inline(name=name, source=(KERNELS / file).read_text(), functions=functions,
                           build_dir=cache, extra_cflags=flags)

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return dict(zip(BUILDS, pool.map(one, BUILDS.values())))


@pytest.fixture(scope="module")
def add_ops(built):
    return built["add"]


@pytest.fixture(scope="module")
def softmax_ops(built):
    return built["softmax"]


@pytest.fixture(scope="module")
def fused_ops(built):
    return built["fused"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize(
    "n, tile, block_dim, buffers",
    [
        (4096, 256, 8, 2),  # even split, double buffered
        (1000, 128, 3, 2),  # blocks of unequal length, last tile shorter
        (77, 64, 4, 1),  # tail of 13 elements: DataCopyPad; one block gets nothing
        (12345, 512, 7, 2),
    ],
)
def test_add_tiled_matches_torch(add_ops, dtype, n, tile, block_dim, buffers):
    torch.manual_seed(n)
    x, y = torch.randn(n, dtype=dtype), torch.randn(n, dtype=dtype)
    z = torch.full_like(x, float("nan"))
    launch = add_ops.add_half if dtype == torch.float16 else add_ops.add_float
    launch(x, y, z, n, tile, buffers, block_dim=block_dim)
    torch.testing.assert_close(z, x + y, atol=0, rtol=0)


@pytest.mark.parametrize("dtype, atol", [(torch.float32, 1e-5), (torch.float16, 1e-2)])
def test_fused_chain_matches_torch(fused_ops, dtype, atol):
    torch.manual_seed(0)
    n, alpha, beta = 8 * 1024, 0.5, -0.25
    x, y = torch.randn(n, dtype=dtype), torch.randn(n, dtype=dtype)
    out = torch.empty_like(x)
    launch = fused_ops.fused_float if dtype == torch.float32 else fused_ops.fused_half
    launch(x, y, out, n, 256, alpha, beta, block_dim=8)
    expected = torch.exp(-torch.relu(x.float() * alpha + beta)) + y.float()
    torch.testing.assert_close(out.float(), expected, atol=atol, rtol=atol)


@pytest.mark.parametrize("rows, cols, block_dim", [(37, 100, 4), (16, 64, 3), (5, 1000, 2), (3, 7, 8)])
def test_softmax_rows_float(softmax_ops, rows, cols, block_dim):
    torch.manual_seed(rows)
    x = torch.randn(rows, cols) * 4
    y = torch.full_like(x, float("nan"))
    softmax_ops.softmax_rows_float(x, y, rows, cols, block_dim=block_dim)
    torch.testing.assert_close(y, torch.softmax(x, -1), atol=1e-5, rtol=1e-4)


def test_softmax_rows_half(softmax_ops):
    torch.manual_seed(1)
    x = torch.randn(21, 300, dtype=torch.float16)
    y = torch.empty_like(x)
    softmax_ops.softmax_rows_half(x, y, 21, 300, block_dim=4)
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("rows, block_dim", [(100, 3), (32, 1), (7, 8)])
def test_softmax_whole_reduce(softmax_ops, rows, block_dim):
    torch.manual_seed(rows)
    x = torch.randn(rows, 64) * 3
    y = torch.empty_like(x)
    softmax_ops.softmax_whole64(x, y, rows, block_dim=block_dim)
    torch.testing.assert_close(y, torch.softmax(x, -1), atol=1e-5, rtol=1e-4)


def test_repeat_form_binary_ops(built):
    ops = built["repeat"]
    n = 640
    torch.manual_seed(3)
    x, y = torch.randn(n), torch.randn(n)
    z, w, u = torch.empty(n), torch.empty(n), torch.empty(n)
    ops.repeat_ops(x, y, z, w, u, n, block_dim=1)
    assert torch.equal(z, x + y)
    even = torch.zeros(n)
    even[0::2] = (x * y)[0::2]
    assert torch.equal(w, even)
    assert torch.equal(u, torch.maximum(x, y[:64].repeat(n // 64)))


def test_software_half_matches_native(built, add_ops):
    """The header's own IEEE half (for compilers without _Float16) gives the same bits."""
    soft = built["soft_half"]
    assert soft.library_path != add_ops.library_path
    torch.manual_seed(5)
    n = 3000
    x = torch.randn(n, dtype=torch.float16) * 100
    y = torch.randn(n, dtype=torch.float16) * 1e-3
    z = torch.empty_like(x)
    soft.add_half(x, y, z, n, 512, 2, block_dim=3)
    assert torch.equal(z, x + y)


def test_cast_rounding_modes(built):
    ops = built["coverage"]
    n = 64
    x = torch.zeros(n)
    x[:10] = torch.tensor([0.1, -0.1, 1.5, 2.5, -1.5, -2.5, 1e-4, 70000.0, 3.0001, -3.0001])
    to_half, to_half_floor = torch.empty(n, dtype=torch.float16), torch.empty(n, dtype=torch.float16)
    floor_i, round_i, back = torch.empty(n, dtype=torch.int32), torch.empty(n, dtype=torch.int32), torch.empty(n)
    ops.cast_probe(x, to_half, to_half_floor, floor_i, round_i, back, n, block_dim=1)
    assert torch.equal(to_half, x.half())  # round to nearest even, overflow to inf
    finite = torch.arange(n) != 7
    below = x - to_half_floor.float()
    assert torch.all(below >= 0)  # rounded toward -inf, within one half ulp
    assert torch.all(below[finite] < 2**-10 * x[finite].abs() + 2**-24)
    assert to_half_floor[7].item() == 65504.0  # rounding down stays finite
    assert torch.equal(floor_i, torch.floor(x).int())
    assert round_i[:6].tolist() == [0, 0, 2, 3, -2, -3]  # CAST_ROUND: halves away from zero
    assert torch.equal(back, x.half().float())


def test_reductions_with_index(built):
    ops = built["coverage"]
    torch.manual_seed(7)
    n, rows = 256, 4
    x = torch.randn(n)
    out = torch.zeros(8 + 3 * rows)
    ops.reduce_probe(x, out, n, block_dim=1)
    assert out[:4].tolist() == [x.max().item(), x.argmax().item(), x.min().item(), x.argmin().item()]
    per_row = x.view(rows, 64)
    assert out[8:16].view(rows, 2)[:, 0].tolist() == per_row.max(1).values.tolist()
    assert out[8:16].view(rows, 2)[:, 1].tolist() == per_row.max(1).indices.float().tolist()
    assert out[16:].tolist() == per_row.min(1).values.tolist()


def test_padded_strided_copies_and_repeat_duplicate(built):
    ops = built["coverage"]
    torch.manual_seed(8)
    rows, cols = 5, 13
    a, m = torch.randn(rows * cols), torch.randn(rows * 16)
    a_out, padded, first_cols, dup = torch.empty_like(a), torch.empty(rows * 16), torch.empty(rows * 8), torch.empty(128)
    ops.copy_probe(a, a_out, padded, m, first_cols, dup, rows, cols, block_dim=1)
    assert torch.equal(a_out, a + 1)
    assert torch.equal(padded.view(rows, 16)[:, :cols], a.view(rows, cols))
    assert torch.all(padded.view(rows, 16)[:, cols:] == -1)  # DataCopyPadExtParams padding value
    assert torch.equal(first_cols.view(rows, 8), m.view(rows, 16)[:, :8])
    expected = torch.zeros(2, 64)
    expected[:, :8] = 2.0
    assert torch.equal(dup.view(2, 64), expected)
