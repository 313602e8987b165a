"""Convolutions (1d/2d/3d, transposed, grouped, strided, dilated, padded) as
implicit GEMM with tl.dot, and a direct kernel for depthwise convolutions.

Implicit GEMM, per group: M = batch x output positions, N = output channels
of the group, K = input channels of the group x kernel taps. A program owns a
[BLOCK_M positions, BLOCK_N channels] tile; each K step gathers the input
values its taps read (zero outside the padded input; for a transposed
convolution, only taps whose input position is a whole stride away) and the
matching weights, and accumulates their product in fp32. The pointwise
epilogue (bias, activations, scaling...) runs on the tile before the store.

The K loop walks the input one of three ways (``Config.gather``): "flat", channels x taps as one
index, each K step gathering a [positions, (channel, tap) pairs] tile with a bounds check per
element; "taps", one kernel tap at a time with the tile's input channels inner, so a tap's
bounds are checked once per output position and the weights (rearranged before the GEMM to
[groups, taps, C_in/groups, C_out/groups]) load contiguously along the output channels;
"nhwc", the same over a channels-last copy of the input, whose channels are then contiguous
along K (the copy is made in the pass that rounds the input to TF32, which the other two
make anyway for a contiguous input).

Precision: PyTorch runs fp32 convolutions through cuDNN with TF32 tensor cores
unless ``torch.backends.cudnn.allow_tf32`` is off, and cuDNN rounds each fp32
operand to TF32 (round half away from zero on the 13 dropped bits) before the
products. With ``precision="auto"`` the kernel does the same when the inputs
are on the GPU, the switch is on and a group has 16 or more input channels
(with fewer, cuDNN ran IEEE fp32 kernels on the H200): operands rounded the
same way (once, in a pass before the GEMM, when they are contiguous), products
on the tensor cores, fp32 accumulation, so its result differs from cuDNN's by
accumulation order only. Otherwise (switch off, few channels, the CPU) it
computes IEEE fp32 products, as the reference then does. ``precision="trunc"`` uses the
tensor cores' own conversion instead (the low bits dropped), in case a cuDNN
kernel converts that way; ``precision="ieee"`` always
computes IEEE products; ``precision="3xtf32"`` splits each fp32 operand tile in the K loop into
TF32 high and low parts and takes three tensor-core products (fp32 to within the low parts'
product, as the matmul family's 3xTF32), for the convolutions cuDNN runs in IEEE fp32 (few input
channels), whose FMA products our IEEE kernel takes several times slower than the tensor cores. Depthwise convolutions take the direct kernel, whose
fp32 FMAs match PyTorch's own depthwise kernels.
"""

from __future__ import annotations

import math

from ._config import TILE_ELEMS, TILE_W, Config
from ._emit import TF32_ROUND, Emitter, StageCode, load_other, out_dtype_expr, scalar_sources, wrap_params
from ._gen_elementwise import SPAN_HELPER
from ._gen_matmul import TILES_HELPER, autotune_lines
from ._ir import Node, Plan

__all__ = ["generate_conv", "AnchorEpilogue", "NHWC_COPY_HELPER"]

# The tap-major kernel's (BLOCK_M, BLOCK_N, num_warps, num_stages) Triton's autotuner times per shape
# after the configuration's own (BLOCK_K stays the configuration's); tiles wider than the group's
# output channels are left out (_gemm_tiles)
CONV_TILES = ((128, 128, 8, 3), (128, 64, 4, 3), (64, 128, 4, 3), (64, 64, 4, 3), (128, 32, 4, 3), (256, 64, 8, 3))


class AnchorEpilogue(Emitter):
    """Pointwise ops on an anchor's output values, operands read through per-dim
    strides at index expressions ``index[d]`` (one per output dim)."""

    def __init__(self, plan: Plan, anchor_id: int, index: list[str], mask: str, acc: str = "acc"):
        super().__init__(plan)
        self.anchor_id = anchor_id
        self.index = index
        self.mask = mask
        self.acc = acc
        self.used: list[str] = []

    def load_leaf(self, name: str, ctx: str) -> str:
        self.used.append(name)
        offs = " + ".join(f"{ix} * stride_{name}_{d}" for d, ix in enumerate(self.index))
        var = f"l_{name}"
        self.emit(f"{var} = tl.load({name}_ptr + {offs}, mask={self.mask}, other={load_other(self.plan, name)})"
                  ".to(tl.float32)")
        return var

    def compute(self, node: Node, ctx: str) -> str:
        if node.id == self.anchor_id:
            return self.acc
        return super().compute(node, ctx)


def epilogue(plan: Plan, anchor_id: int, index: list[str], mask: str, acc: str = "acc"):
    em = AnchorEpilogue(plan, anchor_id, index, mask, acc)
    result = em.value(plan.output)
    return em, result, list(dict.fromkeys(em.used))


