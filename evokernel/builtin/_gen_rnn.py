"""Recurrent layers (LSTM, GRU, tanh/relu RNN): multi-layer, bidirectional,
batch_first either way, with or without biases, h0/c0 given or zero.

Per layer, the launcher computes the input projection of every time step and
both directions as one GEMM (x @ [W_ih; W_ih_reverse]^T + b_ih, fp32 out), then
launches the step kernel once per time step: each program owns a tile of
(batch rows, hidden units) of one direction (grid axis 2; the reverse one walks
time backwards), multiplies h_{t-1} by its rows of W_hh for every gate, adds
the projected input and b_hh, applies PyTorch's gate equations (LSTM i, f, g, o
with c_t = f*c + i*g, h_t = o*tanh(c_t); GRU r, z, n with
n = tanh(x_n + r*(W_hn h + b_hn)), h_t = (1-z)*n + z*h; RNN tanh/relu) and
writes h_t into the layer's output sequence and h_n, c_t into c_n in place.

The steps run one launch each (config one_pass off: the launches order them), or
all in one launch a layer (one_pass): one program per batch tile and direction
walking every hidden tile, or (split_n > 1) up to split_n programs sharing a
batch tile's hidden tiles, which meet after every step at a barrier (a counter
each adds one to with release semantics and waits on with acquire; h_t then read
past L1). Those programs must all run at once: the launch is cooperative on the
GPU (it fails rather than start more than the GPU holds), and in Triton's CPU
interpreter, which runs programs one after another, one program does it all.
The cell state is read and written only by the program that owns it. Products accumulate in fp32; with
``torch.backends.cudnn.allow_tf32`` on (the default), cuDNN's reference runs
fp32 RNN GEMMs on TF32 tensor cores, so precision "auto" rounds both operands
to TF32 as cuDNN does on the GPU ("trunc": the tensor cores' own conversion;
"ieee", and always on the CPU: IEEE fp32 products). Under the kernelbench rules
an IEEE input projection is the library's GEMM.
"""

from __future__ import annotations

from ._canon_rnn import rnn_spec
from ._config import Config
from ._emit import TF32_ROUND, StageCode
from ._ir import Plan
from ._pointwise import _sigmoid, _tanh

__all__ = ["generate_rnn", "RNN_HELPERS"]

PROJ_TILE = (64, 64, 32, 4)  # input projection GEMM: rows, columns, K step, warps

_GEMM_TILE = '''@triton.jit
def _rnn_gemm_tile(a_ptr, a_rows, mask_r, w_ptr, offs_n, mask_n, K, acc,
                   BLOCK_K: tl.constexpr, PRECISION: tl.constexpr, A_CACHE: tl.constexpr):
    """acc + A[rows, :K] @ W[offs_n, :K]^T: A's rows start at a_ptr + a_rows (unit stride along K);
    W is row-major (K columns). A_CACHE ".cg": A read past the multiprocessor's L1 (other programs
    wrote it since this one last read it)."""
    offs_k = tl.arange(0, BLOCK_K)
    w_rows = offs_n.to(tl.int64) * K
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        mask_k = kk < K
        a = tl.load(a_ptr + a_rows[:, None] + kk[None, :], mask=mask_r[:, None] & mask_k[None, :], other=0.0,
                    cache_modifier=A_CACHE)
        w = tl.load(w_ptr + w_rows[None, :] + kk[:, None], mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        a = a.to(tl.float32)
        w = w.to(tl.float32)
        if PRECISION == "round":
            acc = tl.dot(_to_tf32(a), _to_tf32(w), acc, input_precision="tf32")
        elif PRECISION == "tf32":
            acc = tl.dot(a, w, acc, input_precision="tf32")
        else:
            acc = tl.dot(a, w, acc, input_precision="ieee")
    return acc
'''

_PRECISION = '''
def _rnn_precision(x, choice, cublas):
    """The step and projection products: TF32 only where the reference uses it (fp32 on the GPU with
    torch.backends.cudnn.allow_tf32 on for cuDNN's RNN, the matmul switch for a loop of Linear layers,
    cuBLAS), rounded as cuDNN rounds ("auto") or truncated ("trunc")."""
    tf32 = x.is_cuda and x.dtype == torch.float32 and (
        torch.backends.cuda.matmul.allow_tf32 if cublas else torch.backends.cudnn.allow_tf32)
    if choice == "ieee" or not tf32:
        return "ieee"
    return "round" if choice == "auto" else "tf32"
'''

