"""Lowering of torch calls (functions, Tensor methods, nn modules) to IR primitives.

Every supported call has a canonical name (``F.relu``, ``torch.relu``,
``Tensor.relu_`` and ``nn.ReLU`` all become "relu") and one handler that binds
its arguments the way torch does and emits primitives through the Builder.
Composite ops (softmax, layer_norm, linear...) are decomposed here, so code
generation only ever sees pointwise ops, reductions and one matmul.
"""

from __future__ import annotations

import math
import operator

import torch
import torch.nn as nn

from ._build import Builder, ComputedView, Flipped, PyVal, Reject, ValuesTuple, py_source
from ._canon_attn import ATTN_HANDLERS, attention_module
from ._canon_complex import COMPLEX_HANDLERS, REAL_FFT_HANDLERS, Complex, ComplexLeaf, complex_view, is_complex
from ._canon_index import INDEX_HANDLERS, embedding_rows, indexed, is_tensor_index
from ._canon_nn import NN_HANDLERS, call_nn_module
from ._canon_resample import RESAMPLE_HANDLERS, resample_module
from ._canon_route import ROUTE_HANDLERS, embedding_bag, shape_from_values
from ._canon_rnn import CELL_HANDLERS, rnn_module
from ._canon_select import pushed_pick
from ._canon_util import (RSIZE, _affine, _any_leaf_source, _bind, _dims, _layer_norm_impl, _norm_dims, _norm_of, _row_max,
                          _softmax, _softmax_parts, _static, matmul, round_half_even, transposed)
from ._ir import Ref, TensorSpec
from ._pointwise import POINTWISE

__all__ = ["Context", "call_function", "call_method", "call_module", "module_param", "VIEW_METHODS"]


class Context:
    """What a handler may need besides its arguments."""

    def __init__(self, builder: Builder, spec: TensorSpec | None, module_path: str = ""):
        self.b = builder
        self.spec = spec  # ShapeProp's result for the node being lowered (None if not a tensor)
        self.module_path = module_path

    def ref(self, value) -> Ref:
        if isinstance(value, Ref):
            return value
        if isinstance(value, PyVal):
            return Ref("scalar", value.source)
        if isinstance(value, bool):
            return Ref("const", float(value))
        if isinstance(value, (int, float)):
            return Ref("const", float(value))
        if isinstance(value, ComputedView):
            # the value is written to a buffer by its kernel; the view is taken of the buffer
            return self.b.view(value.base, value.suffixes, value.shape, value.extra)
        if isinstance(value, ValuesTuple):
            raise Reject("the (values, indices) tuple of max/min is used whole; only [0] and [1] are supported")
        if isinstance(value, Flipped):
            raise Reject("flip is supported only around a scan along the flipped dim (a reverse cumsum)")
        raise Reject(f"unsupported operand {value!r}")

    def is_tensor(self, value) -> bool:
        return isinstance(value, (Ref, ComputedView, Flipped, Complex, ComplexLeaf)) and not (
            isinstance(value, Ref) and value.kind in ("const", "scalar"))


# ---------------------------------------------------------------- pointwise
_UNARY = {
    "neg": "neg", "negative": "neg", "abs": "abs", "absolute": "abs", "exp": "exp", "log": "log",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "reciprocal": "reciprocal", "square": "square", "erf": "erf",
    "sin": "sin", "cos": "cos", "floor": "floor", "ceil": "ceil", "sign": "sign", "sigmoid": "sigmoid",
    "tanh": "tanh", "relu": "relu", "silu": "silu", "mish": "mish", "hardswish": "hardswish",
    "hardsigmoid": "hardsigmoid", "logsigmoid": "log_sigmoid",
}
_IDENTITY = {"clone", "contiguous", "detach", "identity", "alias"}
_COMPARE = {"gt": "gt", "greater": "gt", "ge": "ge", "greater_equal": "ge", "lt": "lt", "less": "lt",
            "le": "le", "less_equal": "le", "eq": "eq", "ne": "ne", "not_equal": "ne"}
_CASTS = {"float": "float32", "half": "float16", "bfloat16": "bfloat16", "double": "float64", "long": "int64",
          "int": "int32", "short": "int16", "bool": "bool"}
# integers are computed as exact floats (ids, positions, buckets: far below 2**24) and truncated
# toward zero where cast, as torch truncates; only where a buffer holds one is it stored as an integer
_INTS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


def _unary(op):
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input"])
        return ctx.b.pw(op, ctx.ref(a["input"]))
    return handler


def _logical_not(ctx, args, kwargs):
    """~mask and torch.logical_not: 1 where the value is 0 (a bitwise not of integers is not supported)."""
    a = _bind(args, kwargs, ["input"])
    if ctx.spec is None or ctx.spec.dtype != "bool":
        raise Reject("~ (bitwise not) of a non-boolean tensor is not supported")
    return ctx.b.pw("eq", ctx.ref(a["input"]), Ref("const", 0.0))


# and, or and xor of masks held as 0/1 values: (the primitive computing it, torch's operator)
_LOGICAL = {"and": ("mul", "&"), "or": ("maximum", "|"), "xor": ("ne", "^")}


def _logical(kind: str, bitwise: bool):
    """logical_and/or/xor of any values (nonzero is true) and &, |, ^ (bitwise_*) of bool masks:
    a bitwise operation of integers has no 0/1 form and says so."""
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "other"])
        x, y = ctx.ref(a["input"]), ctx.ref(a["other"])
        if bitwise:
            for operand in (x, y):
                if not (ctx.b.is_bool(operand) or (operand.kind == "const" and operand.value in (0.0, 1.0))):
                    raise Reject(f"bitwise_{kind} (the {symbol} operator) of a non-boolean tensor is not "
                                 "supported (of bool masks it is)")
        else:
            x, y = (ctx.b.pw("ne", v, Ref("const", 0.0)) for v in (x, y))
        return ctx.b.pw(primitive, x, y)
    primitive, symbol = _LOGICAL[kind]
    return handler


def _identity(ctx, args, kwargs):
    value = args[0]
    return value if isinstance(value, (Ref, ComputedView)) else ctx.ref(value)


