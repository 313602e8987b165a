"""Builder for the IR: shape inference for each primitive as it is added."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._ir import Leaf, Node, Ref, TensorSpec
from ._pointwise import POINTWISE, literal

__all__ = ["Reject", "PyVal", "ComputedView", "ValuesTuple", "Flipped", "Builder", "broadcast", "py_source",
           "FLOAT_DTYPES", "promote"]


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
    extra: tuple[Ref, ...] = ()  # values the suffixes name as @1, @2...


@dataclass(frozen=True)
class ValuesTuple:
    """The (values, indices) pair of torch.max/min with a dim; the indices are
    built only if they are used."""

    values: Ref
    source: Ref | None = None
    kind: str = ""
    dims: tuple[int, ...] = ()
    keepdim: bool = False
    indices: Ref | None = None  # built already (torch.topk's positions: the values are read at them)


@dataclass(frozen=True)
class Flipped:
    """flip(value, dims): legal only where it cancels (a reverse scan is
    cumsum(x.flip(d), d).flip(d)) or feeds a scan along the flipped dim."""

    value: Ref
    dims: tuple[int, ...]


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
    if isinstance(value, float) and not math.isfinite(value):
        return literal(value)  # repr gives inf and nan, names in generated code
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


FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
_FLOAT_RANK = {"float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}
LEAF_DTYPES = FLOAT_DTYPES + ("bool", "int8", "uint8", "int16", "int32", "int64")


def promote(dtypes) -> str:
    """torch's promotion among floating dtypes; non-floating operands (masks,
    class indices) do not take part, and alone they compute in float32."""
    floats = {d for d in dtypes if d in _FLOAT_RANK}
    if not floats:
        return "float32"
    if floats == {"float16", "bfloat16"}:
        return "float32"
    return max(floats, key=lambda d: _FLOAT_RANK[d])


_COMPARISONS = frozenset({"gt", "ge", "lt", "le", "eq", "ne"})


class Builder:
    def __init__(self) -> None:
        self.leaves: dict[str, Leaf] = {}  # by source
        self.nodes: list[Node] = []
        self.dtypes: dict[int, str] = {}  # per node: the dtype torch gives the value
        # nodes torch types bool (comparisons, logical ops): computed as 0.0/1.0 floats, so their
        # dtypes say float32, but a mask's meaning depends on it (attention: keep or add)
        self.booleans: set[int] = set()
        self._names: set[str] = set()
        self._memo: dict = {}

    # -- operands ---------------------------------------------------------
    def leaf(self, source: str, spec: TensorSpec, stem: str) -> Ref:
        if source in self.leaves:
            return Ref("leaf", self.leaves[source].name)
        if spec.dtype not in LEAF_DTYPES:
            raise Reject(f"tensor operand {source} has dtype {spec.dtype}; floating, integer and bool tensors "
                         "are supported")
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

    def dtype(self, ref: Ref) -> str | None:
        """The value's dtype; None for Python constants and scalars (they never promote)."""
        if ref.kind == "node":
            return self.dtypes[ref.value]
        if ref.kind == "leaf":
            return self.leaf_by_name(ref.value).spec.dtype
        return None

    def is_bool(self, ref: Ref) -> bool:
        """Whether torch's value is a bool tensor (an input of dtype bool or a computed mask)."""
        if ref.kind != "node":
            return self.dtype(ref) == "bool"
        node = self.nodes[ref.value]
        # comparisons are bool in torch wherever they were built (also rebuilt at another shape by
        # a view pushed into them); a view of a mask is a mask
        return (ref.value in self.booleans or node.op in _COMPARISONS
                or (node.op == "view" and self.is_bool(node.args[0])))

    # -- primitives -------------------------------------------------------
    def _add(self, op: str, args: tuple[Ref, ...], attrs: dict, shape: tuple[int, ...],
             dtype: str | None = None) -> Ref:
        key = (op, args, tuple(sorted(attrs.items())), shape)
        if key in self._memo:  # common subexpressions (exp(x - max) in softmax...) are built once
            return self._memo[key]
        node = Node(id=len(self.nodes), op=op, args=args, attrs=tuple(sorted(attrs.items())), shape=tuple(shape))
        self.nodes.append(node)
        self.dtypes[node.id] = dtype or promote(self.dtype(a) for a in args)
        self._memo[key] = Ref("node", node.id)
        return self._memo[key]

    def pw(self, op: str, *args: Ref, **attrs) -> Ref:
        if op not in POINTWISE:
            raise Reject(f"no pointwise primitive {op}")
        for a in args:
            if not isinstance(a, Ref):
                raise Reject(f"{op}: unsupported operand {a!r}")
        shape = broadcast(*(self.shape(a) for a in args))
        grouped = self._in_groups(op, args, attrs, shape)
        if grouped is not None:
            return grouped
        dtype = attrs["dtype"] if op == "cast" else None
        return self._add(op, tuple(args), attrs, shape, dtype)

    # -- grouped layouts (group norm) -----------------------------------------
    # A group norm computes on (N, G, C/G[, S]), a view of (N, C, *spatial). Pointwise
    # work next to it is done in that layout too, so one kernel covers the norm, its
    # prologue and its epilogue instead of a view between kernels.
    @staticmethod
    def group_suffix(spec) -> str:
        groups, per, spatial = spec
        return f".unflatten(1, ({groups}, {per}))" + (".flatten(3)" if spatial else "")

    def grouped_shape(self, shape, spec) -> tuple[int, ...]:
        groups, per, spatial = spec
        return (shape[0], groups, per) + ((math.prod(shape[2:]),) if spatial else ())

    def regroup(self, ref: Ref, full: tuple[int, ...], spec, memo=None) -> tuple[Ref, Ref | str] | None:
        """``ref`` (broadcasting against ``full``) in the grouped layout, and a tensor of
        shape ``full`` the value is made from (a node, or an input's source); None
        when that is not a view of inputs and buffers."""
        memo = {} if memo is None else memo
        if ref.kind in ("const", "scalar"):
            return ref, None
        key = (ref.kind, ref.value)
        if key in memo:
            return memo[key]
        out = self._regroup(ref, full, spec, memo)
        memo[key] = out
        return out

    def _regroup(self, ref, full, spec, memo):
        groups, per, spatial = spec
        rank = len(full)
        gshape = self.grouped_shape(full, spec)
        shape = tuple(self.shape(ref))
        padded = (1,) * (rank - len(shape)) + shape if len(shape) <= rank else None
        if ref.kind == "leaf":
            leaf = self.leaf_by_name(ref.value)
            if math.prod(shape) == 1:
                return (ref if len(shape) <= len(gshape) else
                        self.leaf(leaf.source + ".reshape(1)", TensorSpec((1,), leaf.spec.dtype), leaf.name + "_g")), None
            if padded == tuple(full):
                view = self.leaf(leaf.source + self.group_suffix(spec), TensorSpec(gshape, leaf.spec.dtype),
                                 leaf.name + "_g")
                return view, leaf.source
            if padded is not None and padded[1] == full[1] and math.prod(padded) == full[1]:
                suffix, pshape = (f".view({groups}, {per}, 1)", (groups, per, 1)) if spatial else \
                    (f".view({groups}, {per})", (groups, per))
                return self.leaf(leaf.source + suffix, TensorSpec(pshape, leaf.spec.dtype), leaf.name + "_g"), None
            return None
        node = self.nodes[ref.value]
        if node.op == "view" and node.attr("regroup") == spec:
            return node.args[0], (node.args[1] if len(node.args) > 1 else node.attr("base_source"))
        if node.op in POINTWISE and node.op not in ("iota", "full") and shape == tuple(full):
            parts = [self.regroup(a, full, spec, memo) for a in node.args]
            if any(p is None for p in parts):
                return None
            base = next((b for _, b in parts if b), None)
            if base is None:
                return None
            attrs = dict(node.attrs)
            return self._add(node.op, tuple(p for p, _ in parts), attrs, gshape,
                             attrs.get("dtype") if node.op == "cast" else None), base
        if shape == tuple(full) and node.op not in ("view",):
            return self.view(ref, (self.group_suffix(spec),), gshape), ref
        return None

    def ungrouped(self, grouped: Ref, base, full, spec) -> Ref:
        """The grouped value viewed back as ``full`` (after the kernel that computes it)."""
        attrs = {"regroup": spec}
        if isinstance(base, str):
            attrs.update(suffix=f".view({base}.shape)", base_source=base)
            extra = ()
        elif base is not None:
            attrs.update(suffix=".view(@1.shape)")
            extra = (base,)
        else:  # pragma: no cover - regroup always names a base
            raise Reject("a grouped value with nothing to take its shape from")
        return self._add("view", (grouped,) + extra, attrs, tuple(full), self.dtypes[grouped.value])

    def _in_groups(self, op, args, attrs, shape):
        """A pointwise op on a grouped view: done in the grouped layout when every operand
        has a grouped form."""
        views = [a for a in args if a.kind == "node" and self.nodes[a.value].op == "view"
                 and self.nodes[a.value].attr("regroup") is not None]
        if not views or op in ("iota", "full"):
            return None
        view = self.nodes[views[0].value]
        spec, full = view.attr("regroup"), view.shape
        if tuple(shape) != tuple(full):
            return None
        parts = [self.regroup(a, full, spec) for a in args]
        if any(p is None for p in parts):
            return None
        inner = self._add(op, tuple(p for p, _ in parts), attrs, self.grouped_shape(full, spec),
                          attrs.get("dtype") if op == "cast" else None)
        base = view.args[1] if len(view.args) > 1 else view.attr("base_source")
        return self.ungrouped(inner, base, full, spec)

    def reduce(self, kind: str, x: Ref, dims: tuple[int, ...], keepdim: bool) -> Ref:
        """kind: sum, max, min, or argmax/argmin (int64 indices into the flattened group)."""
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
        dtype = "int64" if kind in ("argmax", "argmin") else None
        return self._add("reduce", (x,), {"kind": kind, "start": start, "stop": stop, "keepdim": bool(keepdim)},
                         out, dtype)

    def retag(self, x: Ref, shape: tuple[int, ...]) -> Ref:
        """The same per-row values under another shape (squeezing a keepdim reduction)."""
        return self._add("identity", (x,), {}, tuple(shape))

    def matmul(self, a: Ref, b: Ref) -> Ref:
        """A computed operand is written to a buffer by the stage before (no fused prologue)."""
        for ref, side in ((a, "left"), (b, "right")):
            if ref.kind not in ("leaf", "node"):
                raise Reject(f"matmul {side} operand is not a tensor")
        sa, sb = self.shape(a), self.shape(b)
        if len(sa) < 2 or len(sb) < 2:
            raise Reject("matmul with a 1-D operand is not supported")
        if sa[-1] != sb[-2]:
            raise Reject(f"matmul shapes {sa} @ {sb} do not match")
        batch = broadcast(sa[:-2], sb[:-2])
        return self._add("matmul", (a, b), {}, batch + (sa[-2], sb[-1]))

    def anchor(self, op: str, args: tuple[Ref, ...], attrs: dict, shape: tuple[int, ...]) -> Ref:
        """A conv, pool or scan node: its operands are tensors (leaves or computed)."""
        for ref in args:
            if ref.kind not in ("leaf", "node"):
                raise Reject(f"{op} operand is not a tensor")
        return self._add(op, tuple(args), attrs, tuple(shape))

    def view(self, base: Ref, suffixes: tuple[str, ...], shape: tuple[int, ...], extra: tuple[Ref, ...] = ()) -> Ref:
        """A view of a computed value: the stage computing ``base`` writes a buffer, and
        the view is taken of that buffer in forward. ``@1``, ``@2``... in the suffix name
        the tensors in ``extra`` (their buffers or input expressions)."""
        if base.kind != "node":
            raise Reject("view of a non-computed value")
        return self._add("view", (base,) + tuple(extra), {"suffix": "".join(suffixes), "regroup": None},
                         tuple(shape), self.dtypes[base.value])

    def iota(self, dim: int, shape: tuple[int, ...]) -> Ref:
        """The index along ``dim`` of a tensor of ``shape`` (broadcast like any operand)."""
        return self._add("iota", (), {"dim": dim}, tuple(shape), "float32")

    def full(self, value: float, shape: tuple[int, ...], dtype: str = "float32") -> Ref:
        return self._add("full", (), {"value": float(value)}, tuple(shape), dtype)

    def random(self, kind: str, shape: tuple[int, ...], dtype: str, device: Ref) -> Ref:
        """A fresh draw (kind "normal": torch.randn, "uniform": torch.rand) of ``shape`` on the
        device of the tensor ``device``. Each call is a node of its own: two draws of one shape
        are two different values (the index keeps the builder from merging them)."""
        draws = sum(node.op == "random" for node in self.nodes)
        return self._add("random", (device,), {"kind": kind, "draw": draws}, tuple(shape), dtype)

    def gather(self, src: Ref, index: Ref, dim: int, mode: str, shape: tuple[int, ...]) -> Ref:
        """Values of ``src`` at the positions ``index`` holds along ``dim`` (see _canon_index)."""
        for ref in (src, index):
            if ref.kind not in ("leaf", "node"):
                raise Reject("an indexed read of a non-tensor")
        return self._add("gather", (src, index), {"dim": dim, "mode": mode}, tuple(shape), self.dtype(src))

    def resample(self, src: Ref, attrs: dict, shape: tuple[int, ...]) -> Ref:
        """``src`` resampled over its spatial dims (nn.Upsample, F.interpolate; see _canon_resample)."""
        if src.kind not in ("leaf", "node"):
            raise Reject("resampling a non-tensor")
        return self._add("resample", (src,), attrs, tuple(shape), self.dtype(src))

    def topk(self, x: Ref, k: int, dim: int, largest: bool) -> Ref:
        """The int64 positions along ``dim`` of the ``k`` largest (smallest) values of ``x``, best
        first (see _canon_route); the values are a gather of ``x`` at them."""
        shape = tuple(k if d == dim else s for d, s in enumerate(self.shape(x)))
        return self._add("topk", (x,), {"k": k, "dim": dim, "largest": largest}, shape, "int64")

    def scatter(self, args: tuple[Ref, ...], attrs: dict, shape: tuple[int, ...], dtype: str) -> Ref:
        """Values written (or added) at the positions an index tensor holds (see _canon_route)."""
        return self._add("scatter", tuple(args), attrs, tuple(shape), dtype)

    def cat(self, parts: tuple[Ref, ...], dim: int, shape: tuple[int, ...]) -> Ref:
        """torch.cat of tensors: a copy, made in forward from the parts' buffers."""
        for ref in parts:
            if ref.kind not in ("leaf", "node"):
                raise Reject("torch.cat of a non-tensor")
        # parts of one dtype keep it, as torch.cat does (a stack of argmax ids stays int64: an integer
        # output); mixed ones promote
        dtypes = {self.dtype(ref) for ref in parts}
        return self._add("cat", tuple(parts), {"dim": dim}, tuple(shape), dtypes.pop() if len(dtypes) == 1 else None)


