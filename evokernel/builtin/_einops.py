"""einops calls left whole in a captured graph, lowered to the reshapes they are.

Where dynamo treats einops' functions as opaque (``allow_in_graph``, which
einops registers itself with torch releases its version check misreads, and
torch does for einops older than 0.8.2), a captured forward holds
``rearrange(x, "b (c l) h -> b c l h", l=64)`` as one call. With the shapes
static, each is a reshape to its elementary axes, a permute into the
right-hand side's order, and a reshape to its groups; ``repeat`` adds an
``expand`` of the new axes, ``reduce`` a reduction over the axes the
right-hand side drops. The lowering reads only the pattern and the input's
traced shape, never einops itself, so any version of it captures the same.
"""

from __future__ import annotations

import math
import re

import torch

from ._build import Reject

__all__ = ["lower_einops"]

_LOWERED = ("rearrange", "repeat", "reduce")
_REDUCTIONS = {"sum": "sum", "mean": "mean", "max": "amax", "min": "amin"}
_ELLIPSIS = "..."


def _is_einops(node: torch.fx.Node) -> bool:
    target = node.target
    return (node.op == "call_function" and str(getattr(target, "__module__", "")).startswith("einops")
            and getattr(target, "__name__", "") in (*_LOWERED, "einsum", "pack", "unpack"))


def _parse(side: str) -> list[list[str | int]]:
    """One side of a pattern as groups of axes: "b (c l) ... 1" -> [["b"], ["c", "l"], ["..."], [1]].
    A parenthesised group stays one group even when it holds one axis or none."""
    groups: list[list[str | int]] = []
    current: list[str | int] | None = None
    for token in re.findall(r"\.\.\.|\(|\)|[A-Za-z_][A-Za-z0-9_]*|\d+|\S", side):
        if token == "(":
            if current is not None:
                raise Reject(f"einops pattern {side!r}: nested parentheses")
            current = []
        elif token == ")":
            if current is None:
                raise Reject(f"einops pattern {side!r}: unbalanced parentheses")
            groups.append(current)
            current = None
        elif token == _ELLIPSIS or token[0].isalpha() or token[0] == "_":
            (current if current is not None else groups.append([]) or groups[-1]).append(token)
        elif token.isdigit():
            (current if current is not None else groups.append([]) or groups[-1]).append(int(token))
        else:
            raise Reject(f"einops pattern {side!r}: unexpected {token!r}")
    if current is not None:
        raise Reject(f"einops pattern {side!r}: unbalanced parentheses")
    return groups


def _expand_ellipsis(groups: list[list[str | int]], count: int) -> list[list[str | int]]:
    names = [f"...{k}" for k in range(count)]
    out = []
    for group in groups:
        if group == [_ELLIPSIS]:
            out.extend([name] for name in names)  # "..." alone: one group per dimension it stands for
        elif _ELLIPSIS in group:
            at = group.index(_ELLIPSIS)
            out.append(group[:at] + names + group[at + 1:])  # "(...)" or "(h ...)": the dimensions merged
        else:
            out.append(group)
    return out


