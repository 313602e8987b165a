"""Lowering of the recurrent layers nn.LSTM, nn.GRU and nn.RNN (tanh and relu).

A whole layer stack (any number of layers, one or two directions, batch_first
either way, with or without biases, h0/c0 given or not, batched or unbatched)
becomes one "rnn" anchor: the scheduler gives it a stage of its own, whose
launcher runs the layers (see _gen_rnn). Its value is one flat buffer holding
the output sequence, then h_n, then (LSTM) c_n; the module's results are views
of that buffer, so whichever of them forward uses (and whatever it does next,
e.g. a Linear on out[:, -1, :]) reads the same single computation.

The one-step cells nn.LSTMCell, nn.GRUCell and nn.RNNCell (and the functions
dynamo inlines them to, torch.lstm_cell etc.) are not anchors: a step is two
linear layers and the gates' pointwise math, which the scheduler fuses like any
other graph's (a cell called in a loop is that many steps of ordinary stages).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch.nn as nn

from ._build import ComputedView, Reject
from ._canon_attn import linear, pieces, rows_of
from ._canon_nn import _leaf_view
from ._canon_util import _bind, filled
from ._ir import Node, Ref, TensorSpec

__all__ = ["CELL_HANDLERS", "GATES", "RnnSpec", "cell_step", "elman_states", "rnn_module", "rnn_spec"]

# gates per hidden unit, in PyTorch's weight order: LSTM i, f, g, o; GRU r, z, n; a plain RNN one
GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_FLOATS = ("float32", "float16", "bfloat16")  # the kernels accumulate in fp32: float64 would lose precision


@dataclass(frozen=True)
class RnnSpec:
    """The static facts of one "rnn" node (its attrs, typed)."""

    mode: str  # a key of GATES
    layers: int
    directions: int
    hidden: int
    input_size: int
    seq_len: int
    batch: int
    batch_first: bool
    unbatched: bool  # 2-D input (L, H_in): run as a batch of one
    bias: bool
    has_h0: bool
    has_c0: bool
    # the reference's products are cuBLAS matmuls (a Python loop of Linear layers), not cuDNN's RNN:
    # TF32 then follows torch.backends.cuda.matmul.allow_tf32 (off by default), not cudnn.allow_tf32
    cublas: bool = False

    @property
    def gates(self) -> int:
        return GATES[self.mode]

    @property
    def out_numel(self) -> int:
        return self.seq_len * self.batch * self.directions * self.hidden

    @property
    def state_numel(self) -> int:
        return self.layers * self.directions * self.batch * self.hidden

    @property
    def total_numel(self) -> int:
        return self.out_numel + self.state_numel * (2 if self.mode == "LSTM" else 1)


def rnn_spec(node: Node) -> RnnSpec:
    return RnnSpec(**dict(node.attrs))


def _region(packed: Ref, start: int, shape: tuple[int, ...]) -> ComputedView:
    stop = start + math.prod(shape)
    return ComputedView(packed, (f"[{start}:{stop}].view({', '.join(str(s) for s in shape)})",), tuple(shape))


def _packed(ctx, spec: RnnSpec, x: Ref, states: list[Ref], weights: list[Ref]) -> Ref:
    return ctx.b.anchor("rnn", (x, *states, *weights), dict(vars(spec)), (spec.total_numel,))


def elman_states(ctx, x: Ref, h0: Ref, weight: Ref, bias: Ref | None, mode: str, hidden_first: bool) -> ComputedView:
    """The states h_1..h_T, (T, B, H), of ``h_{t+1} = act(cat(x[t], h_t) @ weight.T + bias)`` (the cat's
    parts swapped where ``hidden_first``) over x (T, B, I) from h0 (B, H): an nn.RNN layer whose
    weight_ih and weight_hh are ``weight``'s columns either side of the cat's boundary (see _reroll)."""
    steps, batch, inputs = ctx.b.shape(x)
    hidden = ctx.b.shape(h0)[-1]
    if ctx.b.dtype(x) not in _FLOATS:
        raise Reject(f"a recurrent loop over {ctx.b.dtype(x)} inputs: the recurrent kernels accumulate in fp32")
    w = ctx.b.leaf_by_name(weight.value)
    dtype = w.spec.dtype
    columns = {"ih": f"[:, {hidden}:]" if hidden_first else f"[:, :{inputs}]",
               "hh": f"[:, :{hidden}]" if hidden_first else f"[:, {inputs}:]"}
    w_ih = ctx.b.leaf(w.source + columns["ih"], TensorSpec((hidden, inputs), dtype), w.name + "_ih")
    w_hh = ctx.b.leaf(w.source + columns["hh"], TensorSpec((hidden, hidden), dtype), w.name + "_hh")
    # the Linear's one bias is the input's; the recurrent product adds none
    weights = [w_ih, w_hh] + ([bias, filled(ctx, (hidden,), 0.0, dtype)] if bias is not None else [])
    state = _leaf_view(ctx, h0, ".unsqueeze(0)", (1, batch, hidden))
    spec = RnnSpec(mode=mode, layers=1, directions=1, hidden=hidden, input_size=inputs, seq_len=steps, batch=batch,
                   batch_first=False, unbatched=False, bias=bias is not None, has_h0=True, has_c0=False, cublas=True)
    return _region(_packed(ctx, spec, x, [state], weights), 0, (steps, batch, hidden))


def rnn_module(ctx, module: nn.Module, param, args, kwargs):
    """(output, h_n) or, for an LSTM, (output, (h_n, c_n)) as views of one "rnn" node;
    a cell's next state (see cell_module); None when ``module`` is neither."""
    if isinstance(module, nn.RNNCellBase):
        return cell_module(ctx, module, param, args, kwargs)
    if not isinstance(module, nn.RNNBase):
        return None
    name = f"nn.{type(module).__name__}"
    mode = module.mode
    if mode not in GATES:
        raise Reject(f"{name} in mode {mode!r} is not supported (LSTM, GRU, RNN_TANH and RNN_RELU are)")
    if getattr(module, "proj_size", 0):
        raise Reject(f"{name} with proj_size={module.proj_size} (a projected hidden state) is not supported")
    if module.training and module.dropout and module.num_layers > 1:
        raise Reject(f"{name} in training mode drops out between layers at random")
    x = ctx.ref(args[0] if args else kwargs.get("input"))
    hx = args[1] if len(args) > 1 else kwargs.get("hx")
    if x.kind not in ("leaf", "node"):
        raise Reject(f"{name} input is not a tensor")
    shape = tuple(ctx.b.shape(x))
    if ctx.b.dtype(x) not in _FLOATS:
        raise Reject(f"{name} on {ctx.b.dtype(x)} inputs: the recurrent kernels accumulate in fp32 "
                     "(float32, float16 and bfloat16 are supported)")
    if len(shape) not in (2, 3):
        raise Reject(f"{name} input of rank {len(shape)}: expected (L, N, H_in), (N, L, H_in) or (L, H_in)")
    if shape[-1] != module.input_size:
        raise Reject(f"{name} expects {module.input_size} input features, got {shape[-1]}")
    unbatched = len(shape) == 2
    batch_first = bool(module.batch_first) and not unbatched
    if unbatched:
        seq_len, batch = shape[0], 1
    else:
        batch, seq_len = (shape[0], shape[1]) if batch_first else (shape[1], shape[0])
    directions = 2 if module.bidirectional else 1
    hidden, layers = module.hidden_size, module.num_layers
    state_shape = (layers * directions, hidden) if unbatched else (layers * directions, batch, hidden)

    h0 = c0 = None
    if mode == "LSTM":
        if hx is not None:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise Reject("nn.LSTM's hx must be a (h_0, c_0) pair")
            h0, c0 = hx
    else:
        h0 = hx
    states = []
    for label, value in (("h_0", h0), ("c_0", c0)):
        if value is None:
            continue
        ref = ctx.ref(value)
        if ref.kind not in ("leaf", "node") or tuple(ctx.b.shape(ref)) != state_shape:
            raise Reject(f"{name} {label} of shape {tuple(ctx.b.shape(ref))}, expected {state_shape}")
        states.append(ref)
    weights = [param(w) for w in module._flat_weights_names]
    if any(w is None for w in weights):
        raise Reject(f"{name} without one of its weights {module._flat_weights_names}")

    spec = RnnSpec(mode=mode, layers=layers, directions=directions, hidden=hidden, input_size=module.input_size,
                   seq_len=seq_len, batch=batch, batch_first=batch_first, unbatched=unbatched, bias=bool(module.bias),
                   has_h0=h0 is not None, has_c0=c0 is not None)
    packed = _packed(ctx, spec, x, states, weights)
    out_shape = ((seq_len, directions * hidden) if unbatched else
                 (batch, seq_len, directions * hidden) if batch_first else (seq_len, batch, directions * hidden))
    out = _region(packed, 0, out_shape)
    h_n = _region(packed, spec.out_numel, state_shape)
    if mode == "LSTM":
        return out, (h_n, _region(packed, spec.out_numel + spec.state_numel, state_shape))
    return out, h_n


