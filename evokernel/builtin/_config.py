"""Launch configurations per family: the search space, a default, neighbours.

One frozen dataclass serves every family; each family reads only its fields:

- elementwise: ``block_n`` (elements per program), ``num_warps``, ``inner_grid`` (a program per
  outer index and block of the innermost dim, where operands broadcast: no lane unravels its
  index, each operand's outer offset is one scalar; else a program per flat block).
- rows: ``one_pass`` (whole row in registers when it fits, else a chunked
  multi-pass loop), ``block_m`` (rows per program; inner positions for a
  reduction over leading dims), ``block_n`` (chunk width of the multi-pass and
  split kernels), ``num_warps``.
- matmul: ``block_m``, ``block_n``, ``block_k``, ``group_m`` (tile swizzle),
  ``num_warps``, ``num_stages``, ``split_k`` (K slices reduced in parallel),
  ``precision`` ("3xtf32": fp32 operands split into TF32 high and low parts
  before the GEMM, three TF32 tensor-core products per pair; "auto": IEEE fp32
  products, or TF32 where torch's TF32 switch for matmuls is on).
- conv (implicit GEMM): ``block_m`` (output positions), ``block_n`` (output
  channels), ``block_k`` (input channels x taps), ``num_warps``, ``num_stages``,
  ``precision`` ("auto": TF32 products rounded as cuDNN rounds them when the
  reference's convolution runs TF32, else IEEE; "trunc": TF32 by the tensor cores'
  own conversion; "ieee": always IEEE; "3xtf32": fp32 tiles split in the K loop, three TF32
  products), ``gather`` (how the K loop walks the input:
  "flat", channels x taps as one index; "taps", a tap at a time with the tile's
  channels inner, the input as it is laid out; "nhwc", the same over a channels-last
  copy of the input, made in the pass that rounds it to TF32), ``tile2d`` (a depthwise 2-d
  convolution's direct kernel: a tile of one output plane per program instead of an element
  per lane).
- pool: ``block_n`` (output elements per program), ``num_warps``.
- scan: ``block_m`` (rows per program), ``block_n`` (chunk), ``num_warps``.
- rnn (recurrent layers): ``one_pass`` (one launch a layer, each program walking
  every step for its batch rows; else one launch a step), ``split_n`` (one pass:
  programs sharing one batch tile's hidden units, meeting at a barrier after
  every step), ``block_m`` (batch rows), ``block_n`` (hidden units), ``block_k``,
  ``num_warps``, ``precision`` (as conv's: how cuDNN's reference rounds).

A pipeline is configured by its main stage (``Plan.main_stage``); the other
stages take their own defaults, which are sized from their traced shapes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields, replace

from ._families import Family, family
from ._ir import Plan, Ref

__all__ = ["Config", "next_pow2", "search_space", "default_config", "neighbours", "split_tf32_pays", "ONE_PASS_MAX",
           "SPLIT_IN_REGISTERS_K", "SPLIT_IN_REGISTERS_SIDE"]

PRECISIONS = ("auto", "trunc", "ieee", "3xtf32")
CONV_PRECISIONS = ("auto", "trunc", "ieee")  # see _gen_conv; a convolution also takes "3xtf32"
GATHERS = ("flat", "taps", "nhwc")  # a convolution's K loop (see _gen_conv)
# 3xTF32 pays where each operand element feeds many products: on the H200 a 4096^3 fp32 matmul took
# 1.40 ms (0.11 of it splitting the operands) against cuBLAS's 2.68 ms, 32768 x 32 x 32768 (M x K x N)
# 1.85-2.06 against 2.56, but 256 x 524288 x 256 spent 0.84 ms splitting its operands alone (cuBLAS:
# 1.36; benchmarks/probes/matmul_3xtf32_accumulation.py, results/matmul-3xtf32-accumulation-h200.json).
# Used where M*N/(M+N), half the harmonic mean of M and N, reaches this:
SPLIT_TF32_MIN = 256
# ... or where K is at least this many times max(M, N): the operands are then split in registers as
# their tiles load (_gen_matmul), no pass before the GEMM (whose cost made 256 x 524288 x 256 slower)
SPLIT_IN_REGISTERS_K = 16
# ... or where M or N is at most this (the widest split tile's side): an operand read by one tile row or
# column is loaded once either way, and a pass before the GEMM would read it, write its two parts and
# read those again (3x its bytes; for 128 x 32768 x 32768, 13 GB of the 4.3 GB weight's traffic alone)
SPLIT_IN_REGISTERS_SIDE = 128
# ... and such a one-tile side from this many rows, with K and the other side at least this long
SPLIT_TF32_MIN_SIDE = 64
SPLIT_TF32_MIN_DEPTH = 8192

ONE_PASS_MAX = 16384  # widest tile (rows x padded row) the one-pass rows kernel keeps in registers
# A row longer than this many tiles is one program's work by itself in the multi-pass rows kernel:
# several such rows per program leave the GPU with too few programs (seen on an H200: a remembered
# block_m=64 gave 16 programs for 1024 rows of 258,064 elements, ~1 s a call against eager's 6 ms).
LONG_ROW_TILES = 8


def split_tf32_pays(a_shape: Sequence[int], b_shape: Sequence[int], dtypes: Iterable[str]) -> bool:
    """Whether ``a @ b`` with operands of these shapes and dtypes runs faster in 3xTF32 than cuBLAS's
    fp32 (the builtin's default then, and under the kernelbench rules ours, not the library's). M is
    one GEMM's: a shared (2-D) right operand folds the left one's batch dims into it."""
    rows = math.prod(a_shape[:-1]) if len(b_shape) == 2 else a_shape[-2]
    n = b_shape[-1]
    # Not by K alone: on the H200 (benchmarks/results/rows-speed-h200.json) the in-register 3xTF32 split
    # made 256 x 524288 x 256 (level1 6) 2.0x slower than the IEEE kernel (3.59 against 1.79 ms).
    k = a_shape[-1]
    if set(dtypes) != {"float32"}:
        return False
    if rows * n / (rows + n) >= SPLIT_TF32_MIN:
        return True
    # one tile of rows (or columns) against a wide, deep other operand (level2's 128 x 32768 x 32768
    # Linear layers): each of its elements still feeds 64 to 128 products, split in registers as they
    # load (SPLIT_IN_REGISTERS_SIDE), where K and the wide side are long enough to keep the device busy
    return (SPLIT_TF32_MIN_SIDE <= min(rows, n) <= SPLIT_IN_REGISTERS_SIDE
            and min(k, max(rows, n)) >= SPLIT_TF32_MIN_DEPTH)


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
    split_k: int = 1
    precision: str = "auto"
    split_n: int = 1
    gather: str = "flat"
    inner_grid: bool = False
    tile2d: bool = False

    def __post_init__(self):
        configurable(self.family)  # ValueError for a family that is unknown or takes no configuration
        for name in ("block_m", "block_n", "block_k", "group_m", "num_warps", "split_k", "split_n"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1 or value & (value - 1):
                raise ValueError(f"{name} must be a positive power of two, got {value!r}")
        if not isinstance(self.num_stages, int) or self.num_stages < 1:
            raise ValueError(f"num_stages must be a positive int, got {self.num_stages!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.gather not in GATHERS:
            raise ValueError(f"gather must be one of {GATHERS}, got {self.gather!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Config":
        """Inverse of to_dict; keys this version does not know are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def text(self) -> str:
        keys = family(self.family).tunable
        return ", ".join(f"{k}={getattr(self, k)}" for k in keys)


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
    (128, 128, 32, 8, 3),
    (128, 128, 16, 8, 3),
    (128, 128, 64, 8, 3),
    (64, 256, 32, 4, 4),
    (128, 256, 32, 8, 3),
    (256, 128, 32, 8, 3),
    (128, 256, 64, 8, 3),
)
# 3xTF32 tiles: four fp32 operand tiles a stage (the launcher trims stages to the shared memory);
# 128 x 128 x 32 with 8 warps was the fastest of eight on the H200 at 4096^3 and 2048 x 8192 x 4096
_MATMUL_SPLIT_TILES = (
    (128, 128, 32, 8, 3),
    (64, 128, 32, 4, 4),
    (128, 64, 32, 4, 4),
    (128, 128, 16, 8, 4),
    (256, 128, 32, 8, 2),
    (64, 64, 32, 4, 3),
)
_CONV_TILES = (  # (BLOCK_M positions, BLOCK_N channels, BLOCK_K, num_warps, num_stages)
    (32, 32, 32, 4, 2),
    (64, 32, 32, 4, 2),
    (64, 64, 32, 4, 2),
    (128, 32, 32, 4, 2),
    (128, 64, 32, 4, 3),
    (64, 128, 32, 4, 3),
    (128, 128, 32, 8, 3),
    (128, 64, 16, 4, 3),
    (256, 64, 32, 8, 3),
    (64, 16, 32, 4, 2),
    (128, 16, 32, 4, 2),
)


