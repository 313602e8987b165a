"""Mixture-of-experts routing: ``torch.topk`` (a router's choice of experts, or an expert's
choice of tokens), and the indexed writes that combine by it: ``scatter`` (of a tensor or
of one value), ``scatter_add``, ``scatter_reduce(reduce="sum")`` and ``index_add``, each
the functional form (``x.scatter_(...)`` on a fresh tensor is made functional by the capture).

topk becomes a "topk" node holding the int64 positions (its kernel: _gen_topk); the values
are an indexed read of the input at them (a "gather" node), so the pair always agrees, ties
included. A write becomes one "scatter" node (_gen_scatter): the output starts as the base
tensor (or, for a constant base such as ``torch.zeros_like`` of a computed value, as that
constant, without storing it first) and each element of the walked tensor (the index for
scatter, the source for index_add) is stored, or added atomically, at its position.

nn.EmbeddingBag is a gather of its rows and, for bags of varying length (a 1-D input and
offsets), an index_add of them into their bags (each element's bag: how many offsets are at
or before its position, less one), divided by the bag's size for mode="mean".

Routing whose shapes depend on the values (``nonzero``, ``torch.where(mask)``, boolean
masks) has no static-shape kernel: rejected with the op named.
"""

from __future__ import annotations

from ._build import FLOAT_DTYPES, Reject, ValuesTuple
from ._canon_index import embedding_rows
from ._canon_nn import _leaf_view
from ._canon_util import _bind, _static
from ._ir import Ref, TensorSpec

__all__ = ["ROUTE_HANDLERS", "MAX_TOPK", "embedding_bag", "shape_from_values"]

# topk makes one pass over the row per value it picks: past this many, a sort would pay
MAX_TOPK = 256
# atomic adds exist for these on every GPU the kernels target (fp16/bf16 ones round at each add)
_ADD_DTYPES = ("float32", "float64")


def _tensor(ctx, value, what: str) -> Ref:
    ref = ctx.ref(value)
    if ref.kind not in ("leaf", "node"):
        raise Reject(f"{what} is not a tensor")
    return ref


def _index(ctx, value, op: str) -> Ref:
    ref = _tensor(ctx, value, f"the index of {op}")
    dtype = ctx.b.dtype(ref)
    if ctx.b.is_bool(ref):
        raise Reject(f"{op} by a boolean mask: the result's shape depends on the mask's values")
    if dtype not in ("int64", "int32"):
        raise Reject(f"{op} with a {dtype} index (int64 indices are supported)")
    return ref


def _topk(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "k", "dim", "largest", "sorted"], {"dim": -1, "largest": True, "sorted": True})
    x = _tensor(ctx, a["input"], "topk's input")
    shape = ctx.b.shape(x)
    if not shape:
        raise Reject("topk of a 0-dim tensor is not supported")
    dtype = ctx.b.dtype(x)
    if dtype not in FLOAT_DTYPES:
        raise Reject(f"topk of a {dtype} tensor (floating values are supported)")
    k = int(_static(a["k"], "topk's k"))
    dim = int(_static(a["dim"], "topk's dim")) % len(shape)
    largest, in_order = bool(_static(a["largest"], "largest")), bool(_static(a["sorted"], "sorted"))
    if not 1 <= k <= shape[dim]:
        raise Reject(f"topk with k={k} of a dim of {shape[dim]}")
    if k > MAX_TOPK:
        raise Reject(f"topk with k={k} (at most {MAX_TOPK}: the kernel makes a pass over the row per value)")
    if not in_order and k > 1:
        # torch leaves the order unspecified there, and its CPU and GPU orders differ
        raise Reject("topk with sorted=False (the order of the values is unspecified); sorted=True is supported")
    positions = ctx.b.topk(x, k, dim, largest)
    values = ctx.b.gather(x, positions, dim, "gather", ctx.b.shape(positions))
    return ValuesTuple(values, indices=positions)


