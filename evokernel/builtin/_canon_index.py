"""Reads at computed positions: ``x[idx]`` (an integer tensor indexing one dim, the dims
before it taken whole), ``index_select`` and ``gather``; and ``torch.roll``, a rotation
of whole slices (two narrow views joined by torch.cat, a copy in forward, per rolled dim);
and ``x[slices] = v`` (_capture's setitem_value): the region written replaced by ``v``, the
rest of ``x`` kept, joined the same way (torch.cat of narrow views, per sliced dim).

Each becomes one "gather" node (the scheduler gives it a kernel of its own, _gen_gather):
``mode`` "select" replaces dim ``dim`` of the source by the index tensor's dims (advanced
indexing, index_select), "gather" reads ``src[..., idx[i...], ...]`` at every position of
an index tensor shaped like the output (torch.gather). A boolean mask would make the
result's shape depend on the values: not supported.
"""

from __future__ import annotations

import math

from ._build import ComputedView, Reject
from ._canon_nn import _leaf_view
from ._canon_util import _bind, _static, materialized
from ._ir import Ref

__all__ = ["INDEX_HANDLERS", "embedding_rows", "indexed", "is_tensor_index"]

_INDEX_DTYPES = ("int64", "int32", "int16", "int8", "uint8")


def is_tensor_index(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, (Ref, ComputedView)) and not (isinstance(i, Ref) and i.kind in ("const", "scalar"))
               for i in items)


def _index_ref(ctx, value) -> Ref:
    ref = ctx.ref(value)
    dtype = ctx.b.dtype(ref)
    if ctx.b.is_bool(ref):
        raise Reject("indexing by a boolean mask: the result's shape depends on the mask's values")
    if dtype not in _INDEX_DTYPES:
        raise Reject(f"indexing by a {dtype} tensor (integer indices are supported)")
    return ref


def _gather(ctx, src, index, dim: int, mode: str) -> Ref:
    if ctx.spec is None:
        raise Reject("an indexed read without a traced shape")
    src = ctx.ref(src)
    rank = len(ctx.b.shape(src))
    if rank == 0:
        raise Reject("indexing a 0-dim tensor")
    return ctx.b.gather(src, _index_ref(ctx, index), dim % rank, mode, ctx.spec.shape)


def indexed(ctx, base, index):
    """``base[index]`` where the index holds integer tensors at consecutive dims, whole slices
    around them. Several tensors (``z[:, rows, cols]``, ``x[torch.arange(b), ids]``) index
    their dims jointly: the dims are merged into one, read at the flat position
    ``rows * n_cols + cols`` (the index tensors broadcast together, as torch does)."""
    items = list(index) if isinstance(index, tuple) else [index]
    positions = [k for k, i in enumerate(items) if is_tensor_index((i,))]
    whole = slice(None)
    if any(i != whole for k, i in enumerate(items) if k not in positions):
        raise Reject("a tensor index beside slices, integers or None (only whole slices around it are supported)")
    if positions != list(range(positions[0], positions[-1] + 1)):
        raise Reject("tensor indices at dims that are not next to each other (torch moves their dims first)")
    if len(positions) == 1:
        return _gather(ctx, base, items[positions[0]], positions[0], "select")
    src = ctx.ref(base)
    shape = tuple(ctx.b.shape(src))
    first, last = positions[0], positions[-1]
    flat = None
    for k in positions:  # each index wrapped as torch wraps a negative one, then weighted by the dims after it
        idx = ctx.ref(_index_ref(ctx, items[k]))
        idx = ctx.b.pw("where", ctx.b.pw("lt", idx, Ref("const", 0.0)), ctx.b.pw("add", idx, Ref("const", float(shape[k]))), idx)
        weight = float(math.prod(shape[k + 1:last + 1]))
        term = idx if weight == 1 else ctx.b.pw("mul", idx, Ref("const", weight))
        flat = term if flat is None else ctx.b.pw("add", flat, term)
    merged = shape[:first] + (math.prod(shape[first:last + 1]),) + shape[last + 1:]
    rows = _leaf_view(ctx, src, f".reshape({', '.join(map(str, merged))})", merged)
    return ctx.b.gather(rows, ctx.b.pw("cast", flat, dtype="int64"), first, "select", ctx.spec.shape)


def _index_select(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "dim", "index"])
    return _gather(ctx, a["input"], a["index"], int(_static(a["dim"], "dim")), "select")


def _torch_gather(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "dim", "index", "sparse_grad"], {"sparse_grad": False})
    return _gather(ctx, a["input"], a["index"], int(_static(a["dim"], "dim")), "gather")


def _roll(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "shifts", "dims"], {"dims": None})
    shifts, dims = _static(a["shifts"], "shifts"), _static(a["dims"], "dims")
    if dims is None:
        raise Reject("torch.roll without dims (of the flattened tensor) is not supported")
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise Reject("torch.roll with as many shifts as dims is supported")
    x = ctx.ref(a["input"])
    shape = tuple(ctx.b.shape(x))
    for shift, dim in zip(shifts, dims):
        dim %= len(shape)
        n = shape[dim]
        shift %= n
        if not shift:
            continue
        # out[i] = x[(i - shift) % n]: the last `shift` slices, then the first n - shift
        tail = _leaf_view(ctx, x, f".narrow({dim}, {n - shift}, {shift})", shape[:dim] + (shift,) + shape[dim + 1:])
        head = _leaf_view(ctx, x, f".narrow({dim}, 0, {n - shift})", shape[:dim] + (n - shift,) + shape[dim + 1:])
        x = ctx.b.cat((tail, head), dim, shape)
    return x if x.kind == "node" else ctx.b.pw("identity", x)


