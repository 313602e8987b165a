"""Complex values as pairs of real ones: rotary embeddings as Meta's LLaMA code writes them
(``torch.view_as_complex`` of the last dim's pairs, times a complex buffer of frequencies,
``torch.view_as_real`` back).

A complex tensor of shape S is carried as its real and imaginary parts, each of shape
S + (1,) (the pair axis kept, of size one): arithmetic on them is pointwise, and
``view_as_real`` interleaves them with an index along the pair axis, so the rotation and
the interleave are one kernel. A complex tensor of the model's (a buffer) is read through
``torch.view_as_real(buffer)[..., 0:1]`` and ``[..., 1:2]``, views made in forward.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._build import Reject
from ._ir import Ref, TensorSpec

__all__ = ["COMPLEX_HANDLERS", "Complex", "ComplexLeaf", "complex_view", "is_complex"]


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
    "mul": _mul, "multiply": _mul, "add": _add_sub("add"), "sub": _add_sub("sub"),
    "view_as_real": _view_as_real, "type_as": _identity, "contiguous": _identity,
}