def _matmul_dims(plan: Plan) -> tuple[int, int, int]:
    """(rows, N, K) of the launched kernel: batch dims folded into rows when B is shared."""
    mm = plan.node(plan.matmul_id)
    a, b = (plan.leaf(r.value).spec.shape for r in mm.args)
    k = a[-1]
    rows = math.prod(a[:-1]) if len(b) == 2 else a[-2] * max(1, math.prod(mm.shape[:-2]))
    return rows, b[-1], k


def _row_dims(plan: Plan) -> tuple[int, int, int]:
    """(outer, N, inner) of a rows plan's reduced tensor."""
    g = plan.reduce
    full = g.full_shape
    return math.prod(full[:g.start]), math.prod(full[g.start:g.stop]), math.prod(full[g.stop:])


def search_space(plan: Plan) -> list[Config]:
    """Every configuration worth trying for the plan's (main stage's) family, in a fixed order."""
    plan = plan.main_stage
    return configurable(plan.family).search_space(plan)


def default_config(plan: Plan) -> Config:
    """A sensible first configuration, sized from the traced shapes."""
    plan = plan.main_stage
    return configurable(plan.family).default_config(plan)


def configurable(name: str) -> Family:
    """The family of that name, when it is configured (has a search space); ValueError otherwise."""
    found = family(name)
    if found.search_space is None or found.default_config is None:
        raise ValueError(f"the {name} family takes no configuration")
    return found


