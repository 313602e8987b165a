"""Analytic latency of a kernel on an Ascend 910B vector core, from what the CPU
model counted while the kernel ran. Always labelled "modelled-910b": it is an
estimate for ranking candidates, never a measurement.

Per block (AI vector core) three pipes run:
  MTE2  GM -> UB copies   bytes / per-core GM bandwidth
  V     vector compute    sum over instructions of head + cycles per repeat
  MTE3  UB -> GM copies   bytes / per-core GM bandwidth
They overlap only when the kernel double-buffers (a VECIN/VECOUT queue with two
or more buffers that really alternated); then a block costs its slowest pipe
plus one tile of the others (pipeline fill and drain), otherwise their sum.
Scalar GetValue/SetValue calls are added on top (the scalar unit issues
everything else). Blocks are placed on 48 vector cores; blocks beyond 48 run in
later waves, and a launch costs the sum over waves of its slowest block.

Per-core GM bandwidth falls as more cores share HBM: aggregate bandwidth is
min(n * 101 GB/s, 48 * 34 GB/s), the roofline through the two published points
(48 * 34 GB/s = 1.63 TB/s, about the 1.6 TB/s HBM figure). MTE2 and MTE3 are
separate engines and are given that bandwidth each; with that choice the model
lands within 1% of the published msopmodeling Add figure (see
tests/test_ascendc_cost.py), while sharing it between them would be 37% slow.

A cube core (AIC, 24 on a 910B) runs four pipes:
  MTE2  GM -> L1 (and GM -> L0)   bytes / per-core GM bandwidth
  MTE1  L1 -> L0A/L0B             bytes / L1 read bandwidth (ASSUMED, below)
  M     Mmad                      one 16 x 16 x C0 fractal triple per cycle:
                                  4096 fp16 MACs, the published figure per AI Core
  FIX   L0C -> GM (Fixpipe)       bytes / per-core GM bandwidth
With double-buffered L1 queues (A1/B1 with two buffers that alternated) MTE2
overlaps MTE1 and M; with double-buffered L0A/L0B MTE1 overlaps M; otherwise
the pipes add up. The Matmul API's work, driven from a vector core, is charged
to the cube unit of that vector core's AI Core and counted as double-buffered
(the API pipelines its own tiles). A MIX kernel's AI Core costs its cube time
plus its slowest vector core's time (the model does not overlap the two).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Sequence

from .._result import LatencySource

SOURCE = LatencySource.MODELLED_910B


@dataclasses.dataclass(frozen=True)
class Chip:
    name: str = "Ascend 910B"
    clock_hz: float = 1.85e9
    vector_cores: int = 48
    ub_bytes: int = 196_608
    repeat_bytes: int = 256
    max_repeats: int = 255
    gm_bw_one_core: float = 101e9  # bytes/s, one core copying alone
    gm_bw_per_core_all: float = 34e9  # bytes/s per core with all 48 copying
    hbm_bw: float = 1.6e12
    cube_cores: int = 24
    cube_macs_per_cycle: int = 4096  # fp16 multiply-adds per AI Core per cycle (Huawei, Hot Chips 2019)
    l1_read_bytes_per_cycle: int = 512  # ASSUMED: L1 -> L0A/L0B, one 512-byte fractal per cycle
    # op -> (cycles per repeat, head cycles per instruction). Published
    # (Huawei's msopmodeling configuration files for the 910B): Add/Mul 2/13, Exp fp32 2/13, Div fp32 4/13.
    # The rest are ASSUMED by analogy: simple arithmetic like Add, transcendental
    # and division-like ops like Div.
    vector_cycles: tuple[tuple[str, int, int], ...] = (
        ("Add", 2, 13), ("Mul", 2, 13), ("Exp", 2, 13), ("Div", 4, 13),
        ("Sub", 2, 13), ("Max", 2, 13), ("Min", 2, 13), ("Adds", 2, 13), ("Muls", 2, 13), ("Maxs", 2, 13),
        ("Mins", 2, 13), ("Relu", 2, 13), ("Abs", 2, 13), ("LeakyRelu", 2, 13), ("Axpy", 2, 13),
        ("Duplicate", 2, 13), ("Cast", 2, 13), ("Copy", 2, 13),
        ("Ln", 4, 13), ("Sqrt", 4, 13), ("Rsqrt", 4, 13), ("Reciprocal", 4, 13),
        ("ReduceSum", 2, 13), ("ReduceMax", 2, 13), ("ReduceMin", 2, 13),
        ("WholeReduceSum", 2, 13), ("WholeReduceMax", 2, 13), ("WholeReduceMin", 2, 13),
    )
    default_cycles: tuple[int, int] = (2, 13)  # ASSUMED for anything not listed
    scalar_ub_cycles: int = 1  # ASSUMED: one UB GetValue/SetValue
    scalar_gm_cycles: int = 200  # ASSUMED: one GM GetValue/SetValue goes to HBM and back

    def cycles(self, op: str) -> tuple[int, int]:
        for name, per_repeat, head in self.vector_cycles:
            if name == op:
                return per_repeat, head
        return self.default_cycles

    def gm_bandwidth_per_core(self, active: int) -> float:
        """Bytes/s one core gets from GM while `active` cores (vector and cube) copy at once."""
        active = max(1, min(active, self.vector_cores + self.cube_cores))
        aggregate = min(active * self.gm_bw_one_core, self.vector_cores * self.gm_bw_per_core_all)
        return aggregate / active


CHIP_910B = Chip()

ASSUMPTIONS = (
    "vector cycles for ops other than Add/Mul/Exp/Div are assumed (Add-like 2/13, Div-like 4/13)",
    "MTE2 and MTE3 each get the per-core GM bandwidth; no per-DataCopy DMA latency is modelled",
    "overlap of copy and compute only for queues with >= 2 buffers that alternated",
    "scalar GetValue/SetValue: 1 cycle on UB, 200 cycles on GM (assumed)",
    "no kernel launch overhead",
    "cube: one 16 x 16 x C0 fractal per cycle per AI Core (fp16: 4096 MACs, fp32 half, int8 double)",
    "L1 -> L0A/L0B at 512 bytes per cycle (assumed); the cube core's GM bandwidth is the vector core's figure",
    "MIX kernels: an AI Core costs its cube time plus its slowest vector core (no cross-core overlap)",
)


@dataclasses.dataclass
class BlockStats:
    """What one block did, as the CPU model's runtime reports it."""

    block: int = 0
    gm_to_ub: int = 0
    ub_to_gm: int = 0
    ub_to_ub: int = 0
    gm_to_ub_copies: int = 0
    ub_to_gm_copies: int = 0
    ub_used: int = 0
    scalar_ub: int = 0
    scalar_gm: int = 0
    # (position, buffers, allocs, distinct buffers used); position 9 VECIN, 10 VECOUT
    queues: list[tuple[int, int, int, int]] = dataclasses.field(default_factory=list)
    # (op, bytes per element, instructions, repeats)
    ops: list[tuple[str, int, int, int]] = dataclasses.field(default_factory=list)
    core: str = "aiv"  # "aiv" vector core, "aic" cube core
    group: int = 0  # the AI Core (one AIC and its AIVs)
    gm_to_l1: int = 0
    gm_to_l0: int = 0
    l1_to_l0: int = 0
    l1_to_gm: int = 0
    fixpipe: int = 0
    mmad_cycles: int = 0
    mmad_calls: int = 0
    loaddata_calls: int = 0
    fixpipe_calls: int = 0
    l1_copies: int = 0
    l1_used: int = 0
    l0a_used: int = 0
    l0b_used: int = 0
    l0c_used: int = 0

    @property
    def cube_work(self) -> bool:
        return bool(self.mmad_cycles or self.gm_to_l1 or self.fixpipe or self.l1_to_l0)