RNN_HELPERS = (TF32_ROUND, _GEMM_TILE, _PRECISION)


def _proj_kernel(tag: str) -> str:
    return f'''@triton.jit
def _rnn_proj_kernel{tag}(a_ptr, w_ptr, b_ptr, out_ptr, R, N, K, stride_a_r,
                       HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
                       BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # out[r, n] = sum_k a[r, k] * w[n, k] + b[n], in fp32
    offs_r = (tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_r = offs_r < R
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_R, BLOCK_N), dtype=tl.float32)
    acc = _rnn_gemm_tile(a_ptr, offs_r * stride_a_r, mask_r, w_ptr, offs_n, mask_n, K, acc, BLOCK_K, PRECISION, "")
    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    tl.store(out_ptr + offs_r[:, None] * N + offs_n[None, :], acc, mask=mask_r[:, None] & mask_n[None, :])
'''


def _cell(mode: str) -> list[str]:
    """PyTorch's gate equations on the tiles x{g} (projected input + b_ih) and a{g} (W_hh h + b_hh)."""
    if mode == "LSTM":
        return [f"gate_i = {_sigmoid('(x0 + a0)')}",
                f"gate_f = {_sigmoid('(x1 + a1)')}",
                f"gate_g = {_tanh('(x2 + a2)')}",
                f"gate_o = {_sigmoid('(x3 + a3)')}",
                "# the cell state is read and written by its owner only: updated in place",
                "c_ptrs = c_ptr + d * B * H + offs_b[:, None] * H + offs_h[None, :]",
                "c_new = gate_f * tl.load(c_ptrs, mask=mask, other=0.0).to(tl.float32) + gate_i * gate_g",
                "tl.store(c_ptrs, c_new.to(c_ptr.dtype.element_ty), mask=mask)",
                f"h_new = gate_o * {_tanh('c_new')}"]
    if mode == "GRU":
        return [f"gate_r = {_sigmoid('(x0 + a0)')}",
                f"gate_z = {_sigmoid('(x1 + a1)')}",
                "# b_hn stays inside the reset gate's product, as in PyTorch",
                f"gate_n = {_tanh('(x2 + gate_r * a2)')}",
                "h_prev = tl.load(h_read + state[:, None] + offs_h[None, :], mask=mask, other=0.0, cache_modifier=H_CACHE)",
                "h_new = (1.0 - gate_z) * gate_n + gate_z * h_prev"]
    if mode == "RNN_TANH":
        return [f"h_new = {_tanh('(x0 + a0)')}"]
    if mode == "RNN_RELU":
        return ["h_new = tl.maximum(x0 + a0, 0.0)"]
    raise ValueError(f"no recurrent cell {mode!r}")