def embedding_rows(ctx, indices, weight, max_norm=None) -> Ref:
    """An embedding lookup: the weight's rows at the indices (``weight[indices]``).
    ``padding_idx`` only shapes the gradient; ``max_norm`` rescales the weight's rows
    in place on every call, a write the candidate would have to repeat."""
    if max_norm is not None:
        raise Reject("an embedding with max_norm (it renormalises the weight in place) is not supported")
    return _gather(ctx, weight, indices, 0, "select")


def _f_embedding(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "weight", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq",
                             "sparse"], {"padding_idx": None, "max_norm": None, "norm_type": 2.0,
                                         "scale_grad_by_freq": False, "sparse": False})
    return embedding_rows(ctx, a["input"], a["weight"], _static(a["max_norm"], "max_norm"))


def _torch_embedding(ctx, args, kwargs):  # torch.embedding(weight, indices, ...): the weight first
    a = _bind(args, kwargs, ["weight", "indices", "padding_idx", "scale_grad_by_freq", "sparse"],
              {"padding_idx": -1, "scale_grad_by_freq": False, "sparse": False})
    return embedding_rows(ctx, a["indices"], a["weight"])


def _write_bounds(index, shape: tuple[int, ...]) -> list[tuple[int, int, bool]]:
    """(start, stop, is an integer) per dim of ``x[index] = v``'s region; slices of step 1 only."""
    items = list(index) if isinstance(index, tuple) else [index]
    if any(i is None for i in items):
        raise Reject("x[index] = v with None (a new axis) in the index is not supported")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (len(shape) - len(items) + 1)
    items += [slice(None)] * (len(shape) - len(items))
    if len(items) != len(shape):
        raise Reject(f"x[index] = v indexes {len(items)} dims of a rank-{len(shape)} tensor")
    bounds = []
    for item, n in zip(items, shape):
        item = _static(item, "the index of x[index] = v")
        if isinstance(item, bool) or not isinstance(item, (int, slice)):
            raise Reject(f"x[index] = v with a {type(item).__name__} in the index (slices and integers are supported)")
        if isinstance(item, int):
            k = item % n
            bounds.append((k, k + 1, True))
            continue
        start, stop, step = item.indices(n)
        if step != 1:
            raise Reject("x[index] = v with a strided slice is not supported")
        bounds.append((start, max(start, stop), False))
    return bounds


def _replaced(ctx, base: Ref, bounds: list[tuple[int, int]], value: Ref, shape: tuple[int, ...]) -> Ref:
    """``base`` (of ``shape``) with the region ``bounds`` replaced by ``value`` (the region's shape):
    along the first dim the region does not cover, the part before it, the region's slab
    (replaced recursively) and the part after it, joined by torch.cat."""
    dim = next((d for d, (start, stop) in enumerate(bounds) if (start, stop) != (0, shape[d])), None)
    if dim is None:
        return value
    start, stop = bounds[dim]

    def narrow(at: int, length: int) -> Ref:
        return _leaf_view(ctx, base, f".narrow({dim}, {at}, {length})", shape[:dim] + (length,) + shape[dim + 1:])

    slab_shape = shape[:dim] + (stop - start,) + shape[dim + 1:]
    inner = bounds[:dim] + [(0, stop - start)] + bounds[dim + 1:]
    parts = [narrow(0, start)] if start else []
    parts.append(_replaced(ctx, narrow(start, stop - start), inner, value, slab_shape))
    if stop < shape[dim]:
        parts.append(narrow(stop, shape[dim] - stop))
    return ctx.b.cat(tuple(materialized(ctx, p) for p in parts), dim, shape)


def _setitem_value(ctx, args, kwargs):
    """``x[index] = v`` with slices and integers: the written tensor as a value."""
    a = _bind(args, kwargs, ["base", "index", "value"])
    if is_tensor_index((a["index"],) if not isinstance(a["index"], tuple) else a["index"]):
        raise Reject("x[index] = v with a tensor index (index_put) is not supported; slices and integers are")
    base = ctx.ref(a["base"])
    shape = tuple(ctx.b.shape(base))
    bounds = _write_bounds(a["index"], shape)
    if any(start == stop for start, stop, _ in bounds):  # an empty region: nothing written
        return base if base.kind == "node" else ctx.b.pw("identity", base)
    value, dtype = ctx.ref(a["value"]), ctx.b.dtype(base)
    if ctx.b.dtype(value) not in (None, dtype):
        value = ctx.b.pw("cast", value, dtype=dtype)
    # v broadcasts against the region without its integer-indexed dims, as torch's write does
    kept = tuple(stop - start for start, stop, is_int in bounds if not is_int)
    if tuple(ctx.b.shape(value)) != kept:
        value = ctx.b.pw("add", value, ctx.b.full(0.0, kept, dtype))
    for d, (_, _, is_int) in enumerate(bounds):
        if is_int:
            now = tuple(ctx.b.shape(value))
            value = _leaf_view(ctx, value, f".unsqueeze({d})", now[:d] + (1,) + now[d:])
    return _replaced(ctx, base, [(start, stop) for start, stop, _ in bounds], value, shape)


INDEX_HANDLERS = {"setitem_value": _setitem_value, "index_select": _index_select, "gather": _torch_gather, "roll": _roll,
                  "f_embedding": _f_embedding, "embedding": _torch_embedding}
