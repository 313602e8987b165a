"""Launch configurations per family: the search space, a default, neighbours.

One frozen dataclass serves every family; each family reads only its fields:

- elementwise: ``block_n`` (elements per program), ``num_warps``.
- rows: ``one_pass`` (whole row in registers when it fits, else a chunked
  multi-pass loop), ``block_m`` (rows per program), ``block_n`` (chunk width of
  the multi-pass kernel), ``num_warps``.
- matmul: ``block_m``, ``block_n``, ``block_k``, ``group_m`` (tile swizzle),
  ``num_warps``, ``num_stages``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from ._ir import FAMILIES, Plan

__all__ = ["Config", "search_space", "default_config", "neighbours", "ONE_PASS_MAX"]

ONE_PASS_MAX = 16384  # widest row the one-pass rows kernel keeps in registers


@dataclass(frozen=True)
class Config:
    family: str
    block_m: int = 1
    block_n: int = 1024
    block_k: int = 32
    group_m: int = 8
    num_warps: int = 4
    num_stages: int = 2
    one_pass: bool = True

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"unknown family {self.family!r}; expected one of {FAMILIES}")
        for name in ("block_m", "block_n", "block_k", "group_m", "num_warps"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1 or value & (value - 1):
                raise ValueError(f"{name} must be a positive power of two, got {value!r}")
        if not isinstance(self.num_stages, int) or self.num_stages < 1:
            raise ValueError(f"num_stages must be a positive int, got {self.num_stages!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Config":
        """Inverse of to_dict; keys this version does not know are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def text(self) -> str:
        keys = _TUNABLE[self.family]
        return ", ".join(f"{k}={getattr(self, k)}" for k in keys)


_TUNABLE = {
    "elementwise": ("block_n", "num_warps"),
    "rows": ("one_pass", "block_m", "block_n", "num_warps"),
    "matmul": ("block_m", "block_n", "block_k", "group_m", "num_warps", "num_stages"),
}

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), after Triton's matmul tutorial
_MATMUL_TILES = (
    (16, 16, 16, 1, 2),
    (32, 32, 32, 2, 3),
    (32, 64, 32, 2, 5),
    (64, 32, 32, 2, 5),
    (64, 64, 32, 4, 3),
    (64, 64, 64, 4, 3),
    (64, 128, 32, 4, 4),
    (128, 32, 32, 4, 4),
    (128, 64, 32, 4, 4),
    (128, 128, 32, 4, 4),
    (128, 128, 64, 8, 3),
    (64, 256, 32, 4, 4),
    (128, 256, 64, 8, 3),
)


def _row_width(plan: Plan) -> int:
    group = plan.reduce
    return math.prod(group.full_shape[group.start:group.stop]) if group else 1


def search_space(plan: Plan) -> list[Config]:
    """Every configuration worth trying for the plan's family, in a fixed order."""
    family = plan.family
    if family == "elementwise":
        return [Config(family, block_n=bn, num_warps=w)
                for bn in (256, 512, 1024, 2048, 4096) for w in (2, 4, 8)]
    if family == "rows":
        space = [Config(family, one_pass=True, block_m=bm, block_n=1024, num_warps=w)
                 for bm in (1, 2, 4, 8, 16) for w in (1, 2, 4, 8, 16)]
        space += [Config(family, one_pass=False, block_m=bm, block_n=bn, num_warps=w)
                  for bm in (1, 2, 4) for bn in (256, 512, 1024, 2048, 4096) for w in (2, 4, 8)]
        return space
    if family == "matmul":
        return [Config(family, block_m=bm, block_n=bn, block_k=bk, num_warps=w, num_stages=s, group_m=g)
                for bm, bn, bk, w, s in _MATMUL_TILES for g in (1, 8)]
    raise ValueError(f"unknown family {family!r}")


def default_config(plan: Plan) -> Config:
    """A sensible first configuration, sized from the traced shapes."""
    family = plan.family
    if family == "elementwise":
        return Config(family, block_n=1024, num_warps=4)
    if family == "rows":
        width = _row_width(plan)
        padded = 1 << max(0, (width - 1).bit_length())
        block_m = max(1, min(16, 2048 // padded))
        warps = 1 if padded <= 256 else 4 if padded <= 2048 else 8 if padded <= 8192 else 16
        if block_m > 1:
            warps = 4
        return Config(family, one_pass=True, block_m=block_m, block_n=1024, num_warps=warps)
    if family == "matmul":
        m, n = plan.out_spec.shape[-2], plan.out_spec.shape[-1]
        if m * n <= 64 * 64:
            return Config(family, block_m=32, block_n=32, block_k=32, num_warps=2, num_stages=3, group_m=8)
        return Config(family, block_m=64, block_n=64, block_k=32, num_warps=4, num_stages=3, group_m=8)
    raise ValueError(f"unknown family {family!r}")


def _steps(config: Config, other: Config, space: list[Config]) -> int:
    """How many grid steps apart two configs are, field by field."""
    total = 0
    for name in _TUNABLE[config.family]:
        values = sorted({getattr(c, name) for c in space} | {getattr(config, name)})
        total += abs(values.index(getattr(config, name)) - values.index(getattr(other, name)))
    return total


def neighbours(config: Config, plan: Plan, limit: int = 8) -> list[Config]:
    """The ``limit`` configs of the search space closest to ``config`` (fewest
    grid steps, ties in search-space order): deterministic, never ``config``."""
    if config.family != plan.family:
        raise ValueError(f"config is for {config.family}, plan is {plan.family}")
    space = search_space(plan)
    ranked = sorted(((_steps(config, c, space), i, c) for i, c in enumerate(space) if c != config),
                    key=lambda t: (t[0], t[1]))
    return [c for _, _, c in ranked[:limit]]