def elementwise_space(plan: Plan) -> list[Config]:
    return [Config("elementwise", block_n=bn, num_warps=w, inner_grid=ig)
            for ig in (False, True) for bn in (256, 512, 1024, 2048, 4096) for w in (2, 4, 8)]


def rows_space(plan: Plan) -> list[Config]:
    space = [Config("rows", one_pass=True, block_m=bm, block_n=1024, num_warps=w)
             for bm in (1, 2, 4, 8, 16, 32, 64) for w in (1, 2, 4, 8, 16)]
    space += [Config("rows", one_pass=False, block_m=bm, block_n=bn, num_warps=w)
              for bm in (1, 2, 4, 8, 16, 32, 64, 128) for bn in (8, 16, 32, 256, 512, 1024, 2048, 4096)
              for w in (2, 4, 8)]
    return space


# The K slice counts a matmul's search tries and its defaults choose from (split-K)
SPLITS = (1, 4, 16, 64)


def matmul_space(plan: Plan) -> list[Config]:
    # both defaults first: a 3xTF32 draft that is not close enough to the reference is redrafted in IEEE
    space = [matmul_default(plan), _ieee_default(plan)]
    if _fp32_operands(plan, plan.node(plan.matmul_id).args[:2]):  # fp16/bf16 go to the tensor cores as they are
        space += [Config("matmul", block_m=bm, block_n=bn, block_k=bk, num_warps=w, num_stages=s, group_m=g,
                         split_k=sk, precision="3xtf32")
                  for bm, bn, bk, w, s in _MATMUL_SPLIT_TILES for g in (1, 8) for sk in SPLITS]
    space += [Config("matmul", block_m=bm, block_n=bn, block_k=bk, num_warps=w, num_stages=s, group_m=g, split_k=sk)
              for bm, bn, bk, w, s in _MATMUL_TILES for g in (1, 8) for sk in SPLITS]
    return list(dict.fromkeys(space))


