"""Launch configurations of the Ascend C templates: the search space, a
default, neighbours, and the hint a Triton configuration gives.

The C++ source of a plan does not depend on the configuration: tile sizes,
core count and buffer depth are kernel arguments the candidate's launcher
computes from the shapes, so every configuration of a task shares one build.

- ``tile_bytes``: fp32 bytes of one compute tile (a buffer of the pipeline);
  the launcher shrinks it to fit the Unified Buffer and the work of a core.
- ``block_dim``: how many AI vector cores to split the rows (or elements) over, at most 48.
- ``buffer_num``: 1 (copy, compute and copy back in turn) or 2 (double
  buffering: the next tile's copy overlaps this tile's compute).

The matmul family runs on the cube cores: ``block_dim`` is at most 24 (AI
Cores of a 910B), ``buffer_num`` is the depth of the L1 (and L0) queues, and
``base_m``/``base_n``/``base_k`` are the output tile and K chunk of one cube
step (the launcher shrinks them to fit L0A/L0B/L0C for fp32 and to the
problem); ``tile_bytes`` is the tile of a fused epilogue kernel.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

__all__ = ["AscendCConfig", "FAMILIES", "TILE_BYTES", "BLOCK_DIMS", "search_space", "default_config", "neighbours",
           "config_from_triton"]

FAMILIES = ("elementwise", "rows", "matmul")
TILE_BYTES = (4096, 8192, 16384, 32768, 65536)
BLOCK_DIMS = (8, 16, 24, 32, 40, 48)
CUBE_BLOCK_DIMS = (8, 16, 24)
BUFFER_NUMS = (1, 2)
# (base_m, base_n, base_k): the documentation's recommended (128, 256, 64) first
BASES = ((128, 256, 64), (128, 128, 64), (64, 128, 128), (64, 64, 128), (256, 128, 64), (32, 64, 256))
_TUNABLE = ("tile_bytes", "block_dim", "buffer_num")
_CUBE_TUNABLE = ("base_m", "base_n", "base_k", "block_dim", "buffer_num")


@dataclass(frozen=True)
class AscendCConfig:
    family: str
    tile_bytes: int = 16384
    block_dim: int = 48
    buffer_num: int = 2
    base_m: int = 128
    base_n: int = 256
    base_k: int = 64

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"unknown family {self.family!r}; expected one of {FAMILIES}")
        if not isinstance(self.tile_bytes, int) or self.tile_bytes < 256 or self.tile_bytes % 256:
            raise ValueError(f"tile_bytes must be a positive multiple of 256 (one vector repeat), "
                             f"got {self.tile_bytes!r}")
        limit = 24 if self.family == "matmul" else 48
        if not isinstance(self.block_dim, int) or not 1 <= self.block_dim <= limit:
            raise ValueError(f"block_dim must be 1..{limit} ({'cube' if limit == 24 else 'vector'} cores of a 910B), "
                             f"got {self.block_dim!r}")
        for name in ("base_m", "base_n", "base_k"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 16 or value % 16:
                raise ValueError(f"{name} must be a positive multiple of 16 (one fractal), got {value!r}")
        if self.buffer_num not in BUFFER_NUMS:
            raise ValueError(f"buffer_num must be 1 or 2, got {self.buffer_num!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "AscendCConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def text(self) -> str:
        return ", ".join(f"{k}={getattr(self, k)}" for k in (_CUBE_TUNABLE if self.family == "matmul" else _TUNABLE))


def search_space(family: str) -> list[AscendCConfig]:
    """Every configuration worth trying, in a fixed order."""
    if family == "matmul":
        return [AscendCConfig(family, block_dim=b, buffer_num=n, base_m=bm, base_n=bn, base_k=bk)
                for (bm, bn, bk) in BASES for b in reversed(CUBE_BLOCK_DIMS) for n in reversed(BUFFER_NUMS)]
    return [AscendCConfig(family, tile_bytes=t, block_dim=b, buffer_num=n)
            for t in TILE_BYTES for b in BLOCK_DIMS for n in BUFFER_NUMS]


def default_config(family: str) -> AscendCConfig:
    """16 KB tiles on all 48 cores, double-buffered: the shape of the published samples
    (for matmul: the documentation's 128 x 256 x 64 base block on all 24 cube cores)."""
    if family == "matmul":
        return AscendCConfig(family, block_dim=24, buffer_num=2)
    return AscendCConfig(family, tile_bytes=16384, block_dim=48, buffer_num=2)


def _steps(a: AscendCConfig, b: AscendCConfig) -> int:
    total = 0
    if a.family == "matmul":
        dims = (("_base", BASES), ("block_dim", CUBE_BLOCK_DIMS), ("buffer_num", BUFFER_NUMS))
    else:
        dims = (("tile_bytes", TILE_BYTES), ("block_dim", BLOCK_DIMS), ("buffer_num", BUFFER_NUMS))
    for name, values in dims:
        if name == "_base":
            va, vb = (a.base_m, a.base_n, a.base_k), (b.base_m, b.base_n, b.base_k)
        else:
            va, vb = getattr(a, name), getattr(b, name)
        if va in values and vb in values:
            total += abs(values.index(va) - values.index(vb))
        else:
            total += 1 if va != vb else 0
    return total


def neighbours(config: AscendCConfig, limit: int = 8) -> list[AscendCConfig]:
    """The `limit` configurations closest to `config` (fewest grid steps, ties
    in search-space order): deterministic, never `config` itself."""
    space = search_space(config.family)
    ranked = sorted(((_steps(config, c), i, c) for i, c in enumerate(space) if c != config), key=lambda t: t[:2])
    return [c for _, _, c in ranked[:limit]]


def _snap(value: float, choices: tuple[int, ...]) -> int:
    return min(choices, key=lambda c: (abs(math.log2(c) - math.log2(max(value, 1.0))), c))


def config_from_triton(triton_config: dict, family: str, row_width: int) -> AscendCConfig | None:
    """What a feasible Triton configuration of the same family suggests.

    Only the amount of data one program handles carries over: a Triton
    program's BLOCK_SIZE elements (elementwise), or BLOCK_M rows of a one-pass
    rows kernel / its BLOCK_N chunk (multi-pass), become the fp32 bytes of an
    Ascend C tile. Core count and buffer depth have no Triton counterpart and
    keep their defaults. Returns None when the Triton config is of another family.
    """
    if triton_config.get("family") != family:
        return None
    if family == "matmul":
        # a Triton tile of BLOCK_M x BLOCK_N over BLOCK_K chunks: the nearest cube base block
        want = [int(triton_config.get(k) or d) for k, d in (("block_m", 128), ("block_n", 256), ("block_k", 64))]
        best = min(BASES, key=lambda b: (sum(abs(math.log2(x) - math.log2(y)) for x, y in zip(b, want)), BASES.index(b)))
        base = default_config(family)
        return AscendCConfig(family, block_dim=base.block_dim, buffer_num=base.buffer_num, base_m=best[0],
                             base_n=best[1], base_k=best[2])
    block_n = int(triton_config.get("block_n") or 1024)
    if family == "elementwise":
        elems = block_n
    elif triton_config.get("one_pass", True):
        elems = int(triton_config.get("block_m") or 1) * max(1, row_width)
    else:
        elems = block_n
    base = default_config(family)
    return AscendCConfig(family, tile_bytes=_snap(4.0 * elems, TILE_BYTES), block_dim=base.block_dim,
                         buffer_num=base.buffer_num)
