"""How a traced plan maps onto one Ascend C kernel: the role of each input,
the domain of each value, and whether the kernel splits rows or elements.

A kernel sees its data as a matrix of ``rows`` x ``cols`` (``cols`` is the
reduced group for the rows family, the last dim for an elementwise chain with
a broadcast row vector, all elements for a plain elementwise chain). Values
live in one of four domains:

- ``full``: a tile of the matrix (rows at a 32-byte aligned pitch in UB);
- ``col``: a vector along the columns, the same for every row (a weight);
- ``row``: one value per row (a reduction and what is computed from it);
- ``scalar``: a C++ float (a constant, a runtime argument, a 1-element input).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from evokernel.builtin import Plan

from ._lower import LoweringError

__all__ = ["Layout", "layout_of", "REDUCE_KINDS"]

REDUCE_KINDS = {"sum": ("ReduceSum", "Add"), "max": ("ReduceMax", "Max"), "min": ("ReduceMin", "Min")}


@dataclass
class Layout:
    split: str  # "elements" (one long row split over cores) or "rows"
    full: list[str]  # leaves read as tiles
    col: list[str]  # leaves broadcast over rows (a vector along the columns)
    scalar_leaves: list[str]  # 1-element inputs read once with GetValue
    domain: dict[int, str]  # node id -> full | col | row | scalar
    reductions: list[int]  # reduce node ids, in graph order
    stat_slot: dict[int, int]  # row-domain node id -> stat slot
    out_domain: str
    group_dims: int = 1  # trailing dims that make up one row (rows family)
    notes: list[str] = field(default_factory=list)

    @property
    def n_stats(self) -> int:
        return len(self.stat_slot)


def _padded(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(shape)) + tuple(shape)


def layout_of(plan: Plan) -> Layout:
    """The kernel layout of a plan; raises LoweringError outside what the templates cover."""
    if plan.family not in ("elementwise", "rows"):
        raise LoweringError(f"the {plan.family} family has no Ascend C vector template (elementwise chains and "
                            "row reductions do; matmuls go to the cube template)")
    if plan.family == "elementwise":
        full_shape = tuple(plan.out_spec.shape)
        group_dims = 1
    else:
        group = plan.reduce
        if group is None or group.stop != group.rank:
            raise LoweringError("only reductions over the trailing dims are covered "
                                "(a reduction over leading dims would read columns with strided copies)")
        full_shape = tuple(group.full_shape)
        group_dims = group.stop - group.start
    rank = len(full_shape)
    full, col, scal = [], [], []
    for leaf in plan.leaves:
        if leaf.spec.dtype not in ("float32", "float16"):
            raise LoweringError(f"input {leaf.name} is {leaf.spec.dtype}; the templates take float32 and float16")
        shape = _padded(leaf.spec.shape, rank) if len(leaf.spec.shape) <= rank else None
        if shape == full_shape:
            full.append(leaf.name)
        elif math.prod(leaf.spec.shape) == 1:
            scal.append(leaf.name)
        elif shape is not None and rank >= 2 and all(s == 1 for s in shape[:rank - group_dims]) \
                and shape[rank - group_dims:] == full_shape[rank - group_dims:]:
            col.append(leaf.name)
        else:
            raise LoweringError(f"input {leaf.name} of shape {tuple(leaf.spec.shape)} broadcasts against "
                                f"{full_shape} in a way the templates do not cover (per-row or middle-dim broadcast)")
    if not full:
        raise LoweringError("no input has the full shape of the computation")

    domain: dict[int, str] = {}
    leaf_dom = {n: "full" for n in full} | {n: "col" for n in col} | {n: "scalar" for n in scal}

    def dom(ref) -> str:
        if ref.kind == "leaf":
            return leaf_dom[ref.value]
        if ref.kind == "node":
            return domain[ref.value]
        return "scalar"  # const, scalar argument, rsize

    reductions, stat_slot = [], {}
    for node in plan.nodes:
        if node.op == "matmul":  # pragma: no cover - matmul plans are rejected above
            raise LoweringError("matmul is not covered")
        if node.op == "reduce":
            kind = node.attr("kind")
            if kind not in REDUCE_KINDS:
                raise LoweringError(f"reduction {kind} is not covered (sum, max, min and what derives from them)")
            if dom(node.args[0]) != "full":
                raise LoweringError("a reduction must read a full tile")
            domain[node.id] = "row"
            reductions.append(node.id)
        else:
            ds = {dom(a) for a in node.args} - {"scalar"}
            if not ds:
                domain[node.id] = "scalar"
            elif "full" in ds or ds == {"col", "row"}:
                domain[node.id] = "full"
            elif ds == {"col"}:
                domain[node.id] = "col"
            else:
                domain[node.id] = "row"
        if domain[node.id] == "row":
            stat_slot[node.id] = len(stat_slot)
    out = plan.output
    if out.kind != "node":
        raise LoweringError("the output is an input unchanged: nothing to compute")
    out_domain = domain[out.value]
    if out_domain not in ("full", "row"):
        raise LoweringError(f"an output in the {out_domain} domain is not covered")
    if plan.family == "rows" and out_domain == "full" and tuple(plan.out_spec.shape) != full_shape:
        raise LoweringError("the output's shape is neither the input's nor the reduced one")
    split = "elements" if plan.family == "elementwise" and not col else "rows"
    if split == "elements" and scal and rank == 0:
        raise LoweringError("0-dim outputs are not covered")
    return Layout(split=split, full=full, col=col, scalar_leaves=scal, domain=domain, reductions=reductions,
                  stat_slot=stat_slot, out_domain=out_domain, group_dims=group_dims)