def conv_space(plan: Plan) -> list[Config]:
    # the default tile first, in every precision: a draft whose rounding does not match
    # the reference's is retried with the next one
    first = conv_default(plan)
    tile = (first.block_m, first.block_n, first.block_k, first.num_warps, first.num_stages)
    tiles = [tile] + [t for t in _CONV_TILES if t != tile]  # the default's tile may be none of the usual ones
    if _direct_conv(plan):  # the direct kernel reads no rounding or K loop: its tiles and tile2d
        return list(dict.fromkeys([first, replace(first, tile2d=True)] + [
            Config("conv", block_m=bm, block_n=bn, block_k=bk, num_warps=w, num_stages=s) for bm, bn, bk, w, s in tiles]))
    gathers = sorted(GATHERS, key=lambda g: g != first.gather)
    return [Config("conv", block_m=bm, block_n=bn, block_k=bk, num_warps=w, num_stages=s, precision=p, gather=g)
            for bm, bn, bk, w, s in tiles for g in gathers
            for p in _conv_roundings(plan)]


def _conv_roundings(plan: Plan) -> tuple[str, ...]:
    """A convolution's precision settings: the rounding ones, then 3xTF32 for fp32 operands."""
    ops = plan.node(plan.anchor_id).args[:2]
    return _roundings(plan, ops) + (("3xtf32",) if _fp32_operands(plan, ops) else ())


def pool_space(plan: Plan) -> list[Config]:
    return [Config("pool", block_n=bn, num_warps=w) for bn in (128, 256, 512, 1024, 2048) for w in (2, 4, 8)]


def scan_space(plan: Plan) -> list[Config]:
    return [Config("scan", block_m=bm, block_n=bn, num_warps=w)
            for bm in (1, 2, 4, 8) for bn in (256, 1024, 4096, 8192) for w in (2, 4, 8, 16)]


def attention_space(plan: Plan) -> list[Config]:
    # the default first, then its IEEE twin: a 3xTF32 draft not close enough to the reference is redrafted
    first = attention_default(plan)
    precisions = ("3xtf32", "auto") if first.precision == "3xtf32" else ("auto",)
    space = [first, Config("attention", block_m=first.block_m, block_n=first.block_n, num_warps=first.num_warps,
                           num_stages=first.num_stages)]
    space += [Config("attention", block_m=bm, block_n=bn, num_warps=w, num_stages=s, precision=p)
              for p in precisions for bm in (32, 64, 128) for bn in (16, 32, 64, 128) for w in (4, 8)
              for s in (1, 2, 3)]
    return list(dict.fromkeys(space))


def rnn_space(plan: Plan) -> list[Config]:
    # the default tile first in every rounding, as for convolutions: cuDNN's reference may run TF32
    first = rnn_default(plan)
    # (a one-pass layer's hidden units shared by up to 16 programs, which meet after every step)
    tiles = sorted(((one, split, bm, bn, bk, w) for one in (True, False) for split in ((1, 2, 4, 8, 16) if one else (1,))
                    for bm in (16, 32, 64) for bn in (16, 32, 64, 128) for bk in (16, 32, 64) for w in (1, 2, 4, 8)),
                   key=lambda t: t != (first.one_pass, first.split_n, first.block_m, first.block_n, first.block_k,
                                       first.num_warps))
    return [Config("rnn", one_pass=one, split_n=split, block_m=bm, block_n=bn, block_k=bk, num_warps=w, precision=p)
            for one, split, bm, bn, bk, w in tiles for p in _roundings(plan, plan.node(plan.anchor_id).args[:1])]


def _fp32_operands(plan: Plan, operands: Sequence[Ref]) -> bool:
    """Whether the anchor's multiplied operands (a matmul's or convolution's two, a recurrent layer's
    input) are fp32: only then do the precision settings (TF32 rounding, 3xTF32) change its kernel."""
    return any(plan.leaf(r.value).spec.dtype == "float32" for r in operands if r.kind == "leaf")


def _roundings(plan: Plan, operands: Sequence[Ref]) -> tuple[str, ...]:
    """The precision settings of a conv or rnn search: each of CONV_PRECISIONS for fp32 operands; one
    for fp16/bf16, which the tensor cores take as they are (the others would write the same kernel)."""
    return CONV_PRECISIONS if _fp32_operands(plan, operands) else CONV_PRECISIONS[:1]


def next_pow2(n: int) -> int:
    """The least power of two at or above n (1 for n <= 1)."""
    return 1 << max(0, (int(n) - 1).bit_length())


