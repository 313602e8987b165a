"""describe(plan): a short text used as the retrieval key of a task."""

from __future__ import annotations

import math

from ._families import family
from ._ir import Plan

__all__ = ["describe", "pattern"]


def pattern(plan: Plan) -> str:
    """A coarse name for what the graph computes (words BM25 can match)."""
    if plan.family == "pipeline":
        return "pipeline: " + " -> ".join(pattern(stage) for stage in plan.stages)
    named = family(plan.family).pattern
    return named(plan) if named is not None else f"pointwise chain of {len(plan.ops)} ops"


def host_pattern(plan: Plan) -> str:
    op = plan.node(plan.anchor_id).op
    return {"cat": "concatenation", "libconv": "library convolution", "libmm": "library matmul"}.get(op, op)


def matmul_pattern(plan: Plan) -> str:
    mm = plan.node(plan.matmul_id)
    rhs = plan.leaf(mm.args[1].value)
    linear = rhs.source.endswith((".t()", ".transpose(-2, -1)")) and len(rhs.spec.shape) == 2
    kind = "linear" if linear else "bmm" if len(mm.shape) > 2 else "matmul"
    return _with_epilogue(plan, kind, "matmul")


def conv_pattern(plan: Plan) -> str:
    conv = plan.node(plan.anchor_id)
    kind = f"conv{'_transpose' if conv.attr('transposed') else ''}{conv.attr('nd')}d"
    if conv.attr("groups") > 1:
        kind += " depthwise" if conv.attr("groups") == conv.shape[1] else " grouped"
    return _with_epilogue(plan, kind, "conv")


def pool_pattern(plan: Plan) -> str:
    pool = plan.node(plan.anchor_id)
    kind = f"{'adaptive ' if pool.attr('adaptive') else ''}{pool.attr('kind')}_pool{pool.attr('nd')}d"
    return _with_epilogue(plan, kind, "pool")


def scan_pattern(plan: Plan) -> str:
    scan = plan.node(plan.anchor_id)
    kind = f"{'reverse ' if scan.attr('reverse') else ''}cum{scan.attr('kind')}"
    return _with_epilogue(plan, kind, "scan")


def rows_pattern(plan: Plan) -> str:
    ops = set(plan.ops)
    if "reduce_argmax" in ops or "reduce_argmin" in ops:
        return "argmax" if "reduce_argmax" in ops else "argmin"
    if "rsqrt" in ops and plan.ops.count("reduce_sum") >= 2 and "sub" in ops:
        return "layernorm"
    if "rsqrt" in ops and ("square" in ops or "powc" in ops):
        return "rmsnorm"
    if {"reduce_max", "exp", "reduce_sum"} <= ops:
        if plan.out_spec.shape != plan.reduce.full_shape:
            return "logsumexp"
        return "log_softmax" if "log" in ops and "div" not in ops else "softmax"
    kinds = sorted({op[7:] for op in ops if op.startswith("reduce_")})
    return f"row reduction ({', '.join(kinds)})"


def _with_epilogue(plan: Plan, kind: str, anchor: str) -> str:
    epilogue = [op for op in plan.ops if op != anchor]
    return f"{kind} with epilogue {'+'.join(epilogue)}" if epilogue else kind


def describe(plan: Plan) -> str:
    lines = [f"family: {plan.family}; pattern: {pattern(plan)}",
             f"ops: {', '.join(plan.ops)}"]
    if plan.reduce is not None:
        g = plan.reduce
        width = math.prod(g.full_shape[g.start:g.stop])
        lines.append(f"reduce dims [{g.start}, {g.stop}) of {list(g.full_shape)} (row width {width}, "
                     f"{'last dim' if g.stop == g.rank else 'strided'})")
    inputs = ", ".join(f"{leaf.source} {leaf.spec.text()}" for leaf in plan.leaves)
    lines.append(f"operands: {inputs}")
    if plan.returns is None:
        lines.append(f"output: {plan.out_spec.text()}")
    else:
        lines.append(f"outputs: {', '.join(t.spec.text() for t in plan.returns.tensors())}")
    if plan.family == "pipeline":
        lines.append(f"stages: {len(plan.stages)}, configured: stage {plan.main} ({plan.main_stage.family})")
    return "\n".join(lines)
