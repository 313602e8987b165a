"""Hand-written recurrent loops, found in the captured graph and rolled back up.

A forward that loops over time itself (``for t in range(T): hidden =
tanh(self.i2h(torch.cat((x[t], hidden), 1)))``) reaches the builtin unrolled:
T copies of the cell, T copies of whatever it does with each state. Kept
unrolled, that is several kernels a step (KernelBench level3 34: 1281 stages).
Two patterns are recognised on the torch.fx graph:

- an Elman cell: ``h_{t+1} = act(Linear(cat(x[t], h_t)))`` (either order in the
  cat, act tanh or relu) for t = 0..T-1 of one (T, B, in) sequence, each step's
  getitem, cat and Linear used by that step alone. It is an ``nn.RNN`` layer
  whose weight_ih and weight_hh are the Linear's weight split at the cat's
  boundary: one recurrent stage (_canon_rnn, _gen_rnn);
- ``torch.stack([m(h_1), ..., m(h_T)], 0)`` of one nn module applied to every
  state of such a cell in order: ``m`` applied once to the state sequence.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from ._build import ComputedView
from ._canon import call_module, module_param
from ._canon_rnn import elman_states

__all__ = ["Recurrence", "Rerolled", "StackedMap", "find_recurrences", "find_stacked_maps"]

_ACTIVATIONS = {nn.Tanh: "RNN_TANH", nn.ReLU: "RNN_RELU"}
_ACTIVATION_FUNCTIONS = {torch.tanh: "RNN_TANH", torch.relu: "RNN_RELU", F.relu: "RNN_RELU"}
_ACTIVATION_METHODS = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
# modules that act on the last dim alone: applied to a stacked sequence, they give the stack of their results
_PER_ROW_MODULES = (nn.Linear, nn.Tanh, nn.ReLU, nn.Sigmoid, nn.GELU, nn.SiLU, nn.Identity)


@dataclass(frozen=True)
class Recurrence:
    """An unrolled Elman cell: the states ``steps`` (h_1..h_T) from ``h0`` over ``x`` (T, B, in)."""

    x: torch.fx.Node
    h0: torch.fx.Node
    linear: str  # the nn.Linear's module path
    mode: str  # RNN_TANH or RNN_RELU
    hidden_first: bool  # cat((h, x[t])) rather than cat((x[t], h))
    steps: tuple[torch.fx.Node, ...]
    members: frozenset  # the fx nodes the recurrent layer replaces (each step's getitem, cat, Linear, act)


@dataclass(frozen=True)
class StackedMap:
    """``stack([module(h) for h in recurrence.steps], 0)``: the module applied to all the states at once."""

    node: torch.fx.Node  # the stack
    module: str
    recurrence: Recurrence
    members: frozenset  # the per-step module calls


def _only_user(node: torch.fx.Node):
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _activation(gm: torch.fx.GraphModule, node) -> str | None:
    if node is None:
        return None
    if node.op == "call_module":
        return _ACTIVATIONS.get(type(gm.get_submodule(str(node.target))))
    if node.op == "call_function" and not node.kwargs:
        return _ACTIVATION_FUNCTIONS.get(node.target)
    if node.op == "call_method" and not node.kwargs and len(node.args) == 1:
        return _ACTIVATION_METHODS.get(str(node.target))
    return None


def _shape(node) -> tuple[int, ...] | None:
    meta = node.meta.get("tensor_meta") if isinstance(node, torch.fx.Node) else None
    return tuple(meta.shape) if meta is not None and hasattr(meta, "shape") else None


def _step(gm, cat: torch.fx.Node):
    """(x, t, h, hidden_first, linear path, mode, act node) of a cell step starting at ``cat``, or None."""
    if cat.op != "call_function" or cat.target is not torch.cat:
        return None
    parts = cat.args[0] if cat.args else cat.kwargs.get("tensors")
    dim = cat.args[1] if len(cat.args) > 1 else cat.kwargs.get("dim", 0)
    if not isinstance(parts, (list, tuple)) or len(parts) != 2 or dim not in (1, -1):
        return None
    for hidden_first in (False, True):
        sliced, h = (parts[1], parts[0]) if hidden_first else parts
        if not (isinstance(sliced, torch.fx.Node) and sliced.op == "call_function" and sliced.target is operator.getitem
                and isinstance(sliced.args[1], int) and _only_user(sliced) is cat and isinstance(h, torch.fx.Node)):
            continue
        linear = _only_user(cat)
        if linear is None or linear.op != "call_module" or type(gm.get_submodule(str(linear.target))) is not nn.Linear:
            return None
        act = _only_user(linear)
        mode = _activation(gm, act)
        if mode is None:
            return None
        return sliced.args[0], sliced.args[1], h, hidden_first, str(linear.target), mode, act, (sliced, cat, linear)
    return None


def find_recurrences(gm: torch.fx.GraphModule) -> list[Recurrence]:
    """Every unrolled Elman cell over a whole (T, B, in) sequence, T >= 2."""
    steps = {}
    for node in gm.graph.nodes:
        found = _step(gm, node)
        if found is not None:
            steps[found[2]] = found  # keyed by the state it reads
    out = []
    for h0, first in steps.items():
        if first[1] != 0 or h0 in {s[6] for s in steps.values()}:
            continue  # not the first step of a chain
        x, _, _, hidden_first, linear, mode, _, _ = first
        chain, members, h = [], set(), h0
        while h in steps:
            step = steps[h]
            if (step[0], step[1], step[3], step[4], step[5]) != (x, len(chain), hidden_first, linear, mode):
                break
            chain.append(step[6])
            members.update(step[7])
            members.add(step[6])
            h = step[6]
        shape = _shape(x)
        if len(chain) < 2 or shape is None or len(shape) != 3 or shape[0] != len(chain):
            continue
        weight = gm.get_submodule(linear).weight
        if _shape(h0) != (shape[1], weight.shape[0]) or weight.shape[1] != shape[2] + weight.shape[0]:
            continue
        out.append(Recurrence(x=x, h0=h0, linear=linear, mode=mode, hidden_first=hidden_first, steps=tuple(chain),
                              members=frozenset(members)))
    return out


def find_stacked_maps(gm: torch.fx.GraphModule, recurrences: list[Recurrence]) -> list[StackedMap]:
    """Stacks along dim 0 of one per-row module applied to each state of a recurrence, in order."""
    by_state = {r.steps: r for r in recurrences}
    out = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is not torch.stack:
            continue
        parts = node.args[0] if node.args else node.kwargs.get("tensors")
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        if dim != 0 or not isinstance(parts, (list, tuple)) or not parts:
            continue
        calls = [p for p in parts if isinstance(p, torch.fx.Node) and p.op == "call_module" and len(p.args) == 1
                 and not p.kwargs and _only_user(p) is node]
        if len(calls) != len(parts) or len({str(c.target) for c in calls}) != 1:
            continue
        module = str(calls[0].target)
        if not isinstance(gm.get_submodule(module), _PER_ROW_MODULES):
            continue
        recurrence = by_state.get(tuple(c.args[0] for c in calls))
        if recurrence is not None:
            out.append(StackedMap(node=node, module=module, recurrence=recurrence, members=frozenset(calls)))
    return out


class Rerolled:
    """The rolled-up loops of one graph, lowered where the graph reaches them (``lower``)."""

    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self.recurrences = find_recurrences(gm)
        self.maps = {m.node: m for m in find_stacked_maps(gm, self.recurrences)}
        order = {node: k for k, node in enumerate(gm.graph.nodes)}
        self.first = {min(r.members, key=order.__getitem__): r for r in self.recurrences}
        self.skip = set().union(*(r.members for r in self.recurrences), *(m.members for m in self.maps.values()))
        self.sequences: dict[Recurrence, ComputedView] = {}

    def lower(self, node: torch.fx.Node, ctx, env: dict) -> bool:
        """Whether ``node`` belongs to a rolled-up loop (its value, if any, now in ``env``)."""
        if node in self.first:
            r = self.first[node]
            linear = self.gm.get_submodule(r.linear)
            seq = elman_states(ctx, ctx.ref(env[r.x]), ctx.ref(env[r.h0]), module_param(ctx, linear, r.linear, "weight"),
                               module_param(ctx, linear, r.linear, "bias"), r.mode, r.hidden_first)
            self.sequences[r] = seq
            for t, state in enumerate(r.steps):
                env[state] = ComputedView(seq.base, seq.suffixes + (f"[{t}]",), seq.shape[1:], seq.extra)
            return True
        if node in self.maps:
            m = self.maps[node]
            env[node] = call_module(ctx, self.gm.get_submodule(m.module), m.module, [self.sequences[m.recurrence]], {})
            return True
        return node in self.skip
