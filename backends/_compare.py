"""Correctness: compare a candidate's outputs with the reference's, and say
where and by how much they differ in words an LLM can act on.

With the reference also run in float64 on the same inputs (`exact`, see
backends/_oracle.py), a floating output is judged by its accuracy as well:
each side's error against the float64 output, as an RMS relative to that
output's RMS. Two rules follow (the numbers behind them:
benchmarks/probes/accuracy_oracle.py and the README's "Accuracy" paragraph):

- less accurate: a candidate whose error exceeds `LESS_ACCURATE` times the
  reference's own (never less than the output dtype's rounding) is wrong
  even inside the tolerance: a TF32 or fp16 shortcut on an fp32 task;
- as accurate: a candidate within `AS_ACCURATE` times the reference's error
  passes an element that misses the tolerance against the reference when it
  is within the tolerance of the float64 output plus `SLACK` times the
  reference's own worst error (outliers left out), and off by less than a
  share of its own value or the reference's own errors at its magnitude
  (`ROOM_OCTAVES`): the reference's rounding (a cancelling sum, a TF32 cuDNN
  convolution before a ReLU) no longer fails an exact kernel, nor one that
  rounds as much elsewhere. Not where the reference and its float64 run
  disagree beyond rounding (`TRUSTED_REFERENCE_ERROR`), except for fp16 and
  bf16 outputs.

Low precision (fp16/bf16 runs, backends/_precision.py) takes the same rules:
errors are relative and floored at the output dtype's rounding, so a bf16
kernel is compared with the bf16 reference's own error. One difference: a
half-precision reference's per-op rounding, amplified by a normalisation,
routinely lands past `TRUSTED_REFERENCE_ERROR` (KernelBench level2/21 in
bf16: 10% RMS off its float64 run, level2/18 1.5%), so there an as-accurate
kernel's elements still pass within the tolerance of the float64 output plus
the slack a reference rounding at the dtype's floor would give (`SLACK` x
`OUTLIER_RMS` x the floor, of the output's RMS): the builtin's level2/21 in
bf16 (0.34% RMS, 27x more accurate than the reference) had 5 of 576 elements
up to 0.0027 past the bare tolerance of the float64 output; one as far off as
the reference fails wherever it misses.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable

import torch

DEFAULT_TOLERANCE = {
    torch.float32: (1e-4, 1e-4),
    torch.float64: (1e-6, 1e-6),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (1e-2, 1e-2),
}


# The accuracy rules' numbers, from benchmarks/probes/accuracy_oracle.py on the
# CPU (benchmarks/results/accuracy-oracle-cpu.json). Errors are RMS errors
# against the float64 output over its RMS; "x" is the candidate's over the
# reference's. Honest fp32 kernels (tiles, split K, lanes, 3xTF32, rewritten
# algebra, a one-pass variance) measured 0.4x to 3.9x; TF32 operands 11x
# (K = 32768, all-positive inputs) to 1400x; fp16 and bf16 arithmetic or
# accumulators 1300x to 42000x.
#
# Less accurate than the reference beyond this: wrong, even inside the tolerance.
LESS_ACCURATE = 8.0
# As accurate as the reference within this (two fp32 orders of one sum differ by up to 2.7x):
# then an element past the tolerance against the reference may pass against the float64 output.
AS_ACCURATE = 3.0
# ...within the tolerance plus this many times the reference's own worst error
# (the larger of two rounding-error samples of one distribution)... (capped by ROOM_OF_VALUE and ROOM_OCTAVES;
# an element outside it may still pass by its conditioning, COND_SLACK)
SLACK = 2.0
# ...where a reference error beyond this many times its RMS counts as that: such an
# outlier is a flip (a comparison or rounding step decided the other way), not rounding
# a candidate must be forgiven anywhere else.
OUTLIER_RMS = 4.0
# Element by element, where the output is ill-conditioned (a cancelling sum of exponentials,
# as in Mamba2's chunked scan), the reference's own rounding puts some elements past the
# tolerance and an implementation as accurate puts *other* elements there, past the absolute
# room too. Such an element may also pass by its conditioning, measured when needed (the
# oracle's `conditioning`: how far the float64 run moves when inputs, parameters and buffers are
# perturbed by one unit of roundoff, the larger of CONDITIONING_DRAWS draws): the reference's
# worst excess over the tolerance, in those units (K, over its elements with a measured
# conditioning), lets a candidate's element exceed the tolerance of the float64 output by
# COND_SLACK x K of its own units. Measured on 49_Mamba2ReturnFinalState (batch 64, CPU, three
# input sets; benchmarks/probes/mamba2_oracle_claims.py): 18 of 18 fp32 runs as accurate as the
# reference (it on X one unit of roundoff away) pass, none without the conditioning; its tails
# zeroed or halved still fail. A few elements scaled by 1.001 fail only where one of them is
# large: the room grows with the reference's worst error.
COND_SLACK = 4.0
CONDITIONING_DRAWS = 2
# The absolute room (SLACK x the reference's worst error, capped at OUTLIER_RMS x its RMS) is one
# number for the whole output: on an output spanning many orders of magnitude it exceeds the
# small elements themselves, and a candidate with the last 0.05% of 49_Mamba2ReturnFinalState's
# output zeroed or halved passed through it. An element it admits must also be off by less
# than this share of its own float64 value: ROOM_OF_VALUE, or ROOM_OF_VALUE_RTOLS relative
# tolerances where that is less (1% for fp32; 50% for fp16 and bf16, whose tolerance is 1%).
# Measured on the CPU: a TF32 conv-BN-ReLU block against a TF32 reference (other rounding:
# inputs 8 fp32 units apart, which changes few TF32 roundings: see ROOM_OCTAVES) passes 5 of 5
# and the Mamba2 runs as accurate as the reference 6 of 6 with a cap as low as 0.5%; the smallest
# 0.05% zeroed, halved or scaled by 0.9 fail at 1% (by 1.01 passes: within atol); the builtin's
# level2 drafts that pass by accuracy in bf16 and fp16 pass at 50%. The conditioning alone could
# judge more finely, but it cannot judge a TF32 reference's flips at a ReLU (no measured
# conditioning there), so it only admits, never refuses.
ROOM_OF_VALUE = 0.5
ROOM_OF_VALUE_RTOLS = 100.0
# Near zero the share of its own value is too little where the reference rounds a sum that a ReLU
# then clamps (cuDNN's TF32 convolutions, 3e-4 RMS): 1% of a near-zero element is far below that
# rounding, the reference's own near-zero elements are off by as much, and an implementation as
# accurate is off on *other* ones (on the H200, 26_resnext_bottlenecks, 33_diffusion_resblock and
# 16_tcn at 1.0x the reference's error failed by chance). So the cap is the larger of that share and
# the reference's own errors at the element's magnitude: SLACK x its worst error over the elements
# within ROOM_OCTAVES octaves of |float64 value| (each error counted at most OUTLIER_RMS x its RMS, as
# in the absolute room), where the candidate is as accurate as the reference over those same
# elements (sums of squared errors, AS_ACCURATE): a flipped reference element licenses a couple of
# elements at its size, not its octave. The lowest bin holds zero and everything within atol; from it
# up, each octave whose smallest value SLACK x the worst error at or below it reaches (or that holds
# nothing) pools with it: at a ReLU's kink every octave holds few elements, too few for one octave's
# worst to say how large the rounding is. Measured on the CPU, TF32 emulated
# (benchmarks/probes/tf32_relu_oracle.py; tf32-relu-oracle-cpu{,-before}.json):
# - TF32 with the batch norm folded into the weights before rounding (a fused kernel) passed 2 of 20
#   seeds at full size (a ResNeXt bottleneck, 4x256x28x28 in; a conv-BN-ReLU, 4x64x28x28), 0 of 4 at
#   1.6M-3.2M outputs: on the conv-BN-ReLU every element left (41-48) was one the float64 run
#   clamps to zero (no conditioning there, no share of a zero value). Now 20 of 20 and 4 of 4; the
#   reference on inputs 8 fp32 units away passes all, as before (the TCN block: 3 of 4 before at
#   4.2M outputs, 4 of 4 now).
# - The TF32 block's worst reference error per octave is flat (5e-4 at zero, 3e-4 to 1.5e-3 from 1e-6
#   to 4); 49_Mamba2ReturnFinalState's grows with the value, up to 1.9% of it in one octave, so there
#   the as-accurate condition is what keeps the last 0.05% scaled by 1.01 failing (177 elements past,
#   as before; 46 without it); zeroed, halved and scaled by 0.9 leave 262 past as before.
# - A ReLU of a sum rounded by 1e-3 (tests/test_compare.py, 20000 elements; 5000; rounded by 3e-4):
#   without the pooling around zero passes 16, 10, 15 of 20 seeds (the kink's octaves hold a handful
#   of elements), with it 20, 19, 20 (ROOM_OCTAVES 0: 20, 17, 19; 2: as 1).
# Shortcuts still fail: near-zero outputs zeroed (802x-951x) or scaled by 0.9 (11x-12x), TF32 where
# the reference is IEEE (1356x-2783x). fp16 operands pass against a TF32 reference (1.5x-2.1x: as
# many mantissa bits as TF32), and fail with fp16 accumulation of every channel (4.2x, 3 of 3 seeds of
# the conv-BN-ReLU at 4x64x28x28). Left open: every positive output below 0.1 scaled by 1.01 passes
# there by conditioning (K is 0.8-2.4 million units on a TF32 reference: a few elements whose two
# draws nearly cancelled), as it did before on an IEEE-exact candidate; without it, it fails.
ROOM_OCTAVES = 1
# A reference further than this (RMS, relative) from its own float64 run is not rounding
# (data-dependent branches, chaotic ops): no element passes by accuracy then, nor (fp16 and
# bf16 outputs) with slack. TF32 and cancelling fp32 references measured 3e-4 and 1e-3;
# bf16 outputs round at 2e-3, and bf16 references of normalised level2 chains reach 1e-1.
TRUSTED_REFERENCE_ERROR = 1e-2
# No output is more accurate than its own rounding (0.6 units of roundoff RMS), and few
# are within one unit: errors are measured against at least this many units of roundoff
# of the output dtype (a builtin KernelBench kernel measured 4.4 units against a reference
# at 1.1)...
FLOOR_ROUNDOFF = 2.0
# ...and, for an output of fewer than FEW_ELEMENTS elements, FEW_FLOOR_ROUNDOFF: one or a few
# elements are one sample of each error (a lanes-summed loss measured 5.6x a reference that
# happened to land within one rounding of the float64 value; fp16 arithmetic there is 11000x).
FEW_ELEMENTS = 64
FEW_FLOOR_ROUNDOFF = 8.0
# fp16 and bf16 outputs of kernels that compute in fp32 and round once land at their own rounding:
# the builtin's drafts of the shrunk KernelBench level1 tasks at 0 to 1.9 units (strict, bf16 and fp16), of
# level2 within 1.12x (bf16) and 1.68x (fp16) of the reference's own error where library outputs
# round in between (kernelbench rules; benchmarks/results/accuracy-oracle-builtin-level*-cpu-*.json).
# One unit is their floor, so that fp8 arithmetic on a bf16 task (e5m2: 15 units) is more than
# LESS_ACCURATE times it.
HALF_FLOOR_ROUNDOFF = 1.0


@dataclasses.dataclass
class Comparison:
    ok: bool
    max_abs_error: float = 0.0
    mean_abs_error: float = 0.0
    feedback: str = ""
    near_zero: bool = False  # a constant zero output would also pass
    # Against the float64 reference (None without one): RMS errors relative to the
    # output's RMS, of the task's reference and of the candidate (the worst output).
    reference_error: float | None = None
    candidate_error: float | None = None
    # Passed only because it is as accurate as the reference: the tolerance against
    # the reference alone would have failed it.
    by_accuracy: bool = False


def flatten(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in flatten(o)]
    return [out]


def tolerance_for(dtype: torch.dtype, override: tuple[float | None, float | None] | None) -> tuple[float, float]:
    """(atol, rtol) for an output of `dtype`: the override where it gives a value, else the dtype's default."""
    atol, rtol = DEFAULT_TOLERANCE.get(dtype, (1e-4, 1e-4))
    if override is not None:
        atol = atol if override[0] is None else float(override[0])
        rtol = rtol if override[1] is None else float(override[1])
    return atol, rtol


