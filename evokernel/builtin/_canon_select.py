"""A select or slice of a computed value, pushed into the work that computes it.

``f(x)[:, -1]`` would compute all of ``f(x)`` into a buffer and read one row of it;
``f(x[:, -1])`` computes only that row. A pick (ints and unit-step slices, one per dim)
moves down through pointwise nodes (each operand picks the dims it has, a broadcast
operand's size-1 dims stay whole), through reductions over other dims, into views of
inputs (a leaf of its own) and views of buffers (a longer view). It stops at a kernel's
own result (a matmul, a scan, a cat...), which is then read through a view of its buffer,
as the whole value was before. A matmul's rows come from its left operand's rows, its columns
from the right one's (``(a @ b)[:, -1]`` is ``a[:, -1:] @ b``). Mamba2's final state (``einsum(...)[:, -1]``, a product
summed over chunks, see _canon_einsum) computes one chunk of three this way.
"""

from __future__ import annotations

from ._build import Builder, PyVal
from ._ir import ANCHORS, Ref, TensorSpec
from ._pointwise import POINTWISE

__all__ = ["pushed_pick"]

# what a pick stops at: a kernel of its own whose buffer the picked view reads
_STOPS = set(ANCHORS) | {"cat"}


class _Stop(Exception):
    """Something on the way down cannot take the pick: the value is picked as a whole."""


def pushed_pick(b: Builder, ref: Ref, method: str, args, shape: tuple[int, ...]) -> Ref | None:
    """``ref`` (a computed node) picked by ``method(*args)`` (``__getitem__``, ``select``,
    ``narrow``) as a node computing only the picked values, or None where the pick is of
    another kind or the value is not pointwise work and reductions (its buffer is viewed)."""
    node = b.nodes[ref.value]
    if not (node.op in ("reduce", "matmul") or (node.op in POINTWISE and node.args)):
        return None
    picks = _picks(node.shape, method, args)
    if picks is None or all(_whole(p, n) for p, n in zip(picks, node.shape)):
        return None
    before = len(b.nodes)
    memo: dict = {}
    try:
        out = _pick(b, ref, picks, memo)
    except _Stop:
        return None
    if tuple(b.shape(out)) != tuple(shape) or _recomputes(b, ref, memo, before):
        return None  # the nodes the pick made are left unused: code is generated only for what the output reaches
    return out


def _recomputes(b: Builder, root: Ref, memo: dict, before: int) -> bool:
    """Whether the pushed pick computes again what is computed whole anyway: a node it went
    into is also read whole, by the pick's own way down (a softmax's sums over the picked dim
    read all of its exponentials) or by work traced before it (another user of the value), or
    is picked two ways. Then the whole value is made once and its buffer viewed, as before."""
    entered: dict[int, set[str]] = {}
    for node_id, text in memo:
        if b.nodes[node_id].op not in _STOPS and b.nodes[node_id].op != "view":  # a view of a buffer redoes nothing
            entered.setdefault(node_id, set()).add(text)
    if any(len(texts) > 1 or "" in texts for texts in entered.values()):
        return True
    entered.setdefault(root.value, set())
    for node in b.nodes[:before]:
        if node.id in entered:
            continue
        if any(a.kind == "node" and a.value in entered for a in node.args):
            return True
    return False


def _picks(shape: tuple[int, ...], method: str, args) -> tuple[object, ...] | None:
    """One pick per dim (an int index, or a slice with start and stop), or None."""
    rank = len(shape)
    if method == "__getitem__":
        index = args[0] if isinstance(args[0], tuple) else (args[0],)
        if sum(i is Ellipsis for i in index) > 1:
            return None
        if Ellipsis in index:
            at = index.index(Ellipsis)
            index = index[:at] + (slice(None),) * (rank - len(index) + 1) + index[at + 1:]
    elif method == "select" and len(args) == 2 and all(isinstance(a, int) for a in args):
        index = (slice(None),) * (args[0] % rank) + (args[1],)
    elif method == "narrow" and len(args) == 3 and all(isinstance(a, int) for a in args):
        start = args[1] % shape[args[0] % rank] if args[1] < 0 else args[1]
        index = (slice(None),) * (args[0] % rank) + (slice(start, start + args[2]),)
    else:
        return None
    if len(index) > rank:
        return None
    picks = []
    for i, n in zip(index + (slice(None),) * (rank - len(index)), shape):
        if isinstance(i, bool) or isinstance(i, PyVal):
            return None
        if isinstance(i, int):
            if not -n <= i < n:
                return None
            picks.append(i % n)
        elif isinstance(i, slice) and all(v is None or (isinstance(v, int) and not isinstance(v, bool))
                                          for v in (i.start, i.stop, i.step)) and i.step in (None, 1):
            start, stop, _ = i.indices(n)
            picks.append(slice(start, max(start, stop)))
        else:
            return None
    return tuple(picks)


def _whole(pick, n: int) -> bool:
    return isinstance(pick, slice) and pick.start == 0 and pick.stop == n


def _picked_shape(shape, picks) -> tuple[int, ...]:
    return tuple(p.stop - p.start for p in picks if isinstance(p, slice))