def _write(ctx, op: str, base, dim, index, src, add: bool, walk: str, alpha=1.0) -> Ref:
    """``base`` with ``src`` (a tensor or one value) written (added) at ``index``'s positions
    along ``dim``; ``walk``: "index" (scatter: an element per index element, src read at the
    index's coordinates) or "source" (index_add: an element per source element, its position
    the 1-D index's entry at its coordinate along ``dim``)."""
    if ctx.spec is None:
        raise Reject(f"{op} without a traced shape")
    out = _tensor(ctx, base, f"the tensor {op} writes into")
    shape, dtype = tuple(ctx.b.shape(out)), ctx.spec.dtype
    if shape != tuple(ctx.spec.shape):
        raise Reject(f"{op} into a tensor of shape {shape} broadcast to {tuple(ctx.spec.shape)}")
    if add and dtype not in _ADD_DTYPES:
        raise Reject(f"{op} into a {dtype} tensor (atomic adds into float32 or float64 are supported)")
    rank = len(shape)
    if rank == 0:
        raise Reject(f"{op} into a 0-dim tensor is not supported")
    dim = int(_static(dim, f"{op}'s dim")) % rank
    idx = _index(ctx, index, op)
    if walk == "index" and len(ctx.b.shape(idx)) != rank:
        raise Reject(f"{op} with an index of another rank than the tensor's")
    if walk == "source" and len(ctx.b.shape(idx)) != 1:
        raise Reject(f"{op} with a {len(ctx.b.shape(idx))}-D index (a 1-D index is supported)")
    value = None
    if ctx.is_tensor(src):
        src = _tensor(ctx, src, f"the source of {op}")
        if len(ctx.b.shape(src)) != rank:
            raise Reject(f"{op} with a source of another rank than the tensor's")
    else:
        value = float(_static(src, f"the value {op} writes"))
    fill = None
    if out.kind == "node" and ctx.b.nodes[out.value].op == "full":
        fill = float(ctx.b.nodes[out.value].attr("value"))  # a constant start: filled in place, never stored
    args = ((out,) if fill is None else ()) + (idx,) + ((src,) if value is None else ())
    attrs = {"dim": dim, "walk": walk, "add": add, "fill": fill, "value": value,
             "alpha": float(_static(alpha, f"{op}'s alpha"))}
    return ctx.b.scatter(args, attrs, shape, dtype)


def _reduce_mode(op: str, reduce) -> bool:
    """True for an add; torch's other scatter reductions (multiply, mean, amax...) are not supported."""
    reduce = _static(reduce, "reduce")
    if reduce in (None, "none"):
        return False
    if reduce in ("add", "sum"):
        return True
    raise Reject(f"{op} with reduce={reduce!r} (only a plain write or an add is supported)")


def _scatter(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "dim", "index", "src", "value", "reduce"],
              {"src": None, "value": None, "reduce": None})
    src = a["src"] if a["src"] is not None else a["value"]
    if src is None:
        raise Reject("scatter without a source or a value")
    return _write(ctx, "scatter", a["input"], a["dim"], a["index"], src, _reduce_mode("scatter", a["reduce"]), "index")


def _scatter_add(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "dim", "index", "src"])
    return _write(ctx, "scatter_add", a["input"], a["dim"], a["index"], a["src"], True, "index")


def _scatter_reduce(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "dim", "index", "src", "reduce", "include_self"], {"include_self": True})
    if _static(a["reduce"], "reduce") != "sum" or not _static(a["include_self"], "include_self"):
        raise Reject(f"scatter_reduce with reduce={a['reduce']!r}, include_self={a['include_self']!r} "
                     "(reduce='sum' with include_self=True is supported)")
    return _write(ctx, "scatter_reduce", a["input"], a["dim"], a["index"], a["src"], True, "index")


def _index_add(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "dim", "index", "source", "alpha"], {"alpha": 1})
    if not ctx.is_tensor(a["source"]):
        raise Reject("index_add of a non-tensor source")
    return _write(ctx, "index_add", a["input"], a["dim"], a["index"], a["source"], True, "source", a["alpha"])