# Elements compared at once: the float64 copies of one chunk are a few hundred
# MB at most, so comparing a 1.6 G-element output needs no copy of it, on the
# device or the host.
CHUNK = 1 << 23


def _ranges(indices: list[int], limit: int = 4) -> str:
    """[0,1,2,5,6,9] -> '0-2, 5-6, 9'; long lists are cut."""
    if not indices:
        return ""
    spans = []
    start = prev = indices[0]
    for i in indices[1:]:
        if i == prev + 1:
            prev = i
            continue
        spans.append((start, prev))
        start = prev = i
    spans.append((start, prev))
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans[:limit])
    if len(spans) > limit:
        text += f", ... ({len(spans)} ranges)"
    return text


def _mask_ranges(mask: torch.Tensor, limit: int = 4) -> str:
    """`_ranges` of the True positions of a 1-D mask, without listing them all."""
    m = mask.to(torch.int8)
    edges = torch.diff(m, prepend=m.new_zeros(1), append=m.new_zeros(1))
    starts = torch.nonzero(edges[:-1] == 1).flatten()
    ends = torch.nonzero(edges[1:] == -1).flatten()
    count = int(starts.numel())
    spans = list(zip(starts[:limit].tolist(), ends[:limit].tolist()))
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)
    if count > limit:
        text += f", ... ({count} ranges)"
    return text