def _text(picks, shape) -> str:
    """The indexing suffix, ``[:, 2]`` (trailing whole dims left out); "" when nothing is picked."""
    parts = [":" if _whole(p, n) else str(p) if isinstance(p, int) else f"{p.start}:{p.stop}"
             for p, n in zip(picks, shape)]
    while parts and parts[-1] == ":":
        parts.pop()
    return f"[{', '.join(parts)}]" if parts else ""


def _operand_picks(picks, node_shape, shape) -> tuple[object, ...]:
    """The picks of a broadcast operand of ``shape``: its dims align with the node's last ones;
    a dim of size 1 it broadcasts is taken whole (an int pick drops it: index 0)."""
    lead = len(node_shape) - len(shape)
    if lead < 0:
        raise _Stop
    out = []
    for d, n in enumerate(shape):
        p, full = picks[lead + d], node_shape[lead + d]
        if n == full:
            out.append(p)
        elif n == 1:
            out.append(0 if isinstance(p, int) else slice(0, 1))
        else:
            raise _Stop
    return tuple(out)


def _pick(b: Builder, ref: Ref, picks, memo: dict) -> Ref:
    if ref.kind not in ("node", "leaf"):
        return ref  # constants, scalars, a reduction's size
    shape = tuple(b.shape(ref))
    text = _text(picks, shape)
    if not text:
        if ref.kind == "node":
            memo[(ref.value, "")] = ref  # read whole: _recomputes checks it is not also picked
        return ref
    new_shape = _picked_shape(shape, picks)
    if ref.kind == "leaf":
        leaf = b.leaf_by_name(ref.value)
        return b.leaf(leaf.source + text, TensorSpec(new_shape, leaf.spec.dtype), leaf.name + "_p")
    key = (ref.value, text)
    if key in memo:
        return memo[key]
    node = b.nodes[ref.value]
    if node.op == "view" and len(node.args) == 1 and set(dict(node.attrs)) == {"suffix", "regroup"} \
            and node.attr("regroup") is None:
        made = b.view(node.args[0], (node.attr("suffix"), text), new_shape)
    elif node.op == "matmul":
        made = _pick_matmul(b, node, picks, memo)
    elif node.op in _STOPS:
        made = b.view(ref, (text,), new_shape)
    elif node.op == "full":
        made = b.full(node.attr("value"), new_shape, b.dtype(ref))
    elif node.op in POINTWISE and node.args and node.op != "iota":
        args = [_pick(b, a, _operand_picks(picks, shape, tuple(b.shape(a))), memo) for a in node.args]
        made = b.pw(node.op, *args, **dict(node.attrs))
    elif node.op == "reduce":
        made = _pick_reduce(b, node, picks, memo)
    else:
        raise _Stop
    if tuple(b.shape(made)) != new_shape:
        raise _Stop
    memo[key] = made
    return made


def _pick_reduce(b: Builder, node, picks, memo: dict) -> Ref:
    """A reduction over other dims: its input picks the same, its reduced dims whole."""
    start, stop, keepdim = node.attr("start"), node.attr("stop"), node.attr("keepdim")
    source = node.args[0]
    in_shape = tuple(b.shape(source))
    if keepdim:
        if any(not _whole(p, 1) for p in picks[start:stop]):
            raise _Stop  # an int pick of a kept size-1 dim: rare, left whole
        kept = list(picks[:start]) + list(picks[stop:])
    else:
        kept = list(picks)
    in_picks = tuple(kept[:start]) + tuple(slice(0, n) for n in in_shape[start:stop]) + tuple(kept[start:])
    picked = _pick(b, source, in_picks, memo)
    dropped = sum(isinstance(p, int) for p in in_picks[:start])
    first = start - dropped
    return b.reduce(node.attr("kind"), picked, tuple(range(first, first + stop - start)), keepdim)


def _pick_matmul(b: Builder, node, picks, memo: dict) -> Ref:
    """The left operand's picked rows times the right one's picked columns, over the picked batch;
    an int pick of a row or a column keeps that dim (a matmul's operands have two) and the result
    drops it as a view of its buffer."""
    a, w = node.args
    *batch, rows, cols = picks
    kept = [slice(p, p + 1) if isinstance(p, int) else p for p in (rows, cols)]
    lhs = _pick(b, a, _operand_picks(tuple(batch), node.shape[:-2], tuple(b.shape(a))[:-2])
                + (kept[0], slice(0, b.shape(a)[-1])), memo)
    rhs = _pick(b, w, _operand_picks(tuple(batch), node.shape[:-2], tuple(b.shape(w))[:-2])
                + (slice(0, b.shape(w)[-2]), kept[1]), memo)
    made = b.matmul(lhs, rhs)
    squeeze = tuple(slice(0, n) for n in b.shape(made)[:-2]) + tuple(
        0 if isinstance(p, int) else slice(0, k.stop - k.start) for p, k in zip((rows, cols), kept))
    text = _text(squeeze, b.shape(made))
    return b.view(made, (text,), _picked_shape(b.shape(made), squeeze)) if text else made
