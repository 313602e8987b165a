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
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Sequence

SOURCE = "modelled-910b"


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
    # op -> (cycles per repeat, head cycles per instruction). Published
    # (DESIGN section 7): Add/Mul 2/13, Exp fp32 2/13, Div fp32 4/13.
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
        """Bytes/s one core gets from GM while `active` cores copy at once."""
        active = max(1, min(active, self.vector_cores))
        aggregate = min(active * self.gm_bw_one_core, self.vector_cores * self.gm_bw_per_core_all)
        return aggregate / active


CHIP_910B = Chip()

ASSUMPTIONS = (
    "vector cycles for ops other than Add/Mul/Exp/Div are assumed (Add-like 2/13, Div-like 4/13)",
    "MTE2 and MTE3 each get the per-core GM bandwidth; no per-DataCopy DMA latency is modelled",
    "overlap of copy and compute only for queues with >= 2 buffers that alternated",
    "scalar GetValue/SetValue: 1 cycle on UB, 200 cycles on GM (assumed)",
    "no kernel launch overhead",
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


VECIN, VECOUT = 9, 10


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
            elif hasattr(b, key):
                setattr(b, key, int(value))
        blocks.append(b)
    return blocks


def _double_buffered(b: BlockStats, position: int) -> bool:
    return any(pos == position and bufs >= 2 and distinct >= 2 for pos, bufs, _, distinct in b.queues)


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


def modelled_latency_ms(launches: Iterable[dict[str, Any]]) -> float:
    """Modelled time of a forward call: the sum over its Ascend C launches (as
    LaunchLog.launches records them, each with a 'cost') of their latency."""
    return sum(entry["cost"]["latency_ms"] for entry in launches
               if entry.get("kind") == "ascendc" and isinstance(entry.get("cost"), dict))
