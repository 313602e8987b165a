"""Triton expressions for the pointwise primitives, all evaluated in fp32.

Each entry maps a primitive name to (arity, builder); the builder receives
operand expressions (variable names or literals, so repeating one is cheap)
and the node's static attributes, and returns one Triton expression. Only
functions present in both triton 3.6 and 3.9 are used: tanh, softplus and the
like are written with tl.exp / tl.log rather than libdevice.
"""

from __future__ import annotations

import math

__all__ = ["POINTWISE", "literal", "pointwise_expr"]


def literal(value) -> str:
    """A Python float literal Triton accepts (inf and nan spelled as calls)."""
    value = float(value)
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else '-float("inf")'
    return repr(value)


def _sigmoid(x: str) -> str:
    return f"(1.0 / (1.0 + tl.exp(-{x})))"


def _tanh(x: str) -> str:
    # 1 - 2 / (exp(2x) + 1): saturates cleanly to +-1 at both ends.
    return f"(1.0 - 2.0 / (tl.exp(2.0 * {x}) + 1.0))"


def _softplus(x: str, beta: float, threshold: float) -> str:
    b = literal(beta)
    return (
        f"tl.where({x} * {b} > {literal(threshold)}, {x}, "
        f"tl.log(1.0 + tl.exp({x} * {b})) / {b})"
    )


def _powc(x: str, exponent: float) -> str:
    e = float(exponent)
    if e == int(e) and abs(e) <= 8:
        n = int(abs(e))
        if n == 0:
            return f"({x} * 0.0 + 1.0)"
        prod = " * ".join([x] * n)
        return f"({prod})" if e > 0 else f"(1.0 / ({prod}))"
    if e == 0.5:
        return f"tl.sqrt({x})"
    if e == -0.5:
        return f"tl.rsqrt({x})"
    # x ** e = exp(e * log x): NaN for x < 0, as torch gives for a fractional exponent.
    return f"tl.exp({literal(e)} * tl.log({x}))"


def _clamp(x: str, lo, hi) -> str:
    out = x
    if lo is not None:
        out = f"tl.maximum({out}, {literal(lo)})"
    if hi is not None:
        out = f"tl.minimum({out}, {literal(hi)})"
    return out


_TL_DTYPES = {"float16": "tl.float16", "bfloat16": "tl.bfloat16", "float32": "tl.float32",
              "float64": "tl.float64"}


def _trunc(x: str) -> str:
    """Toward zero, as torch truncates (trunc, fmod's quotient, a cast to an integer type)."""
    return f"tl.where({x} < 0, tl.ceil({x}), tl.floor({x}))"


def _cast(x: str, dtype: str) -> str:
    # Round through the narrower type so fp32 compute reproduces torch's rounding.
    if dtype in ("float16", "bfloat16"):
        return f"{x}.to({_TL_DTYPES[dtype]}).to(tl.float32)"
    if dtype.startswith(("int", "uint")):  # torch truncates toward zero; the value stays an exact float
        return _trunc(x)
    return x


def _no_index(a, at) -> str:
    raise ValueError("an index value (iota) is emitted by the kernel family, not as a pointwise op")


