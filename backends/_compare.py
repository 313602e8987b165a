"""Correctness: compare a candidate's outputs with the reference's, and say
where and by how much they differ in words an LLM can act on."""

from __future__ import annotations

import dataclasses
from typing import Any

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


def tolerance_for(dtype: torch.dtype, override: tuple[float, float] | None) -> tuple[float, float]:
    if override is not None:
        return override
    return DEFAULT_TOLERANCE.get(dtype, (1e-4, 1e-4))


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


def _where(bad: torch.Tensor) -> str:
    """Describe the mismatch pattern: first bad index and which rows/columns."""
    shape = tuple(bad.shape)
    flat = bad.reshape(-1)
    first = int(torch.nonzero(flat, as_tuple=False)[0, 0])
    idx = list(torch.unravel_index(torch.tensor(first), shape)) if shape else []
    parts = [f"first mismatch at index {tuple(int(i) for i in idx)}"]
    if bad.dim() >= 2:
        rows = bad.reshape(-1, shape[-1]).any(dim=1)
        cols = bad.reshape(-1, shape[-1]).any(dim=0)
        bad_rows = torch.nonzero(rows).flatten().tolist()
        bad_cols = torch.nonzero(cols).flatten().tolist()
        parts.append(f"rows (flattened leading dims) with errors: {_ranges(bad_rows)} of {rows.numel()}")
        parts.append(f"last-dim columns with errors: {_ranges(bad_cols)} of {shape[-1]}")
    elif bad.dim() == 1:
        parts.append(f"bad positions: {_ranges(torch.nonzero(flat).flatten().tolist())} of {shape[0]}")
    return "; ".join(parts)


def compare(expected: Any, got: Any, tolerance: tuple[float, float] | None = None) -> Comparison:
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
        g_cpu, e_cpu = g.detach().cpu(), e.detach().cpu()
        if not (e.is_floating_point() or e.is_complex()):
            bad = g_cpu != e_cpu
            if bool(bad.any()):
                n = int(bad.sum())
                return Comparison(False, feedback=f"{name} ({e.dtype}) must match exactly; {n} of {e.numel()} elements differ; {_where(bad)}")
            near_zero = False
            continue
        atol, rtol = tolerance_for(e.dtype, tolerance)
        e64, g64 = e_cpu.double(), g_cpu.double()
        finite_match = torch.isinf(e64) & (e64 == g64)
        diff = (g64 - e64).abs()
        diff = torch.where(finite_match, torch.zeros_like(diff), diff)
        allowed = atol + rtol * e64.abs()
        bad = ~(diff <= allowed)  # NaN anywhere compares False, so it is bad
        bad = bad & ~finite_match
        finite = diff[torch.isfinite(diff)]
        err = float(finite.max()) if finite.numel() else float("inf")
        max_err = max(max_err, err if not torch.isnan(diff).any() else float("nan"))
        if finite.numel():
            mean_errs.append(float(finite.mean()))
        # Would an all-zero output pass? Then this task cannot tell a kernel from a no-op.
        if not bool((e64.abs() <= allowed).all()):
            near_zero = False
        if bool(bad.any()):
            n = int(bad.sum())
            nan_count = int(torch.isnan(g64).sum())
            first = int(torch.nonzero(bad.reshape(-1))[0, 0])
            text = (
                f"{name} differs beyond atol={atol:g}, rtol={rtol:g}: {n} of {e.numel()} elements "
                f"({100.0 * n / e.numel():.2f}%) are wrong; max abs error {err:.4g}, mean abs error "
                f"{(float(finite.mean()) if finite.numel() else float('nan')):.4g}"
            )
            if nan_count:
                text += f"; {nan_count} NaN value(s) in the output (NaN never passes)"
            text += f"; {_where(bad)}; expected {float(e64.reshape(-1)[first]):.6g}, got {float(g64.reshape(-1)[first]):.6g} there"
            return Comparison(False, max_err, sum(mean_errs) / max(len(mean_errs), 1), text)
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