VECIN, VECOUT = 9, 10
A1, A2, B1, B2 = 1, 2, 3, 4


def parse_stats(text: str) -> list[BlockStats]:
    """Parse the runtime's per-block lines ("block=0 gm_to_ub=... queues=... ops=...")."""
    blocks = []
    for line in text.splitlines():
        if not line.strip():
            continue
        b = BlockStats()
        for field in line.split():
            key, _, value = field.partition("=")
            if key == "queues":
                b.queues = [tuple(int(x) for x in q.split(":")) for q in value.split(",") if q]  # type: ignore[misc]
            elif key == "ops":
                for item in filter(None, value.split(",")):
                    op, elem, instr, reps = item.split(":")
                    b.ops.append((op, int(elem), int(instr), int(reps)))
            elif key == "core":
                b.core = value
            elif hasattr(b, key):
                setattr(b, key, int(value))
        blocks.append(b)
    return blocks


def _double_buffered(b: BlockStats, position: int) -> bool:
    return any(pos == position and bufs >= 2 and distinct >= 2 for pos, bufs, _, distinct in b.queues)


def cube_cost(b: BlockStats, active: int, chip: Chip = CHIP_910B, *, delegated: bool = False) -> dict[str, Any]:
    """Modelled time of one block's cube work: MTE2, MTE1, M and FIX pipes."""
    bw = chip.gm_bandwidth_per_core(active)
    mte2 = (b.gm_to_l1 + b.gm_to_l0) / bw
    mte1 = b.l1_to_l0 / (chip.l1_read_bytes_per_cycle * chip.clock_hz)
    cube = b.mmad_cycles / chip.clock_hz
    fix = (b.fixpipe + b.l1_to_gm) / bw
    db_l1 = delegated or (_double_buffered(b, A1) and _double_buffered(b, B1))
    db_l0 = delegated or (_double_buffered(b, A2) and _double_buffered(b, B2))
    tiles = max(b.mmad_calls, 1)
    if db_l1 and db_l0:
        stages = [mte2, mte1, cube]
    elif db_l1:
        stages = [mte2, mte1 + cube]
    elif db_l0:
        stages = [mte2 + max(mte1, cube)]  # MTE1 overlaps M, but each chunk waits for its GM copy
    else:
        stages = [mte2 + mte1 + cube]
    slowest = max(stages)
    total = slowest + (sum(stages) - slowest) / tiles + fix
    return {"mte2_us": mte2 * 1e6, "mte1_us": mte1 * 1e6, "cube_us": cube * 1e6, "fixpipe_us": fix * 1e6,
            "mmad_cycles": b.mmad_cycles, "double_buffered_l1": db_l1, "double_buffered_l0": db_l0,
            "latency_us": total * 1e6}


