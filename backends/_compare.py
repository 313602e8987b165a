"""Correctness: compare a candidate's outputs with the reference's, and say
where and by how much they differ in words an LLM can act on."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

DEFAULT_TOLERANCE = {
    torch.float32: (1e-4, 1e-4),
    torch.float64: (1e-6, 1e-6),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (1e-2, 1e-2),
}


@dataclasses.dataclass
class Comparison:
    ok: bool
    max_abs_error: float = 0.0
    mean_abs_error: float = 0.0
    feedback: str = ""
    near_zero: bool = False  # a constant zero output would also pass


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


def _close_leaf(name: str, e: torch.Tensor, g: torch.Tensor, atol: float, rtol: float) -> tuple[Comparison, bool]:
    """One floating output against the tolerance, in float64, chunk by chunk on
    its own device, with one synchronisation at the end. Returns the comparison
    and whether a zero output would also pass."""
    ef, gf = _flat(e), _flat(g)
    shape, n = tuple(e.shape), e.numel()

    def judge(a: int, b: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        e64, g64 = ef[a:b].double(), gf[a:b].double()
        same_inf = torch.isinf(e64) & (e64 == g64)
        diff = (g64 - e64).abs().masked_fill_(same_inf, 0.0)
        allowed = e64.abs().mul_(rtol).add_(atol)
        bad = ~(diff <= allowed)  # NaN anywhere compares False, so it is bad
        return diff, allowed, bad & ~same_inf

    zero = torch.zeros((), dtype=torch.float64, device=e.device)
    top, total, finite_n, bad_n, zero_fails = zero.clone(), zero.clone(), zero.clone(), zero.clone(), zero.clone()
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
    top_v, total_v, finite_v, bad_v, zero_fails_v = torch.stack([top, total, finite_n, bad_n, zero_fails]).tolist()
    err = top_v if finite_v else float("inf")
    mean = total_v / finite_v if finite_v else float("nan")
    near_zero = zero_fails_v == 0
    if not bad_v:
        return Comparison(True, err, mean if finite_v else 0.0, "outputs match"), near_zero
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
    return Comparison(False, err, mean if finite_v else 0.0, text), near_zero


def compare(
    expected: Any,
    got: Any,
    tolerance: tuple[float, float] | None = None,
) -> Comparison:
    """Outputs against the reference's: same structure, shapes, dtypes and device
    type; integers exact, floats within `tolerance` (or the dtype's default)."""
    exp_leaves, got_leaves = flatten(expected), flatten(got)
    if len(exp_leaves) != len(got_leaves):
        return Comparison(False, feedback=f"expected {len(exp_leaves)} output tensor(s), got {len(got_leaves)}")
    max_err, mean_errs, near_zero = 0.0, [], True
    for i, (e, g) in enumerate(zip(exp_leaves, got_leaves)):
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
        if e.is_complex():
            e, g = torch.view_as_real(e), torch.view_as_real(g)
        atol, rtol = tolerance_for(e.dtype, tolerance)
        cmp, zero_passes = _close_leaf(name, e, g, atol, rtol)
        if not cmp.ok:
            return Comparison(False, max(max_err, cmp.max_abs_error), cmp.mean_abs_error, cmp.feedback)
        max_err = max(max_err, cmp.max_abs_error)
        mean_errs.append(cmp.mean_abs_error)
        near_zero = near_zero and zero_passes
    mean = sum(mean_errs) / len(mean_errs) if mean_errs else 0.0
    return Comparison(True, max_err, mean, "outputs match", near_zero=near_zero)


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