def _spans(shape: tuple[int, ...], numel: int) -> list[tuple[int, int]]:
    """Chunks of the flattened tensor, whole rows (last dimension) each."""
    row = shape[-1] if len(shape) >= 2 and shape[-1] > 0 else 1
    step = max(1, CHUNK // row) * row
    return [(a, min(numel, a + step)) for a in range(0, numel, step)]


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.detach().reshape(-1)


def _where(bad_chunk: Callable[[int, int], torch.Tensor], shape: tuple[int, ...], numel: int) -> str:
    """Describe the mismatch pattern: first bad index and which rows/columns."""
    spans = _spans(shape, numel)
    first = None
    if len(shape) >= 2:
        last = shape[-1]
        rows, cols = [], None
        for a, b in spans:
            bad = bad_chunk(a, b)
            if first is None and bool(bad.any()):
                first = a + int(torch.nonzero(bad)[0, 0])
            grid = bad.reshape(-1, last)
            rows.append(grid.any(dim=1))
            cols = grid.any(dim=0) if cols is None else cols | grid.any(dim=0)
        bad_rows = torch.cat(rows)
        parts = [f"first mismatch at index {_unravel(first, shape)}",
                 f"rows (flattened leading dims) with errors: {_mask_ranges(bad_rows)} of {bad_rows.numel()}",
                 f"last-dim columns with errors: {_mask_ranges(cols)} of {last}"]
        return "; ".join(parts)
    masks = []
    for a, b in spans:
        bad = bad_chunk(a, b)
        if first is None and bool(bad.any()):
            first = a + int(torch.nonzero(bad)[0, 0])
        masks.append(bad)
    parts = [f"first mismatch at index {_unravel(first, shape)}"]
    if len(shape) == 1:
        parts.append(f"bad positions: {_mask_ranges(torch.cat(masks))} of {shape[0]}")
    return "; ".join(parts)


def _unravel(index: int | None, shape: tuple[int, ...]) -> tuple[int, ...]:
    if index is None or not shape:
        return ()
    out = []
    for dim in reversed(shape):
        out.append(index % dim)
        index //= dim
    return tuple(reversed(out))


def _first_bad(bad_chunk: Callable[[int, int], torch.Tensor], shape: tuple[int, ...], numel: int) -> int:
    for a, b in _spans(shape, numel):
        bad = bad_chunk(a, b)
        if bool(bad.any()):
            return a + int(torch.nonzero(bad)[0, 0])
    return 0


def _exact_leaf(name: str, e: torch.Tensor, g: torch.Tensor) -> Comparison | None:
    """Integer and bool outputs must match exactly."""
    ef, gf = _flat(e), _flat(g)
    shape, n = tuple(e.shape), e.numel()
    differ = sum((gf[a:b] != ef[a:b]).sum() for a, b in _spans(shape, n)) if n else 0
    count = int(differ)
    if not count:
        return None
    where = _where(lambda a, b: gf[a:b] != ef[a:b], shape, n)
    return Comparison(False, feedback=f"{name} ({e.dtype}) must match exactly; {count} of {n} elements differ; {where}")


@dataclasses.dataclass(frozen=True)
class _Accuracy:
    """One output's errors against the float64 reference (RMS, relative to the output's RMS)."""

    reference_error: float
    candidate_error: float
    floor: float  # the output dtype's rounding: no error is judged below it
    reference_worst: float  # max |reference - float64| (absolute)
    reference_rms: float  # RMS |reference - float64| (absolute)
    half_precision: bool = False  # an fp16 or bf16 output
    output_rms: float = 0.0  # RMS of the float64 output (absolute)

    @property
    def base(self) -> float:
        return max(self.reference_error, self.floor)

    @property
    def less_accurate(self) -> bool:
        return not self.candidate_error <= LESS_ACCURATE * self.base  # NaN is less accurate

    @property
    def trusted(self) -> bool:
        """The reference is its float64 run rounded (its error is rounding, not a branch decided otherwise)."""
        return self.reference_error <= TRUSTED_REFERENCE_ERROR

    @property
    def as_accurate(self) -> bool:
        return self.candidate_error <= AS_ACCURATE * self.base and (self.trusted or self.half_precision)

    @property
    def allowance(self) -> float:
        """How far past the tolerance of the float64 output an element may be (absolute)."""
        if not self.trusted:  # a half-precision output whose reference is past rounding: as for one at the floor
            return SLACK * OUTLIER_RMS * self.floor * self.output_rms
        return SLACK * min(self.reference_worst, self.outlier_cap())

    def outlier_cap(self) -> float:
        """The largest reference error that counts as rounding (OUTLIER_RMS), absolute."""
        return OUTLIER_RMS * self.reference_rms

    def describe(self) -> str:
        ratio = self.candidate_error / self.base if self.base else float("inf")
        return (f"against the reference run in float64, the candidate's RMS error is {self.candidate_error:.3g} of the "
                f"output's RMS and the reference's own is {self.reference_error:.3g} ({ratio:.1f}x the reference's, "
                f"counting errors below the dtype's rounding {self.floor:.2g} as that rounding)")


def _roundoff(dtype: torch.dtype) -> float:
    return float(torch.finfo(dtype).eps) / 2.0


def _octave_of(value: float) -> int:
    """floor(log2(value)) of a positive float: value = m * 2^e with 0.5 <= m < 1."""
    return math.frexp(value)[1] - 1


@dataclasses.dataclass(frozen=True)
class _Octaves:
    """Elements binned by the octave of their float64 value, floor(log2|x|), up to the output
    dtype's largest finite value: the reference's rounding at each magnitude (ROOM_OCTAVES). The
    lowest bin holds zero and every value within the absolute tolerance's octave: to the tolerance
    they are all zero (and below the dtype's smallest normal nothing is finer)."""

    lowest: int
    highest: int

    @staticmethod
    def of(dtype: torch.dtype, atol: float) -> _Octaves:
        info = torch.finfo(dtype)
        return _Octaves(_octave_of(max(info.tiny, atol)), _octave_of(info.max))

    @property
    def count(self) -> int:
        return self.highest - self.lowest + 1

    def index(self, x: torch.Tensor) -> torch.Tensor:
        """Each element's bin, 0 for zero and values up to the lowest octave."""
        octave = torch.frexp(x).exponent.to(torch.int64).sub_(1)
        return octave.masked_fill_(x == 0, self.lowest).clamp_(self.lowest, self.highest).sub_(self.lowest)


def _with_neighbours(per_octave: torch.Tensor,
                     combine: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """Each bin combined with the ROOM_OCTAVES bins below and above it."""
    out = per_octave.clone()
    for shift in range(1, ROOM_OCTAVES + 1):
        none = per_octave.new_zeros(min(shift, per_octave.numel()))
        out = combine(out, torch.cat([none, per_octave[:-shift]])[:per_octave.numel()])
        out = combine(out, torch.cat([per_octave[shift:], none])[-per_octave.numel():])
    return out


def _pooled(per_octave: torch.Tensor, where: torch.Tensor,
            reduce: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """`per_octave` with the bins `where` holds all replaced by `reduce` over them (without a synchronisation)."""
    return torch.where(where, reduce(per_octave.where(where, 0.0)), per_octave)


def _room_by_octave(errors: Callable[[int, int], tuple[torch.Tensor, ...]], spans: list[tuple[int, int]],
                    octaves: _Octaves, outlier_cap: float, device: torch.device) -> torch.Tensor:
    """Per octave of the float64 value: SLACK x the reference's worst error within ROOM_OCTAVES of it,
    where the candidate is as accurate as the reference there (AS_ACCURATE, as sums of squared errors
    over the same elements), 0 elsewhere. A reference error counts as at most `outlier_cap` in both,
    so that a flip licenses a few elements at its size, not an octave. Octaves around zero pool first
    (ROOM_OCTAVES says why)."""
    count, worst, reference_sq, candidate_sq = (torch.zeros(octaves.count, dtype=torch.float64, device=device)
                                                for _ in range(4))
    for a, b in spans:
        x64, r, d, _ = errors(a, b)
        octave = octaves.index(x64)
        r = r.clamp_(max=outlier_cap)
        count.index_add_(0, octave, torch.ones_like(r))
        worst.scatter_reduce_(0, octave, r, reduce="amax")
        reference_sq.index_add_(0, octave, r.square_())
        candidate_sq.index_add_(0, octave, d.square_())  # a NaN the candidate returned: not as accurate anywhere near
    # From zero up, every octave that the room of the worst error at or below it reaches down to
    # (or that holds nothing) is rounding around zero: those pool.
    smallest = 2.0 ** torch.arange(octaves.lowest, octaves.highest + 1, dtype=torch.float64, device=device)
    reached = (SLACK * torch.cummax(worst, 0).values >= smallest) | (count == 0)
    reached[0] = True
    around_zero = torch.cumprod(reached.long(), 0) > 0
    worst = _pooled(worst, around_zero, torch.max)
    reference_sq, candidate_sq = (_pooled(t, around_zero, torch.sum) for t in (reference_sq, candidate_sq))
    as_accurate = (_with_neighbours(candidate_sq, torch.add)
                   <= AS_ACCURATE ** 2 * _with_neighbours(reference_sq, torch.add))
    return _with_neighbours(worst, torch.maximum).mul_(SLACK).masked_fill_(~as_accurate, 0.0)


def _close_leaf(name: str, e: torch.Tensor, g: torch.Tensor, atol: float, rtol: float,
                x: torch.Tensor | None = None,
                conditioning: Callable[[], torch.Tensor | None] | None = None) -> tuple[Comparison, bool]:
    """One floating output against the tolerance, in float64, chunk by chunk on
    its own device, with one synchronisation at the end; with `x`, the
    reference's float64 output, against the accuracy rules too, and with
    `conditioning` (called only when an element is past the tolerance), each
    element's conditioning (COND_SLACK). Returns the comparison and whether a
    zero output would also pass."""
    ef, gf = _flat(e), _flat(g)
    xf = _flat(x) if x is not None else None
    shape, n = tuple(e.shape), e.numel()

    def judge(a: int, b: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        e64, g64 = ef[a:b].double(), gf[a:b].double()
        same_inf = torch.isinf(e64) & (e64 == g64)
        diff = (g64 - e64).abs().masked_fill_(same_inf, 0.0)
        # An infinite reference element allows only the same infinity (rtol * inf would allow anything).
        allowed = e64.abs().mul_(rtol).add_(atol).masked_fill_(torch.isinf(e64), 0.0)
        bad = ~(diff <= allowed)  # NaN anywhere compares False, so it is bad
        return diff, allowed, bad & ~same_inf

    def errors(a: int, b: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(x, |reference - x|, |candidate - x|, where both x and the reference are finite), in float64."""
        x64, e64, g64 = xf[a:b].double(), ef[a:b].double(), gf[a:b].double()
        finite = torch.isfinite(x64) & torch.isfinite(e64)
        return (x64.where(finite, 0.0), (e64 - x64).abs().where(finite, 0.0),
                (g64 - x64).abs().where(finite, 0.0), finite)

    zero = torch.zeros((), dtype=torch.float64, device=e.device)
    top, total, finite_n, bad_n, zero_fails = zero.clone(), zero.clone(), zero.clone(), zero.clone(), zero.clone()
    sx2, sr2, sd2, worst, counted = zero.clone(), zero.clone(), zero.clone(), zero.clone(), zero.clone()
    for a, b in _spans(shape, n):
        diff, allowed, bad = judge(a, b)
        finite = torch.isfinite(diff)
        kept = diff.where(finite, zero)
        top = torch.maximum(top, kept.max())
        total += kept.sum()
        finite_n += finite.sum()
        bad_n += bad.sum()
        zero_fails += (ef[a:b].double().abs() > allowed).sum()
        del diff, allowed, bad, finite, kept
        if xf is not None:
            x64, r, d, both_finite = errors(a, b)
            counted += both_finite.sum()
            sx2 += x64.square().sum()
            sr2 += r.square().sum()
            sd2 += d.square().sum()  # a NaN or inf the candidate returned makes its error NaN or inf
            worst = torch.maximum(worst, r.max())
            del x64, r, d, both_finite
    stats = torch.stack([top, total, finite_n, bad_n, zero_fails, sx2, sr2, sd2, worst, counted]).tolist()
    top_v, total_v, finite_v, bad_v, zero_fails_v, sx2_v, sr2_v, sd2_v, worst_v, counted_v = stats
    err = top_v if finite_v else float("inf")
    mean = total_v / finite_v if finite_v else float("nan")
    near_zero = zero_fails_v == 0
    accuracy = None
    if xf is not None and sx2_v > 0:
        scale = math.sqrt(sx2_v)
        cand = math.sqrt(sd2_v) / scale if math.isfinite(sd2_v) else float("inf")
        half = e.dtype in (torch.float16, torch.bfloat16)
        units = FEW_FLOOR_ROUNDOFF if n < FEW_ELEMENTS else HALF_FLOOR_ROUNDOFF if half else FLOOR_ROUNDOFF
        floor = units * _roundoff(e.dtype)
        accuracy = _Accuracy(math.sqrt(sr2_v) / scale, cand, floor, worst_v, math.sqrt(sr2_v / counted_v),
                             half_precision=half,
                             output_rms=math.sqrt(sx2_v / counted_v))

    def result(ok: bool, feedback: str, by_accuracy: bool = False) -> tuple[Comparison, bool]:
        cmp = Comparison(ok, err, mean if finite_v else 0.0, feedback, by_accuracy=by_accuracy)
        if accuracy is not None:
            cmp.reference_error, cmp.candidate_error = accuracy.reference_error, accuracy.candidate_error
        return cmp, near_zero

    if not bad_v and accuracy is not None and accuracy.less_accurate:
        # Within the tolerance, yet far less accurate than the reference: a lower-precision path.
        return result(False, (
            f"{name} is less accurate than the reference, although within atol={atol:g}, rtol={rtol:g} of it: "
            f"{accuracy.describe()}; more than {LESS_ACCURATE:g}x is what TF32, fp16 or bf16 arithmetic on a "
            f"{str(e.dtype).replace('torch.', '')} task gives: compute and accumulate in the task's precision"))
    if not bad_v:
        return result(True, "outputs match")
    if accuracy is not None and accuracy.as_accurate:
        allowance = accuracy.allowance
        value_share = min(ROOM_OF_VALUE, ROOM_OF_VALUE_RTOLS * rtol)
        units, cf = 0.0, None
        octaves = _Octaves.of(e.dtype, atol)
        room_by_octave = torch.zeros(octaves.count, dtype=torch.float64, device=e.device)
        if accuracy.trusted:
            # the reference's own errors at each magnitude (ROOM_OCTAVES): rounding only where it is trusted
            room_by_octave = _room_by_octave(errors, _spans(shape, n), octaves, accuracy.outlier_cap(), e.device)
            # Elements the absolute room does not cover may pass by their conditioning (COND_SLACK).
            cond = conditioning() if conditioning is not None else None
            cf = _flat(cond) if cond is not None and tuple(cond.shape) == shape else None
            units = _excess_units(cf, errors, shape, n, atol, rtol) if cf is not None else 0.0

        def still_bad(a: int, b: int) -> torch.Tensor:
            _, _, bad = judge(a, b)
            x64, _, d, finite = errors(a, b)
            magnitude = x64.abs()
            tol = magnitude.mul(rtol).add_(atol)
            # the absolute room, never past a share of an element's own value (ROOM_OF_VALUE) nor
            # the reference's own errors at its magnitude (ROOM_OCTAVES), whichever is larger
            cap = torch.maximum(magnitude.mul_(value_share), room_by_octave[octaves.index(x64)])
            near_exact = (d <= tol + allowance) & ((d <= tol) | (d < cap))
            if units:
                near_exact |= d <= tol + COND_SLACK * units * cf[a:b].double()
            return bad & ~(finite & near_exact)

        if not int(sum(still_bad(a, b).sum() for a, b in _spans(shape, n))):
            return result(True, f"outputs match within the tolerance of the reference run in float64, which the "
                                f"reference itself misses ({accuracy.describe()})", by_accuracy=True)
    bad_count = int(bad_v)
    nan_count = int(sum(torch.isnan(gf[a:b]).sum() for a, b in _spans(shape, n)))
    first = _first_bad(lambda a, b: judge(a, b)[2], shape, n)
    text = (
        f"{name} differs beyond atol={atol:g}, rtol={rtol:g}: {bad_count} of {n} elements "
        f"({100.0 * bad_count / n:.2f}%) are wrong; max abs error {err:.4g}, mean abs error {mean:.4g}"
    )
    if nan_count:
        text += f"; {nan_count} NaN value(s) in the output (NaN never passes)"
    where = _where(lambda a, b: judge(a, b)[2], shape, n)
    text += f"; {where}; expected {float(ef[first]):.6g}, got {float(gf[first]):.6g} there"
    if accuracy is not None:
        text += f"; {accuracy.describe()}"
    return result(False, text)


def _excess_units(cond: torch.Tensor, errors: Callable, shape: tuple[int, ...], n: int, atol: float,
                  rtol: float) -> float:
    """The reference's worst excess over the tolerance of the float64 output, in units of each
    element's conditioning (`cond`, flat), over its elements with a measured conditioning; 0 where
    it has none."""
    worst = 0.0
    for a, b in _spans(shape, n):
        x64, r, _, finite = errors(a, b)
        c = cond[a:b].double()
        excess = r - x64.abs().mul_(rtol).add_(atol)
        past = finite & (excess > 0) & (c > 0)  # unmeasured ones (a flip) explain nothing
        if bool(past.any()):
            worst = max(worst, float((excess / c)[past].max()))
    return worst if math.isfinite(worst) else 0.0


def compare(
    expected: Any,
    got: Any,
    tolerance: tuple[float, float] | None = None,
    exact: Any = None,
    conditioning: Callable[[], Any] | None = None,
) -> Comparison:
    """Outputs against the reference's: same structure, shapes, dtypes and device
    type; integers exact, floats within `tolerance` (or the dtype's default).
    With `exact`, the reference's outputs computed in float64 on the same
    inputs, floating outputs are also judged by their accuracy (module docstring);
    with `conditioning`, a call that returns each output's per-element conditioning
    in `exact`'s structure (None where unmeasured), elements past the tolerance by
    theirs (COND_SLACK). It is called at most once, and only if an element is past."""
    exp_leaves, got_leaves = flatten(expected), flatten(got)
    if len(exp_leaves) != len(got_leaves):
        return Comparison(False, feedback=f"expected {len(exp_leaves)} output tensor(s), got {len(got_leaves)}")
    exact_leaves = flatten(exact) if exact is not None else []
    if len(exact_leaves) != len(exp_leaves):
        exact_leaves = [None] * len(exp_leaves)
    max_err, mean_errs, near_zero, by_accuracy = 0.0, [], True, False
    ref_errs, cand_errs = [], []

    @functools.cache  # measured at most once, and only when a leaf asks
    def measured() -> list[Any]:
        leaves = flatten(conditioning()) if conditioning is not None else []
        return leaves if len(leaves) == len(exp_leaves) else [None] * len(exp_leaves)

    def leaf_conditioning(i: int) -> Callable[[], torch.Tensor | None] | None:
        if conditioning is None:
            return None

        def get() -> torch.Tensor | None:
            c = measured()[i]
            return c if isinstance(c, torch.Tensor) and not c.is_complex() else None
        return get

    for i, (e, g, x) in enumerate(zip(exp_leaves, got_leaves, exact_leaves)):
        name = f"output {i}" if len(exp_leaves) > 1 else "output"
        if not isinstance(g, torch.Tensor):
            return Comparison(False, feedback=f"{name} is a {type(g).__name__}, expected a tensor")
        if tuple(g.shape) != tuple(e.shape):
            return Comparison(False, feedback=f"{name} has shape {tuple(g.shape)}, expected {tuple(e.shape)}")
        if g.dtype != e.dtype:
            return Comparison(False, feedback=f"{name} has dtype {g.dtype}, expected {e.dtype}")
        if g.device.type != e.device.type:
            return Comparison(False, feedback=f"{name} is on {g.device}, expected {e.device}")
        if not (e.is_floating_point() or e.is_complex()):
            failed = _exact_leaf(name, e, g)
            if failed is not None:
                return failed
            near_zero = False
            continue
        x = x if _usable_exact(x, e) else None
        if e.is_complex():
            e, g = torch.view_as_real(e), torch.view_as_real(g)
            x = torch.view_as_real(x) if x is not None and x.is_complex() else None
        atol, rtol = tolerance_for(e.dtype, tolerance)
        cmp, zero_passes = _close_leaf(name, e, g, atol, rtol, x, None if e.is_complex() else leaf_conditioning(i))
        if cmp.reference_error is not None:
            ref_errs.append(cmp.reference_error)
            cand_errs.append(cmp.candidate_error)
        if not cmp.ok:
            return Comparison(False, max(max_err, cmp.max_abs_error), cmp.mean_abs_error, cmp.feedback,
                              reference_error=cmp.reference_error, candidate_error=cmp.candidate_error)
        max_err = max(max_err, cmp.max_abs_error)
        mean_errs.append(cmp.mean_abs_error)
        near_zero = near_zero and zero_passes
        by_accuracy = by_accuracy or cmp.by_accuracy
    mean = sum(mean_errs) / len(mean_errs) if mean_errs else 0.0
    feedback = "outputs match" + (" within the tolerance of the reference run in float64" if by_accuracy else "")
    return Comparison(True, max_err, mean, feedback, near_zero=near_zero,
                      reference_error=max(ref_errs) if ref_errs else None,
                      candidate_error=max(cand_errs) if cand_errs else None, by_accuracy=by_accuracy)


def _usable_exact(x: Any, e: torch.Tensor) -> bool:
    """A float64 output to judge `e`'s accuracy by: same shape and device, and `e` not float64 itself."""
    return (isinstance(x, torch.Tensor) and tuple(x.shape) == tuple(e.shape) and x.device.type == e.device.type
            and (x.is_floating_point() or x.is_complex()) and e.dtype not in (torch.float64, torch.complex128))


def poison_(out: Any) -> None:
    """Overwrite output memory so a re-run that skips writing any element shows it."""
    for leaf in flatten(out):
        if isinstance(leaf, torch.Tensor):
            with torch.no_grad():
                if leaf.is_floating_point():
                    leaf.fill_(float("nan"))
                elif leaf.dtype == torch.bool:
                    leaf.logical_not_()
                else:
                    leaf.fill_(torch.iinfo(leaf.dtype).max if leaf.dtype != torch.bool else 1)
