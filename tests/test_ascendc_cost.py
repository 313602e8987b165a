"""The 910B cost model: hand-computed cases, then a real kernel against the
published msopmodeling figure for Add."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from backends.ascendc import CHIP_910B, estimate_cost, load_inline, modelled_latency_ms, parse_stats
from backends.ascendc._cost import VECIN, VECOUT, BlockStats

from session_tmp import session_basetemp

KERNELS = Path(__file__).parent / "ascendc_kernels"
US = 1e6


def block(i=0, *, gm_to_ub=0, ub_to_gm=0, queues=(), ops=(), scalar_ub=0, scalar_gm=0) -> BlockStats:
    return BlockStats(block=i, gm_to_ub=gm_to_ub, ub_to_gm=ub_to_gm, queues=list(queues), ops=list(ops),
                      scalar_ub=scalar_ub, scalar_gm=scalar_gm)


def test_gm_bandwidth_per_core_follows_the_published_points():
    bw = CHIP_910B.gm_bandwidth_per_core
    assert bw(1) == pytest.approx(101e9)
    assert bw(16) == pytest.approx(101e9)  # 16 * 101 GB/s = 1.616 TB/s, still under the cap
    assert bw(24) == pytest.approx(48 * 34e9 / 24)  # 68 GB/s
    assert bw(48) == pytest.approx(34e9)
    # vector and cube cores share HBM: all 72 of a 910B together still get the 1.63 TB/s
    assert bw(72) == pytest.approx(48 * 34e9 / 72)
    assert bw(200) == pytest.approx(48 * 34e9 / 72)  # more blocks than cores run in waves


def test_copies_without_double_buffering_add_up():
    cost = estimate_cost([block(gm_to_ub=101_000, ub_to_gm=50_500)])
    assert cost["source"] == "modelled-910b"
    assert cost["latency_us"] == pytest.approx(1.0 + 0.5)
    assert cost["latency_ms"] == pytest.approx(1.5e-3)


def test_double_buffering_overlaps_copies_and_compute():
    queues = [(VECIN, 2, 10, 2), (VECOUT, 2, 10, 2)]
    cost = estimate_cost([block(gm_to_ub=101_000, ub_to_gm=50_500, queues=queues)])
    # slowest pipe (MTE2, 1.0 us) plus one tile of the others (0.5 us / 10 tiles)
    assert cost["latency_us"] == pytest.approx(1.0 + 0.5 / 10)
    core = cost["per_core"][0]
    assert core["double_buffered_in"] and core["double_buffered_out"] and core["tiles"] == 10


def test_two_buffers_that_never_alternated_get_no_overlap():
    queues = [(VECIN, 2, 10, 1), (VECOUT, 2, 10, 1)]
    cost = estimate_cost([block(gm_to_ub=101_000, ub_to_gm=50_500, queues=queues)])
    assert cost["latency_us"] == pytest.approx(1.5)


def test_vector_cycles():
    # Add fp32 over 4096 elements: 64 repeats in one instruction, 13 + 2 * 64 cycles.
    # Div fp32, 300 repeats in two instructions: 2 * 13 + 4 * 300 cycles.
    cost = estimate_cost([block(ops=[("Add", 4, 1, 64), ("Div", 4, 2, 300)])])
    cycles = (13 + 2 * 64) + (2 * 13 + 4 * 300)
    assert cost["per_core"][0]["vector_cycles"] == cycles
    assert cost["latency_us"] == pytest.approx(cycles / 1.85e9 * US)


def test_scalar_gm_access_is_expensive():
    cost = estimate_cost([block(scalar_gm=1850)])
    assert cost["latency_us"] == pytest.approx(1850 * 200 / 1.85e9 * US)


def test_blocks_beyond_48_cores_run_in_waves():
    full = estimate_cost([block(i, gm_to_ub=34_000) for i in range(96)])
    assert full["waves"] == 2
    assert full["latency_us"] == pytest.approx(2 * 1.0)
    ragged = estimate_cost([block(i, gm_to_ub=34_000) for i in range(50)])
    # second wave: two cores alone, 101 GB/s each
    assert ragged["latency_us"] == pytest.approx(1.0 + 34_000 / 101e9 * US)


def test_parse_stats_round_trip():
    text = ("block=3 gm_to_ub=8192 ub_to_gm=4096 ub_to_ub=0 gm_to_ub_copies=16 ub_to_gm_copies=8 ub_used=3072 "
            "scalar_ub=2 scalar_gm=0 queues=9:2:8:2,10:2:8:2 ops=Add:2:8:16,Exp:4:1:3\n")
    (b,) = parse_stats(text)
    assert (b.block, b.gm_to_ub, b.ub_to_gm, b.ub_used, b.scalar_ub) == (3, 8192, 4096, 3072, 2)
    assert b.queues == [(9, 2, 8, 2), (10, 2, 8, 2)]
    assert b.ops == [("Add", 2, 8, 16), ("Exp", 4, 1, 3)]


def test_modelled_latency_of_a_forward_call_sums_its_launches():
    launches = [{"kind": "ascendc", "name": "a", "cost": {"latency_ms": 0.25}},
                {"kind": "triton", "name": "b"},
                {"kind": "ascendc", "name": "c", "cost": {"latency_ms": 0.5}}]
    assert modelled_latency_ms(launches) == pytest.approx(0.75)


# Published msopmodeling figure: Add of 1M (2**20) fp16 elements on 48 vector
# cores of a 910B takes 2.85 us. Our tiled, double-buffered Add (4096-element
# tiles, DataCopy, Add, DataCopy) is modelled at 2.823 us: -0.95%. The same
# kernel with one buffer per queue is modelled at 4.08 us (+43%). The check
# allows +-2%, twice the error found, so a change to the model that moves it
# is noticed.
PUBLISHED_ADD_US = 2.85
ADD_TOLERANCE = 0.02


@pytest.fixture(scope="module")
def add_ops(tmp_path_factory):
    return load_inline(name="add_tiled", source=(KERNELS / "add_tiled.cpp").read_text(),
                       functions=["add_half", "add_float"],
                       build_dir=session_basetemp(tmp_path_factory) / "evk_cache" / "ascendc")


def run_add(ops, n, buffers, block_dim=48):
    x, y = torch.randn(n, dtype=torch.float16), torch.randn(n, dtype=torch.float16)
    z = torch.empty_like(x)
    ops.add_half(x, y, z, n, 4096, buffers, block_dim=block_dim)
    assert torch.equal(z, x + y)
    return ops.add_half.last_cost


def test_add_1m_fp16_on_48_cores_matches_msopmodeling(add_ops):
    cost = run_add(add_ops, 2**20, buffers=2)
    assert cost["gm_to_ub_bytes"] == 2 * 2 * 2**20 and cost["ub_to_gm_bytes"] == 2 * 2**20
    assert cost["active_cores"] == 48 and cost["waves"] == 1
    error = cost["latency_us"] / PUBLISHED_ADD_US - 1
    assert abs(error) <= ADD_TOLERANCE, f"modelled {cost['latency_us']:.3f} us vs published {PUBLISHED_ADD_US} us"


def test_single_buffering_is_modelled_slower(add_ops):
    double = run_add(add_ops, 2**20, buffers=2)
    single = run_add(add_ops, 2**20, buffers=1)
    assert not single["slowest_block"]["double_buffered_in"]
    assert single["latency_us"] > 1.3 * double["latency_us"]


# ---- the cube unit ---------------------------------------------------------------------------------------------
# Published: Huawei's Ascend 910 (Hot Chips 2019, Huawei's own announcement): each AI Core does 4096 fp16
# multiply-adds per cycle; 32 cores give 256 TFLOPS fp16 and 512 TOPS int8.
# (http://m.elecfans.com/article/1058184.html, https://www.besthub.dev/articles/how-huawei-ascend-910-redefines-ai-training-performance-d95c7f11f1dc)


def test_cube_peak_matches_the_published_ascend_910_figures():
    from backends.ascendc._cost import Chip, peak_cube_tflops

    ascend_910 = Chip(name="Ascend 910", cube_cores=32, clock_hz=1.0e9)
    assert peak_cube_tflops(ascend_910) == pytest.approx(256, rel=0.025)  # 262.1 modelled
    assert peak_cube_tflops(ascend_910, bytes_per_element=1) == pytest.approx(512, rel=0.025)
    # the 910B of DESIGN section 7 (24 cube cores at 1.85 GHz), with the same per-core cube
    assert peak_cube_tflops() == pytest.approx(363.7, rel=1e-3)
    assert peak_cube_tflops(bytes_per_element=4) == pytest.approx(363.7 / 2, rel=1e-3)


def test_cube_block_pipes():
    from backends.ascendc._cost import BlockStats, cube_cost

    # one AIC: 1 MB in, 512 KB L1 -> L0, 100k fractal cycles, 256 KB out, single-buffered: the pipes add up
    b = BlockStats(core="aic", gm_to_l1=1 << 20, l1_to_l0=1 << 19, mmad_cycles=100_000, fixpipe=1 << 18, mmad_calls=10)
    c = cube_cost(b, 1)
    assert c["cube_us"] == pytest.approx(100_000 / 1.85e9 * 1e6)
    assert c["mte2_us"] == pytest.approx((1 << 20) / 101e9 * 1e6)
    assert c["mte1_us"] == pytest.approx((1 << 19) / (512 * 1.85e9) * 1e6)
    assert c["latency_us"] == pytest.approx(c["mte2_us"] + c["mte1_us"] + c["cube_us"] + c["fixpipe_us"])
    # double-buffered L1 and L0 queues (A1=1, B1=3, A2=2, B2=4; 2 buffers, both used): the slowest pipe dominates
    b.queues = [(1, 2, 10, 2), (3, 2, 10, 2), (2, 2, 10, 2), (4, 2, 10, 2)]
    d = cube_cost(b, 1)
    assert d["double_buffered_l1"] and d["double_buffered_l0"]
    slowest = max(d["mte2_us"], d["mte1_us"], d["cube_us"])
    assert d["latency_us"] == pytest.approx(slowest + (d["mte2_us"] + d["mte1_us"] + d["cube_us"] - slowest) / 10
                                            + d["fixpipe_us"])
