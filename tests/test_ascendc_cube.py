"""The cube unit of the CPU model: honest matmul-based kernels (raw cube calls,
MIX kernels synchronised both ways, the Matmul API) give the right answers,
and each rule the hardware punishes fails with its kind and a message that
names the rule and the call to use instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from backends.ascendc import AscendCRuntimeError, load_inline
from backends.ascendc._signature import KERNEL_TYPES, kernel_type
from evokernel.ascendc._matmul_kernel import ENTRY_F16, ENTRY_F32, MATMUL_SOURCE

from session_tmp import session_basetemp

KERNELS = Path(__file__).parent / "ascendc_kernels"
HAZARDS = (KERNELS / "cube_hazards.cpp").read_text()
MIX = (KERNELS / "cube_mix.cpp").read_text()
SYNC = (KERNELS / "sync_all.cpp").read_text()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return session_basetemp(tmp_path_factory) / "evk_cache" / "ascendc"


@pytest.fixture(scope="module")
def hazards(cache):
    entries = re.findall(r"__aicore__ void (\w+)\(", HAZARDS)
    return load_inline(name="cube_hazards", source=HAZARDS, functions=entries, build_dir=cache)


@pytest.fixture(scope="module")
def matmul(cache):
    return load_inline(name="cube_matmul", source=MATMUL_SOURCE, functions=[ENTRY_F16, ENTRY_F32], build_dir=cache)


def marker_line(source: str, entry: str, kind: str) -> int:
    inside = False
    for number, line in enumerate(source.splitlines(), start=1):
        inside = inside or f"void {entry}(" in line
        if inside and f"HAZARD: {kind}" in line:
            return number
    raise LookupError(entry)


def test_kernel_types_follow_what_the_source_uses():
    assert kernel_type(MATMUL_SOURCE) == KERNEL_TYPES["KERNEL_TYPE_AIC_ONLY"]
    assert kernel_type(MIX) == KERNEL_TYPES["KERNEL_TYPE_MIX_AIC_1_2"]
    assert kernel_type(SYNC) == KERNEL_TYPES["KERNEL_TYPE_AIV_ONLY"]
    explicit = SYNC.replace("TPipe pipe;", "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);\n    TPipe pipe;", 1)
    assert kernel_type(explicit) == KERNEL_TYPES["KERNEL_TYPE_MIX_AIV_1_0"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("trans_b", [0, 1])
def test_cube_matmul_is_exact_on_awkward_shapes(matmul, dtype, trans_b):
    fn = matmul.evk_matmul_f16 if dtype == torch.float16 else matmul.evk_matmul_f32
    base = (128, 256, 64) if dtype == torch.float16 else (64, 128, 32)
    torch.manual_seed(0)
    for batch, m, k, n in [(1, 37, 129, 65), (1, 1, 100, 33), (2, 64, 48, 40)]:
        a = torch.randn(batch, m, k).to(dtype)
        b = (torch.randn(batch, k, n) / k**0.5).to(dtype)
        stored = b.transpose(1, 2).contiguous() if trans_b else b
        c = torch.empty(batch, m, n, dtype=dtype)
        fn(a, stored, c, batch, m, n, k, trans_b, m * k, k * n, *base, 2, block_dim=3)
        expected = (a.double() @ b.double()).to(dtype)
        torch.testing.assert_close(c, expected, atol=1e-5 if dtype == torch.float32 else 2e-3, rtol=1e-5)
    cost = fn.last_cost
    assert cost["source"] == "modelled-910b" and cost["cube_cycles"] > 0 and cost["latency_us"] > 0


@pytest.mark.slow
def test_mix_kernel_synchronised_both_ways(cache):
    ops = load_inline(name="cube_mix", source=MIX, functions=["matmul_bias_relu", "matmul_api_leaky"], build_dir=cache)
    torch.manual_seed(1)
    m, n, k = 128, 40, 48
    a, b = torch.randn(m, k).half(), (torch.randn(k, n) / 7).half()
    bias = torch.randn(n)
    out = torch.empty(m, n)
    work = torch.empty(2 * 16 * n * 2)  # two slots per AI Core
    ops.matmul_bias_relu(a, b, bias, work, out, m, n, k, block_dim=2)
    torch.testing.assert_close(out, torch.relu(a.float() @ b.float() + bias), atol=1e-4, rtol=1e-4)
    cost = ops.matmul_bias_relu.last_cost
    assert cost["block_dim"] == 2 and cost["per_core"][0]["cube_us"] > 0 and cost["per_core"][0]["vector_us"] > 0


@pytest.mark.slow
def test_matmul_api_from_the_vector_cores(cache):
    ops = load_inline(name="cube_mix", source=MIX, functions=["matmul_bias_relu", "matmul_api_leaky"], build_dir=cache)
    m, n, k = 64, 48, 80
    a, b = torch.randn(m, k).half(), (torch.randn(k, n) / 9).half()
    out = torch.empty(m, n)
    ops.matmul_api_leaky(a, b, out, m, n, k, 0.1, block_dim=2)
    torch.testing.assert_close(out, torch.nn.functional.leaky_relu(a.float() @ b.float(), 0.1), atol=1e-4, rtol=1e-4)
    assert ops.matmul_api_leaky.last_cost["cube_cycles"] > 0


@pytest.mark.slow
def test_syncall_orders_vector_cores_and_its_absence_is_a_race(cache):
    ops = load_inline(name="sync_all", source=SYNC, functions=["sum_with_sync", "sum_without_sync"], build_dir=cache)
    x = torch.randn(4 * 1024)
    partial, out = torch.empty(8 * 4), torch.empty(8)
    ops.sum_with_sync(x, partial, out, 1024, block_dim=4)
    torch.testing.assert_close(out, torch.full((8,), float(x.sum())), atol=1e-3, rtol=1e-4)
    with pytest.raises(AscendCRuntimeError) as info:
        ops.sum_without_sync(x, partial, out, 1024, block_dim=4)
    assert info.value.kind == "cross_core_race"
    assert "overwrites what" in info.value.message and "SyncAll()" in info.value.message


@pytest.mark.parametrize(
    "entry, kind, phrases",
    [
        ("l1_overflow", "l1_overflow", ["L1 Buffer overflow", "589824 bytes", "524288 bytes", "B1 x 2 buffer(s)"]),
        ("l0a_overflow", "l0a_overflow", ["L0A Buffer overflow", "81920 bytes", "65536 bytes", "baseM/baseN/baseK"]),
        ("l0c_overflow", "l0c_overflow", ["L0C Buffer overflow", "163840 bytes", "131072 bytes (128 KB)"]),
        ("mmad_from_l1", "wrong_position", ["the left matrix (fm) is in L1 (A1)", "TQue<TPosition::A2>"]),
        ("load_a1_into_b2", "wrong_position", ["from A1 into L0B (B2)", "B1 -> B2"]),
        ("datacopy_into_l0a", "wrong_position", ["cannot fill L0A/L0B", "LoadData(a2Local, a1Local"]),
        ("unaligned_l0a", "cube_align", ["L0A (A2) byte 32", "512-byte aligned"]),
        ("mmad_past_l0a", "buffer_out_of_bounds", ["3072 bytes of the left matrix (fm)", "2048 bytes"]),
        ("mmad_half_result", "invalid_argument", ["Mmad(half L0C, half A2, half B2)", "into a float L0C tensor"]),
        ("fixpipe_without_quant", "invalid_argument", ["QuantMode_t::F322F16"]),
        ("vector_core_cube_queue", "core_type", ["TPosition::A1 on the AIV (vector core)", "if ASCEND_IS_AIC"]),
        ("missing_cross_core_sync", "cross_core_race",
         ["AIV 0 reads element 0 of tensor argument #1 'y', which AIC 0 wrote", "CrossCoreWaitFlag(id)",
          "CrossCoreSetFlag<2, PIPE_FIX>"]),
    ],
)
def test_cube_hazard_kind_and_message(hazards, entry, kind, phrases):
    x, y = torch.randn(4096), torch.zeros(4096)
    with pytest.raises(AscendCRuntimeError) as info:
        getattr(hazards, entry)(x, y, 4096, block_dim=1)
    error = info.value
    assert error.kind == kind, error.message
    for phrase in phrases:
        assert phrase in error.message, (phrase, error.message)
    line = marker_line(HAZARDS, entry, kind)
    code = HAZARDS.splitlines()[line - 1].split("//")[0].strip()
    assert f"line {line} `{code}`:" in error.message


def test_waiting_for_a_flag_nobody_sets_is_a_deadlock(hazards):
    with pytest.raises(AscendCRuntimeError) as info:
        hazards.wait_for_nobody(torch.randn(4096), torch.zeros(4096), 4096, block_dim=1)
    assert info.value.kind == "sync_deadlock"
    line = marker_line(HAZARDS, "wait_for_nobody", "sync_deadlock")
    assert f"AIV 0 waits in CrossCoreWaitFlag(3) at line {line}" in info.value.message
    assert "matching CrossCoreSetFlag" in info.value.message
