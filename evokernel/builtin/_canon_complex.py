"""Complex values as pairs of real ones: rotary embeddings as Meta's LLaMA code writes them
(``torch.view_as_complex`` of the last dim's pairs, times a complex buffer of frequencies,
``torch.view_as_real`` back).

A complex tensor of shape S is carried as its real and imaginary parts, each of shape
S + (1,) (the pair axis kept, of size one): arithmetic on them is pointwise, and
``view_as_real`` interleaves them with an index along the pair axis, so the rotation and
the interleave are one kernel. A complex tensor of the model's (a buffer) is read through
``torch.view_as_real(buffer)[..., 0:1]`` and ``[..., 1:2]``, views made in forward.

``torch.fft.rfft`` and ``irfft`` along the last dim (Hyena's long convolution) are discrete
Fourier transforms written as matmuls by cosine and sine matrices built from iotas: exact
to rounding for any length, with the zero padding of ``n`` as rows left out, though O(L n)
rather than an FFT's O(n log n). A complex FFT (fft, fft2...) has no form here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._build import Reject
from ._canon_nn import _leaf_view
from ._canon_util import _bind, _static, matmul, unsqueezed
from ._ir import Ref, TensorSpec

__all__ = ["COMPLEX_HANDLERS", "Complex", "ComplexLeaf", "REAL_FFT_HANDLERS", "complex_view", "is_complex"]


@dataclass(frozen=True)
class ComplexLeaf:
    """A complex tensor of the model's (or a view of one): the Python source that reads it."""

    source: str
    shape: tuple[int, ...]
    dtype: str = "complex64"


@dataclass(frozen=True)
class Complex:
    """A computed complex value: its parts, each shaped ``shape + (1,)``."""

    re: Ref
    im: Ref
    shape: tuple[int, ...]


def is_complex(value) -> bool:
    return isinstance(value, (Complex, ComplexLeaf))


def _real_dtype(dtype: str) -> str:
    return {"complex64": "float32", "complex128": "float64"}.get(dtype) or "float32"


def parts(ctx, value) -> tuple[Ref, Ref]:
    if isinstance(value, Complex):
        return value.re, value.im
    if isinstance(value, ComplexLeaf):
        spec = TensorSpec(tuple(value.shape) + (1,), _real_dtype(value.dtype))
        return tuple(ctx.b.leaf(f"torch.view_as_real({value.source})[..., {k}:{k + 1}]", spec, ("re", "im")[k])
                     for k in (0, 1))
    raise Reject(f"a complex operation on {value!r}")


def _operands(ctx, args):
    a, b = args[0], args[1]
    if is_complex(a) and is_complex(b):
        return parts(ctx, a), parts(ctx, b), True
    z, r = (a, b) if is_complex(a) else (b, a)
    return parts(ctx, z), (ctx.ref(r), None), False  # r carries the pair axis already (the dispatch's)


def _shape(ctx, re: Ref) -> tuple[int, ...]:
    return tuple(ctx.b.shape(re))[:-1]


def _mul(ctx, args, kwargs):
    (a, b), (c, d), both = _operands(ctx, args)
    pw = ctx.b.pw
    if both:  # (a + bi)(c + di) = (ac - bd) + (ad + bc)i
        re, im = pw("sub", pw("mul", a, c), pw("mul", b, d)), pw("add", pw("mul", a, d), pw("mul", b, c))
    else:
        re, im = pw("mul", a, c), pw("mul", b, c)
    return Complex(re, im, _shape(ctx, re))


def _add_sub(op: str):
    def handler(ctx, args, kwargs):
        if not (is_complex(args[0]) and is_complex(args[1])):
            raise Reject(f"{op} of a complex and a real tensor is not supported")
        (a, b), (c, d), _ = _operands(ctx, args)
        re, im = ctx.b.pw(op, a, c), ctx.b.pw(op, b, d)
        return Complex(re, im, _shape(ctx, re))
    return handler


def _div(ctx, args, kwargs):
    """A complex value divided by a real one (a scale: rfft's output over its length)."""
    if is_complex(args[1]):
        raise Reject("division by a complex tensor is not supported (by a real one it is)")
    (a, b), (c, _), _ = _operands(ctx, args)
    re, im = ctx.b.pw("div", a, c), ctx.b.pw("div", b, c)
    return Complex(re, im, _shape(ctx, re))


def _norm_scale(norm, n: int, inverse: bool) -> float:
    """The factor torch.fft's ``norm`` puts on a transform of length n (forward or inverse)."""
    norm = norm or "backward"
    if norm not in ("backward", "forward", "ortho"):
        raise Reject(f"torch.fft norm={norm!r} is not supported")
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    return 1.0 / n if (norm == "backward") == inverse else 1.0


def _last_dim(ctx, dim, rank: int, what: str) -> None:
    if int(_static(dim, "dim")) % rank != rank - 1:
        raise Reject(f"torch.fft.{what} along a dim other than the last is not supported")