def _contiguous(ctx, args, kwargs):
    """A view of a computed value stays a view until .contiguous() copies it: a later .view
    (channel shuffle's view, transpose, contiguous, view) needs that copy."""
    value = args[0]
    if isinstance(value, ComputedView):
        return ComputedView(value.base, value.suffixes + (".contiguous()",), value.shape, value.extra)
    if isinstance(value, Ref) and value.kind == "leaf" and not ctx.b.leaf_by_name(value.value).source.isidentifier():
        leaf = ctx.b.leaf_by_name(value.value)  # a view of an input: .contiguous() is a no-op when it is one
        return ctx.b.leaf(leaf.source + ".contiguous()", leaf.spec, leaf.name + "_c")
    return _identity(ctx, args, kwargs)


def _views(ctx, value, steps):
    """A chain of view methods ((method, args, result shape), ...) on a value, as forward would
    write them: of an input, views of it; of a computed value, views of its buffer (a reshape
    after a permute copies, in forward, as torch's own does)."""
    base = value.base if isinstance(value, ComputedView) else ctx.ref(value)
    dtype = ctx.b.dtype(base)  # a view keeps its tensor's dtype (not that of the op being lowered)
    for method, args, shape in steps:
        value = _apply_view(Context(ctx.b, TensorSpec(tuple(shape), dtype)), value, method, args, {})
    return value


def _shape_of(ctx, value) -> tuple[int, ...]:
    """A tensor value's shape: a view's or a complex value's own, else its node's or leaf's."""
    return tuple(value.shape if isinstance(value, (ComputedView, Complex, ComplexLeaf)) else ctx.b.shape(ctx.ref(value)))


def _view_as_complex(ctx, args, kwargs):
    """The last dim's pairs as complex values: its two halves, each a view keeping a size-1 pair axis."""
    x = args[0] if args else kwargs["input"]
    shape = _shape_of(ctx, x)
    if not shape or shape[-1] != 2:
        raise Reject("view_as_complex of a tensor whose last dim is not 2")
    if ctx.spec is not None and ctx.spec.dtype == "complex128":
        raise Reject("complex128 values are not supported")
    half = shape[:-1] + (1,)
    re, im = (ctx.ref(_views(ctx, x, [("narrow", (len(shape) - 1, k, 1), half)])) for k in (0, 1))
    return Complex(re, im, shape[:-1])


def _pair_axis(ctx, value):
    """A real operand beside complex ones, with the trailing size-1 pair axis they carry."""
    ref = ctx.ref(value)
    if ref.kind in ("const", "scalar"):
        return ref
    return ctx.ref(_views(ctx, ref, [("unsqueeze", (-1,), tuple(ctx.b.shape(ref)) + (1,))]))