def _step_kernel(mode: str, gates: int, tag: str) -> str:
    lines = [
        "@triton.jit",
        f"def _rnn_step_kernel{tag}(xp_ptr, whh_ptr, bhh_ptr, hbuf_ptr, c_ptr, seq_ptr, hn_ptr, sync_ptr, step0, n_steps,",
        "                       T, B, H, stride_xp_t, stride_xp_b, stride_seq_t, stride_seq_b, HAS_BIAS: tl.constexpr,",
        "                       PRECISION: tl.constexpr, GRID_SYNC: tl.constexpr, H_CACHE: tl.constexpr,",
        "                       BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):",
        "    # steps [step0, step0 + n_steps) of one direction (grid axis 2) for one tile of batch rows; the",
        "    # hidden tiles are spread over grid axis 1. One step a launch: the launches order the steps. One",
        "    # launch a layer: a program walks every step; with GRID_SYNC, the programs of one batch tile and",
        "    # direction meet at a barrier after each step (a counter in sync_ptr), as each reads all of h_t",
        "    # (through H_CACHE '.cg', past the multiprocessor's L1: other programs wrote it)",
        "    d = tl.program_id(2).to(tl.int64)",
        "    offs_b = (tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)",
        "    mask_b = offs_b < B",
        "    state = (2 * d * B + offs_b) * H  # h_{t-1} and h_t alternate between two (directions, B, H) halves",
        f"    w_dir = whh_ptr + d * {gates} * H * H",
        f"    b_dir = bhh_ptr + d * {gates} * H",
        "    for step in range(step0, step0 + n_steps):",
        "        # direction 0 walks time forwards, direction 1 backwards",
        "        t = step + d * (T - 1 - 2 * step)",
        "        h_read = hbuf_ptr + (step % 2) * B * H",
        "        h_write = hbuf_ptr + ((step + 1) % 2) * B * H",
        "        for j0 in range(tl.program_id(1) * BLOCK_H, H, tl.num_programs(1) * BLOCK_H):",
        "            offs_h = j0 + tl.arange(0, BLOCK_H)",
        "            mask_h = offs_h < H",
        "            mask = mask_b[:, None] & mask_h[None, :]",
        f"            x_tile = xp_ptr + t * stride_xp_t + offs_b[:, None] * stride_xp_b + d * {gates} * H + offs_h[None, :]",
    ]
    for g in range(gates):
        lines += [
            f"            a{g} = _rnn_gemm_tile(h_read, state, mask_b, w_dir + {g} * H * H, offs_h, mask_h, H,",
            "                                tl.zeros((BLOCK_B, BLOCK_H), dtype=tl.float32), BLOCK_K, PRECISION, H_CACHE)",
            "            if HAS_BIAS:",
            f"                a{g} += tl.load(b_dir + {g} * H + offs_h, mask=mask_h, other=0.0).to(tl.float32)[None, :]",
            f"            x{g} = tl.load(x_tile + {g} * H, mask=mask, other=0.0).to(tl.float32)",
        ]
    lines += [f"            {line}" for line in _cell(mode)]
    lines += [
        "            tl.store(h_write + state[:, None] + offs_h[None, :], h_new.to(hbuf_ptr.dtype.element_ty), mask=mask)",
        "            h_out = h_new.to(seq_ptr.dtype.element_ty)",
        "            tl.store(seq_ptr + t * stride_seq_t + offs_b[:, None] * stride_seq_b + d * H + offs_h[None, :],",
        "                     h_out, mask=mask)",
        "            if step == T - 1:",
        "                tl.store(hn_ptr + d * B * H + offs_b[:, None] * H + offs_h[None, :], h_out, mask=mask)",
        "        # this step's h_t (written by all of this program's threads) is the next step's input",
        "        tl.debug_barrier()",
        "        if GRID_SYNC:",
        "            # and by the other programs of this batch tile and direction: each adds one to their counter",
        "            # (release: its h_t is visible first) and waits until all have, for this step (acquire)",
        "            slot = sync_ptr + tl.program_id(2) * tl.num_programs(0) + tl.program_id(0)",
        "            arrived = tl.atomic_add(slot, 1, sem='acq_rel', scope='gpu') + 1",
        "            target = (step - step0 + 1) * tl.num_programs(1)",
        "            while arrived < target:",
        "                arrived = tl.atomic_add(slot, 0, sem='acquire', scope='gpu')",
        "            tl.debug_barrier()",
    ]
    return "\n".join(lines) + "\n"


def _projection(tag: str, library: bool) -> list[str]:
    """Lines computing ``xp`` (rows x directions*gates*hidden) from ``rows``, ``w_ih`` and ``b_ih``."""
    lines = []
    if library:
        lines += ["        if precision == 'ieee':",
                  "            # kernelbench rules: the library's GEMM projects every step's input (IEEE fp32, as ours)",
                  "            xp = _host_call(torch.matmul, rows, w_ih.t()) if b_ih is None else _host_call(torch.addmm, b_ih, rows, w_ih.t())",
                  "        else:",
                  "            # TF32 rounded as cuDNN rounds: our own GEMM (the library's rounding differs)",
                  "            xp = _rnn_project" + tag + "(rows, w_ih, b_ih, precision)"]
    else:
        lines += ["        xp = _rnn_project" + tag + "(rows, w_ih, b_ih, precision)"]
    return lines


