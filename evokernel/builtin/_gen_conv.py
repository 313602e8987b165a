"""Convolutions (1d/2d/3d, transposed, grouped, strided, dilated, padded) as
implicit GEMM with tl.dot, and a direct kernel for depthwise convolutions.

Implicit GEMM, per group: M = batch x output positions, N = output channels
of the group, K = input channels of the group x kernel taps. A program owns a
[BLOCK_M positions, BLOCK_N channels] tile; each K step gathers the input
values its taps read (zero outside the padded input; for a transposed
convolution, only taps whose input position is a whole stride away) and the
matching weights, and accumulates their product in fp32. The pointwise
epilogue (bias, activations, scaling...) runs on the tile before the store.

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
computes IEEE products. Depthwise convolutions take the direct kernel, whose
fp32 FMAs match PyTorch's own depthwise kernels.
"""

from __future__ import annotations

import math

from ._config import Config
from ._emit import TF32_ROUND, Emitter, StageCode, load_other, out_dtype_expr, scalar_sources, wrap_params
from ._gen_elementwise import SPAN_HELPER
from ._ir import Node, Plan

__all__ = ["generate_conv", "AnchorEpilogue"]


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
        if TF32:
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


def _unravel(var: str, sizes: list[str], names: list[str], indent: str) -> list[str]:
    """names[d] = digit d of var in the mixed radix sizes (last fastest); returns lines."""
    rem = f"rem_{var}"  # a name of its own: a loop must not re-type a variable from outside it
    lines = [f"{indent}{rem} = {var}"]
    for d in range(len(sizes) - 1, 0, -1):
        lines.append(f"{indent}{names[d]} = {rem} % {sizes[d]}")
        lines.append(f"{indent}{rem} = {rem} // {sizes[d]}")
    lines.append(f"{indent}{names[0]} = {rem}")
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
         "    TRANSPOSED: tl.constexpr, TF32: tl.constexpr, ROUND: tl.constexpr, FP32: tl.constexpr,",
         "    IDX64: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,",
         "):",
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
         "    # output position of each row: batch index and spatial coordinates"]
    if phased:
        # a strided transposed convolution, one output phase (o mod stride) per program:
        # all rows of a tile then share the taps that reach them, and only those are summed
        k += _unravel("offs_m", ["1"] + [f"qm_{d}" for d in sp], ["nb"] + [f"q_{d}" for d in sp], "    ")
        k.append("    phase = tl.program_id(2)")
        k += _unravel("phase", ["1"] + [f"ST_{d}" for d in sp], ["ph"] + [f"c_{d}" for d in sp], "    ")
        n_taps = []
        for d in sp:
            k += [f"    o_{d} = c_{d} + ST_{d} * q_{d}",
                  f"    m_mask = m_mask & (o_{d} < dout_{d})",
                  f"    r_{d} = c_{d} + PD_{d}",
                  f"    t0_{d} = KT_{d}",
                  f"    for t in tl.static_range(KT_{d}):",
                  f"        t0_{d} = tl.where(((r_{d} - t * DL_{d}) % ST_{d} == 0) & (t0_{d} == KT_{d}), t, t0_{d})",
                  f"    cnt_{d} = tl.where(t0_{d} < KT_{d}, (KT_{d} - t0_{d} + TS_{d} - 1) // TS_{d}, 0)"]
            n_taps.append(f"cnt_{d}")
        k.append(f"    kg = CIN_G * {' * '.join(n_taps)}")
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

    # ---- launcher
    c = config
    stride, padding, dilation = conv.attr("stride"), conv.attr("padding"), conv.attr("dilation")
    geom_args = ", ".join(f"KT_{d}=w.shape[2 + {d}], ST_{d}={stride[d]}, PD_{d}={padding[d]}, DL_{d}={dilation[d]}"
                          for d in sp)
    ts_args = "".join(f" TS_{d}={stride[d] // math.gcd(stride[d], dilation[d])}," for d in sp) if phased else ""
    entry = f"fused_conv{tag}"
    l = [f"def {entry}({', '.join(names + scalars)}):",
         f"    x, w = {x_name}, {w_name}",
         f"    groups = {conv.attr('groups')}",
         "    batch, cin = x.shape[0], x.shape[1]",
         "    cin_g = cin // groups"]
    if transposed:
        l += ["    cout_g = w.shape[1]", "    cout = cout_g * groups",
              "    spatial = tuple((x.shape[2 + d] - 1) * st - 2 * pd + dl * (w.shape[2 + d] - 1) + op + 1",
              f"                    for d, st, pd, dl, op in zip(range({nd}), {stride}, {padding}, {dilation}, "
              f"{conv.attr('output_padding')}))"]
    else:
        l += ["    cout = w.shape[0]", "    cout_g = cout // groups",
              "    spatial = tuple((x.shape[2 + d] + 2 * pd - dl * (w.shape[2 + d] - 1) - 1) // st + 1",
              f"                    for d, st, pd, dl in zip(range({nd}), {stride}, {padding}, {dilation}))"]
    l += ["    out_shape = (batch, cout) + spatial",
          f"    out = torch.empty(out_shape, dtype={out_dtype_expr(plan)}, device=x.device)",
          "    if out.numel() == 0:",
          "        return out",
          "    kg = cin_g * _prod(w.shape[2:])",
          "    geo = [*x.shape[2:], *spatial, *x.stride(), *w.stride()]"]
    for n in sorted(set(epi) | set(depi), key=names.index):
        l.append(f"    {n}_s = list({n}.expand(out_shape).stride())")
    epi_args = "".join(f"{n}, " for n in epi)
    epi_s = "".join(f"*{n}_s, " for n in epi)
    depi_args = "".join(f"{n}, " for n in depi)
    depi_s = "".join(f"*{n}_s, " for n in depi)
    sargs = "".join(s + ", " for s in scalars)
    block = max(256, min(2048, c.block_m * c.block_n // 8))
    l += [f"    idx64 = _needs_i64(x, w, out)",
          "    if cout_g < 8 or kg < 8:",
          "        # depthwise (or nearly): one output element per lane, no tensor-core tile to fill",
          f"        grid = (triton.cdiv(out.numel(), {block}),)",
          f"        _conv_direct_kernel{tag}[grid](",
          f"            x, w, {depi_args}out, {sargs}cin_g, cout_g, cout, out.numel(), kg, *geo, {depi_s}*out.stride(),",
          f"            {geom_args}, TRANSPOSED={transposed}, IDX64=idx64, BLOCK={block}, num_warps=4,",
          "        )",
          "        return out",
          f"    tf32 = _conv_tf32(x, cin_g, {c.precision!r})",
          f"    round_in_kernel = {'tf32' if c.precision == 'auto' else 'False'}  # trunc: the tensor cores' own conversion",
          "    _gemm_x, _gemm_w = x, w  # the GEMM's operands; the epilogue reads the tensors themselves",
          "    if round_in_kernel and x.is_contiguous() and w.is_contiguous():",
          "        # rounded once before the GEMM: rounding inside its K loop kept the loads from feeding",
          "        # the tensor cores directly (3.5x slower on the H200)",
          "        _gemm_x, _gemm_w = _tf32_rounded(x), _tf32_rounded(w)",
          "        round_in_kernel = False",
          *([f"    qm = tuple(triton.cdiv(o, st) for o, st in zip(spatial, {stride}))",
             "    m = batch * _prod(qm)",
             f"    grid = (triton.cdiv(m, {c.block_m}) * triton.cdiv(cout_g, {c.block_n}), groups, {math.prod(stride)})"]
            if phased else ["    m = batch * _prod(spatial)",
                            f"    grid = (triton.cdiv(m, {c.block_m}) * triton.cdiv(cout_g, {c.block_n}), groups)"]),
          f"    _conv_gemm_kernel{tag}[grid](",
          f"        _gemm_x, _gemm_w, {epi_args}out, {sargs}cin_g, cout_g, m, kg, *geo, {epi_s}*out.stride(),{' *qm,' if phased else ''}",
          f"        {geom_args},{ts_args} TRANSPOSED={transposed}, TF32=tf32, ROUND=round_in_kernel, FP32=x.dtype == torch.float32, IDX64=idx64,",
          f"        BLOCK_M={c.block_m}, BLOCK_N={c.block_n}, BLOCK_K={c.block_k}, num_warps={c.num_warps},",
          f"        num_stages={c.num_stages},",
          "    )",
          "    return out"]
    launcher = "\n".join(l) + "\n"
    return StageCode(kernels=(gemm_kernel, direct_kernel), launcher=launcher, entry=entry,
                     helpers=(SPAN_HELPER, TF32_ROUND, TF32_HELPER))
