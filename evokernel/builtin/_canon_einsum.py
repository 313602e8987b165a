"""torch.einsum with any number of operands, lowered to matmuls, products and sums.

The operands are contracted left to right, as torch does without opt_einsum: at each
step the running result meets the next operand. Indices that neither the output nor a
later operand needs are summed away: on one side alone by a reduction first, on both
sides by the matmul (batch indices: shared and still needed; free ones: on one side).
With nothing to contract, the two meet in a broadcast product; with a tiny contraction
and one tiny free side (Mamba2's chunk recurrence: 3 chunks by 3), in a broadcast product
summed over the contracted indices. Every rearrangement is a view (permute, reshape) of
an input or of a computed value's buffer.
"""

from __future__ import annotations

import math

from ._build import ComputedView, Reject
from ._canon_util import _static, is_zeros
from ._ir import TensorSpec

__all__ = ["einsum"]


def einsum(ctx, args, kwargs):
    """torch.einsum(equation, *operands) (operands also as one list); no ellipsis, no
    repeated index within an operand, operands that agree on every index's size."""
    equation = _static(args[0] if args else kwargs.get("equation"), "equation")
    operands = list(args[1:]) or list(kwargs.get("operands", ()))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    if not isinstance(equation, str) or not operands:
        raise Reject("einsum needs an equation and at least one operand")
    text = equation.replace(" ", "")
    if "." in text:
        raise Reject("einsum with an ellipsis ('...') is not supported")
    lhs, out = text.split("->") if "->" in text else (text, None)
    specs = lhs.split(",")
    if out is None:  # implicit output: the indices that occur once, in alphabetical order
        flat = "".join(specs)
        out = "".join(sorted(c for c in set(flat) if flat.count(c) == 1))
    if len(specs) != len(operands):
        raise Reject(f"einsum equation {equation!r} names {len(specs)} operands, got {len(operands)}")
    refs = [ctx.ref(o) for o in operands]
    size: dict[str, int] = {}
    for spec, ref in zip(specs, refs):
        shape = tuple(ctx.b.shape(ref))
        if len(shape) != len(spec):
            raise Reject(f"einsum operand {spec!r} has {len(shape)} dims")
        if len(set(spec)) != len(spec):
            raise Reject("einsum with a repeated index in one operand (a diagonal) is not supported")
        for c, n in zip(spec, shape):
            if size.setdefault(c, n) != n:
                raise Reject(f"einsum operands give index {c} sizes {size[c]} and {n} (broadcasting is not supported)")
    if len(set(out)) != len(out) or any(c not in size for c in out):
        raise Reject(f"einsum output {out!r} repeats an index or names one no operand has")

    value, letters = refs[0], specs[0]
    for k in range(1, len(refs)):
        later = set(out).union(*specs[k + 1:])
        other, other_letters = _sum_out(ctx, refs[k], specs[k], later | set(letters), size)
        value, letters = _sum_out(ctx, value, letters, later | set(other_letters), size)
        value, letters = _pair(ctx, value, letters, other, other_letters, later, size, out)
    value, letters = _sum_out(ctx, value, letters, set(out), size)
    perm = [letters.index(c) for c in out]
    if perm == list(range(len(perm))):
        return value
    return _view(ctx, value, f".permute({', '.join(map(str, perm))})", tuple(size[c] for c in out), final=True)


def _view(ctx, value, suffix: str, shape: tuple[int, ...], final: bool = False):
    """``value`` + suffix: a view of an input (a leaf), of a computed value's buffer (a view
    node, or while it is still the result, a ComputedView the caller may view further)."""
    if isinstance(value, ComputedView):
        value = ComputedView(value.base, value.suffixes + (suffix,), shape, value.extra)
        return value if final else ctx.ref(value)
    if value.kind == "leaf":
        leaf = ctx.b.leaf_by_name(value.value)
        return ctx.b.leaf(leaf.source + suffix, TensorSpec(shape, leaf.spec.dtype), leaf.name + "_v")
    return ComputedView(value, (suffix,), shape) if final else ctx.b.view(value, (suffix,), shape)


def _arranged(ctx, value, letters: str, order: list[str], groups: list[list[str]], size: dict[str, int]):
    """``value`` (indices ``letters``) permuted to ``order`` and reshaped to one dim per group
    (an empty group: a dim of size 1)."""
    perm = [letters.index(c) for c in order]
    suffix = "" if perm == list(range(len(perm))) else f".permute({', '.join(map(str, perm))})"
    dims = tuple(math.prod(size[c] for c in g) for g in groups)
    if [len(g) for g in groups] != [1] * len(groups):
        suffix += f".reshape({', '.join(map(str, dims))})"
    return _view(ctx, value, suffix, dims) if suffix else value


def _sum_out(ctx, value, letters: str, needed: set[str], size: dict[str, int]):
    """``value`` with the indices outside ``needed`` summed away (moved last, one reduction)."""
    keep = [c for c in letters if c in needed]
    drop = [c for c in letters if c not in needed]
    if not drop:
        return value, letters
    moved = _arranged(ctx, value, letters, keep + drop, [[c] for c in keep + drop], size)
    dims = tuple(range(len(keep), len(letters)))
    return ctx.b.reduce("sum", ctx.ref(moved), dims, False), "".join(keep)