def embedding_bag(ctx, module, weight: Ref, args, kwargs) -> Ref:
    """nn.EmbeddingBag's forward: fixed-length bags (a 2-D input; mode sum, mean or max) or
    bags given by offsets (a 1-D input; sum or mean), with optional per-sample weights (sum)."""
    a = _bind(args, kwargs, ["input", "offsets", "per_sample_weights"], {"offsets": None, "per_sample_weights": None})
    if module.padding_idx is not None:
        raise Reject("nn.EmbeddingBag with padding_idx (left out of each bag) is not supported")
    if ctx.spec is None:
        raise Reject("nn.EmbeddingBag without a traced shape")
    b, ids = ctx.b, _tensor(ctx, a["input"], "nn.EmbeddingBag's input")
    dim, dtype = module.embedding_dim, ctx.spec.dtype
    shape = tuple(b.shape(ids))
    rows = embedding_rows(type(ctx)(b, TensorSpec(shape + (dim,), dtype)), ids, weight, module.max_norm)
    if a["per_sample_weights"] is not None:  # torch allows them with mode="sum" only
        scale = _tensor(ctx, a["per_sample_weights"], "per_sample_weights")
        rows = b.pw("mul", rows, _leaf_view(ctx, scale, ".unsqueeze(-1)", shape + (1,)))
    if len(shape) == 2:  # fixed-length bags: a reduction over each row of ids
        total = b.reduce("max" if module.mode == "max" else "sum", rows, (1,), False)
        return b.pw("div", total, Ref("const", float(shape[1]))) if module.mode == "mean" else total
    if len(shape) != 1 or a["offsets"] is None:
        raise Reject("nn.EmbeddingBag takes a 2-D input, or a 1-D input with offsets")
    if module.mode == "max":
        raise Reject("nn.EmbeddingBag with mode='max' and offsets (bags of varying length) is not supported")
    bags, n = ctx.spec.shape[0], shape[0]
    offsets = _tensor(ctx, a["offsets"], "nn.EmbeddingBag's offsets")
    # bag of element i: the offsets at or before i, less one (with include_last_offset the last
    # offset is the input's length, never at or before an element)
    starts = _leaf_view(ctx, offsets, ".view(1, -1)", (1, b.shape(offsets)[0]))
    before = b.pw("le", starts, b.iota(0, (n, 1)))
    bag_column = b.pw("sub", b.reduce("sum", before, (1,), True), Ref("const", 1.0))  # (n, 1)
    bag = _leaf_view(ctx, bag_column, ".view(-1)", (n,))
    sums = _write(type(ctx)(b, TensorSpec((bags, dim), dtype)), "index_add", b.full(0.0, (bags, dim), dtype), 0,
                  b.pw("cast", bag, dtype="int64"), rows, True, "source")
    if module.mode == "sum":
        return sums
    # a bag's size: its elements counted; an empty bag's mean is 0, as torch's
    members = b.pw("eq", bag_column, b.iota(1, (1, bags)))
    size = b.reduce("sum", members, (0,), False)
    return b.pw("div", sums, _leaf_view(ctx, b.pw("maximum", size, Ref("const", 1.0)), ".unsqueeze(-1)", (bags, 1)))


def shape_from_values(op: str) -> Reject:
    """The rejection of an op whose result's shape depends on the values."""
    return Reject(f"{op} is not supported: its result's shape depends on the values (token lists per expert "
                  "have no static-shape kernel; dense or capacity-based routing does)")


def _data_dependent(op: str):
    def handler(ctx, args, kwargs):
        raise shape_from_values(op)
    return handler


ROUTE_HANDLERS = {"topk": _topk, "scatter": _scatter, "scatter_add": _scatter_add, "scatter_reduce": _scatter_reduce,
                  "index_add": _index_add, "nonzero": _data_dependent("nonzero"),
                  "argwhere": _data_dependent("argwhere"), "masked_select": _data_dependent("masked_select")}