def _pixel_shuffle(ctx, args, kwargs):
    """(..., C r^2, H, W) -> (..., C, H r, W r): sub-pixel convolution's rearrangement."""
    a = _bind(args, kwargs, ["input", "upscale_factor"])
    x, r = a["input"], int(_static(a["upscale_factor"], "upscale_factor"))
    *lead, c, h, w = _shape_of(ctx, x)
    n = len(lead)
    return _views(ctx, x, [
        ("reshape", (*lead, c // (r * r), r, r, h, w), (*lead, c // (r * r), r, r, h, w)),
        ("permute", (*range(n), n, n + 3, n + 1, n + 4, n + 2), (*lead, c // (r * r), h, r, w, r)),
        ("reshape", (*lead, c // (r * r), h * r, w * r), (*lead, c // (r * r), h * r, w * r))])


def _pixel_unshuffle(ctx, args, kwargs):
    """(..., C, H r, W r) -> (..., C r^2, H, W), the inverse."""
    a = _bind(args, kwargs, ["input", "downscale_factor"])
    x, r = a["input"], int(_static(a["downscale_factor"], "downscale_factor"))
    *lead, c, h, w = _shape_of(ctx, x)
    n = len(lead)
    return _views(ctx, x, [
        ("reshape", (*lead, c, h // r, r, w // r, r), (*lead, c, h // r, r, w // r, r)),
        ("permute", (*range(n), n, n + 2, n + 4, n + 1, n + 3), (*lead, c, r, r, h // r, w // r)),
        ("reshape", (*lead, c * r * r, h // r, w // r), (*lead, c * r * r, h // r, w // r))])


def _channel_shuffle(ctx, args, kwargs):
    """(N, C, *S) with C = g k -> channels reordered as (k, g): ShuffleNet's shuffle."""
    a = _bind(args, kwargs, ["input", "groups"])
    x, g = a["input"], int(_static(a["groups"], "groups"))
    n, c, *rest = _shape_of(ctx, x)
    return _views(ctx, x, [
        ("reshape", (n, g, c // g, *rest), (n, g, c // g, *rest)),
        ("transpose", (1, 2), (n, c // g, g, *rest)),
        ("reshape", (n, c, *rest), (n, c, *rest))])


def _glu(ctx, args, kwargs):
    """The first half of ``dim`` gated by the sigmoid of the second."""
    a = _bind(args, kwargs, ["input", "dim"], {"dim": -1})
    first, second = ATTN_HANDLERS["chunk"](ctx, [a["input"], 2, a["dim"]], {})
    return ctx.b.pw("mul", ctx.ref(first), ctx.b.pw("sigmoid", ctx.ref(second)))


def _c(value: float) -> Ref:
    return Ref("const", float(value))


def _round(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "decimals"], {"decimals": 0})
    if _static(a["decimals"], "decimals"):
        raise Reject("torch.round with decimals is not supported")
    return round_half_even(ctx.b, ctx.ref(a["input"]))


def _remainder(python: bool):
    """remainder (the divisor's sign, Python's %) and fmod (the dividend's sign, C's fmod)."""
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "other"])
        b, x, y = ctx.b, ctx.ref(a["input"]), ctx.ref(a["other"])
        q = b.pw("div", x, y)
        return b.pw("sub", x, b.pw("mul", y, b.pw("floor" if python else "trunc", q)))
    return handler


def _frac(ctx, args, kwargs):
    x = ctx.ref(args[0])
    return ctx.b.pw("sub", x, ctx.b.pw("trunc", x))


def _is_nan(b, x: Ref) -> Ref:
    return b.pw("ne", x, x)  # NaN alone differs from itself


def _isnan(ctx, args, kwargs):
    return _is_nan(ctx.b, ctx.ref(args[0] if args else kwargs["input"]))


def _isinf(ctx, args, kwargs):
    return ctx.b.pw("eq", ctx.b.pw("abs", ctx.ref(args[0] if args else kwargs["input"])), _c(math.inf))


def _isfinite(ctx, args, kwargs):
    return ctx.b.pw("lt", ctx.b.pw("abs", ctx.ref(args[0] if args else kwargs["input"])), _c(math.inf))


def _nan_to_num(ctx, args, kwargs):
    """NaN to `nan`, +-inf to `posinf`/`neginf`, which default to the dtype's largest finite values."""
    a = _bind(args, kwargs, ["input", "nan", "posinf", "neginf"], {"nan": 0.0, "posinf": None, "neginf": None})
    b, x = ctx.b, ctx.ref(a["input"])
    finfo = torch.finfo(getattr(torch, b.dtype(x) or "float32"))
    nan, posinf, neginf = (_static(a[k], k) for k in ("nan", "posinf", "neginf"))
    out = b.pw("where", _is_nan(b, x), _c(nan), x)
    out = b.pw("where", b.pw("eq", x, _c(math.inf)), _c(finfo.max if posinf is None else posinf), out)
    return b.pw("where", b.pw("eq", x, _c(-math.inf)), _c(finfo.min if neginf is None else neginf), out)


def _hypot(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "other"])
    x, y = ctx.ref(a["input"]), ctx.ref(a["other"])
    return ctx.b.pw("sqrt", ctx.b.pw("add", ctx.b.pw("square", x), ctx.b.pw("square", y)))


def _lerp(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "end", "weight"])
    x, end, w = ctx.ref(a["input"]), ctx.ref(a["end"]), ctx.ref(a["weight"])
    return ctx.b.pw("add", x, ctx.b.pw("mul", w, ctx.b.pw("sub", end, x)))


def _addc(op: str):
    """addcmul / addcdiv: input + value * (tensor1 op tensor2)."""
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "tensor1", "tensor2", "value"], {"value": 1})
        term = ctx.b.pw(op, ctx.ref(a["tensor1"]), ctx.ref(a["tensor2"]))
        return ctx.b.pw("add", ctx.ref(a["input"]), _scaled(ctx, term, a["value"]))
    return handler


def _outer(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "vec2"])
    x, y = ctx.ref(a["input"]), ctx.ref(a["vec2"])
    (n,), (m,) = ctx.b.shape(x), ctx.b.shape(y)
    return ctx.b.pw("mul", _views(ctx, x, [("unsqueeze", (1,), (n, 1))]),
                    _views(ctx, y, [("unsqueeze", (0,), (1, m))]))


def _any_all(kind: str):
    """any / all: a max / min of (x != 0), as 0.0 / 1.0."""
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "dim", "keepdim"], {"dim": None, "keepdim": False})
        nonzero = ctx.b.pw("ne", ctx.ref(a["input"]), _c(0))
        return _reduction("max" if kind == "any" else "min")(ctx, [nonzero, a["dim"], a["keepdim"]], {})
    return handler


def _diff(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "n", "dim", "prepend", "append"], {"n": 1, "dim": -1, "prepend": None,
                                                                        "append": None})
    if _static(a["n"], "n") != 1 or a["prepend"] is not None or a["append"] is not None:
        raise Reject("torch.diff with n > 1, prepend or append is not supported")
    x = a["input"]
    shape = _shape_of(ctx, x)
    dim = int(_static(a["dim"], "dim")) % len(shape)
    part = shape[:dim] + (shape[dim] - 1,) + shape[dim + 1:]
    later = _views(ctx, x, [("narrow", (dim, 1, shape[dim] - 1), part)])
    earlier = _views(ctx, x, [("narrow", (dim, 0, shape[dim] - 1), part)])
    return ctx.b.pw("sub", ctx.ref(later), ctx.ref(earlier))


def _one_hot(ctx, args, kwargs):
    """F.one_hot: (ids[..., None] == class index), int64 as torch gives it (a float, cast, where used)."""
    if ctx.spec is None:
        raise Reject("one_hot without a traced shape")
    ids = args[0] if args else kwargs["tensor"]
    shape = tuple(ctx.spec.shape)
    column = _views(ctx, ids, [("unsqueeze", (-1,), shape[:-1] + (1,))])
    hot = ctx.b.pw("eq", ctx.ref(column), ctx.b.iota(len(shape) - 1, (1,) * (len(shape) - 1) + shape[-1:]))
    return ctx.b.pw("cast", hot, dtype=ctx.spec.dtype)


def _new_factory(name: str):
    """x.new_zeros(size) and the like: torch.zeros(size) of x's dtype and device."""
    def handler(ctx, args, kwargs):
        kwargs = dict(kwargs)
        kwargs.setdefault("dtype", PyVal(f"{_any_leaf_source(ctx)}.dtype", None))
        return NN_HANDLERS[name](ctx, list(args[1:]), kwargs)
    return handler


def _binary(op):
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "other"])
        return ctx.b.pw(op, ctx.ref(a["input"]), ctx.ref(a["other"]))
    return handler


def _scaled(ctx, x, alpha):
    alpha = _static(alpha, "alpha") if not isinstance(alpha, PyVal) else alpha
    if isinstance(alpha, (int, float)) and alpha == 1:
        return x
    return ctx.b.pw("mul", x, ctx.ref(alpha))


def _add(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "other", "alpha"], {"alpha": 1})
    return ctx.b.pw("add", ctx.ref(a["input"]), _scaled(ctx, ctx.ref(a["other"]), a["alpha"]))


def _sub(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "other", "alpha"], {"alpha": 1})
    return ctx.b.pw("sub", ctx.ref(a["input"]), _scaled(ctx, ctx.ref(a["other"]), a["alpha"]))


def _rsub(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "other", "alpha"], {"alpha": 1})
    return ctx.b.pw("sub", ctx.ref(a["other"]), _scaled(ctx, ctx.ref(a["input"]), a["alpha"]))


def _div(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "other", "rounding_mode"], {"rounding_mode": None})
    mode = _static(a["rounding_mode"], "rounding_mode")
    if mode not in (None, "floor"):
        raise Reject(f"division with rounding_mode={mode!r} is not supported")
    return ctx.b.pw("div" if mode is None else "floordiv", ctx.ref(a["input"]), ctx.ref(a["other"]))


def _pow(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "exponent"])
    base, exponent = a["input"], a["exponent"]
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        return ctx.b.pw("powc", ctx.ref(base), exponent=float(exponent))
    if isinstance(base, (int, float)) and ctx.is_tensor(exponent):
        if base <= 0:
            raise Reject("pow of a non-positive constant base to a tensor exponent")
        return ctx.b.pw("cpow", ctx.ref(exponent), base=float(base))
    raise Reject("pow needs a constant exponent (or a positive constant base)")


def _gelu(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "approximate"], {"approximate": "none"})
    approx = _static(a["approximate"], "approximate")
    return ctx.b.pw("gelu_tanh" if approx == "tanh" else "gelu_erf", ctx.ref(a["input"]))


def _leaky_relu(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "negative_slope"], {"negative_slope": 0.01})
    return ctx.b.pw("leaky_relu", ctx.ref(a["input"]), slope=float(_static(a["negative_slope"], "slope")))