def block_cost(b: BlockStats, active: int, chip: Chip = CHIP_910B) -> dict[str, Any]:
    bw = chip.gm_bandwidth_per_core(active)
    mte2 = b.gm_to_ub / bw
    mte3 = b.ub_to_gm / bw
    cycles = 0
    for op, _, instructions, repeats in b.ops:
        per_repeat, head = chip.cycles(op)
        cycles += instructions * head + repeats * per_repeat
    vector = cycles / chip.clock_hz
    scalar = (b.scalar_ub * chip.scalar_ub_cycles + b.scalar_gm * chip.scalar_gm_cycles) / chip.clock_hz
    tiles = max([allocs for pos, _, allocs, _ in b.queues if pos == VECIN] or [1])
    db_in, db_out = _double_buffered(b, VECIN), _double_buffered(b, VECOUT)
    if db_in and db_out:
        stages = [mte2, vector, mte3]
    elif db_in:
        stages = [mte2, vector + mte3]
    elif db_out:
        stages = [mte2 + vector, mte3]
    else:
        stages = [mte2 + vector + mte3]
    slowest = max(stages)
    pipelined = slowest + (sum(stages) - slowest) / max(tiles, 1)
    total = pipelined + scalar
    return {
        "block": b.block,
        "gm_to_ub_bytes": b.gm_to_ub,
        "ub_to_gm_bytes": b.ub_to_gm,
        "ub_bytes": b.ub_used,
        "mte2_us": mte2 * 1e6,
        "vector_us": vector * 1e6,
        "mte3_us": mte3 * 1e6,
        "scalar_us": scalar * 1e6,
        "vector_cycles": cycles,
        "tiles": tiles,
        "double_buffered_in": db_in,
        "double_buffered_out": db_out,
        "latency_us": total * 1e6,
    }