def _split_lines(config: Config, cooperative: bool) -> list[str]:
    """Launcher lines setting ``split``, the programs sharing a batch tile's hidden units in a
    cooperative layer, and (outside one) ``sync``, the step counters the kernel then never touches."""
    if not cooperative:
        return ["    sync = _zeros((1,), torch.int32, x.device)  # no barrier: never read"]
    return [f"    split = min({config.split_n}, triton.cdiv(hidden, {config.block_n}))",
            "    if x.is_cuda:  # at most one program a multiprocessor: all of them fit at once",
            "        split = max(1, min(split, torch.cuda.get_device_properties(x.device).multi_processor_count",
            "                           // (tiles_b * dirs)))",
            "    else:  # Triton's interpreter runs programs one after another: one could wait for a later one",
            "        split = 1"]


def generate_rnn(plan: Plan, config: Config, tag: str = "") -> StageCode:
    node = plan.node(plan.anchor_id)
    spec = rnn_spec(node)
    names = [leaf.name for leaf in plan.leaves]
    operands = [ref.value for ref in node.args]
    x, rest = operands[0], operands[1:]
    h0 = rest.pop(0) if spec.has_h0 else None
    c0 = rest.pop(0) if spec.has_c0 else None
    per = 4 if spec.bias else 2
    expected = spec.layers * spec.directions * per
    if len(rest) != expected:
        raise ValueError(f"rnn node has {len(rest)} weights, expected {expected}")
    groups = [rest[i:i + per] for i in range(0, len(rest), per)]
    layers = [groups[layer * spec.directions:(layer + 1) * spec.directions] for layer in range(spec.layers)]
    lstm = spec.mode == "LSTM"
    unsqueeze = ".unsqueeze(1)" if spec.unbatched else ""
    c = config
    cooperative = c.one_pass and c.split_n > 1
    rp, np_, kp, wp = PROJ_TILE

    def layer_text(dirs) -> str:
        inner = ", ".join("(" + ", ".join(group + ([] if spec.bias else ["None", "None"])) + ")" for group in dirs)
        return f"        ({inner},),"

    proj = [f"def _rnn_project{tag}(rows, w_ih, b_ih, precision):",
            "    out = torch.empty((rows.shape[0], w_ih.shape[0]), dtype=torch.float32, device=rows.device)",
            "    if out.numel():",
            f"        _rnn_proj_kernel{tag}[(triton.cdiv(rows.shape[0], {rp}), triton.cdiv(w_ih.shape[0], {np_}))](",
            "            rows, w_ih, w_ih if b_ih is None else b_ih, out, rows.shape[0], w_ih.shape[0], rows.shape[1],",
            "            rows.stride(0), HAS_BIAS=b_ih is not None, PRECISION=precision,",
            f"            BLOCK_R={rp}, BLOCK_N={np_}, BLOCK_K={kp}, num_warps={wp})",
            "    return out", ""]
    entry = f"fused_rnn{tag}"
    batch_dims = "n_batch, steps = x.shape[0], x.shape[1]" if spec.batch_first else "steps, n_batch = x.shape[0], x.shape[1]"
    seq_shape = "(n_batch, steps, dirs * hidden)" if spec.batch_first else "(steps, n_batch, dirs * hidden)"
    t_dim, b_dim = (1, 0) if spec.batch_first else (0, 1)
    l = proj + [
        f"def {entry}({', '.join(names)}):",
        f'    """{spec.mode}: {spec.layers} layer(s), {spec.directions} direction(s); returns the output sequence,',
        '    h_n and (LSTM) c_n, flat in one buffer."""',
        "    # per layer, per direction: (weight_ih, weight_hh, bias_ih, bias_hh)",
        "    layers = (",
        *[layer_text(dirs) for dirs in layers],
        "    )",
        "    # one assignment: an input named like another's role (h0 passed as c0) is read before it is rebound",
        f"    x, h0, c0 = {x}{unsqueeze}, {h0 + unsqueeze if h0 else 'None'}, {c0 + unsqueeze if c0 else 'None'}",
        f"    dirs, hidden = {spec.directions}, {spec.hidden}",
        f"    {batch_dims}",
        "    n_out = steps * n_batch * dirs * hidden",
        "    n_state = len(layers) * dirs * n_batch * hidden",
        f"    packed = torch.empty(n_out + n_state * {2 if lstm else 1}, dtype=x.dtype, device=x.device)",
        "    h_n = packed[n_out:n_out + n_state].view(len(layers) * dirs, n_batch, hidden)",
    ]
    if lstm:
        l += ["    c_n = packed[n_out + n_state:].view(len(layers) * dirs, n_batch, hidden)",
              "    if c0 is None:",
              "        _zero_(c_n)",
              "    else:",
              "        _copy_(c_n, c0)"]
    else:
        l += ["    c_n = h_n  # no cell state: the kernel never touches it"]
    l += [
        f"    precision = _rnn_precision(x, {c.precision!r}, {spec.cublas})",
        f"    seq_shape = {seq_shape}",
        "    # h_{t-1} and h_t of each direction: two halves a step reads and writes in turn",
        "    hbuf = torch.empty((dirs, 2, n_batch, hidden), dtype=x.dtype, device=x.device)",
        f"    tiles_b = triton.cdiv(n_batch, {c.block_m})",
        *_split_lines(c, cooperative),
        "    layer_in = x",
        "    for layer, params in enumerate(layers):",
        "        last = layer == len(layers) - 1",
        "        seq = packed[:n_out].view(seq_shape) if last else torch.empty(seq_shape, dtype=x.dtype, device=x.device)",
        "        # every step's input rows, in the input's (time, batch) order, both directions in one GEMM",
        "        rows = _contiguous(_reshape(layer_in, -1, layer_in.shape[-1]))",
        "        w_ih = _host_call(torch.cat, [p[0] for p in params]) if dirs > 1 else _contiguous(params[0][0])",
        "        b_ih = None if params[0][2] is None else _host_call(torch.cat, [p[2] for p in params])",
        "        w_hh = _host_call(torch.stack, [p[1] for p in params])",
        "        b_hh = None if params[0][3] is None else _host_call(torch.stack, [p[3] for p in params])",
        *_projection(tag, plan.rules == "kernelbench"),
        f"        stride_xp_t, stride_xp_b = {'(xp.shape[1], steps * xp.shape[1])' if spec.batch_first else '(n_batch * xp.shape[1], xp.shape[1])'}",
        "        states = slice(layer * dirs, (layer + 1) * dirs)",
        *(["        sync = _zeros((dirs * tiles_b,), torch.int32, x.device)  # step counters, anew"]
          if cooperative else []),
        "        if h0 is None:",
        "            _zero_(hbuf[:, 0])",
        "        else:",
        "            _copy_(hbuf[:, 0], h0[states])",
        "        args = (xp, w_hh, w_hh if b_hh is None else b_hh, hbuf, c_n[states], seq, h_n[states], sync)",
        f"        sizes = (steps, n_batch, hidden, stride_xp_t, stride_xp_b, seq.stride({t_dim}), seq.stride({b_dim}))",
        f"        meta = dict(HAS_BIAS=b_hh is not None, PRECISION=precision, BLOCK_B={c.block_m}, BLOCK_H={c.block_n},",
        f"                    BLOCK_K={c.block_k}, num_warps={c.num_warps})",
    ]
    if cooperative:
        l += ["        # one launch walks every step; each batch tile's hidden tiles are shared by `split` programs that",
              "        # meet after every step: all must run at once, which a cooperative launch guarantees (it fails",
              "        # rather than start more programs than the GPU holds at once: one a multiprocessor here)",
              f"        _rnn_step_kernel{tag}[(tiles_b, split, dirs)](*args, 0, steps, *sizes, GRID_SYNC=True, H_CACHE='.cg',",
              "                                launch_cooperative_grid=x.is_cuda, **meta)"]
    elif c.one_pass:
        l += ["        # one launch walks every step: one program per batch tile and direction",
              f"        _rnn_step_kernel{tag}[(tiles_b, 1, dirs)](*args, 0, steps, *sizes, GRID_SYNC=False, H_CACHE='', **meta)"]
    else:
        l += ["        for step in range(steps):  # one launch a step, its hidden tiles spread over programs",
              f"            _rnn_step_kernel{tag}[(tiles_b, triton.cdiv(hidden, {c.block_n}), dirs)](",
              "                *args, step, 1, *sizes, GRID_SYNC=False, H_CACHE='', **meta)"]
    l += [
        "        layer_in = seq",
        "    return packed",
    ]
    kernels = (_proj_kernel(tag), _step_kernel(spec.mode, spec.gates, tag))
    return StageCode(kernels=kernels, launcher="\n".join(l) + "\n", entry=entry, helpers=RNN_HELPERS)
