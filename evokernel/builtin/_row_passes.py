"""Pairs of row reductions that one pass over the row computes together.

A reduction that reads another one's result needs that result first: a second
pass over the row. Two such pairs are common enough to compute in one pass:

- "welford": S = sum(x) and Q = sum((x - S / N) ** 2), a mean and its variance
  (layer, group and instance norms): per lane a running mean and sum of squared
  deviations (Welford's update), lanes and chunks merged with Chan's formula.
- "softmax": M = max(s) and L = sum(exp(s - M)) (softmax, log-softmax, logsumexp,
  cross entropy): per lane a running maximum and a sum rescaled whenever the
  maximum grows (the online softmax).

The scheduler asks which pairs a plan has (a few long rows are reduced in
parallel chunks only when no reduction needs another one's finished result),
the rows generator emits the one-pass loops and the merges of chunk partials.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._ir import Node, Ref

__all__ = ["FusedPair", "fused_pairs"]


@dataclass(frozen=True)
class FusedPair:
    kind: str  # "welford" or "softmax"
    first: int  # the reduction the second one reads: sum(x) or max(s)
    second: int  # sum((x - first / N) ** 2) or sum(exp(s - first))
    source: Ref  # x or s, the row value both reduce


def fused_pairs(nodes: Sequence[Node]) -> list[FusedPair]:
    """The plan's pairs, each reduction in at most one."""
    by_id = {n.id: n for n in nodes}

    def node(ref: Ref) -> Node | None:
        return by_id.get(ref.value) if ref.kind == "node" else None

    def reduction(ref: Ref, kind: str, second: Node) -> Node | None:
        first = node(ref)
        if first is None or first.op != "reduce" or first.attr("kind") != kind:
            return None
        same_dims = (first.attr("start"), first.attr("stop")) == (second.attr("start"), second.attr("stop"))
        return first if same_dims else None

    pairs: list[FusedPair] = []
    taken: set[int] = set()
    for second in nodes:
        if second.op != "reduce" or second.attr("kind") != "sum" or second.id in taken:
            continue
        term = node(second.args[0])
        if term is None:
            continue
        if term.op == "exp":
            diff = node(term.args[0])
            if diff is None or diff.op != "sub":
                continue
            first = reduction(diff.args[1], "max", second)
            kind = "softmax"
        else:
            diff = _squared(term, node)
            if diff is None or diff.op != "sub":
                continue
            mean = node(diff.args[1])
            if mean is None or mean.op != "div" or mean.args[1].kind != "rsize":
                continue
            first = reduction(mean.args[0], "sum", second)
            kind = "welford"
        if first is None or first.id in taken or first.args[0] != diff.args[0]:
            continue
        pairs.append(FusedPair(kind, first.id, second.id, first.args[0]))
        taken |= {first.id, second.id}
    return pairs


def _squared(term: Node, node) -> Node | None:
    """d where ``term`` is d squared (square, d ** 2, d * d)."""
    if term.op == "square" or (term.op == "powc" and term.attr("exponent") == 2):
        return node(term.args[0])
    if term.op == "mul" and term.args[0] == term.args[1]:
        return node(term.args[0])
    return None