POINTWISE = {
    # nullary: a constant of some shape, and an index along one dim
    "full": (0, lambda a, at: literal(at["value"])),
    "iota": (0, _no_index),
    # unary
    "identity": (1, lambda a, at: a[0]),
    "neg": (1, lambda a, at: f"(-{a[0]})"),
    "abs": (1, lambda a, at: f"tl.abs({a[0]})"),
    "exp": (1, lambda a, at: f"tl.exp({a[0]})"),
    "log": (1, lambda a, at: f"tl.log({a[0]})"),
    "sqrt": (1, lambda a, at: f"tl.sqrt({a[0]})"),
    "rsqrt": (1, lambda a, at: f"tl.rsqrt({a[0]})"),
    "reciprocal": (1, lambda a, at: f"(1.0 / {a[0]})"),
    "square": (1, lambda a, at: f"({a[0]} * {a[0]})"),
    "erf": (1, lambda a, at: f"tl.math.erf({a[0]})"),
    "sin": (1, lambda a, at: f"tl.sin({a[0]})"),
    "cos": (1, lambda a, at: f"tl.cos({a[0]})"),
    "floor": (1, lambda a, at: f"tl.floor({a[0]})"),
    "ceil": (1, lambda a, at: f"tl.ceil({a[0]})"),
    "trunc": (1, lambda a, at: _trunc(a[0])),
    "sign": (1, lambda a, at: f"tl.where({a[0]} > 0.0, 1.0, tl.where({a[0]} < 0.0, -1.0, 0.0))"),
    "sigmoid": (1, lambda a, at: _sigmoid(a[0])),
    "log_sigmoid": (1, lambda a, at: f"(tl.minimum({a[0]}, 0.0) - tl.log(1.0 + tl.exp(-tl.abs({a[0]}))))"),
    "tanh": (1, lambda a, at: _tanh(a[0])),
    "relu": (1, lambda a, at: f"tl.maximum({a[0]}, 0.0)"),
    "silu": (1, lambda a, at: f"({a[0]} * {_sigmoid(a[0])})"),
    "gelu_erf": (1, lambda a, at: f"(0.5 * {a[0]} * (1.0 + tl.math.erf({a[0]} * 0.7071067811865476)))"),
    "gelu_tanh": (1, lambda a, at: (
        f"(0.5 * {a[0]} * (1.0 + "
        f"{_tanh(f'(0.7978845608028654 * ({a[0]} + 0.044715 * {a[0]} * {a[0]} * {a[0]}))')}))")),
    "mish": (1, lambda a, at: f"({a[0]} * {_tanh(_softplus(a[0], 1.0, 20.0))})"),
    "softplus": (1, lambda a, at: _softplus(a[0], at["beta"], at["threshold"])),
    "leaky_relu": (1, lambda a, at: f"tl.where({a[0]} > 0.0, {a[0]}, {a[0]} * {literal(at['slope'])})"),
    "elu": (1, lambda a, at: (
        f"tl.where({a[0]} > 0.0, {a[0]} * {literal(at['scale'])}, "
        f"{literal(at['alpha'] * at['scale'])} * (tl.exp({a[0]}) - 1.0))")),
    "hardswish": (1, lambda a, at: f"({a[0]} * tl.minimum(tl.maximum({a[0]} + 3.0, 0.0), 6.0) / 6.0)"),
    "hardsigmoid": (1, lambda a, at: f"(tl.minimum(tl.maximum({a[0]} + 3.0, 0.0), 6.0) / 6.0)"),
    "clamp": (1, lambda a, at: _clamp(a[0], at.get("lo"), at.get("hi"))),
    "powc": (1, lambda a, at: _powc(a[0], at["exponent"])),
    "cpow": (1, lambda a, at: f"tl.exp({a[0]} * {literal(math.log(at['base']))})"),
    "cast": (1, lambda a, at: _cast(a[0], at["dtype"])),
    # binary
    "add": (2, lambda a, at: f"({a[0]} + {a[1]})"),
    "sub": (2, lambda a, at: f"({a[0]} - {a[1]})"),
    "mul": (2, lambda a, at: f"({a[0]} * {a[1]})"),
    "div": (2, lambda a, at: f"({a[0]} / {a[1]})"),
    "floordiv": (2, lambda a, at: f"tl.floor({a[0]} / {a[1]})"),
    "maximum": (2, lambda a, at: f"tl.maximum({a[0]}, {a[1]})"),
    "minimum": (2, lambda a, at: f"tl.minimum({a[0]}, {a[1]})"),
    # comparisons yield 0.0 / 1.0 so they mix freely with arithmetic
    "gt": (2, lambda a, at: f"tl.where({a[0]} > {a[1]}, 1.0, 0.0)"),
    "ge": (2, lambda a, at: f"tl.where({a[0]} >= {a[1]}, 1.0, 0.0)"),
    "lt": (2, lambda a, at: f"tl.where({a[0]} < {a[1]}, 1.0, 0.0)"),
    "le": (2, lambda a, at: f"tl.where({a[0]} <= {a[1]}, 1.0, 0.0)"),
    "eq": (2, lambda a, at: f"tl.where({a[0]} == {a[1]}, 1.0, 0.0)"),
    "ne": (2, lambda a, at: f"tl.where({a[0]} != {a[1]}, 1.0, 0.0)"),
    # ternary
    "where": (3, lambda a, at: f"tl.where({a[0]} != 0.0, {a[1]}, {a[2]})"),
}


def pointwise_expr(op: str, operands: list[str], attrs: dict) -> str:
    arity, build = POINTWISE[op]
    if len(operands) != arity:
        raise ValueError(f"{op} takes {arity} operands, got {len(operands)}")
    return build(operands, attrs)
