"""Builder for the IR: shape inference for each primitive as it is added."""

from __future__ import annotations

from dataclasses import dataclass

from ._ir import Leaf, Node, Ref, TensorSpec
from ._pointwise import POINTWISE

__all__ = ["Reject", "PyVal", "ComputedView", "ValuesTuple", "Builder", "broadcast", "py_source"]


class Reject(Exception):
    """Raised anywhere during analysis; becomes ``Unsupported(reason)``."""


@dataclass(frozen=True)
class PyVal:
    """A Python-level value inside forward (a size, a shape, a scalar argument),
    known by the expression that computes it and, where tracing saw it, its value."""

    source: str
    value: object = None


@dataclass(frozen=True)
class ComputedView:
    """A view (reshape, transpose...) of a computed value: legal only as the
    graph's output, where the launcher applies it to the kernel's result."""

    base: Ref
    suffixes: tuple[str, ...]
    shape: tuple[int, ...]


@dataclass(frozen=True)
class ValuesTuple:
    """The (values, indices) pair of torch.max/min with a dim."""

    values: Ref


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for shape in shapes:
        padded = (1,) * (rank - len(shape)) + tuple(shape)
        for i, size in enumerate(padded):
            if size == 1:
                continue
            if out[i] not in (1, size):
                raise Reject(f"shapes {shapes} do not broadcast")
            out[i] = size
    return tuple(out)


def py_source(value) -> str:
    """Source text for a Python-level argument of a view call."""
    if isinstance(value, PyVal):
        return value.source
    if isinstance(value, (bool, int, float)) or value is None:
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, tuple):
        inner = ", ".join(py_source(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(py_source(v) for v in value) + "]"
    if isinstance(value, slice):
        parts = ["" if p is None else py_source(p) for p in (value.start, value.stop, value.step)]
        return ":".join(parts[:2]) if value.step is None else ":".join(parts)
    if value is Ellipsis:
        return "..."
    import torch

    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, torch.Size):
        return py_source(tuple(value))
    raise Reject(f"cannot express argument {value!r} in generated code")


class Builder:
    def __init__(self) -> None:
        self.leaves: dict[str, Leaf] = {}  # by source
        self.nodes: list[Node] = []
        self._names: set[str] = set()
        self._memo: dict = {}

    # -- operands ---------------------------------------------------------
    def leaf(self, source: str, spec: TensorSpec, stem: str) -> Ref:
        if source in self.leaves:
            return Ref("leaf", self.leaves[source].name)
        if not spec.dtype.startswith(("float", "bfloat")):
            raise Reject(f"tensor operand {source} has dtype {spec.dtype}; only floating tensors are supported")
        name = _identifier(stem)
        base, i = name, 0
        while name in self._names:
            i += 1
            name = f"{base}{i}"
        self._names.add(name)
        self.leaves[source] = Leaf(name=name, source=source, spec=spec)
        return Ref("leaf", name)

    def leaf_by_name(self, name: str) -> Leaf:
        for leaf in self.leaves.values():
            if leaf.name == name:
                return leaf
        raise KeyError(name)

    def shape(self, ref: Ref) -> tuple[int, ...]:
        if ref.kind == "node":
            return self.nodes[ref.value].shape
        if ref.kind == "leaf":
            return self.leaf_by_name(ref.value).spec.shape
        return ()

    # -- primitives -------------------------------------------------------
    def _add(self, op: str, args: tuple[Ref, ...], attrs: dict, shape: tuple[int, ...]) -> Ref:
        key = (op, args, tuple(sorted(attrs.items())), shape)
        if key in self._memo:  # common subexpressions (exp(x - max) in softmax...) are built once
            return self._memo[key]
        node = Node(id=len(self.nodes), op=op, args=args, attrs=tuple(sorted(attrs.items())), shape=shape)
        self.nodes.append(node)
        self._memo[key] = Ref("node", node.id)
        return self._memo[key]

    def pw(self, op: str, *args: Ref, **attrs) -> Ref:
        if op not in POINTWISE:
            raise Reject(f"no pointwise primitive {op}")
        for a in args:
            if not isinstance(a, Ref):
                raise Reject(f"{op}: unsupported operand {a!r}")
        # fold arithmetic on two constants right away
        shape = broadcast(*(self.shape(a) for a in args))
        return self._add(op, tuple(args), attrs, shape)

    def reduce(self, kind: str, x: Ref, dims: tuple[int, ...], keepdim: bool) -> Ref:
        shape = self.shape(x)
        rank = len(shape)
        if rank == 0:
            raise Reject("reduction of a 0-dim value")
        norm = sorted({d % rank for d in dims}) if dims else list(range(rank))
        start, stop = norm[0], norm[-1] + 1
        if norm != list(range(start, stop)):
            raise Reject(f"reduction over non-adjacent dims {tuple(dims)}")
        if keepdim:
            out = tuple(1 if start <= i < stop else s for i, s in enumerate(shape))
        else:
            out = shape[:start] + shape[stop:]
        return self._add("reduce", (x,), {"kind": kind, "start": start, "stop": stop, "keepdim": bool(keepdim)}, out)

    def retag(self, x: Ref, shape: tuple[int, ...]) -> Ref:
        """The same per-row values under another shape (squeezing a keepdim reduction)."""
        return self._add("identity", (x,), {}, tuple(shape))

    def matmul(self, a: Ref, b: Ref) -> Ref:
        for ref, side in ((a, "left"), (b, "right")):
            if ref.kind != "leaf":
                raise Reject(f"matmul {side} operand is computed in the graph; only inputs and parameters "
                             "(and views of them) are supported as operands (no fused prologue)")
        sa, sb = self.shape(a), self.shape(b)
        if len(sa) < 2 or len(sb) < 2:
            raise Reject("matmul with a 1-D operand is not supported")
        if sa[-1] != sb[-2]:
            raise Reject(f"matmul shapes {sa} @ {sb} do not match")
        batch = broadcast(sa[:-2], sb[:-2])
        return self._add("matmul", (a, b), {}, batch + (sa[-2], sb[-1]))


# Names the generated kernels and launchers use for their own variables.
_RESERVED = {"out", "grid", "pid", "mask", "offs", "n", "m", "k", "shape", "rows", "cols", "row_mask",
             "col_mask", "acc", "torch", "nn", "triton", "tl", "self", "batch", "inner", "outer",
             "full", "dtype", "start", "i", "o", "idx", "rem", "flat", "input", "lambda", "def", "lhs", "rhs",
             "sizes", "pad", "is_flat", "n_elements", "n_rows", "n_cols", "n_batch", "grid_rows",
             "block_m", "block_n", "out_shape", "a_tile", "b_tile", "a_ptrs", "b_ptrs", "mm"}


def _identifier(stem: str) -> str:
    out = "".join(c if c.isalnum() else "_" for c in stem).strip("_").lower() or "t"
    if out[0].isdigit():
        out = "t" + out
    if out in _RESERVED or out.startswith(("v_", "l_", "stride_")):
        out = out + "_in"
    return out