def _elu(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "alpha"], {"alpha": 1.0})
    return ctx.b.pw("elu", ctx.ref(a["input"]), alpha=float(_static(a["alpha"], "alpha")), scale=1.0)


def _selu(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input"])
    return ctx.b.pw("elu", ctx.ref(a["input"]), alpha=1.6732632423543772, scale=1.0507009873554805)


def _softplus(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "beta", "threshold"], {"beta": 1.0, "threshold": 20.0})
    return ctx.b.pw("softplus", ctx.ref(a["input"]), beta=float(_static(a["beta"], "beta")),
                    threshold=float(_static(a["threshold"], "threshold")))


def _clamp_bounds(ctx, x, lo, hi):
    out = ctx.ref(x)
    static = {}
    for key, bound, tensor_op in (("lo", lo, "maximum"), ("hi", hi, "minimum")):
        if bound is None:
            continue
        if isinstance(bound, (int, float)):
            static[key] = float(bound)
        else:  # a tensor or runtime scalar bound
            if static:
                out = ctx.b.pw("clamp", out, **static)
                static = {}
            out = ctx.b.pw(tensor_op, out, ctx.ref(bound))
    if static:
        out = ctx.b.pw("clamp", out, **static)
    return out


def _clamp(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "min", "max"], {"min": None, "max": None})
    return _clamp_bounds(ctx, a["input"], a["min"], a["max"])


def _clamp_min(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "min"])
    return _clamp_bounds(ctx, a["input"], a["min"], None)


def _clamp_max(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "max"])
    return _clamp_bounds(ctx, a["input"], None, a["max"])


def _hardtanh(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "min_val", "max_val"], {"min_val": -1.0, "max_val": 1.0})
    return _clamp_bounds(ctx, a["input"], a["min_val"], a["max_val"])


def _relu6(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input"])
    return _clamp_bounds(ctx, a["input"], 0.0, 6.0)


def _where(ctx, args, kwargs):
    if len(args) + len(kwargs) == 1:  # torch.where(mask) is nonzero(mask, as_tuple=True)
        raise shape_from_values("torch.where(mask) (nonzero)")
    a = _bind(args, kwargs, ["condition", "input", "other"])
    return ctx.b.pw("where", ctx.ref(a["condition"]), ctx.ref(a["input"]), ctx.ref(a["other"]))


def _cast_to(ctx, x, dtype):
    if dtype is torch.bool:  # a mask: 1 where the value is nonzero (masks are 0/1 values, see _logical)
        return ctx.b.pw("ne", ctx.ref(x), Ref("const", 0.0))
    if isinstance(dtype, torch.dtype):
        if dtype in (torch.complex64, torch.complex128) or not (dtype.is_floating_point or dtype in _INTS):
            raise Reject(f"cast to {dtype} is not supported")
        return ctx.b.pw("cast", ctx.ref(x), dtype=str(dtype).replace("torch.", ""))
    return x if isinstance(x, (Ref, ComputedView)) else ctx.ref(x)  # a device move: nothing to do


def _to(ctx, args, kwargs):
    x = args[0]
    dtype = kwargs.get("dtype")
    if any(isinstance(v, PyVal) and v.source.endswith(".dtype") for v in list(args[1:]) + list(kwargs.values())):
        # .to(x.dtype): the dtype torch gave the result while tracing, the one it has at run time (the
        # plan is traced in the precision the executor runs, as factories' dtype=x.dtype are)
        if ctx.spec is None:
            raise Reject("a cast to another tensor's dtype (.to(x.dtype)) without a traced result")
        dtype = getattr(torch, ctx.spec.dtype)
        return x if isinstance(x, Ref) and ctx.b.dtype(x) == ctx.spec.dtype else _cast_to(ctx, x, dtype)
    for extra in args[1:]:
        if isinstance(extra, torch.dtype):
            dtype = extra
    return _cast_to(ctx, x, dtype) if dtype is not None else x


def _caster(dtype_name):
    def handler(ctx, args, kwargs):
        return _cast_to(ctx, args[0], getattr(torch, dtype_name))
    return handler


def _dropout(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "p", "training", "inplace"], {"p": 0.5, "training": True, "inplace": False})
    if a["training"] and a["p"] != 0:
        raise Reject("dropout in training mode is random; only p=0 or eval mode is supported")
    return a["input"]


# ---------------------------------------------------------------- reductions
def _reduction(kind):
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "dim", "keepdim", "dtype"], {"dim": None, "keepdim": False, "dtype": None})
        x = ctx.ref(a["input"])
        dims = _dims(a["dim"], len(ctx.b.shape(x)))
        keep = bool(_static(a["keepdim"], "keepdim"))
        if kind == "mean":
            return ctx.b.pw("div", ctx.b.reduce("sum", x, dims, keep), RSIZE)
        return ctx.b.reduce(kind, x, dims, keep)
    return handler


def _max_min(kind, binary):
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "dim", "keepdim"], {"dim": None, "keepdim": False})
        other = kwargs.get("other", a["dim"])
        if ctx.is_tensor(other) or isinstance(other, Ref):  # a tensor, or torch.tensor(constant)
            return ctx.b.pw(binary, ctx.ref(a["input"]), ctx.ref(other))
        x = ctx.ref(a["input"])
        if a["dim"] is None:
            return ctx.b.reduce(kind, x, (), False)
        dims = _dims(a["dim"], len(ctx.b.shape(x)))
        keep = bool(_static(a["keepdim"], "keepdim"))
        return ValuesTuple(ctx.b.reduce(kind, x, dims, keep), source=x, kind="arg" + kind, dims=dims, keepdim=keep)
    return handler


def _log_softmax(ctx, args, kwargs):
    shifted, total = _softmax_parts(ctx, args, kwargs)
    return ctx.b.pw("sub", shifted, ctx.b.pw("log", total))