def estimate_cost(blocks: Sequence[BlockStats] | str, *, chip: Chip = CHIP_910B,
                  max_per_core: int = 64) -> dict[str, Any]:
    """Modelled latency of one launch from its per-block statistics."""
    if isinstance(blocks, str):
        blocks = parse_stats(blocks)
    if any(b.core == "aic" for b in blocks) or any(b.cube_work for b in blocks):
        return _estimate_cube(blocks, chip, max_per_core)
    blocks = sorted(blocks, key=lambda b: b.block)
    cores = chip.vector_cores
    waves = [blocks[i : i + cores] for i in range(0, len(blocks), cores)]
    per_core: list[dict[str, Any]] = []
    latency_us = 0.0
    for wave in waves:
        costs = [block_cost(b, len(wave), chip) for b in wave]
        latency_us += max(c["latency_us"] for c in costs)
        per_core += costs
    total_in = sum(b.gm_to_ub for b in blocks)
    total_out = sum(b.ub_to_gm for b in blocks)
    slowest = max(per_core, key=lambda c: c["latency_us"]) if per_core else None
    return {
        "source": SOURCE,
        "chip": chip.name,
        "latency_us": latency_us,
        "latency_ms": latency_us / 1e3,
        "block_dim": len(blocks),
        "waves": len(waves),
        "active_cores": min(len(blocks), cores),
        "gm_bandwidth_per_core_gbps": chip.gm_bandwidth_per_core(min(len(blocks), cores) or 1) / 1e9,
        "gm_to_ub_bytes": total_in,
        "ub_to_gm_bytes": total_out,
        "vector_instructions": sum(i for b in blocks for _, _, i, _ in b.ops),
        "vector_repeats": sum(r for b in blocks for _, _, _, r in b.ops),
        "slowest_block": slowest,
        "per_core": per_core[:max_per_core],
        "per_core_truncated": len(per_core) > max_per_core,
        "assumptions": list(ASSUMPTIONS),
    }


def _estimate_cube(blocks: Sequence[BlockStats], chip: Chip, max_per_core: int) -> dict[str, Any]:
    """A launch with cube work: AI Cores (an AIC and its AIVs) in waves of 24."""
    groups: dict[int, list[BlockStats]] = {}
    for b in blocks:
        groups.setdefault(b.group, []).append(b)
    order = sorted(groups)
    cores = chip.cube_cores
    waves = [order[i : i + cores] for i in range(0, len(order), cores)]
    per_core: list[dict[str, Any]] = []
    latency_us = 0.0
    for wave in waves:
        active = sum(len(groups[g]) for g in wave)
        worst = 0.0
        for g in wave:
            aic = [b for b in groups[g] if b.core == "aic"]
            aiv = [b for b in groups[g] if b.core != "aic"]
            cube_us = sum(cube_cost(b, active, chip)["latency_us"] for b in aic)
            cube_us += sum(cube_cost(b, active, chip, delegated=True)["latency_us"] for b in aiv if b.cube_work)
            vec = [block_cost(b, active, chip) for b in aiv]
            vec_us = max([c["latency_us"] for c in vec] or [0.0])
            group_us = cube_us + vec_us
            worst = max(worst, group_us)
            per_core.append({"group": g, "cube_us": cube_us, "vector_us": vec_us, "latency_us": group_us,
                             "cube": [cube_cost(b, active, chip) for b in aic][:1]})
        latency_us += worst
    slowest = max(per_core, key=lambda c: c["latency_us"]) if per_core else None
    macs = sum(b.mmad_cycles for b in blocks) * chip.cube_macs_per_cycle
    return {
        "source": SOURCE,
        "chip": chip.name,
        "latency_us": latency_us,
        "latency_ms": latency_us / 1e3,
        "block_dim": len(order),
        "waves": len(waves),
        "active_cores": min(len(order), cores),
        "cube_cycles": sum(b.mmad_cycles for b in blocks),
        "fp16_mac_equivalents": macs,
        "gm_to_l1_bytes": sum(b.gm_to_l1 + b.gm_to_l0 for b in blocks),
        "fixpipe_bytes": sum(b.fixpipe for b in blocks),
        "gm_to_ub_bytes": sum(b.gm_to_ub for b in blocks),
        "ub_to_gm_bytes": sum(b.ub_to_gm for b in blocks),
        "slowest_block": slowest,
        "per_core": per_core[:max_per_core],
        "per_core_truncated": len(per_core) > max_per_core,
        "assumptions": list(ASSUMPTIONS),
    }


def peak_cube_tflops(chip: Chip = CHIP_910B, bytes_per_element: int = 2) -> float:
    """Peak dense matmul rate of the chip's cube cores in TFLOPS (2 flops per MAC): fp16 at
    cube_macs_per_cycle per core, fp32 at half, int8 at double (one fractal triple per cycle)."""
    macs = chip.cube_macs_per_cycle * 2 / bytes_per_element
    return chip.cube_cores * macs * 2 * chip.clock_hz / 1e12


def modelled_latency_ms(launches: Iterable[dict[str, Any]]) -> float:
    """Modelled time of a forward call: the sum over its Ascend C launches (as
    LaunchLog.launches records them, each with a 'cost') of their latency."""
    return sum(entry["cost"]["latency_ms"] for entry in launches
               if entry.get("kind") == "ascendc" and isinstance(entry.get("cost"), dict))