# ---------------------------------------------------------------- one-step cells
def _cell_mode(module: nn.RNNCellBase) -> str:
    if isinstance(module, nn.LSTMCell):
        return "LSTM"
    if isinstance(module, nn.GRUCell):
        return "GRU"
    if isinstance(module, nn.RNNCell) and module.nonlinearity in ("tanh", "relu"):
        return f"RNN_{module.nonlinearity.upper()}"
    raise Reject(f"nn.{type(module).__name__} with nonlinearity {getattr(module, 'nonlinearity', None)!r} "
                 "is not supported (LSTMCell, GRUCell and RNNCell with tanh or relu are)")


def cell_step(ctx, mode: str, x: Ref | ComputedView, hx, w_ih: Ref, w_hh: Ref, b_ih: Ref | None, b_hh: Ref | None,
              name: str) -> Ref | tuple[Ref, Ref]:
    """The next state of one cell step, as torch's cells compute it (aten's RNN.cpp): h' or,
    for an LSTM, (h', c'). ``hx``: None (zeros), the state, or for an LSTM the (h, c) pair.
    Batched (B, I) or unbatched (I,) input; the state matches it."""
    x, gates = ctx.ref(x), GATES[mode]
    if len(ctx.b.shape(ctx.ref(w_ih))) != 2:
        raise Reject(f"{name} with a weight_ih of rank {len(ctx.b.shape(ctx.ref(w_ih)))}, expected 2")
    rows, inputs = ctx.b.shape(ctx.ref(w_ih))
    hidden = rows // gates
    shape = tuple(ctx.b.shape(x))
    if ctx.b.dtype(x) not in _FLOATS:
        raise Reject(f"{name} on {ctx.b.dtype(x)} inputs: only float32, float16 and bfloat16 are supported")
    if len(shape) not in (1, 2) or shape[-1] != inputs:
        raise Reject(f"{name} input of shape {shape}: expected (N, {inputs}) or ({inputs},)")
    state_shape = shape[:-1] + (hidden,)
    if mode == "LSTM" and hx is not None:
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise Reject(f"{name}'s hx must be an (h, c) pair")
        h, c = (ctx.ref(v) for v in hx)
    else:
        h, c = (None if hx is None else ctx.ref(hx)), None
    for label, state in (("h", h), ("c", c)):
        if state is not None and tuple(ctx.b.shape(state)) != state_shape:
            raise Reject(f"{name} {label} of shape {tuple(ctx.b.shape(state))}, expected {state_shape}")

    def split(value: Ref | None) -> list[Ref | None]:
        """The gates' slices of a (.., gates * hidden) product, or of a bias vector."""
        if value is None:
            return [None] * gates
        ref = ctx.ref(value)
        if gates == 1:
            return [ref]
        if ref.kind == "leaf" and len(ctx.b.shape(ref)) == 1:
            return [rows_of(ctx, ref, g * hidden, (g + 1) * hidden) for g in range(gates)]
        return [ctx.ref(p) for p in pieces(ctx, ref, [hidden] * gates, -1)]

    # a zero state's product is zero: the recurrent side is its bias alone
    gi = split(linear(ctx, x, w_ih, b_ih))
    gh = split(linear(ctx, h, w_hh, b_hh) if h is not None else b_hh)

    def add(a: Ref, b: Ref | None) -> Ref:
        return a if b is None else ctx.b.pw("add", b, a)

    if mode in ("RNN_TANH", "RNN_RELU"):
        return ctx.b.pw("tanh" if mode == "RNN_TANH" else "relu", add(gi[0], gh[0]))
    gate = lambda k, act="sigmoid": ctx.b.pw(act, add(gi[k], gh[k]))  # noqa: E731
    if mode == "LSTM":
        # kernels have one output each: c' first (a buffer the next step reads), then the output
        # gate and h' after it, so the scheduler cuts the step into two pointwise stages, not one a gate
        ig = ctx.b.pw("mul", gate(0), gate(2, "tanh"))
        c_next = ig if c is None else ctx.b.pw("add", ctx.b.pw("mul", gate(1), c), ig)
        return ctx.b.pw("mul", gate(3), ctx.b.pw("tanh", c_next)), c_next
    z = gate(1)
    n = ctx.b.pw("tanh", add(gi[2], None if gh[2] is None else ctx.b.pw("mul", gh[2], gate(0))))
    if h is None:  # (0 - n) * z + n
        return ctx.b.pw("mul", ctx.b.pw("sub", Ref("const", 1.0), z), n)
    return ctx.b.pw("add", ctx.b.pw("mul", ctx.b.pw("sub", h, n), z), n)


def cell_module(ctx, module: nn.RNNCellBase, param, args, kwargs) -> Ref | tuple[Ref, Ref]:
    name = f"nn.{type(module).__name__}"
    a = _bind(args, kwargs, ["input", "hx"], {"hx": None})
    return cell_step(ctx, _cell_mode(module), a["input"], a["hx"], param("weight_ih"), param("weight_hh"),
                     param("bias_ih") if module.bias else None, param("bias_hh") if module.bias else None, name)


def _cell_function(mode: str, name: str):
    """torch.lstm_cell & co.: what dynamo records for a cell module (forward checks the
    input's rank and makes a missing state zeros first)."""
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "hx", "w_ih", "w_hh", "b_ih", "b_hh"], {"b_ih": None, "b_hh": None})
        return cell_step(ctx, mode, a["input"], a["hx"], a["w_ih"], a["w_hh"], a["b_ih"], a["b_hh"], name)
    return handler


CELL_HANDLERS = {name: _cell_function(mode, f"torch.{name}") for name, mode in (
    ("lstm_cell", "LSTM"), ("gru_cell", "GRU"), ("rnn_tanh_cell", "RNN_TANH"), ("rnn_relu_cell", "RNN_RELU"))}