def _logsumexp(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "dim", "keepdim"], {"keepdim": False})
    x = ctx.ref(a["input"])
    shape = ctx.b.shape(x)
    dims = _dims(a["dim"], len(shape))
    m = _row_max(ctx, x, dims)
    total = ctx.b.reduce("sum", ctx.b.pw("exp", ctx.b.pw("sub", x, m)), dims, True)
    out = ctx.b.pw("add", ctx.b.pw("log", total), m)
    if _static(a["keepdim"], "keepdim"):
        return out
    norm = sorted({d % len(shape) for d in dims})
    return ctx.b.retag(out, tuple(s for i, s in enumerate(shape) if i not in norm))


def _var_std(root):
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "dim", "unbiased", "keepdim", "correction"],
                  {"dim": None, "unbiased": True, "keepdim": False, "correction": None})
        x = ctx.ref(a["input"])
        dims = _dims(a["dim"], len(ctx.b.shape(x)))
        correction = a["correction"]
        if correction is None:
            correction = 1 if _static(a["unbiased"], "unbiased") else 0
        mean = ctx.b.pw("div", ctx.b.reduce("sum", x, dims, True), RSIZE)
        centred = ctx.b.pw("sub", x, mean)
        sq = ctx.b.reduce("sum", ctx.b.pw("square", centred), dims, bool(_static(a["keepdim"], "keepdim")))
        denom = ctx.b.pw("sub", RSIZE, Ref("const", float(correction))) if correction else RSIZE
        var = ctx.b.pw("div", sq, denom)
        return ctx.b.pw("sqrt", var) if root else var
    return handler


def _norm(ctx, args, kwargs):
    kwargs = dict(kwargs)
    if "ord" in kwargs:
        kwargs["p"] = kwargs.pop("ord")
    a = _bind(args, kwargs, ["input", "p", "dim", "keepdim", "dtype"],
              {"p": "fro", "dim": None, "keepdim": False, "dtype": None})
    x = ctx.ref(a["input"])
    return _norm_of(ctx, x, _static(a["p"], "p"), _dims(a["dim"], len(ctx.b.shape(x))),
                    bool(_static(a["keepdim"], "keepdim")))


def _vector_norm(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "ord", "dim", "keepdim", "dtype"],
              {"ord": 2, "dim": None, "keepdim": False, "dtype": None})
    x = ctx.ref(a["input"])
    return _norm_of(ctx, x, _static(a["ord"], "ord"), _dims(a["dim"], len(ctx.b.shape(x))),
                    bool(_static(a["keepdim"], "keepdim")))


def _normalize(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "p", "dim", "eps"], {"p": 2.0, "dim": 1, "eps": 1e-12})
    x = ctx.ref(a["input"])
    nrm = _norm_of(ctx, x, _static(a["p"], "p"), _dims(a["dim"], len(ctx.b.shape(x))), True)
    return ctx.b.pw("div", x, ctx.b.pw("clamp", nrm, lo=float(_static(a["eps"], "eps"))))


def _layer_norm(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "normalized_shape", "weight", "bias", "eps"],
              {"weight": None, "bias": None, "eps": 1e-5})
    return _layer_norm_impl(ctx, a["input"], a["normalized_shape"], a["weight"], a["bias"], a["eps"])


def _rms_norm_impl(ctx, x, normalized_shape, weight, eps):
    x = ctx.ref(x)
    dims = _norm_dims(ctx, x, normalized_shape)
    if eps is None:
        dtype = ctx.spec.dtype if ctx.spec is not None else "float32"
        eps = torch.finfo(getattr(torch, dtype)).eps
    ms = ctx.b.pw("div", ctx.b.reduce("sum", ctx.b.pw("square", x), dims, True), RSIZE)
    inv = ctx.b.pw("rsqrt", ctx.b.pw("add", ms, Ref("const", float(_static(eps, "eps")))))
    return _affine(ctx, ctx.b.pw("mul", x, inv), weight, None)


def _rms_norm(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "normalized_shape", "weight", "eps"], {"weight": None, "eps": None})
    return _rms_norm_impl(ctx, a["input"], a["normalized_shape"], a["weight"], a["eps"])


# ---------------------------------------------------------------- matmul
def _matmul(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "other"])
    return matmul(ctx, a["input"], a["other"])


def _linear_impl(ctx, x, weight, bias):
    w = ctx.ref(weight)
    if len(ctx.b.shape(w)) != 2:
        raise Reject("linear weight must be 2-D")
    out = matmul(ctx, ctx.ref(x), transposed(ctx, w))
    return ctx.b.pw("add", out, ctx.ref(bias)) if bias is not None else out


def _linear(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "weight", "bias"], {"bias": None})
    return _linear_impl(ctx, a["input"], a["weight"], a["bias"])


def _addmm(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "mat1", "mat2", "beta", "alpha"], {"beta": 1, "alpha": 1})
    prod = _scaled(ctx, matmul(ctx, a["mat1"], a["mat2"]), a["alpha"])
    return ctx.b.pw("add", prod, _scaled(ctx, ctx.ref(a["input"]), a["beta"]))