def _plan(pattern: str, shape: tuple[int, ...], lengths: dict[str, int], kind: str):
    """(elementary shape, axes reduced, permutation, shape with new axes, expanded shape, final shape)."""
    if pattern.count("->") != 1:
        raise Reject(f"einops pattern {pattern!r} has no single '->'")
    left_text, right_text = pattern.split("->")
    left, right = _parse(left_text), _parse(right_text)
    left_has = sum(_ELLIPSIS in g for g in left)
    if left_has > 1 or sum(_ELLIPSIS in g for g in right) > left_has:
        raise Reject(f"einops pattern {pattern!r}: '...' must appear once on the left and where it is on the right")
    if left_has:
        if any(_ELLIPSIS in g and g != [_ELLIPSIS] for g in left):
            raise Reject(f"einops pattern {pattern!r}: '...' inside parentheses on the left is not supported")
        count = len(shape) - (len(left) - 1)
        if count < 0:
            raise Reject(f"einops pattern {pattern!r} does not fit an input of {len(shape)} dimensions")
        left, right = _expand_ellipsis(left, count), _expand_ellipsis(right, count)
    if len(left) != len(shape):
        raise Reject(f"einops pattern {pattern!r} names {len(left)} dimensions, the input has {len(shape)}")
    sizes: dict[str, int] = dict(lengths)
    for group, dim in zip(left, shape):
        known = math.prod(a if isinstance(a, int) else sizes[a] for a in group if isinstance(a, int) or a in sizes)
        unknown = [a for a in group if isinstance(a, str) and a not in sizes]
        if len(unknown) > 1:
            raise Reject(f"einops pattern {pattern!r}: cannot infer the sizes of {', '.join(unknown)}")
        if unknown:
            if known == 0 or dim % known:
                raise Reject(f"einops pattern {pattern!r}: {dim} is not divisible into {group}")
            sizes[unknown[0]] = dim // known
        elif known != dim:
            raise Reject(f"einops pattern {pattern!r}: group {group} is {known}, the dimension is {dim}")
    left_axes = [a for g in left for a in g]
    named_left = [a for a in left_axes if isinstance(a, str)]
    right_named = [a for g in right for a in g if isinstance(a, str)]
    if len(set(right_named)) != len(right_named) or len(set(named_left)) != len(named_left):
        raise Reject(f"einops pattern {pattern!r} repeats an axis on one side")
    elementary = [a if isinstance(a, int) else sizes[a] for a in left_axes]
    reduced = [k for k, a in enumerate(left_axes) if isinstance(a, str) and a not in right_named]
    if any(isinstance(a, int) and a != 1 for a in left_axes):
        raise Reject(f"einops pattern {pattern!r}: a numbered axis on the left other than 1")
    # axes of size 1 written as numbers on the left are dropped along with the reduced ones
    dropped = [k for k, a in enumerate(left_axes) if isinstance(a, int)]
    if reduced and kind != "reduce":
        raise Reject(f"einops {kind} pattern {pattern!r} drops axes {[left_axes[k] for k in reduced]}")
    kept = [a for a in left_axes if isinstance(a, str) and a in right_named]
    new = [a for a in right_named if a not in named_left]
    if new and kind != "repeat":
        raise Reject(f"einops {kind} pattern {pattern!r} has axes only on the right: {new}")
    for a in new:
        if a not in sizes:
            raise Reject(f"einops repeat pattern {pattern!r}: no length for the new axis {a}")
    order = [a for a in right_named if a in kept]
    remaining = [a for a in left_axes if isinstance(a, str) and a in kept]  # after reduction and drops
    permutation = [remaining.index(a) for a in order]
    # the right side's elementary axes in its order, new axes and numbered ones as size 1 before expanding
    with_new = [1 if isinstance(a, int) or a in new else sizes[a] for g in right for a in g]
    expanded = [a if isinstance(a, int) else sizes[a] for g in right for a in g]
    final = [math.prod(a if isinstance(a, int) else sizes[a] for a in g) for g in right]
    return elementary, reduced + dropped, reduced, permutation, with_new, expanded, final


def lower_einops(graph: torch.fx.Graph) -> None:
    """Replace every einops rearrange/repeat/reduce call in the graph by the torch ops it stands for."""
    for node in list(graph.nodes):
        if not _is_einops(node):
            continue
        kind = node.target.__name__
        if kind not in _LOWERED:
            raise Reject(f"einops.{kind} in forward is not supported (rearrange, repeat and reduce are)")
        args, kwargs = list(node.args), dict(node.kwargs)
        source, pattern = args[0], kwargs.pop("pattern", None) or (args[1] if len(args) > 1 else None)
        reduction = kwargs.pop("reduction", None) or (args[2] if kind == "reduce" and len(args) > 2 else None)
        value = source.meta.get("example_value") if isinstance(source, torch.fx.Node) else None
        if not isinstance(value, torch.Tensor) or not isinstance(pattern, str):
            raise Reject(f"einops.{kind} on something other than one tensor and a pattern string")
        if kind == "reduce" and reduction not in _REDUCTIONS:
            raise Reject(f"einops.reduce with reduction {reduction!r} is not supported")
        if any(not isinstance(v, int) for v in kwargs.values()):
            raise Reject(f"einops.{kind} with axis lengths that are not integers")
        elementary, gone, reduced, permutation, with_new, expanded, final = _plan(
            pattern, tuple(value.shape), kwargs, kind)
        steps: list[tuple[str, tuple]] = [("reshape", (tuple(elementary),))]
        if reduced:
            steps.append((_REDUCTIONS[reduction], (tuple(reduced),)))
        if len(gone) > len(reduced):  # numbered size-1 axes on the left: reshaped away
            steps.append(("reshape", (tuple(d for k, d in enumerate(elementary) if k not in gone),)))
        if permutation != sorted(permutation):
            steps.append(("permute", (tuple(permutation),)))
        if with_new != expanded:
            steps.append(("reshape", (tuple(with_new),)))
            steps.append(("expand", (tuple(expanded),)))
        steps.append(("reshape", (tuple(final),)))
        current, example = source, value
        with graph.inserting_before(node):
            for method, method_args in steps:
                example = getattr(example, method)(*method_args)
                current = graph.call_method(method, (current, *method_args))
                current.meta["example_value"] = example
                current.meta["stack_trace"] = node.meta.get("stack_trace")
        node.replace_all_uses_with(current)
        graph.erase_node(node)