_TF32_DOT = """\
        if SPLIT3:  # 3xTF32 (fp32 operands), the tiles split in registers, a fresh product a K step
            acc += _dot_3xtf32(a_tile, w_tile)
        elif TF32:
            if ROUND:  # operands that could not be rounded before the GEMM (not contiguous)
                a_tile = _to_tf32(a_tile)
                w_tile = _to_tf32(w_tile)
            acc += tl.dot(a_tile, w_tile, input_precision="tf32")
        elif FP32:
            acc += tl.dot(a_tile, w_tile, input_precision="ieee")
        else:
            acc += tl.dot(a_tile, w_tile)"""


TF32_HELPER = '''def _conv_tf32(x, cin_g, precision):
    """Whether the products run on the TF32 tensor cores, as the reference's cuDNN kernel would:
    only for fp32 inputs on the GPU with torch.backends.cudnn.allow_tf32 on ("auto"), and then
    only for 16 or more input channels a group: for fewer, cuDNN chose IEEE fp32 kernels on the
    H200 (3-channel 3D convolutions, 8-channel 2D and grouped transposed ones)."""
    if precision == "ieee" or not x.is_cuda or x.dtype != torch.float32 or not torch.backends.cudnn.allow_tf32:
        return False
    return precision == "trunc" or cin_g >= 16


@triton.jit
def _tf32_round_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, _to_tf32(tl.load(x_ptr + offs, mask=mask, other=0.0)), mask=mask)


def _tf32_rounded(t):
    """A contiguous fp32 tensor's values rounded to TF32, in a new tensor of the same layout."""
    out = torch.empty_like(t)
    n = t.numel()
    if n:
        _tf32_round_kernel[(triton.cdiv(n, 4096),)](t, out, n, BLOCK=4096, num_warps=8)
    return out
'''


# The input copied to channels-last by a tiled kernel (our nhwc gather's operand; the library's
# channels-last convolutions' input copy under the kernelbench rules, see _gen_host)
NHWC_COPY_HELPER = '''@triton.jit
def _conv_nhwc_kernel(x_ptr, y_ptr, C, S, sx_n, sx_c, sx_s, ROUND: tl.constexpr, IDX64: tl.constexpr,
                      BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr):
    # one [channels, positions] tile of one sample, read along the positions, written along the channels
    s = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    n = tl.program_id(2)
    if IDX64:
        s = s.to(tl.int64)
        c = c.to(tl.int64)
        n = n.to(tl.int64)
    mask = (c[:, None] < C) & (s[None, :] < S)
    v = tl.load(x_ptr + n * sx_n + c[:, None] * sx_c + s[None, :] * sx_s, mask=mask, other=0.0)
    if ROUND:
        v = _to_tf32(v)
    tl.store(y_ptr + n * S * C + s[None, :] * C + c[:, None], v, mask=mask)


_CHANNELS_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}


def _conv_channels_last(x, round_tf32):
    """x (N, C, *spatial) as a channels-last tensor of the same shape (strides N, 1, ..., C), its values
    rounded to TF32 on the way when round_tf32; None when x's positions are not one strided run."""
    spatial = x.shape[2:]
    s = _prod(spatial)
    sx_s = x.stride(-1) if x.dim() > 2 else 1
    for d in range(2, x.dim() - 1):  # each dim one stride run with the next
        if x.shape[d] != 1 and x.stride(d) != x.stride(d + 1) * x.shape[d + 1]:
            return None
    y = torch.empty_permuted(x.shape, (0, *range(2, x.dim()), 1), dtype=x.dtype, device=x.device)
    if x.numel():
        grid = (triton.cdiv(s, 64), triton.cdiv(x.shape[1], 32), x.shape[0])
        _conv_nhwc_kernel[grid](x, y, x.shape[1], s, x.stride(0), x.stride(1), sx_s, ROUND=round_tf32,
                                IDX64=_needs_i64(x, y), BLOCK_C=32, BLOCK_S=64, num_warps=4)
    return y
'''


TAPS_HELPER = '''@triton.jit
def _conv_weight_taps_kernel(w_ptr, y_ptr, total, CIN_G, COUT_G, TAPS, k1, k2, sw_0, sw_1, sk_0, sk_1, sk_2,
                             TRANSPOSED: tl.constexpr, ROUND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    co = offs % COUT_G
    rem = offs // COUT_G
    ci = rem % CIN_G
    rem = rem // CIN_G
    tap = rem % TAPS
    g = rem // TAPS
    tap_offs = (tap // (k1 * k2)) * sk_0 + ((tap // k2) % k1) * sk_1 + (tap % k2) * sk_2
    if TRANSPOSED:  # weight (C_in, C_out / groups, *kernel)
        src = (g * CIN_G + ci) * sw_0 + co * sw_1 + tap_offs
    else:  # weight (C_out, C_in / groups, *kernel)
        src = (g * COUT_G + co) * sw_0 + ci * sw_1 + tap_offs
    v = tl.load(w_ptr + src, mask=mask, other=0.0)
    if ROUND:
        v = _to_tf32(v)
    tl.store(y_ptr + offs, v, mask=mask)


def _conv_weight_taps(w, groups, cin_g, cout_g, transposed, round_tf32):
    """The weight as [groups, taps, C_in / groups, C_out / groups], contiguous (rounded to TF32 when
    round_tf32): a tap's weights for a tile's channels are one row of output channels."""
    kernel = list(w.shape[2:])
    taps = _prod(kernel)
    sk = list(w.stride()[2:])
    kernel, sk = [1] * (3 - len(kernel)) + kernel, [0] * (3 - len(sk)) + sk
    y = torch.empty((groups, taps, cin_g, cout_g), dtype=w.dtype, device=w.device)
    total = y.numel()
    if total:
        _conv_weight_taps_kernel[(triton.cdiv(total, 1024),)](
            w, y, total, cin_g, cout_g, taps, kernel[1], kernel[2], w.stride(0), w.stride(1), *sk,
            TRANSPOSED=transposed, ROUND=round_tf32, BLOCK=1024, num_warps=4)
    return y
'''