HANDLERS = {
    **{name: _unary(op) for name, op in _UNARY.items()},
    **{name: _identity for name in _IDENTITY}, "contiguous": _contiguous, "glu": _glu,
    "pixel_shuffle": _pixel_shuffle, "pixel_unshuffle": _pixel_unshuffle, "channel_shuffle": _channel_shuffle,
    "native_channel_shuffle": _channel_shuffle, "round": _round, "remainder": _remainder(True),
    "fmod": _remainder(False), "frac": _frac, "hypot": _hypot, "lerp": _lerp, "addcmul": _addc("mul"),
    "addcdiv": _addc("div"), "outer": _outer, "ger": _outer, "any": _any_all("any"), "all": _any_all("all"),
    "diff": _diff, "one_hot": _one_hot, "isnan": _isnan, "isinf": _isinf, "isfinite": _isfinite,
    "nan_to_num": _nan_to_num, "special_expit": _unary("sigmoid"), "expit": _unary("sigmoid"),
    "new_zeros": _new_factory("zeros"), "new_ones": _new_factory("ones"), "new_full": _new_factory("full"),
    "new_empty": _new_factory("zeros"),
    **{name: _binary(op) for name, op in _COMPARE.items()},
    **{name: _caster(dtype) for name, dtype in _CASTS.items()},
    "invert": _logical_not, "bitwise_not": _logical_not, "logical_not": _logical_not,
    **{f"logical_{kind}": _logical(kind, bitwise=False) for kind in _LOGICAL},
    **{f"bitwise_{kind}": _logical(kind, bitwise=True) for kind in _LOGICAL},
    "add": _add, "sub": _sub, "subtract": _sub, "rsub": _rsub,
    "mul": _binary("mul"), "multiply": _binary("mul"),
    "div": _div, "divide": _div, "true_divide": _div, "floor_divide": _binary("floordiv"),
    "maximum": _binary("maximum"), "minimum": _binary("minimum"),
    "fmax": _binary("maximum"), "fmin": _binary("minimum"),
    "pow": _pow, "gelu": _gelu, "leaky_relu": _leaky_relu, "elu": _elu, "selu": _selu,
    "softplus": _softplus, "clamp": _clamp, "clip": _clamp, "clamp_min": _clamp_min,
    "clamp_max": _clamp_max, "hardtanh": _hardtanh, "relu6": _relu6, "where": _where, "to": _to,
    "type_as": lambda ctx, args, kwargs: args[0], "dropout": _dropout,
    "sum": _reduction("sum"), "mean": _reduction("mean"), "amax": _reduction("max"),
    "amin": _reduction("min"), "max": _max_min("max", "maximum"), "min": _max_min("min", "minimum"),
    "softmax": _softmax, "log_softmax": _log_softmax, "logsumexp": _logsumexp,
    "var": _var_std(False), "std": _var_std(True), "norm": _norm, "vector_norm": _vector_norm, "linalg_vector_norm": _vector_norm,
    "normalize": _normalize, "layer_norm": _layer_norm, "rms_norm": _rms_norm,
    "matmul": _matmul, "mm": _matmul, "mv": _matmul, "bmm": _matmul, "linear": _linear, "addmm": _addmm,
    "baddbmm": _addmm, **ATTN_HANDLERS, **INDEX_HANDLERS, **ROUTE_HANDLERS, **CELL_HANDLERS,
    **RESAMPLE_HANDLERS, **REAL_FFT_HANDLERS,
}

_OPERATORS = {
    operator.add: "add", operator.iadd: "add", operator.sub: "sub", operator.isub: "sub",
    operator.mul: "mul", operator.imul: "mul", operator.truediv: "div", operator.itruediv: "div",
    operator.floordiv: "floor_divide", operator.neg: "neg", operator.pow: "pow", operator.abs: "abs",
    operator.matmul: "matmul", operator.gt: "gt", operator.ge: "ge", operator.lt: "lt",
    operator.le: "le", operator.eq: "eq", operator.ne: "ne", operator.invert: "invert",
    operator.and_: "bitwise_and", operator.iand: "bitwise_and", operator.or_: "bitwise_or",
    operator.ior: "bitwise_or", operator.xor: "bitwise_xor", operator.ixor: "bitwise_xor",
}
_PY_BINOPS = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
              operator.floordiv: "//", operator.mod: "%", operator.pow: "**"}

# View methods applied to inputs and parameters are replayed in ModelNew.forward.
VIEW_METHODS = {"view", "reshape", "transpose", "permute", "t", "unsqueeze", "squeeze", "flatten",
                "expand", "expand_as", "view_as", "reshape_as", "swapaxes", "swapdims", "movedim",
                "unflatten", "narrow", "select", "__getitem__", "unfold"}
# functions whose name a Tensor method or another function shares (torch.embedding takes the weight first)
_FUNCTION_NAMES = {torch.nn.functional.unfold: "im2col", torch.nn.functional.embedding: "f_embedding"}


def _view_suffix(method: str, args, kwargs) -> str:
    parts = [py_source(a) for a in args]
    parts += [f"{k}={py_source(v)}" for k, v in kwargs.items()]
    if method == "__getitem__":
        index = args[0]
        text = ", ".join(py_source(i) for i in index) if isinstance(index, tuple) else py_source(index)
        return f"[{text}]"
    return f".{method}({', '.join(parts)})"


def _apply_view(ctx, base, method: str, args, kwargs):
    for arg in list(args) + list(kwargs.values()):
        if isinstance(arg, (Ref, ComputedView)):
            if isinstance(arg, Ref) and arg.kind == "leaf" and method in ("expand_as", "view_as", "reshape_as"):
                continue
            raise Reject(f"{method} with a computed tensor argument")
    if method in ("expand_as", "view_as", "reshape_as"):
        other = args[0]
        if not (isinstance(other, Ref) and other.kind == "leaf"):
            raise Reject(f"{method} of a computed tensor")
        suffix = f".{method}({ctx.b.leaf_by_name(other.value).source})"
    else:
        suffix = _view_suffix(method, args, kwargs)
    if ctx.spec is None:
        raise Reject(f"{method} did not produce a tensor")
    if isinstance(base, Ref) and base.kind == "leaf":
        leaf = ctx.b.leaf_by_name(base.value)
        return ctx.b.leaf(leaf.source + suffix, ctx.spec, leaf.name + "_v")
    if isinstance(base, ComplexLeaf):
        return complex_view(ctx, base, suffix)
    if isinstance(base, ComputedView):
        return ComputedView(base.base, base.suffixes + (suffix,), ctx.spec.shape, base.extra)
    if isinstance(base, Ref) and base.kind == "node":
        rebuilt = _index_math_at(ctx.b, base, tuple(ctx.spec.shape))
        if rebuilt is None:  # a select or slice of pointwise work and reductions computes only what it keeps
            rebuilt = pushed_pick(ctx.b, base, method, args, tuple(ctx.spec.shape))
        return rebuilt if rebuilt is not None else ComputedView(base, (suffix,), ctx.spec.shape)
    raise Reject(f"{method} of a non-tensor value")