# A contraction of at most _TINY_K terms with one free side of at most _TINY_SIDE values is a
# broadcast product summed over the contracted indices (a rows kernel), not a matmul: tensor-core
# tiles pad M and K to 16 or more, and the batch is flattened by a reshape that copies whenever
# the operand's batch indices are not adjacent in memory. The big operand is read once per value
# of the small side, so that side stays small.
_TINY_K = 16
_TINY_SIDE = 4


def _pair(ctx, a, la: str, b, lb: str, later: set[str], size: dict[str, int], out: str = ""):
    """The product of two operands over their shared indices, summing those not in ``later``."""
    batch = [c for c in la if c in lb and c in later]
    contract = [c for c in la if c in lb and c not in later]
    free_a = [c for c in la if c not in lb]
    free_b = [c for c in lb if c not in la]
    for one, other in ((0, 1), (1, 0)):
        dropped = _zeros_dropped(ctx, (a, b)[one], (la, lb)[one], (a, b)[other], (la, lb)[other], contract, size)
        if dropped is not None:
            pair = [a, b]
            pair[one], pair[other], size = dropped
            a, b = pair
    if contract and _tiny(contract, free_a, free_b, size):
        return _product_sum(ctx, a, la, b, lb, contract, free_a, free_b, size, out)
    letters = batch + free_a + free_b
    shape = tuple(size[c] for c in letters)
    if not contract:  # nothing summed: a broadcast product over the union of the indices
        a2 = _arranged(ctx, a, la, batch + free_a, [[c] for c in batch + free_a] + [[] for _ in free_b], size)
        b2 = _arranged(ctx, b, lb, batch + free_b, [[c] for c in batch] + [[] for _ in free_a] + [[c] for c in free_b],
                       size)
        return ctx.b.pw("mul", ctx.ref(a2), ctx.ref(b2)), "".join(letters)
    head = [batch] if batch else []
    a2 = _arranged(ctx, a, la, batch + free_a + contract, head + [free_a, contract], size)
    b2 = _arranged(ctx, b, lb, batch + contract + free_b, head + [contract, free_b], size)
    prod = ctx.b.matmul(ctx.ref(a2), ctx.ref(b2))
    if tuple(ctx.b.shape(prod)) == shape:
        return prod, "".join(letters)
    return ComputedView(prod, (f".view({', '.join(map(str, shape))})",), shape), "".join(letters)


def _tiny(contract: list[str], free_a: list[str], free_b: list[str], size: dict[str, int]) -> bool:
    def n(letters):
        return math.prod(size[c] for c in letters)
    return n(contract) <= _TINY_K and min(n(free_a), n(free_b)) <= _TINY_SIDE


def _product_sum(ctx, a, la: str, b, lb: str, contract: list[str], free_a: list[str], free_b: list[str],
                 size: dict[str, int], out: str):
    """sum over ``contract`` of a * b as one broadcast product and one reduction. The kept indices
    come in the output's order (the result then needs no permute: a select or slice of it reaches
    the product, see _canon_select), the contracted ones just before the trailing run of the big
    free side's indices, so a kernel row walks them with the big operand's columns innermost."""
    kept = sorted(dict.fromkeys(c for c in la + lb if c not in contract),
                  key=lambda c: out.index(c) if c in out else len(out))  # stable: the rest keep their order
    big = set(free_b if math.prod(size[c] for c in free_b) >= math.prod(size[c] for c in free_a) else free_a)
    tail = len(kept)
    while tail > 0 and kept[tail - 1] in big:
        tail -= 1
    order = kept[:tail] + contract + kept[tail:]
    a2 = _arranged(ctx, a, la, [c for c in order if c in la], [[c] if c in la else [] for c in order], size)
    b2 = _arranged(ctx, b, lb, [c for c in order if c in lb], [[c] if c in lb else [] for c in order], size)
    product = ctx.b.pw("mul", ctx.ref(a2), ctx.ref(b2))
    dims = tuple(range(tail, tail + len(contract)))
    return ctx.b.reduce("sum", product, dims, False), "".join(kept)


def _zeros_dropped(ctx, x, lx: str, y, ly: str, contract: list[str], size: dict[str, int]):
    """``x`` a cat along a contracted index whose parts but one are zeros (Mamba2's
    ``torch.cat([zeros_like(states[:, :1]), states])`` for a zero initial state): the zeros add
    nothing to the sum, so ``x`` is that one part and ``y`` the matching span of the index
    (the cat is never made, the contraction is shorter). None where that is not so."""
    if not (hasattr(x, "kind") and x.kind == "node") or ctx.b.nodes[x.value].op != "cat":
        return None
    node = ctx.b.nodes[x.value]
    dim = node.attr("dim")
    letter = lx[dim]
    if letter not in contract:
        return None
    spans, at = [], 0
    for part in node.args:
        n = ctx.b.shape(part)[dim]
        if not is_zeros(ctx, part):
            spans.append((part, at, n))
        at += n
    if len(spans) != 1:
        return None
    part, start, n = spans[0]
    d = ly.index(letter)
    shape = tuple(n if k == d else size[c] for k, c in enumerate(ly))
    return part, _view(ctx, ctx.ref(y), f".narrow({d}, {start}, {n})", shape), {**size, letter: n}