def _unravel(var: str, sizes: list[str], names: list[str], indent: str) -> list[str]:
    """names[d] = digit d of var in the mixed radix sizes (last fastest); returns lines."""
    rem = f"rem_{var}"  # a name of its own: a loop must not re-type a variable from outside it
    lines = [f"{indent}{rem} = {var}"]
    for d in range(len(sizes) - 1, 0, -1):
        lines.append(f"{indent}{names[d]} = {rem} % {sizes[d]}")
        lines.append(f"{indent}{rem} = {rem} // {sizes[d]}")
    lines.append(f"{indent}{names[0]} = {rem}")
    return lines


# Both GEMM kernels' start: the program's [positions, output channels] tile of its group
_TILE_HEAD = [
    "    pid = tl.program_id(0)",
    "    g = tl.program_id(1)",
    "    num_n = tl.cdiv(COUT_G, BLOCK_N)",
    "    pid_m = pid // num_n",
    "    pid_n = pid % num_n",
    "    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
    "    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)",
    "    if IDX64:",
    "        offs_m = offs_m.to(tl.int64)",
    "    m_mask = offs_m < M",
    "    n_mask = offs_n < COUT_G",
    "    # output position of each row: batch index and spatial coordinates",
]


def _phase_lines(sp: list[int]) -> list[str]:
    """A strided transposed convolution's rows, one output phase (o mod stride) per program: each
    row's phase-grid position q and output position o, and per dim the first tap reaching the
    phase (t0), the taps' step (TS) and their count (cnt)."""
    lines = _unravel("offs_m", ["1"] + [f"qm_{d}" for d in sp], ["nb"] + [f"q_{d}" for d in sp], "    ")
    lines.append("    phase = tl.program_id(2)")
    lines += _unravel("phase", ["1"] + [f"ST_{d}" for d in sp], ["ph"] + [f"c_{d}" for d in sp], "    ")
    for d in sp:
        lines += [f"    o_{d} = c_{d} + ST_{d} * q_{d}",
                  f"    m_mask = m_mask & (o_{d} < dout_{d})",
                  f"    r_{d} = c_{d} + PD_{d}",
                  f"    t0_{d} = KT_{d}",
                  f"    for t in tl.static_range(KT_{d}):",
                  f"        t0_{d} = tl.where(((r_{d} - t * DL_{d}) % ST_{d} == 0) & (t0_{d} == KT_{d}), t, t0_{d})",
                  f"    cnt_{d} = tl.where(t0_{d} < KT_{d}, (KT_{d} - t0_{d} + TS_{d} - 1) // TS_{d}, 0)"]
    return lines