def _index_math_at(b: Builder, ref: Ref, shape: tuple[int, ...]) -> Ref | None:
    """``ref`` rebuilt at ``shape`` where it is index arithmetic alone (aranges, eyes, constants:
    positions, distances, frequencies) and the view only adds or drops dims of size 1
    (``pos[None, :] - pos[:, None]``, ``freqs[None]``): computed where it is read, never stored
    (a view of a computed value is taken of its buffer, and a kernel with no input has no device)."""
    old = b.shape(ref)
    if [s for s in old if s != 1] != [s for s in shape if s != 1]:
        return None
    # each non-1 dim of the old shape, in order, to its place in the new one
    where = dict(zip([d for d, s in enumerate(old) if s != 1], [d for d, s in enumerate(shape) if s != 1]))
    memo: dict[int, Ref] = {}

    def at(r: Ref) -> Ref | None:
        if r.kind in ("const", "scalar", "rsize"):
            return r
        if r.kind != "node":
            return None
        if r.value in memo:
            return memo[r.value]
        node = b.nodes[r.value]
        if node.op not in ("iota", "full") and (node.op not in POINTWISE or not node.args):
            return None
        sub = node.shape  # broadcast against the old shape from the right
        lead = len(old) - len(sub)
        mapped = [where.get(lead + d) for d in range(len(sub))]
        sizes = [1] * len(shape)
        for d, target in enumerate(mapped):
            if target is not None:
                sizes[target] = sub[d]
        if node.op == "iota":
            dim = node.attr("dim")
            made = b.full(0.0, tuple(sizes)) if mapped[dim] is None else b.iota(mapped[dim], tuple(sizes))
        elif node.op == "full":
            made = b.full(node.attr("value"), tuple(sizes), b.dtype(r))
        else:
            args = [at(a) for a in node.args]
            if any(a is None for a in args):
                return None
            made = b.pw(node.op, *args, **dict(node.attrs))
        memo[r.value] = made
        return made

    return at(ref)


def _size_of(ctx, value, args, attr: str):
    """x.size(d), x.shape, x.dim(), x.numel() as Python-level values."""
    if isinstance(value, Ref) and value.kind == "leaf":
        leaf = ctx.b.leaf_by_name(value.value)
        src, shape = leaf.source, leaf.spec.shape
        if attr == "size" and args:
            return PyVal(f"{src}.size({py_source(args[0])})", shape[_static(args[0], "dim")])
        if attr in ("size", "shape"):
            return PyVal(f"{src}.shape", tuple(shape))
        if attr in ("dim", "ndim"):
            return PyVal(f"{src}.dim()", len(shape))
        if attr == "numel":
            return PyVal(f"{src}.numel()", math.prod(shape))
        if attr in ("device", "dtype"):
            return PyVal(f"{src}.{attr}", None)
        raise Reject(f"unsupported attribute {attr}")
    if attr in ("device", "dtype"):
        return PyVal(f"{_any_leaf_source(ctx)}.{attr}", None)
    shape = _shape_of(ctx, value)
    if attr == "size":
        return shape[args[0]] if args else tuple(shape)
    if attr == "shape":
        return tuple(shape)
    if attr in ("dim", "ndim"):
        return len(shape)
    if attr == "numel":
        return math.prod(shape)
    raise Reject(f"unsupported attribute {attr}")


def _known(value):
    return value.value if isinstance(value, PyVal) else value


def _python_op(op, args):
    if op in _PY_BINOPS and len(args) == 2:
        if not any(isinstance(a, PyVal) for a in args):
            return op(*args)
        known = [_known(a) for a in args]
        value = op(*known) if all(k is not None for k in known) else None
        return PyVal(f"({py_source(args[0])} {_PY_BINOPS[op]} {py_source(args[1])})", value)
    if op is operator.neg and len(args) == 1:
        if isinstance(args[0], PyVal):
            return PyVal(f"(-{py_source(args[0])})", None if args[0].value is None else -args[0].value)
        return -args[0]
    if op is operator.getitem:
        base, index = args
        if isinstance(base, PyVal):
            value = base.value[_known(index)] if base.value is not None else None
            return PyVal(f"{base.source}[{py_source(index)}]", value)
        return base[index]
    raise Reject(f"unsupported Python operation {getattr(op, '__name__', op)}")


def call_function(ctx: Context, target, args, kwargs):
    if target is operator.getitem:
        base, index = args
        if isinstance(base, ValuesTuple):
            if index == 0:
                return base.values
            if index == 1 and base.indices is not None:
                return base.indices
            if index == 1 and base.source is not None:
                return ctx.b.reduce(base.kind, base.source, base.dims, base.keepdim)
            raise Reject("only [0] (values) and [1] (indices) of max/min are supported")
        if isinstance(base, (Ref, ComputedView, ComplexLeaf)):
            if is_tensor_index(index):  # positions held by a tensor: a read of its own, not a view
                return indexed(ctx, base, index)
            return _apply_view(ctx, base, "__getitem__", (index,), {})
        return _python_op(target, args)
    if target in _OPERATORS:
        if any(ctx.is_tensor(a) for a in args):
            return _dispatch(ctx, _OPERATORS[target], args, kwargs)
        return _python_op(target, args)
    if target in _PY_BINOPS:
        return _python_op(target, args)
    if target is getattr:
        base, attr = args
        if attr == "values" and isinstance(base, ValuesTuple):
            return base.values
        if attr == "indices" and isinstance(base, ValuesTuple) and base.indices is not None:
            return base.indices
        if attr == "indices" and isinstance(base, ValuesTuple) and base.source is not None:
            return ctx.b.reduce(base.kind, base.source, base.dims, base.keepdim)
        if attr in ("T", "mT"):
            return _attr_view(ctx, base, attr)
        return _size_of(ctx, base, (), attr)
    name = _FUNCTION_NAMES.get(target) or getattr(target, "__name__", str(target))
    return _dispatch(ctx, name, args, kwargs)


def _attr_view(ctx, base, attr):
    if isinstance(base, Ref) and base.kind == "leaf":
        leaf = ctx.b.leaf_by_name(base.value)
        return ctx.b.leaf(f"{leaf.source}.{attr}", ctx.spec, leaf.name + "_v")
    if isinstance(base, Ref) and base.kind == "node":
        return ComputedView(base, (f".{attr}",), ctx.spec.shape)
    if isinstance(base, ComputedView):
        return ComputedView(base.base, base.suffixes + (f".{attr}",), ctx.spec.shape, base.extra)
    raise Reject(f".{attr} of a non-tensor value")


def call_method(ctx: Context, method: str, args, kwargs):
    if method in ("size", "dim", "numel"):
        return _size_of(ctx, args[0], args[1:], method)
    if method == "values" and isinstance(args[0], ValuesTuple):
        return args[0].values
    return _dispatch(ctx, method, args, kwargs)