def elementwise_default(plan: Plan) -> Config:
    # fp16/bf16: a program per outer index and block of the innermost dim where an operand broadcasts (the
    # launcher falls back to flat blocks elsewhere): at half the bytes an element, the flat kernel's index
    # divisions weigh. On an H100 (rows_speed.py --set inner_grid=true, bf16, f755f5b) 33_BatchNorm ran
    # 1.21x faster; fp32 is not measured and keeps flat blocks
    return Config("elementwise", block_n=1024, num_warps=4, inner_grid=plan.out_spec.dtype in ("float16", "bfloat16"))


def rows_default(plan: Plan) -> Config:
    outer, width, inner = _row_dims(plan)
    padded = next_pow2(width)
    if inner > 1:
        # rows are inner positions: coalesced along them, a narrow chunk of the reduced dim
        block_m = min(64, next_pow2(inner))
        if padded * block_m <= ONE_PASS_MAX and block_m >= 16:
            return Config("rows", one_pass=True, block_m=block_m, block_n=1024, num_warps=4)
        return Config("rows", one_pass=False, block_m=block_m, block_n=16, num_warps=4)
    if padded > ONE_PASS_MAX:
        return Config("rows", one_pass=False, block_m=1, block_n=4096, num_warps=8)
    block_m = max(1, min(16, 2048 // padded))
    warps = 1 if padded <= 256 else 4 if padded <= 2048 else 8 if padded <= 8192 else 16
    if block_m > 1:
        warps = 4
    return Config("rows", one_pass=True, block_m=block_m, block_n=1024, num_warps=warps)


def matmul_default(plan: Plan) -> Config:
    rows, n, k = _matmul_dims(plan)
    specs = [plan.leaf(r.value).spec for r in plan.node(plan.matmul_id).args]
    if split_tf32_pays(specs[0].shape, specs[1].shape, (spec.dtype for spec in specs)):
        tiles = math.ceil(rows / 128) * math.ceil(n / 128)
        bm, bn, bk, w, s = (128, 128, 32, 8, 3) if tiles >= 132 else (64, 128, 32, 4, 4)
        return Config("matmul", block_m=bm, block_n=bn, block_k=bk, num_warps=w, num_stages=s, group_m=8,
                      split_k=_split(rows, n, k, bm, bn), precision="3xtf32")
    config = _ieee_default(plan)
    if not _fp32_operands(plan, plan.node(plan.matmul_id).args[:2]):
        if k >= 128:
            # fp16/bf16: a 64-deep K step where there are two or more. On the H100 (rows_speed.py, bf16
            # KernelBench level1) 1.03-1.51x faster on all 13 GEMMs with K >= 768; with K = 64 (one step,
            # nothing to pipeline) 0.89x of 32-deep steps
            config = replace(config, block_k=64)
        config = replace(config, split_k=max(config.split_k, _half_split(k)))
    return config


# The deepest K slice one fp32 accumulator takes from fp16/bf16 tensor-core products. The tensor cores
# truncate as they add each block of products, so a slice's error grows with its depth, biased. In the
# fp16 level1 run at f755f5b (an H100) 6_Matmul_with_large_K_dimension (K = 524288, 16 slices of 32768)
# put 46 of 65536 elements near zero past 1e-2 of their value on normal inputs; emulated on the CPU
# (benchmarks/probes/half_accumulation.py, half-accumulation-emulated-cpu.json), 16 slices left 9-14 of
# 16384 past the tolerance of the float64 output, 64 slices (8192 deep) none, the error 4x smaller.
HALF_SLICE_DEPTH = 8192


def _half_split(k: int) -> int:
    """The fewest K slices (of SPLITS) no deeper than HALF_SLICE_DEPTH, at most the most SPLITS holds."""
    need = math.ceil(k / HALF_SLICE_DEPTH)
    return next((s for s in SPLITS if s >= need), SPLITS[-1])


# The tiled direct convolution kernel's tile: up to TILE_W output columns by as many rows as make
# TILE_ELEMS (_gen_conv)
TILE_W, TILE_ELEMS = 64, 1024


def conv_default(plan: Plan) -> Config:
    # 128 x 128 tiles for 128+ output channels: 14-19% faster than 128 x 64 on three of four
    # KernelBench 2D convolutions on the H200 (3% slower on the fourth)
    cout_g = _conv_out_channels(plan)
    bm, bn, bk, w, s = ((128, 128, 32, 8, 3) if cout_g >= 128 else (128, 64, 32, 4, 3) if cout_g > 32
                        else (128, 32, 32, 4, 2))
    gather = "nhwc" if _channels_last_gather(plan, bk) else "flat"
    w_shape = _conv_weight_shape(plan)
    if (gather == "nhwc" and w_shape is not None and _conv_in_channels(plan, w_shape) <= 16
            and not _fp32_operands(plan, plan.node(plan.anchor_id).args[:2])):
        # fp16/bf16 a tap at a time with few channels a group: a 16-deep K step, the least the tensor
        # cores take, so less of each step is padding. On an H100 (rows_speed.py --set block_k=16, bf16,
        # f755f5b) 72_conv_transposed_3D (8 channels a group) ran 2.03x faster than with 32-deep steps;
        # fp32 (TF32 steps may be 8 deep) is not measured and keeps 32
        bk = 16
    return Config("conv", block_m=bm, block_n=bn, block_k=bk, num_warps=w, num_stages=s, gather=gather,
                  tile2d=_tiled_direct(plan))


def _tiled_direct(plan: Plan) -> bool:
    """Whether a direct (depthwise) 2-d convolution takes the tiled kernel, a tile of one output plane per
    program, rather than an element per lane. On an H100 (rows_speed.py --set tile2d=true, level1's 82-85
    at 9d52f4a, benchmarks/results/conv-depthwise-tile2d-level1-h100-9d52f4a.json) it was 1.73-3.46x faster
    in bf16 and 2.74-3.07x in fp32 (0.996x on 83, whose 3 x 1 kernel leaves little to share) on output
    planes of 254 x 254 and larger. Planes smaller than one tile (TILE_ELEMS) keep the element kernel:
    a tile there is partly idle lanes, and no such plane was measured."""
    conv = plan.node(plan.anchor_id)
    return (_direct_conv(plan) and conv.attr("nd") == 2 and not conv.attr("transposed")
            and math.prod(conv.shape[2:]) >= TILE_ELEMS)


def _channels_last_gather(plan: Plan, block_k: int) -> bool:
    """Whether the K loop walks a channels-last copy a tap at a time ("nhwc") rather than channels x taps
    as one index ("flat"). On an H100, level1's 31 strict fp32 convolutions with gather=nhwc re-timed
    against flat (benchmarks/results/conv-gather-nhwc-level1-h100-4245a19.json): 1.04-4.7x faster where a
    group has a full K step of input channels (32) and the kernel more than one tap (contiguous channel
    chunks, a tap's bounds checked once a row), but for one strided dilated 1D convolution (0.94x), and on
    strided transposed convolutions whatever their channels (8 a group: 1.63x and 1.19x; flat's phased K
    index divides by each phase's tap count per element); slower where the chunk is mostly padding (3 input
    channels: 0.17-0.26x; 16: 0.87x) and for a 1x1 convolution (0.96x, nothing to gather by taps).
    fp16/bf16 take the same rule: in KernelBench level1's bf16 run at d45a525 (an H100,
    kernelbench-level1-h100-builtin-bf16-d45a525.json) the 23 convolutions it picks nhwc for in fp32 ran
    flat in bf16 at 1.13x their fp32 time (geomean; 68_conv_transposed_3D 29.1 ms against 13.0), where
    half the bytes and twice the tensor-core rate should make them faster: the flat index, not the
    products, holds them."""
    conv = plan.node(plan.anchor_id)
    w = _conv_weight_shape(plan)
    if w is None or _direct_conv(plan) or math.prod(w[2:]) == 1:
        return False
    cin_g = _conv_in_channels(plan, w)
    return cin_g >= block_k or (conv.attr("transposed") and any(st > 1 for st in conv.attr("stride")) and cin_g >= 8)


def pool_default(plan: Plan) -> Config:
    return Config("pool", block_n=512, num_warps=4)


def scan_default(plan: Plan) -> Config:
    return Config("scan", block_m=1, block_n=4096, num_warps=8)


def rnn_default(plan: Plan) -> Config:
    # programs own batch rows (tl.dot needs 16). One launch a layer (each program walking every step)
    # where a program's share of a step is small, else one launch a step with small hidden tiles. On
    # the H200 (KernelBench's batch 10, hidden 256, 512 steps, 6 layers) a launch a step cost ~22 us
    # a step, one program a step ~26 us for an LSTM's 4 x 256^2 weights (128 x 32 tiles, 8 warps;
    # 64 x 64 with 4 warps: ~35 us) and ~20 us for a GRU's 3 x 256^2 (one program a direction)
    rnn = dict(plan.node(plan.anchor_id).attrs)
    block_m = min(64, max(16, next_pow2(rnn["batch"])))
    gates = {"LSTM": 4, "GRU": 3}.get(rnn["mode"], 1)
    if gates * rnn["hidden"] ** 2 <= 3 << 16:
        tile = min(128, max(16, next_pow2(rnn["hidden"])))
        return Config("rnn", one_pass=True, block_m=block_m, block_n=tile, block_k=min(32, tile),
                      num_warps=8 if tile >= 128 else 4)
    return Config("rnn", one_pass=False, block_m=block_m, block_n=32, block_k=32, num_warps=4)


def attention_default(plan: Plan) -> Config:
    """fp32 takes 3xTF32 products (the tensor cores, three products a pair) with tiles small
    enough for the split parts to stay in registers; half precision takes wider query tiles.
    Head dims past 128 halve the key tile: the [BLOCK_N, head dim] tiles of k and v grow."""
    att = plan.node(plan.anchor_id)
    q, v = (plan.leaf(a.value).spec for a in (att.args[0], att.args[2]))
    head = max(next_pow2(q.shape[-1]), next_pow2(v.shape[-1]))
    if q.dtype == "float32":
        # on the H200, KernelBench level3's MinGPT attention (head dim 96 padded to 128, fp32): 128 x 64 tiles
        # with 8 warps 6.3 ms for the whole model, 64 x 32 with 8 warps 9.3, IEEE products 233
        if head > 128:
            return Config("attention", block_m=64, block_n=32, num_warps=8, num_stages=1, precision="3xtf32")
        if head > 64:
            return Config("attention", block_m=128, block_n=64, num_warps=8, num_stages=2, precision="3xtf32")
        return Config("attention", block_m=64, block_n=64, num_warps=4, num_stages=2, precision="3xtf32")
    return Config("attention", block_m=128 if head <= 128 else 64, block_n=64 if head <= 128 else 32,
                  num_warps=8 if head >= 128 else 4, num_stages=2)


def _ieee_default(plan: Plan) -> Config:
    """The matmul default with IEEE fp32 products (TF32 where torch's switch is on)."""
    family = "matmul"
    rows, n, k = _matmul_dims(plan)
    if rows * n <= 64 * 64:
        return Config(family, block_m=32, block_n=32, block_k=32, num_warps=2, num_stages=3, group_m=8,
                      split_k=_split(rows, n, k, 32, 32))
    if rows >= 128 and n >= 128:
        tiles = math.ceil(rows / 128) * math.ceil(n / 128)
        if tiles >= 132:
            return Config(family, block_m=128, block_n=128, block_k=32, num_warps=8, num_stages=3, group_m=8)
    return Config(family, block_m=64, block_n=64, block_k=32, num_warps=4, num_stages=3, group_m=8,
                  split_k=_split(rows, n, k, 64, 64))


def _split(rows: int, n: int, k: int, bm: int, bn: int) -> int:
    """Split K when the output has too few tiles to fill the GPU and K is long."""
    tiles = math.ceil(rows / bm) * math.ceil(n / bn)
    if tiles >= 132 or k < 4096:
        return 1
    want = min(64, max(1, 264 // tiles), k // 2048)
    return max(s for s in SPLITS if s <= max(1, want))


def _direct_conv(plan: Plan) -> bool:
    """Whether the traced convolution takes the direct kernel (as its launcher decides: fewer than 8
    output channels a group, or fewer than 8 products an output)."""
    w = _conv_weight_shape(plan)
    if w is None:
        return False
    return _conv_out_channels(plan) < 8 or _conv_in_channels(plan, w) * math.prod(w[2:]) < 8


# Measured on an H100 at 7a46a3e (benchmarks/results/conv-few-channels-level1-h100-7a46a3e.json)
FEW_CHANNEL_CONV_LIMIT = (
    "IEEE fp32 products on the FMA units, not the tensor cores: a group has {cin} input channel(s), fewer "
    "than 16, for which cuDNN's reference computes in IEEE fp32, so TF32 products would fail the check; on "
    "an H100 this path ran level1's 50_conv_standard_2D at about 10 TFLOP/s where cuDNN reached 25-31, the "
    "3xTF32 tensor-core variant at the default tile took 1.07-1.48x its time on level1's five such "
    "convolutions, other tiles, warps and stages 0.89-1.32x "
    "(benchmarks/results/conv-few-channels-level1-h100-7a46a3e.json)")


def speed_limits(plan: Plan, config: Config) -> tuple[str, ...]:
    """What measurements say holds the kernel this configuration writes below the library's speed, in
    words for a run's results (a task far slower than torch.compile is reported with its reason);
    () where nothing is known. Every stage of a pipeline is looked at, the main one in `config`, the
    others in their defaults (as `generate` writes them). Today one case: a convolution of few input
    channels a group in fp32, whose products stay IEEE fp32 as cuDNN's are ("auto" or "ieee" precision)."""
    stages = plan.stages if plan.family == "pipeline" else (plan,)
    main = plan.main if plan.family == "pipeline" else 0
    limits = []
    for k, stage in enumerate(stages):
        if stage.family == "conv":
            limits += _few_channel_conv_limit(stage, config if k == main else default_config(stage))
    return tuple(dict.fromkeys(limits))


def _few_channel_conv_limit(conv_plan: Plan, config: Config) -> list[str]:
    if config.family != "conv" or config.precision not in ("auto", "ieee"):
        return []
    w = _conv_weight_shape(conv_plan)
    if w is None or _direct_conv(conv_plan) or not _fp32_operands(conv_plan, conv_plan.node(conv_plan.anchor_id).args[:2]):
        return []
    cin = _conv_in_channels(conv_plan, w)  # from 16 a group, "auto" takes TF32 products on the GPU, as cuDNN does
    return [FEW_CHANNEL_CONV_LIMIT.format(cin=cin)] if cin < 16 else []


def _conv_weight_shape(plan: Plan) -> tuple[int, ...] | None:
    """The traced convolution's weight shape, where the weight is an input of the plan."""
    conv = plan.node(plan.anchor_id)
    return tuple(plan.leaf(conv.args[1].value).spec.shape) if conv.args[1].kind == "leaf" else None


def _conv_in_channels(plan: Plan, w: tuple[int, ...]) -> int:
    """Input channels a group, from the weight's shape: (C_in, C_out / groups, ...) when transposed,
    else (C_out, C_in / groups, ...)."""
    conv = plan.node(plan.anchor_id)
    return w[0] // max(1, conv.attr("groups")) if conv.attr("transposed") else w[1]


def _conv_out_channels(plan: Plan) -> int:
    conv = plan.node(plan.anchor_id)
    return conv.shape[1] // max(1, conv.attr("groups"))


def _steps(config: Config, other: Config, space: list[Config]) -> int:
    """How many grid steps apart two configs are, field by field."""
    total = 0
    for name in family(config.family).tunable:
        values = sorted({getattr(c, name) for c in space} | {getattr(config, name)})
        total += abs(values.index(getattr(config, name)) - values.index(getattr(other, name)))
    return total


def neighbours(config: Config, plan: Plan, limit: int = 8) -> list[Config]:
    """The ``limit`` configs of the search space closest to ``config`` (fewest
    grid steps, ties in search-space order): deterministic, never ``config``."""
    if config.family != plan.main_stage.family:
        raise ValueError(f"config is for {config.family}, plan is {plan.main_stage.family}")
    # a refinement keeps the precision its start point was correct with
    full = search_space(plan)
    # (a precision this space does not hold, a memory's from before it changed: then any)
    space = [c for c in full if c.precision == config.precision] or full
    ranked = sorted(((_steps(config, c, space), i, c) for i, c in enumerate(space) if c != config),
                    key=lambda t: (t[0], t[1]))
    return [c for _, _, c in ranked[:limit]]
