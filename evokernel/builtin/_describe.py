"""describe(plan): a short text used as the retrieval key of a task."""

from __future__ import annotations

import math

from ._ir import Plan

__all__ = ["describe", "pattern"]


def pattern(plan: Plan) -> str:
    """A coarse name for what the graph computes (words BM25 can match)."""
    ops = set(plan.ops)
    if plan.family == "matmul":
        mm = plan.node(plan.matmul_id)
        rhs = plan.leaf(mm.args[1].value)
        kind = "linear" if rhs.source.endswith(".t()") else "bmm" if len(mm.shape) > 2 else "matmul"
        epilogue = [op for op in plan.ops if op != "matmul"]
        return f"{kind} with epilogue {'+'.join(epilogue)}" if epilogue else kind
    if plan.family == "rows":
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
    return f"pointwise chain of {len(plan.ops)} ops"


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
    lines.append(f"output: {plan.out_spec.text()}")
    return "\n".join(lines)