def _dispatch(ctx: Context, name: str, args, kwargs):
    base_name = name.rstrip("_") if name.endswith("_") and not name.startswith("_") else name
    if any(is_complex(a) for a in list(args) + list(kwargs.values())):
        if isinstance(args[0], ComplexLeaf) and base_name in VIEW_METHODS:
            return _apply_view(ctx, args[0], base_name, args[1:], kwargs)
        if base_name not in COMPLEX_HANDLERS:
            raise Reject(f"{name} of a complex tensor is not supported (complex *, +, - and view_as_real are)")
        operands = [a if is_complex(a) or not isinstance(a, (Ref, ComputedView)) else _pair_axis(ctx, a) for a in args]
        return COMPLEX_HANDLERS[base_name](ctx, operands, dict(kwargs))
    if base_name == "view_as_complex":
        return _view_as_complex(ctx, list(args), dict(kwargs))
    if base_name in VIEW_METHODS and args and isinstance(args[0], (Ref, ComputedView)):
        return _apply_view(ctx, args[0], base_name, args[1:], kwargs)
    handler = HANDLERS.get(base_name) or NN_HANDLERS.get(base_name)
    if handler is None:
        raise Reject(f"operation {name} is not supported by the builtin generator")
    return handler(ctx, list(args), dict(kwargs))


def module_param(ctx: Context, module: nn.Module, path: str, name: str) -> Ref | None:
    """The tensor ``name`` of the module at ``path`` (also of a submodule: "out_proj.weight",
    "layers.0.linear1.bias") as a leaf read through self.<path>; None where it has none."""
    tensor = module
    for part in name.split("."):
        tensor = getattr(tensor, part, None)
    if tensor is None:
        return None
    attr = "self." + ".".join(f"[{p}]" if p.isdigit() else p for p in path.split(".")).replace(".[", "[")
    spec = TensorSpec(tuple(tensor.shape), str(tensor.dtype).replace("torch.", ""))
    source = attr + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in name.split("."))
    return ctx.b.leaf(source, spec, f"{path.replace('.', '_')}_{name.replace('.', '_')}")


# the padding modules (ZeroPad*d are ConstantPad*d) and the F.pad mode each applies
_PAD_MODES = {nn.modules.padding._ConstantPadNd: "constant", nn.modules.padding._ReflectionPadNd: "reflect",
              nn.modules.padding._ReplicationPadNd: "replicate", nn.modules.padding._CircularPadNd: "circular"}


def call_module(ctx: Context, module: nn.Module, path: str, args, kwargs):
    """Lower a leaf module call; parameters are read through self.<path>."""
    x = args[0] if args else kwargs.get("input")

    def param(name):
        return module_param(ctx, module, path, name)

    simple = {nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.SiLU: "silu", nn.Mish: "mish",
              nn.Hardswish: "hardswish", nn.Hardsigmoid: "hardsigmoid", nn.LogSigmoid: "logsigmoid",
              nn.SELU: "selu", nn.ReLU6: "relu6", nn.Identity: "identity"}
    for cls, name in simple.items():
        if type(module) is cls:
            return HANDLERS[name](ctx, [x], {})
    if isinstance(module, nn.GELU):
        return _gelu(ctx, [x], {"approximate": module.approximate})
    if isinstance(module, nn.LeakyReLU):
        return _leaky_relu(ctx, [x], {"negative_slope": module.negative_slope})
    if isinstance(module, nn.ELU):
        return _elu(ctx, [x], {"alpha": module.alpha})
    if isinstance(module, nn.Softplus):
        return _softplus(ctx, [x], {"beta": module.beta, "threshold": module.threshold})
    if isinstance(module, nn.Hardtanh):  # ReLU6 is handled above
        return _hardtanh(ctx, [x], {"min_val": module.min_val, "max_val": module.max_val})
    if isinstance(module, nn.Softmax):
        return _softmax(ctx, [x], {"dim": module.dim})
    if isinstance(module, nn.LogSoftmax):
        return _log_softmax(ctx, [x], {"dim": module.dim})
    if isinstance(module, nn.Dropout):
        return _dropout(ctx, [x], {"p": module.p, "training": module.training})
    if isinstance(module, nn.Flatten):
        return _apply_view(ctx, x, "flatten", (module.start_dim, module.end_dim), {})
    if isinstance(module, nn.Linear):
        return _linear_impl(ctx, x, param("weight"), param("bias"))
    if isinstance(module, nn.LayerNorm):
        return _layer_norm_impl(ctx, x, module.normalized_shape, param("weight"), param("bias"), module.eps)
    if isinstance(module, (nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)):
        return _dropout(ctx, [x], {"p": module.p, "training": module.training})
    if isinstance(module, nn.RReLU) and not module.training:  # eval: the mean of its slope range
        return _leaky_relu(ctx, [x], {"negative_slope": (module.lower + module.upper) / 2})
    if isinstance(module, nn.Softmax2d):
        return _softmax(ctx, [x], {"dim": -3})
    if isinstance(module, nn.PixelShuffle):
        return _pixel_shuffle(ctx, [x, module.upscale_factor], {})
    if isinstance(module, nn.PixelUnshuffle):
        return _pixel_unshuffle(ctx, [x, module.downscale_factor], {})
    if isinstance(module, nn.ChannelShuffle):
        return _channel_shuffle(ctx, [x, module.groups], {})
    if isinstance(module, nn.GLU):
        return _glu(ctx, [x, module.dim], {})
    for cls, mode in _PAD_MODES.items():  # ZeroPad2d((0, 0, 1, -1)) is RWKV's token shift: a crop and a pad
        if isinstance(module, cls):
            return ATTN_HANDLERS["pad"](ctx, [x, module.padding, mode, getattr(module, "value", None)], {})
    if isinstance(module, nn.EmbeddingBag):
        return embedding_bag(ctx, module, param("weight"), args, kwargs)
    if isinstance(module, nn.Embedding):
        return embedding_rows(ctx, x, param("weight"), module.max_norm)
    if hasattr(nn, "RMSNorm") and isinstance(module, nn.RMSNorm):
        return _rms_norm_impl(ctx, x, module.normalized_shape, param("weight"), module.eps)
    handled = call_nn_module(ctx, module, param, args, kwargs)
    if handled is None:
        handled = attention_module(ctx, module, param, args, kwargs)
    if handled is None and isinstance(module, (nn.RNNBase, nn.RNNCellBase)):
        handled = rnn_module(ctx, module, param, args, kwargs)
    if handled is None:
        handled = resample_module(ctx, module, args, kwargs)
    if handled is not None:
        return handled
    raise Reject(f"module {type(module).__name__} ({path}) is outside the builtin families "
                 "(pointwise, reductions and norms, matmul, convolution, pooling, scans, losses)")