def _dft(ctx, rows: int, cols: int, n: int, rows_are_freqs: bool, inverse_weights: bool) -> tuple[Ref, Ref]:
    """(cos, sin) of 2 pi t k / n as (rows, cols) matrices, t and k the iotas along them; the
    inverse's rows (frequencies) weighted 2 but the zero and Nyquist ones, whose conjugates the
    half spectrum leaves out."""
    b = ctx.b
    t, k = b.iota(0, (rows, 1)), b.iota(1, (1, cols))
    product = b.pw("mul", t, k)  # exact below 2**24; reduced mod n so the angle stays within a turn
    turns = b.pw("sub", product, b.pw("mul", b.pw("floor", b.pw("div", product, Ref("const", float(n)))),
                                      Ref("const", float(n))))
    angle = b.pw("mul", turns, Ref("const", 2.0 * math.pi / n))
    cos, sin = b.pw("cos", angle), b.pw("sin", angle)
    if inverse_weights:
        freq = t if rows_are_freqs else k
        edge = b.pw("eq", freq, Ref("const", 0.0))
        if n % 2 == 0:
            edge = b.pw("maximum", edge, b.pw("eq", freq, Ref("const", float(n // 2))))
        weight = b.pw("sub", Ref("const", 2.0), edge)
        cos, sin = b.pw("mul", cos, weight), b.pw("mul", sin, weight)
    return cos, sin


def _rfft(ctx, args, kwargs):
    """The half spectrum (n // 2 + 1 frequencies) of a real signal along its last dim."""
    a = _bind(args, kwargs, ["input", "n", "dim", "norm"], {"n": None, "dim": -1, "norm": None})
    x = ctx.ref(a["input"])
    shape = tuple(ctx.b.shape(x))
    _last_dim(ctx, a["dim"], len(shape), "rfft")
    length = shape[-1]
    n = int(_static(a["n"], "n") or length)
    if n < length:
        raise Reject("torch.fft.rfft with n shorter than the signal (a truncation) is not supported")
    freqs = n // 2 + 1
    cos, sin = _dft(ctx, length, freqs, n, rows_are_freqs=False, inverse_weights=False)
    scale = _norm_scale(a["norm"], n, inverse=False)
    re = matmul(ctx, x, cos)
    im = ctx.b.pw("mul", matmul(ctx, x, sin), Ref("const", -scale))
    if scale != 1.0:
        re = ctx.b.pw("mul", re, Ref("const", scale))
    return Complex(unsqueezed(ctx, re, -1), unsqueezed(ctx, im, -1), shape[:-1] + (freqs,))


def _irfft(ctx, args, kwargs):
    """The real signal of length n (default 2 (k - 1)) whose half spectrum is the input's k values."""
    a = _bind(args, kwargs, ["input", "n", "dim", "norm"], {"n": None, "dim": -1, "norm": None})
    z = a["input"]
    _last_dim(ctx, a["dim"], len(z.shape), "irfft")
    freqs = z.shape[-1]
    n = int(_static(a["n"], "n") or 2 * (freqs - 1))
    if n // 2 + 1 < freqs:
        raise Reject("torch.fft.irfft with n shorter than the spectrum (a truncation) is not supported")
    re, im = (_leaf_view(ctx, part, ".squeeze(-1)", tuple(z.shape)) for part in parts(ctx, z))
    cos, sin = _dft(ctx, freqs, n, n, rows_are_freqs=True, inverse_weights=True)
    y = ctx.b.pw("sub", matmul(ctx, re, cos), matmul(ctx, im, sin))
    scale = _norm_scale(a["norm"], n, inverse=True)
    return y if scale == 1.0 else ctx.b.pw("mul", y, Ref("const", scale))


def _view_as_real(ctx, args, kwargs):
    z = args[0] if args else kwargs["input"]
    re, im = parts(ctx, z)
    shape = tuple(z.shape) + (2,)
    pair = ctx.b.iota(len(shape) - 1, (1,) * (len(shape) - 1) + (2,))
    return ctx.b.pw("where", ctx.b.pw("eq", pair, Ref("const", 0.0)), re, im)


def complex_view(ctx, base: ComplexLeaf, suffix: str) -> ComplexLeaf:
    if ctx.spec is None:
        raise Reject("a view of a complex tensor without a traced shape")
    return ComplexLeaf(base.source + suffix, tuple(ctx.spec.shape), base.dtype)


def _identity(ctx, args, kwargs):
    return args[0]


COMPLEX_HANDLERS = {
    "mul": _mul, "multiply": _mul, "add": _add_sub("add"), "sub": _add_sub("sub"), "div": _div,
    "true_divide": _div, "divide": _div, "fft_irfft": _irfft,
    "view_as_real": _view_as_real, "type_as": _identity, "contiguous": _identity,
}

# a real signal's transform: dispatched with the real handlers (no complex operand)
REAL_FFT_HANDLERS = {"fft_rfft": _rfft}