def generate_conv(plan: Plan, config: Config, tag: str = "") -> StageCode:
    conv = plan.node(plan.anchor_id)
    nd = conv.attr("nd")
    transposed = conv.attr("transposed")
    x_name, w_name = conv.args[0].value, conv.args[1].value
    names = [leaf.name for leaf in plan.leaves]
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]
    sp = list(range(nd))
    din = [f"din_{d}" for d in sp]
    dout = [f"dout_{d}" for d in sp]
    kt = [f"KT_{d}" for d in sp]
    geom = []
    for d in sp:
        geom += [f"KT_{d}: tl.constexpr", f"ST_{d}: tl.constexpr", f"PD_{d}: tl.constexpr", f"DL_{d}: tl.constexpr"]

    # ---- implicit GEMM kernel
    phased = transposed and any(st > 1 for st in conv.attr("stride"))
    if phased:  # tap step within a phase: the taps t with t * dilation = r (mod stride)
        geom += [f"TS_{d}: tl.constexpr" for d in sp]
    index = ["nb[:, None]", "co[None, :]"] + [f"o_{d}[:, None]" for d in sp]
    em, result, epi = epilogue(plan, conv.id, index, "mask")
    epi_strides = [f"stride_{n}_{d}" for n in epi for d in range(nd + 2)]
    out_strides = [f"stride_out_{d}" for d in range(nd + 2)]
    # the convolution's own operands under names no leaf can take (leaf names never start with
    # "_"): an epilogue may read the same tensor (a residual of the input) as a leaf of its own
    params = (["_cx_ptr", "_cw_ptr"] + [f"{n}_ptr" for n in epi] + ["out_ptr"] + scalars
              + ["CIN_G", "COUT_G", "M", "KG"] + din + dout
              + ["sx_n", "sx_c"] + [f"sx_{d}" for d in sp] + ["sw_0", "sw_1"] + [f"sw_k{d}" for d in sp]
              + epi_strides + out_strides + ([f"qm_{d}" for d in sp] if phased else []))
    k = ["@triton.jit", f"def _conv_gemm_kernel{tag}(", *wrap_params(params), *wrap_params(geom),
         "    TRANSPOSED: tl.constexpr, TF32: tl.constexpr, ROUND: tl.constexpr, FP32: tl.constexpr, SPLIT3: tl.constexpr,",
         "    IDX64: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,",
         "):",
         *_TILE_HEAD]
    if phased:
        # a strided transposed convolution, one output phase (o mod stride) per program:
        # all rows of a tile then share the taps that reach them, and only those are summed
        k += _phase_lines(sp)
        k.append(f"    kg = CIN_G * {' * '.join(f'cnt_{d}' for d in sp)}")
    else:
        k += _unravel("offs_m", ["1"] + dout, ["nb"] + [f"o_{d}" for d in sp], "    ")
        k.append("    kg = KG")
    # Addresses split into a per-row part (outside the K loop) and a per-column part (one
    # vector per K step), so a tile element costs one add; bounds are checked only where a
    # tap can fall outside the input (padding, transposed taps).
    if phased:
        rows_at = [f"q_{d}" for d in sp]
    else:
        for d in sp:  # where each row's window starts (or, transposed, where its taps count from)
            k.append(f"    base_{d} = o_{d} + PD_{d}" if transposed else f"    base_{d} = o_{d} * ST_{d} - PD_{d}")
        rows_at = [f"base_{d}" for d in sp]
    k += ["    co = g * COUT_G + offs_n",
          "    x_row = nb * sx_n + (g * CIN_G) * sx_c" + "".join(f" + {r} * sx_{d}" for d, r in zip(sp, rows_at)),
          "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
          "    for k0 in range(0, kg, BLOCK_K):",
          "        offs_k = k0 + tl.arange(0, BLOCK_K)",
          "        k_mask = offs_k < kg",
          "        # reduction index -> (input channel, kernel tap)"]
    ok = ["m_mask[:, None]", "k_mask[None, :]"]
    checked = transposed or any(conv.attr("padding"))
    if phased:
        k += _unravel("offs_k", ["1"] + [f"cnt_{d}" for d in sp], ["ci"] + [f"j_{d}" for d in sp], "        ")
        for d in sp:
            k += [f"        t_{d} = t0_{d} + j_{d} * TS_{d}",
                  f"        kd_{d} = (r_{d} - t_{d} * DL_{d}) // ST_{d}  # exact: the tap reaches this phase"]
    else:
        k += _unravel("offs_k", ["1"] + kt, ["ci"] + [f"t_{d}" for d in sp], "        ")
        for d in sp:
            k.append(f"        kd_{d} = {'-' if transposed else ''}t_{d} * DL_{d}")
    k.append("        x_col = ci * sx_c" + "".join(f" + kd_{d} * sx_{d}" for d in sp))
    if checked:
        for d in sp:
            k += [f"        i_{d} = {rows_at[d]}[:, None] + kd_{d}[None, :]",
                  f"        ok_{d} = (i_{d} >= 0) & (i_{d} < din_{d})"]
            ok.append(f"ok_{d}")
    a_offs = ["x_row[:, None]", "x_col[None, :]"]
    w_taps = " + ".join(f"t_{d}[:, None] * sw_k{d}" for d in sp)
    k += [f"        a_tile = tl.load(_cx_ptr + {' + '.join(a_offs)}, mask={' & '.join(ok)}, other=0.0)",
          "        if TRANSPOSED:",
          "            # weight (C_in, C_out / groups, *kernel)",
          f"            w_offs = (g * CIN_G + ci)[:, None] * sw_0 + offs_n[None, :] * sw_1 + {w_taps}",
          "        else:",
          "            # weight (C_out, C_in / groups, *kernel)",
          f"            w_offs = co[None, :] * sw_0 + ci[:, None] * sw_1 + {w_taps}",
          "        w_tile = tl.load(_cw_ptr + w_offs, mask=k_mask[:, None] & n_mask[None, :], other=0.0)",
          _TF32_DOT,
          "    mask = m_mask[:, None] & n_mask[None, :]"]
    if em.lines:
        k.append("    # fused epilogue, in fp32 registers")
    k += em.lines
    out_offs = " + ".join(f"{ix} * stride_out_{d}" for d, ix in enumerate(index))
    k.append(f"    tl.store(out_ptr + {out_offs}, {result}.to(out_ptr.dtype.element_ty), mask=mask)")
    gemm_kernel = "\n".join(k) + "\n"

    # ---- tap-major implicit GEMM (gather "taps"/"nhwc"): a tap at a time, the tile's channels inner
    tk = [*autotune_lines(config, CONV_TILES, ["M", "COUT_G", "CIN_G", "KG"]), "@triton.jit",
          f"def _conv_taps_kernel{tag}(", *wrap_params(params), *wrap_params(geom),
          "    TRANSPOSED: tl.constexpr, TF32: tl.constexpr, ROUND: tl.constexpr, FP32: tl.constexpr, SPLIT3: tl.constexpr,",
          "    IDX64: tl.constexpr, EVEN_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,",
          "    BLOCK_K: tl.constexpr,",
          "):",
          *_TILE_HEAD]
    kt_prod = " * ".join(kt)
    if phased:
        tk += _phase_lines(sp)
        tk.append(f"    n_taps = {' * '.join(f'cnt_{d}' for d in sp)}")
        rows = [f"q_{d}" for d in sp]
    else:
        tk += _unravel("offs_m", ["1"] + dout, ["nb"] + [f"o_{d}" for d in sp], "    ")
        tk.append(f"    n_taps = {kt_prod}")
        rows = [f"o_{d} + PD_{d}" if transposed else f"o_{d} * ST_{d} - PD_{d}" for d in sp]
    tk += ["    co = g * COUT_G + offs_n",
           "    x_row = nb * sx_n + (g * CIN_G) * sx_c",
           *[f"    row_{d} = {r}" for d, r in zip(sp, rows)],
           "    offs_c = tl.arange(0, BLOCK_K)",
           "    n_ck = tl.cdiv(CIN_G, BLOCK_K)",
           f"    w_group = _cw_ptr + g * ({kt_prod}) * CIN_G * COUT_G",
           "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
           "    # one loop over (tap, channel chunk) pairs, so the pipeliner sees a single loop",
           "    for kk in range(0, n_taps * n_ck):",
           "        tap = kk // n_ck",
           "        c0 = (kk - tap * n_ck) * BLOCK_K"]
    if phased:
        tk += _unravel("tap", ["1"] + [f"cnt_{d}" for d in sp[1:]], [f"j_{d}" for d in sp], "        ")
        for d in sp:
            tk += [f"        t_{d} = t0_{d} + j_{d} * TS_{d}",
                   f"        i_{d} = row_{d} + (r_{d} - t_{d} * DL_{d}) // ST_{d}  # exact: the tap reaches this phase"]
    else:
        tk += _unravel("tap", ["1"] + kt[1:], [f"t_{d}" for d in sp], "        ")
        for d in sp:
            tk.append(f"        i_{d} = row_{d} {'-' if transposed else '+'} t_{d} * DL_{d}")
    tk.append("        ok = m_mask" + "".join(f" & (i_{d} >= 0) & (i_{d} < din_{d})" for d in sp))
    tk.append("        a_row = x_row" + "".join(f" + i_{d} * sx_{d}" for d in sp))
    w_tap = " + ".join(f"t_{d} * {' * '.join(kt[d + 1:]) or '1'}" for d in sp)
    tk += ["        cc = c0 + offs_c",
           "        if EVEN_K:",
           "            a_mask = ok[:, None]",
           "            w_mask = n_mask[None, :]",
           "        else:",
           "            a_mask = ok[:, None] & (cc[None, :] < CIN_G)",
           "            w_mask = (cc[:, None] < CIN_G) & n_mask[None, :]",
           "        a_tile = tl.load(_cx_ptr + a_row[:, None] + cc[None, :] * sx_c, mask=a_mask, other=0.0)",
           "        # weights rearranged before the GEMM: [groups, taps, C_in / groups, C_out / groups]",
           f"        w_rows = ({w_tap}) * CIN_G + cc",
           "        w_tile = tl.load(w_group + w_rows[:, None] * COUT_G + offs_n[None, :], mask=w_mask, other=0.0)",
           _TF32_DOT,
           "    mask = m_mask[:, None] & n_mask[None, :]"]
    if em.lines:
        tk.append("    # fused epilogue, in fp32 registers")
    tk += em.lines
    tk.append(k[-1])  # the store
    taps_kernel = "\n".join(tk) + "\n"

    # ---- direct kernel: one output element per lane, taps and channels looped
    dindex = ["nb", "co"] + [f"o_{d}" for d in sp]
    dem, dresult, depi = epilogue(plan, conv.id, dindex, "mask")
    depi_strides = [f"stride_{n}_{d}" for n in depi for d in range(nd + 2)]
    dparams = (["_cx_ptr", "_cw_ptr"] + [f"{n}_ptr" for n in depi] + ["out_ptr"] + scalars
               + ["CIN_G", "COUT_G", "COUT", "TOTAL", "KG"] + din + dout
               + ["sx_n", "sx_c"] + [f"sx_{d}" for d in sp] + ["sw_0", "sw_1"] + [f"sw_k{d}" for d in sp]
               + depi_strides + out_strides)
    dgeom = [g for g in geom if not g.startswith("TS_")]
    dk = ["@triton.jit", f"def _conv_direct_kernel{tag}(", *wrap_params(dparams), *wrap_params(dgeom),
          "    TRANSPOSED: tl.constexpr, IDX64: tl.constexpr, BLOCK: tl.constexpr,",
          "):",
          "    if IDX64:",
          "        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
          "    else:",
          "        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
          "    mask = offs < TOTAL"]
    dk += _unravel("offs", ["1", "COUT"] + dout, ["nb", "co"] + [f"o_{d}" for d in sp], "    ")
    for d in sp:
        dk += ["    if TRANSPOSED:", f"        base_{d} = o_{d} + PD_{d}", "    else:", f"        base_{d} = o_{d} * ST_{d} - PD_{d}"]
    dk += ["    g = co // COUT_G",
           "    cl = co % COUT_G",
           "    x_lane = nb * sx_n + (g * CIN_G) * sx_c",
           "    w_lane = co * sw_0",
           "    if TRANSPOSED:",
           "        w_lane = (g * CIN_G) * sw_0 + cl * sw_1",
           "    acc = tl.zeros((BLOCK,), dtype=tl.float32)",
           "    for kk in range(0, KG):"]
    dk += _unravel("kk", ["1"] + kt, ["ci"] + [f"t_{d}" for d in sp], "        ")
    dok = ["mask"]
    d_offs = ["x_lane", "ci * sx_c"]
    for d in sp:
        dk += ["        if TRANSPOSED:",
               f"            num_{d} = base_{d} - t_{d} * DL_{d}",
               f"            i_{d} = num_{d} // ST_{d}",
               f"            ok_{d} = (num_{d} >= 0) & (num_{d} % ST_{d} == 0) & (i_{d} < din_{d})",
               "        else:",
               f"            i_{d} = base_{d} + t_{d} * DL_{d}",
               f"            ok_{d} = (i_{d} >= 0) & (i_{d} < din_{d})"]
        dok.append(f"ok_{d}")
        d_offs.append(f"i_{d} * sx_{d}")
    dw_taps = " + ".join(f"t_{d} * sw_k{d}" for d in sp)
    dk += [f"        xv = tl.load(_cx_ptr + {' + '.join(d_offs)}, mask={' & '.join(dok)}, other=0.0).to(tl.float32)",
           "        if TRANSPOSED:",
           f"            w_offs = w_lane + ci * sw_0 + {dw_taps}",
           "        else:",
           f"            w_offs = w_lane + ci * sw_1 + {dw_taps}",
           "        wv = tl.load(_cw_ptr + w_offs, mask=mask, other=0.0).to(tl.float32)",
           "        acc += xv * wv"]
    dk += dem.lines
    d_out = " + ".join(f"{ix} * stride_out_{d}" for d, ix in enumerate(dindex))
    dk.append(f"    tl.store(out_ptr + {d_out}, {dresult}.to(out_ptr.dtype.element_ty), mask=mask)")
    direct_kernel = "\n".join(dk) + "\n"

    # ---- tiled direct kernel (tile2d; 2-d, not transposed): a [BLOCK_H, BLOCK_W] tile of one output
    # plane per program, so the plane's sample and channel are scalars, no lane divides its index,
    # a tap's weight is one scalar load and the loads run along the output's rows
    tiled = config.tile2d and nd == 2 and not transposed
    if tiled:
        tdp = [p for p in dparams if p not in ("TOTAL", "KG")]
        tk2 = ["@triton.jit", f"def _conv_tile_kernel{tag}(", *wrap_params(tdp), *wrap_params(dgeom),
               "    IDX64: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,",
               "):",
               "    plane = tl.program_id(0)",
               "    if IDX64:",
               "        plane = plane.to(tl.int64)",
               "    nb = plane // COUT",
               "    co = plane % COUT",
               "    o_0 = (tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H))[:, None]",
               "    o_1 = (tl.program_id(2) * BLOCK_W + tl.arange(0, BLOCK_W))[None, :]",
               "    mask = (o_0 < dout_0) & (o_1 < dout_1)",
               "    x_plane = _cx_ptr + nb * sx_n + (co // COUT_G) * CIN_G * sx_c",
               "    w_plane = _cw_ptr + co * sw_0",
               "    acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)",
               "    for ci in range(0, CIN_G):",
               "        for t_0 in tl.static_range(KT_0):",
               "            i_0 = o_0 * ST_0 - PD_0 + t_0 * DL_0",
               "            ok_0 = mask & (i_0 >= 0) & (i_0 < din_0)",
               "            for t_1 in tl.static_range(KT_1):",
               "                i_1 = o_1 * ST_1 - PD_1 + t_1 * DL_1",
               "                ok = ok_0 & (i_1 >= 0) & (i_1 < din_1)",
               "                xv = tl.load(x_plane + ci * sx_c + i_0 * sx_0 + i_1 * sx_1, mask=ok, other=0.0)",
               "                wv = tl.load(w_plane + ci * sw_1 + t_0 * sw_k0 + t_1 * sw_k1)",
               "                acc += xv.to(tl.float32) * wv.to(tl.float32)",
               *dem.lines,
               f"    tl.store(out_ptr + {d_out}, {dresult}.to(out_ptr.dtype.element_ty), mask=mask)"]
        tile_kernel = "\n".join(tk2) + "\n"

    # ---- launcher
    c = config
    stride, padding, dilation = conv.attr("stride"), conv.attr("padding"), conv.attr("dilation")
    geom_args = ", ".join(f"KT_{d}=_w.shape[2 + {d}], ST_{d}={stride[d]}, PD_{d}={padding[d]}, DL_{d}={dilation[d]}"
                          for d in sp)
    ts_args = "".join(f" TS_{d}={stride[d] // math.gcd(stride[d], dilation[d])}," for d in sp) if phased else ""
    entry = f"fused_conv{tag}"
    gemm_name = f"_conv_gemm_kernel{tag}" if c.gather == "flat" else f"_conv_taps_kernel{tag}"
    phases = f", {math.prod(stride)}" if phased else ""
    args_text = ", ".join(names + scalars)
    l = [f"def {entry}_out({args_text}):",
         '    """The result\'s (shape, dims in memory order or None, dtype, device)."""',
         f"    _x, _w = {x_name}, {w_name}",
         f"    groups = {conv.attr('groups')}"]
    if transposed:
        l += ["    cout = _w.shape[1] * groups",
              "    spatial = tuple((_x.shape[2 + d] - 1) * st - 2 * pd + dl * (_w.shape[2 + d] - 1) + op + 1",
              f"                    for d, st, pd, dl, op in zip(range({nd}), {stride}, {padding}, {dilation}, "
              f"{conv.attr('output_padding')}))"]
    else:
        l += ["    cout = _w.shape[0]",
              "    spatial = tuple((_x.shape[2 + d] + 2 * pd - dl * (_w.shape[2 + d] - 1) - 1) // st + 1",
              f"                    for d, st, pd, dl in zip(range({nd}), {stride}, {padding}, {dilation}))"]
    l += [f"    return (_x.shape[0], cout) + spatial, None, {out_dtype_expr(plan)}, _x.device",
          "",
          "",
          f"def {entry}({args_text}, out=None):",
          "    # out: where to write (a part of a cat, say); by default a new tensor",
          f"    _x, _w = {x_name}, {w_name}",
          f"    groups = {conv.attr('groups')}",
          f"    out_shape, _, dtype, device = {entry}_out({args_text})",
          "    batch, cin = _x.shape[0], _x.shape[1]",
          "    cin_g = cin // groups",
          "    cout = out_shape[1]",
          "    cout_g = cout // groups",
          "    spatial = out_shape[2:]",
          "    if out is None:",
          "        out = torch.empty(out_shape, dtype=dtype, device=device)",
          "    elif tuple(out.shape) != tuple(out_shape):",
          "        raise ValueError(f'out has shape {tuple(out.shape)}, the result {tuple(out_shape)}')",
          "    if out.numel() == 0:",
          "        return out",
          "    kg = cin_g * _prod(_w.shape[2:])",
          "    geo = [*_x.shape[2:], *spatial, *_x.stride(), *_w.stride()]"]
    for n in sorted(set(epi) | set(depi), key=names.index):
        l.append(f"    {n}_s = list({n}.expand(out_shape).stride())")
    epi_args = "".join(f"{n}, " for n in epi)
    epi_s = "".join(f"*{n}_s, " for n in epi)
    depi_args = "".join(f"{n}, " for n in depi)
    depi_s = "".join(f"*{n}_s, " for n in depi)
    sargs = "".join(s + ", " for s in scalars)
    block = max(256, min(2048, c.block_m * c.block_n // 8))
    l += ["    idx64 = _needs_i64(_x, _w, out)",
          "    if cout_g < 8 or kg < 8:",
          f"        # depthwise (or nearly): {'a tile of one output plane per program' if tiled else 'one output element per lane'}, "
          "no tensor-core tile to fill",
          *([f"        block_w = min({TILE_W}, triton.next_power_of_2(spatial[1]))",
             f"        block_h = min(max(1, {TILE_ELEMS} // block_w), triton.next_power_of_2(spatial[0]))",
             "        grid = (batch * cout, triton.cdiv(spatial[0], block_h), triton.cdiv(spatial[1], block_w))",
             f"        _conv_tile_kernel{tag}[grid](",
             f"            _x, _w, {depi_args}out, {sargs}cin_g, cout_g, cout, *geo, {depi_s}*out.stride(),",
             f"            {geom_args}, IDX64=idx64, BLOCK_H=block_h, BLOCK_W=block_w, num_warps=4,",
             "        )",
             "        return out"] if tiled else
            [f"        grid = (triton.cdiv(out.numel(), {block}),)",
             f"        _conv_direct_kernel{tag}[grid](",
             f"            _x, _w, {depi_args}out, {sargs}cin_g, cout_g, cout, out.numel(), kg, *geo, {depi_s}*out.stride(),",
             f"            {geom_args}, TRANSPOSED={transposed}, IDX64=idx64, BLOCK={block}, num_warps=4,",
             "        )",
             "        return out"]),
          *([f"    tf32 = _conv_tf32(_x, cin_g, {c.precision!r})"] if c.precision != "3xtf32" else
            ["    tf32 = False  # 3xTF32: the products split in the K loop (SPLIT3), nothing rounded before"]),
          f"    round_in_kernel = {'tf32' if c.precision == 'auto' else 'False'}  # trunc: the tensor cores' own conversion",
          "    _gemm_x, _gemm_w = _x, _w  # the GEMM's operands; the epilogue reads the tensors themselves",
          *(_FLAT_OPERANDS if c.gather == "flat" else _taps_operands(c.gather, transposed)),
          *([f"    qm = tuple(triton.cdiv(o, st) for o, st in zip(spatial, {stride}))", "    m = batch * _prod(qm)"]
            if phased else ["    m = batch * _prod(spatial)"]),
          *([f"    grid = (triton.cdiv(m, {c.block_m}) * triton.cdiv(cout_g, {c.block_n}), groups{phases})"]
            if c.gather == "flat" else
            ["    # the tile (and so the grid) is the autotuner's",
             f"    grid = lambda meta: (triton.cdiv(m, meta['BLOCK_M']) * triton.cdiv(cout_g, meta['BLOCK_N']), groups{phases})"]),
          f"    {gemm_name}[grid](",
          f"        _gemm_x, _gemm_w, {epi_args}out, {sargs}cin_g, cout_g, m, kg, *geo, {epi_s}*out.stride(),{' *qm,' if phased else ''}",
          f"        {geom_args},{ts_args} TRANSPOSED={transposed}, TF32=tf32, ROUND=round_in_kernel, FP32=_x.dtype == torch.float32,",
          f"        SPLIT3={'_x.dtype == torch.float32' if c.precision == '3xtf32' else 'False'}, IDX64=idx64,",
          *([f"        BLOCK_M={c.block_m}, BLOCK_N={c.block_n}, BLOCK_K={c.block_k}, num_warps={c.num_warps},",
             f"        num_stages={c.num_stages},"] if c.gather == "flat" else
            [f"        EVEN_K=cin_g % {c.block_k} == 0, BLOCK_K={c.block_k},"]),
          "    )",
          "    return out"]
    launcher = "\n".join(l) + "\n"
    direct = (tile_kernel,) if tiled else (direct_kernel,)
    if c.gather == "flat":
        return StageCode(kernels=(gemm_kernel, *direct), launcher=launcher, entry=entry,
                         helpers=(SPAN_HELPER, TF32_ROUND, TF32_HELPER))
    return StageCode(kernels=(taps_kernel, *direct), launcher=launcher, entry=entry,
                     helpers=(SPAN_HELPER, TF32_ROUND, TF32_HELPER, NHWC_COPY_HELPER, TAPS_HELPER, TILES_HELPER))


# The GEMM's operands, flat K loop: rounded to TF32 once before the GEMM where the kernel would
# round them (contiguous operands)
_FLAT_OPERANDS = [
    "    if round_in_kernel and _x.is_contiguous() and _w.is_contiguous():",
    "        # rounded once before the GEMM: rounding inside its K loop kept the loads from feeding",
    "        # the tensor cores directly (3.5x slower on the H200)",
    "        _gemm_x, _gemm_w = _tf32_rounded(_x), _tf32_rounded(_w)",
    "        round_in_kernel = False",
]


def _taps_operands(gather: str, transposed: bool) -> list[str]:
    """The tap-major GEMM's operands: the weight rearranged by taps (rounded on the way), the input
    rounded as for the flat loop ("taps") or copied channels-last in the same pass ("nhwc")."""
    lines = [f"    _gemm_w = _conv_weight_taps(_w, groups, cin_g, cout_g, {transposed}, round_in_kernel)"]
    if gather == "nhwc":
        lines += ["    if _x.dim() > 3 and _x.is_contiguous(memory_format=_CHANNELS_LAST[_x.dim()]):",
                  "        _gemm_x = _tf32_rounded(_x) if round_in_kernel else _x  # channels-last already",
                  "        round_in_kernel = False",
                  "    else:",
                  "        _cl = _conv_channels_last(_x, round_in_kernel)",
                  "        if _cl is not None:",
                  "            _gemm_x, round_in_kernel = _cl, False"]
    else:
        lines += ["    if round_in_kernel and _x.is_contiguous():",
                  "        _gemm_x, round_in_kernel = _tf32_rounded(_x), False"]
    return lines + ["    geo = [*_x.shape[2:], *spatial, *_gemm_x.stride(), *_w.stride()]  # the copy's strides"]
