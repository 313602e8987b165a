"""Pointwise primitives lowered to Ascend C vector instructions.

The vector unit has a few dozen instructions (Add, Exp, Reciprocal, Adds...);
everything else is composed from them, all in fp32. A lowering is a list of
`Op`s over symbolic operands: "a" and "b" are the inputs, "d" the result and
"t0", "t1"... scratch tensors of the same shape. Inputs that are scalars (a
constant, a runtime argument, a per-row statistic) arrive as C++ float
expressions and are folded into the scalar forms (Adds, Muls, Maxs, Mins).

Every lowering writes "d" only after its last read of an input, so "d" may
share storage with an input that dies at this node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Op", "Operand", "LoweringError", "lower", "scalar_expr", "flt", "SCALAR_FOLDABLE"]


class LoweringError(ValueError):
    """The op has no composition from the vector instructions the model implements."""


@dataclass(frozen=True)
class Operand:
    kind: str  # "tensor" | "scalar"
    text: str  # "a"/"b" for a tensor; a C++ float expression for a scalar


@dataclass(frozen=True)
class Op:
    api: str  # Add, Adds, Exp...
    dst: str
    srcs: tuple[str, ...]  # tensor operands
    scalar: str | None = None  # the scalar operand of Adds/Muls/Maxs/Mins/LeakyRelu


def flt(value) -> str:
    """A C++ float literal."""
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise LoweringError(f"constant {value} has no finite float literal")
    text = repr(value)
    if "e" not in text and "." not in text:
        text += ".0"
    return f"{text}f"


# Ops a pair of scalars folds into a C++ expression (a constant or runtime argument).
SCALAR_FOLDABLE = {
    "identity": lambda a: a[0],
    "neg": lambda a: f"(-{a[0]})",
    "add": lambda a: f"({a[0]} + {a[1]})",
    "sub": lambda a: f"({a[0]} - {a[1]})",
    "mul": lambda a: f"({a[0]} * {a[1]})",
    "div": lambda a: f"({a[0]} / {a[1]})",
    "square": lambda a: f"({a[0]} * {a[0]})",
}


def scalar_expr(op: str, operands: list[str]) -> str:
    if op not in SCALAR_FOLDABLE:
        raise LoweringError(f"{op} of scalars only (no tensor operand) is not supported")
    return SCALAR_FOLDABLE[op](operands)


_BINARY_API = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "maximum": "Max", "minimum": "Min"}
_DIRECT_UNARY = {"abs": "Abs", "exp": "Exp", "log": "Ln", "sqrt": "Sqrt", "rsqrt": "Rsqrt",
                 "reciprocal": "Reciprocal", "relu": "Relu"}
# Abramowitz & Stegun 7.1.26: erf(z) = 1 - (a1 t + ... + a5 t^5) exp(-z^2), t = 1 / (1 + p z), z >= 0,
# absolute error below 1.5e-7.
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _binary(op: str, a: Operand, b: Operand) -> list[Op]:
    if a.kind == "tensor" and b.kind == "tensor":
        return [Op(_BINARY_API[op], "d", ("a", "b"))]
    if a.kind == "scalar" and b.kind == "scalar":  # pragma: no cover - folded by the caller
        raise LoweringError("scalar-only binary ops are folded, not lowered")
    t, s = (a, b) if a.kind == "tensor" else (b, a)
    tensor_first = a.kind == "tensor"
    if op == "add":
        return [Op("Adds", "d", (t.text,), s.text)]
    if op == "mul":
        return [Op("Muls", "d", (t.text,), s.text)]
    if op == "maximum":
        return [Op("Maxs", "d", (t.text,), s.text)]
    if op == "minimum":
        return [Op("Mins", "d", (t.text,), s.text)]
    if op == "sub":
        if tensor_first:
            return [Op("Adds", "d", (t.text,), f"-({s.text})")]
        return [Op("Muls", "d", (t.text,), "-1.0f"), Op("Adds", "d", ("d",), s.text)]
    if op == "div":
        if tensor_first:
            return [Op("Muls", "d", (t.text,), f"(1.0f / ({s.text}))")]
        return [Op("Reciprocal", "d", (t.text,)), Op("Muls", "d", ("d",), s.text)]
    raise LoweringError(f"binary op {op} is not supported")  # pragma: no cover


def _sigmoid_into(dst: str, x: str, t: str) -> list[Op]:
    # 1 / (1 + exp(-x)): exp overflows to inf for very negative x and the result is 0, as it should be.
    return [Op("Muls", t, (x,), "-1.0f"), Op("Exp", t, (t,)), Op("Adds", t, (t,), "1.0f"), Op("Reciprocal", dst, (t,))]


def _tanh_into(dst: str, x: str, t: str) -> list[Op]:
    # 1 - 2 / (exp(2x) + 1): saturates to +-1 at both ends without inf - inf.
    return [Op("Muls", t, (x,), "2.0f"), Op("Exp", t, (t,)), Op("Adds", t, (t,), "1.0f"),
            Op("Reciprocal", t, (t,)), Op("Muls", t, (t,), "-2.0f"), Op("Adds", dst, (t,), "1.0f")]


def _log1p_exp_neg_abs(dst: str, x: str) -> list[Op]:
    # log(1 + exp(-|x|)), never overflows
    return [Op("Abs", dst, (x,)), Op("Muls", dst, (dst,), "-1.0f"), Op("Exp", dst, (dst,)),
            Op("Adds", dst, (dst,), "1.0f"), Op("Ln", dst, (dst,))]


def _softplus_into(dst: str, x: str, beta: float, t: str, u: str) -> list[Op]:
    # (max(bx, 0) + log(1 + exp(-|bx|))) / b equals log(1 + exp(bx)) / b without overflow; torch's
    # threshold shortcut differs from it by less than exp(-threshold).
    ops = [Op("Muls", t, (x,), flt(beta))]
    ops += _log1p_exp_neg_abs(u, t)
    ops += [Op("Relu", t, (t,)), Op("Add", t, (t, u)), Op("Muls", dst, (t,), flt(1.0 / beta))]
    return ops


def _unary(op: str, at: dict) -> tuple[list[Op], int]:
    if op in _DIRECT_UNARY:
        return [Op(_DIRECT_UNARY[op], "d", ("a",))], 0
    if op == "identity":
        return [Op("Muls", "d", ("a",), "1.0f")], 0
    if op == "neg":
        return [Op("Muls", "d", ("a",), "-1.0f")], 0
    if op == "square":
        return [Op("Mul", "d", ("a", "a"))], 0
    if op == "sigmoid":
        return _sigmoid_into("d", "a", "t0"), 1
    if op == "silu":
        ops = _sigmoid_into("t0", "a", "t0")
        ops[-1] = Op("Div", "d", ("a", "t0"))  # x / (1 + exp(-x))
        return ops, 1
    if op == "tanh":
        return _tanh_into("d", "a", "t0"), 1
    if op == "gelu_tanh":
        # 0.5 x (1 + tanh(k (x + 0.044715 x^3))) = x / (1 + exp(-2k x (1 + 0.044715 x^2)))
        k2 = 2.0 * 0.7978845608028654
        return [Op("Mul", "t0", ("a", "a")), Op("Muls", "t0", ("t0",), flt(0.044715)),
                Op("Adds", "t0", ("t0",), "1.0f"), Op("Mul", "t0", ("t0", "a")),
                Op("Muls", "t0", ("t0",), flt(-k2)), Op("Exp", "t0", ("t0",)),
                Op("Adds", "t0", ("t0",), "1.0f"), Op("Div", "d", ("a", "t0"))], 1
    if op == "gelu_erf":
        # 0.5 (x + |x| erf(|x| / sqrt 2)): x erf(x / sqrt 2) is even in sign, so no select is needed.
        ops = [Op("Abs", "t2", ("a",)), Op("Muls", "t2", ("t2",), flt(1.0 / math.sqrt(2.0))),  # z
               Op("Muls", "t0", ("t2",), flt(_AS_P)), Op("Adds", "t0", ("t0",), "1.0f"),
               Op("Reciprocal", "t0", ("t0",)),  # t
               Op("Muls", "t1", ("t0",), flt(_AS_A[4]))]
        for coeff in reversed(_AS_A[:4]):
            ops += [Op("Adds", "t1", ("t1",), flt(coeff)), Op("Mul", "t1", ("t1", "t0"))]
        ops += [Op("Mul", "t0", ("t2", "t2")), Op("Muls", "t0", ("t0",), "-1.0f"), Op("Exp", "t0", ("t0",)),
                Op("Mul", "t1", ("t1", "t0")), Op("Muls", "t1", ("t1",), "-1.0f"),
                Op("Adds", "t1", ("t1",), "1.0f"),  # erf(z)
                Op("Abs", "t0", ("a",)), Op("Mul", "t1", ("t1", "t0")), Op("Add", "t1", ("t1", "a")),
                Op("Muls", "d", ("t1",), "0.5f")]
        return ops, 3
    if op == "leaky_relu":
        return [Op("LeakyRelu", "d", ("a",), flt(at["slope"]))], 0
    if op == "clamp":
        lo, hi = at.get("lo"), at.get("hi")
        ops = []
        src = "a"
        if lo is not None and not math.isinf(lo):
            ops.append(Op("Maxs", "d", (src,), flt(lo)))
            src = "d"
        if hi is not None and not math.isinf(hi):
            ops.append(Op("Mins", "d", (src,), flt(hi)))
        return ops or [Op("Muls", "d", ("a",), "1.0f")], 0
    if op in ("hardsigmoid", "hardswish"):
        ops = [Op("Adds", "t0", ("a",), "3.0f"), Op("Maxs", "t0", ("t0",), "0.0f"), Op("Mins", "t0", ("t0",), "6.0f")]
        if op == "hardsigmoid":
            return ops + [Op("Muls", "d", ("t0",), flt(1.0 / 6.0))], 1
        return ops + [Op("Muls", "t0", ("t0",), flt(1.0 / 6.0)), Op("Mul", "d", ("a", "t0"))], 1
    if op == "elu":
        # scale * max(x, 0) + alpha * scale * (exp(min(x, 0)) - 1)
        return [Op("Mins", "t0", ("a",), "0.0f"), Op("Exp", "t0", ("t0",)), Op("Adds", "t0", ("t0",), "-1.0f"),
                Op("Muls", "t0", ("t0",), flt(at["alpha"] * at["scale"])), Op("Relu", "t1", ("a",)),
                Op("Muls", "t1", ("t1",), flt(at["scale"])), Op("Add", "d", ("t1", "t0"))], 2
    if op == "softplus":
        return _softplus_into("d", "a", at["beta"], "t0", "t1"), 2
    if op == "log_sigmoid":
        # min(x, 0) - log(1 + exp(-|x|))
        return _log1p_exp_neg_abs("t0", "a") + [Op("Mins", "t1", ("a",), "0.0f"), Op("Sub", "d", ("t1", "t0"))], 2
    if op == "mish":
        ops = _softplus_into("t0", "a", 1.0, "t1", "t2")
        ops += _tanh_into("t0", "t0", "t1")
        return ops + [Op("Mul", "d", ("a", "t0"))], 3
    if op == "powc":
        e = float(at["exponent"])
        if e == 0.5:
            return [Op("Sqrt", "d", ("a",))], 0
        if e == -0.5:
            return [Op("Rsqrt", "d", ("a",))], 0
        if e == int(e) and 1 <= abs(e) <= 8:
            n = int(abs(e))
            if n == 1:
                ops = [Op("Muls", "t0", ("a",), "1.0f")]
            else:
                ops = [Op("Mul", "t0", ("a", "a"))] + [Op("Mul", "t0", ("t0", "a")) for _ in range(n - 2)]
            last = Op("Reciprocal", "d", ("t0",)) if e < 0 else Op("Muls", "d", ("t0",), "1.0f")
            return ops + [last], 1
        # x ** e = exp(e ln x): NaN for x < 0, as torch gives for a fractional exponent
        return [Op("Ln", "t0", ("a",)), Op("Muls", "t0", ("t0",), flt(e)), Op("Exp", "d", ("t0",))], 1
    if op == "cpow":
        return [Op("Muls", "t0", ("a",), flt(math.log(at["base"]))), Op("Exp", "d", ("t0",))], 1
    if op == "cast":
        if at.get("dtype") == "float32":
            return [Op("Muls", "d", ("a",), "1.0f")], 0
        raise LoweringError(f"a cast to {at.get('dtype')} inside the graph is not supported (compute is fp32)")
    raise LoweringError(
        f"{op} needs instructions the CPU model does not implement (Compare/Select, Sin, Floor...)")


def lower(op: str, operands: list[Operand], attrs: dict) -> tuple[list[Op], int]:
    """(ops, scratch count) computing `op`; operands are "a"/"b" tensors or scalar expressions."""
    if op in _BINARY_API:
        if len(operands) != 2:
            raise LoweringError(f"{op} takes two operands")
        a, b = operands
        a = Operand("tensor", "a") if a.kind == "tensor" else a
        b = Operand("tensor", "b") if b.kind == "tensor" else b
        return _binary(op, a, b), 0
    if len(operands) != 1 or operands[0].kind != "tensor":
        raise LoweringError(f"{op} is not supported here")
    return _unary(op, attrs)