# Names the generated kernels and launchers use for their own variables.
_RESERVED = {"out", "grid", "pid", "mask", "offs", "n", "m", "k", "shape", "rows", "cols", "row_mask",
             "col_mask", "acc", "torch", "nn", "triton", "tl", "self", "batch", "inner", "outer",
             "full", "dtype", "start", "i", "o", "idx", "rem", "flat", "input", "lambda", "def", "lhs", "rhs",
             "sizes", "pad", "is_flat", "n_elements", "n_rows", "n_cols", "n_batch", "grid_rows",
             "block_m", "block_n", "out_shape", "a_tile", "b_tile", "a_ptrs", "b_ptrs", "mm", "cols", "tile",
             "split", "part", "parts", "carry", "iota", "geom", "spatial", "n_split", "chunk", "idx64",
             "device", "order", "out_strided", "cout", "cin", "cin_g", "cout_g", "groups", "kg", "geo",
             # more launchers' locals (found by parsing the generated launchers of the test and suite tasks)
             "a_hi", "a_lo", "args", "b_hh", "b_hi", "b_ih", "b_lo", "block_c", "block_h", "block_r", "block_w", "c_n", "d",
             "din", "dirs", "dl", "g0", "g1", "group", "h_n", "hbuf", "hidden", "in_shape", "k_size", "k_steps",
             "k_tiles", "kp", "kv_batch", "last", "layer", "layer_in", "layers", "main_kernel", "meta", "modes",
             "n_iblocks", "n_out", "n_state", "op", "operands", "p", "packed", "params", "partial_kernel", "pd",
             "precision", "qm", "round_in_kernel", "s", "seq", "seq_shape", "split_stride", "src", "st", "stages",
             "states", "step", "steps", "strided", "strides", "sync", "tf32", "tiles", "tiles_b", "w_hh", "w_ih",
             "width", "x_3", "xp"}


def _identifier(stem: str) -> str:
    out = "".join(c if c.isalnum() else "_" for c in stem).strip("_").lower() or "t"
    if out[0].isdigit():
        out = "t" + out
    if out in _RESERVED or out.startswith(("v_", "l_", "stride_", "buf", "acc", "size_", "idx_")):
        out = out + "_in"
    return out
