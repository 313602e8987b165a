"""What both handler tables share: argument binding, the softmax and norm
decompositions, and matmul with the views it takes.

`_canon` (functions, Tensor methods, the common nn modules) and `_canon_nn`
(convolution, pooling, norms, scans, losses...) both lower through these; this
module imports neither.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._build import ComputedView, PyVal, Reject
from ._ir import Ref, TensorSpec

RSIZE = Ref("rsize", None)  # number of reduced elements, a runtime value inside the kernel


def _bind(args, kwargs, names: list[str], defaults: dict | None = None) -> dict:
    defaults = defaults or {}
    if len(args) > len(names):
        raise Reject(f"too many positional arguments for ({', '.join(names)})")
    bound = dict(defaults)
    bound.update(zip(names, args))
    for key, value in kwargs.items():
        if key in ("inplace", "out", "_stacklevel", "memory_format"):
            continue
        if key not in names and key not in defaults:
            if value is None:  # an optional argument left at its default (torch adds new ones, e.g. weight)
                continue
            raise Reject(f"unsupported keyword argument {key}")
        bound[key] = value
    return bound


def _static(value, what: str):
    """A value that must be known when the kernel is generated."""
    if isinstance(value, PyVal) and value.value is not None:
        return value.value  # a size seen while tracing: baked into the kernel
    if isinstance(value, (tuple, list)):
        return type(value)(_static(v, what) for v in value)
    if isinstance(value, (Ref, PyVal, ComputedView)):
        raise Reject(f"{what} must be a Python constant, not a runtime value")
    return value


def _dims(value, rank: int) -> tuple[int, ...]:
    value = _static(value, "reduction dim")
    if value is None or value == () or value == []:
        return tuple(range(rank))
    if isinstance(value, int):
        return (value,)
    return tuple(value)


def _row_max(ctx, x, dims):
    return ctx.b.reduce("max", x, dims, True)


def _softmax_parts(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "dim", "dtype"], {"dim": None, "dtype": None})
    if a["dim"] is None:
        raise Reject("softmax without an explicit dim")
    x = ctx.ref(a["input"])
    dims = _dims(a["dim"], len(ctx.b.shape(x)))
    shifted = ctx.b.pw("sub", x, _row_max(ctx, x, dims))
    total = ctx.b.reduce("sum", ctx.b.pw("exp", shifted), dims, True)
    return shifted, total


def _softmax(ctx, args, kwargs):
    shifted, total = _softmax_parts(ctx, args, kwargs)
    return ctx.b.pw("div", ctx.b.pw("exp", shifted), total)


def _norm_of(ctx, x, p, dims, keepdim):
    if p in (2, 2.0, "fro", None):
        return ctx.b.pw("sqrt", ctx.b.reduce("sum", ctx.b.pw("square", x), dims, keepdim))
    if p in (1, 1.0):
        return ctx.b.reduce("sum", ctx.b.pw("abs", x), dims, keepdim)
    if p == math.inf:
        return ctx.b.reduce("max", ctx.b.pw("abs", x), dims, keepdim)
    raise Reject(f"norm with p={p!r} is not supported")


# ---------------------------------------------------------------- matmul
@dataclass(frozen=True)
class Diag:
    """torch.diag(v) of a vector: only ever multiplied by a matrix (a scaling of rows or columns)."""

    vector: Ref


def round_half_even(b, x: Ref) -> Ref:
    """torch.round (and grid_sample's nearest): halves to the even neighbour (floor(x + 0.5), one
    less at an odd tie)."""
    half, one, two, zero = (Ref("const", v) for v in (0.5, 1.0, 2.0, 0.0))
    up = b.pw("floor", b.pw("add", x, half))
    tie = b.pw("eq", b.pw("sub", up, x), half)
    odd = b.pw("ne", b.pw("sub", up, b.pw("mul", b.pw("floor", b.pw("mul", up, half)), two)), zero)
    return b.pw("where", b.pw("mul", tie, odd), b.pw("sub", up, one), up)


def transposed(ctx, ref: Ref, d0: int = -2, d1: int = -1) -> Ref:
    """ref with two dims swapped: a view of an input, or of a computed value's buffer."""
    shape = list(ctx.b.shape(ref))
    d0, d1 = d0 % len(shape), d1 % len(shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    suffix = f".transpose({d0 - len(shape)}, {d1 - len(shape)})"
    if ref.kind == "leaf":
        leaf = ctx.b.leaf_by_name(ref.value)
        return ctx.b.leaf(leaf.source + suffix, TensorSpec(tuple(shape), leaf.spec.dtype), leaf.name + "_t")
    return ctx.b.view(ref, (suffix,), tuple(shape))


def unsqueezed(ctx, ref: Ref, dim: int) -> Ref:
    shape = list(ctx.b.shape(ref))
    dim = dim % (len(shape) + 1)
    shape.insert(dim, 1)
    if ref.kind == "leaf":
        leaf = ctx.b.leaf_by_name(ref.value)
        return ctx.b.leaf(f"{leaf.source}.unsqueeze({dim})", TensorSpec(tuple(shape), leaf.spec.dtype), leaf.name + "_u")
    return ctx.b.view(ref, (f".unsqueeze({dim})",), tuple(shape))


def matmul(ctx, a: Ref, b: Ref) -> Ref:
    """torch.matmul. A product with one output column (or row) is a reduction, so it
    runs as a bandwidth-bound row kernel rather than a tiled matmul."""
    if isinstance(a, Diag):
        return ctx.b.pw("mul", unsqueezed(ctx, a.vector, -1), ctx.ref(b))
    if isinstance(b, Diag):
        return ctx.b.pw("mul", ctx.ref(a), b.vector)
    a, b = ctx.ref(a), ctx.ref(b)
    sa, sb = ctx.b.shape(a), ctx.b.shape(b)
    if not sa or not sb:
        raise Reject("matmul of a 0-dim value")
    if len(sb) == 1:  # (..., M, K) @ (K,) -> (..., M)
        return ctx.b.reduce("sum", ctx.b.pw("mul", a, b), (-1,), False)
    if len(sa) == 1:  # (K,) @ (..., K, N) -> (..., N)
        return ctx.b.reduce("sum", ctx.b.pw("mul", unsqueezed(ctx, a, -1), b), (-2,), False)
    if sa[-1] != sb[-2]:
        raise Reject(f"matmul shapes {sa} @ {sb} do not match")
    if sb[-1] == 1:  # matrix-vector: out[m] = sum_k a[m, k] * b[k]
        return ctx.b.reduce("sum", ctx.b.pw("mul", a, transposed(ctx, b)), (-1,), True)
    if sa[-2] == 1 and len(sa) == 2:  # vector-matrix: out[n] = sum_k a[k] * b[k, n]
        return ctx.b.reduce("sum", ctx.b.pw("mul", transposed(ctx, a), b), (-2,), True)
    return ctx.b.matmul(a, b)


def _norm_dims(ctx, x, normalized_shape):
    shape = ctx.b.shape(x)
    ns = _static(normalized_shape, "normalized_shape")
    ns = (ns,) if isinstance(ns, int) else tuple(ns)
    if tuple(shape[len(shape) - len(ns):]) != ns:
        raise Reject(f"normalized_shape {ns} does not match input shape {shape}")
    return tuple(range(len(shape) - len(ns), len(shape)))


def _affine(ctx, y, weight, bias):
    if weight is not None:
        y = ctx.b.pw("mul", y, ctx.ref(weight))
    if bias is not None:
        y = ctx.b.pw("add", y, ctx.ref(bias))
    return y


def _layer_norm_impl(ctx, x, normalized_shape, weight, bias, eps):
    x = ctx.ref(x)
    dims = _norm_dims(ctx, x, normalized_shape)
    mean = ctx.b.pw("div", ctx.b.reduce("sum", x, dims, True), RSIZE)
    centred = ctx.b.pw("sub", x, mean)
    var = ctx.b.pw("div", ctx.b.reduce("sum", ctx.b.pw("square", centred), dims, True), RSIZE)
    inv = ctx.b.pw("rsqrt", ctx.b.pw("add", var, Ref("const", float(_static(eps, "eps")))))
    return _affine(ctx, ctx.b.pw("mul", centred, inv), weight, bias)


def _any_leaf_source(ctx) -> str:
    """x.device of a computed x: every tensor of a task lives on one device."""
    return ctx.b.leaf_by_name(any_leaf(ctx).value).source


def any_leaf(ctx) -> Ref:
    """A forward input or parameter: the tensor whose device a value made from nothing takes."""
    for leaf in ctx.b.leaves.values():
        if leaf.source.isidentifier() or leaf.source.startswith("self."):
            return Ref("leaf", leaf.name)
    raise Reject("device of a computed value with no input to take it from")


def filled(ctx, shape: tuple[int, ...], value: float, dtype: str) -> Ref:
    """A constant block allocated in forward (a factory, allowed under every rule set)."""
    return ctx.b.leaf(_filled_source(ctx, shape, value, dtype), TensorSpec(tuple(shape), dtype), "pad_fill")


def _filled_source(ctx, shape: tuple[int, ...], value: float, dtype: str) -> str:
    return f"torch.full({tuple(shape)!r}, {value!r}, dtype=torch.{dtype}, device={_any_leaf_source(ctx)}.device)"


def is_zeros(ctx, ref: Ref) -> bool:
    """``ref`` is all zeros: a constant node of 0, or a block ``filled`` with 0 (zeros_like of a
    computed value, made so by ``materialized``)."""
    if ref.kind == "node":
        node = ctx.b.nodes[ref.value]
        return node.op == "full" and node.attr("value") == 0.0
    if ref.kind == "leaf":
        leaf = ctx.b.leaf_by_name(ref.value)
        return leaf.source == _filled_source(ctx, leaf.spec.shape, 0.0, leaf.spec.dtype)
    return False


def materialized(ctx, ref: Ref) -> Ref:
    """``ref`` as a tensor forward can hand over whole: a constant (zeros_like of a computed
    value) becomes a block allocated in forward instead of a kernel with no operand."""
    if ref.kind == "node" and ctx.b.nodes[ref.value].op == "full":
        node = ctx.b.nodes[ref.value]
        return filled(ctx, node.shape, node.attr("value"), ctx.b.dtypes[node.id])
    return ref
