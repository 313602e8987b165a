"""Max and average pooling over the last 1-3 dims (strided, padded, dilated,
ceil mode, adaptive), one output element per lane, with a fused pointwise
epilogue. Windows are unrolled (their size is a compile-time constant); the
average's divisor follows torch's rule (the window clipped to the padded input
with count_include_pad, to the input without it, or divisor_override).

A program takes a [BLOCK_R, BLOCK_C] tile: BLOCK_R rows (every output dim but
the last, flattened) by BLOCK_C outputs along the last dim, so the index
divisions run once a row and the last dim's outputs are the tile's columns
(with one output per lane in a flat block, three runtime divisions an output
cost more than the window's loads: 1D pools ran at 0.4 of copy bandwidth)."""

from __future__ import annotations

from ._config import Config
from ._emit import Emitter, StageCode, load_other, out_dtype_expr, scalar_sources, wrap_params
from ._gen_conv import epilogue
from ._gen_elementwise import SPAN_HELPER
from ._ir import Plan

__all__ = ["generate_pool"]


class _Prologue(Emitter):
    """The pooled value computed on the fly from its operands at each window tap (a
    pointwise chain after a library convolution, say), instead of read from a buffer."""

    def __init__(self, plan: Plan, index: list[str], mask: str):
        super().__init__(plan)
        self.index = index
        self.mask = mask
        self.used: list[str] = []

    def load_leaf(self, name: str, ctx: str) -> str:
        self.used.append(name)
        offs = " + ".join(f"{ix} * pstride_{name}_{d}" for d, ix in enumerate(self.index))
        var = f"p_{name}"
        self.emit(f"{var} = tl.load({name}_ptr + {offs}, mask={self.mask}, other={load_other(self.plan, name)})"
                  ".to(tl.float32)")
        return var


def generate_pool(plan: Plan, config: Config, tag: str = "") -> StageCode:
    pool = plan.node(plan.anchor_id)
    nd = pool.attr("nd")
    kind = pool.attr("kind")
    adaptive = pool.attr("adaptive")
    x_name = pool.args[0].value
    names = [leaf.name for leaf in plan.leaves]
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]
    rank = len(pool.shape)
    lead = rank - nd
    # channels-last (see _schedule._channels_last): a tile is pixels by channels, the channels the
    # contiguous columns, and the output is laid out channels-last too
    nhwc = bool(pool.attr("channels_last"))
    sp = list(range(nd))
    out_idx = [f"idx_{d}" for d in range(rank)]
    em, result, epi = epilogue(plan, pool.id, out_idx, "mask")

    src = pool.args[0]
    fused = src.kind == "node"  # a pointwise prologue computed in the window loop
    ok = " & ".join(["mask"] + [f"ok_{d}" for d in sp])
    pro = None
    if fused:
        pro = _Prologue(plan, [f"idx_{d}" for d in range(lead)] + [f"i_{d}" for d in sp], ok)
        pro.indent = nd + 1
        root = pro.value(src)
        pro_leaves = list(dict.fromkeys(pro.used))
    din = [f"din_{d}" for d in sp]
    dout = [f"dout_{d}" for d in range(rank)]  # every output dim (leading ones too)
    epi_strides = [f"stride_{n}_{d}" for n in epi for d in range(rank)]
    if fused:
        ptrs = list(dict.fromkeys(pro_leaves + epi))
        inputs = [f"pstride_{n}_{d}" for n in pro_leaves for d in range(rank)]
    elif nhwc:
        ptrs, inputs = ["x"] + epi, ["sx_n", "sx_c"] + [f"sx_{d}" for d in sp]
    else:
        ptrs, inputs = ["x"] + epi, ["sx_lead"] + [f"sx_{d}" for d in sp]
    params = ([f"{n}_ptr" for n in ptrs] + ["out_ptr"] + scalars + ["ROWS"] + din + dout
              + inputs + epi_strides + [f"stride_out_{d}" for d in range(rank)])
    consts = [f"KW_{d}: tl.constexpr" for d in sp]
    if not adaptive:
        consts += [f"ST_{d}: tl.constexpr" for d in sp] + [f"PD_{d}: tl.constexpr" for d in sp]
        consts += [f"DL_{d}: tl.constexpr" for d in sp]
    last = rank - 1
    k = ["@triton.jit", f"def _pool_kernel{tag}(", *wrap_params(params), *wrap_params(consts),
         "    IDX64: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,", "):",
         "    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)",
         "    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)",
         "    if IDX64:",
         "        rows = rows.to(tl.int64)"]
    if nhwc:  # rows: the output pixels (n, oh, ow); columns: the channels
        k += ["    mask = (rows < ROWS)[:, None] & (cols < dout_1)[None, :]",
              "    idx_3 = (rows % dout_3)[:, None]",
              "    rem = rows // dout_3",
              "    idx_2 = (rem % dout_2)[:, None]",
              "    idx_0 = (rem // dout_2)[:, None]",
              "    idx_1 = cols[None, :]"]
        if not fused:
            k.append("    x_plane = x_ptr + idx_0 * sx_n + idx_1 * sx_c")
    else:
        k += [f"    mask = (rows < ROWS)[:, None] & (cols < dout_{last})[None, :]", "    rem = rows"]
        for d in range(last - 1, 0, -1):
            k += [f"    idx_{d} = (rem % dout_{d})[:, None]", f"    rem = rem // dout_{d}"]
        if last > 0:
            k.append("    idx_0 = rem[:, None]")
        k.append(f"    idx_{last} = cols[None, :]")
        # the leading dims, flattened: which input plane this row of outputs pools
        plane = "rows"
        for d in range(lead, last):
            plane = f"({plane} // dout_{d})"
        if not fused:
            k.append(f"    x_plane = x_ptr + {plane}[:, None] * sx_lead")
    o = [f"idx_{lead + d}" for d in sp]
    for d in sp:
        if adaptive:
            k += [f"    lo_{d} = ({o[d]} * din_{d}) // dout_{lead + d}",
                  f"    hi_{d} = (({o[d]} + 1) * din_{d} + dout_{lead + d} - 1) // dout_{lead + d}"]
        else:
            k.append(f"    lo_{d} = {o[d]} * ST_{d} - PD_{d}")
    init = '-float("inf")' if kind == "max" else "0.0"
    k.append(f"    acc = tl.full((BLOCK_R, BLOCK_C), {init}, tl.float32)")
    indent = "    "
    for d in sp:
        k.append(f"{indent}for t_{d} in tl.static_range(KW_{d}):")
        indent += "    "
        if adaptive:
            k += [f"{indent}i_{d} = lo_{d} + t_{d}", f"{indent}ok_{d} = i_{d} < hi_{d}"]
        else:
            k += [f"{indent}i_{d} = lo_{d} + t_{d} * DL_{d}", f"{indent}ok_{d} = (i_{d} >= 0) & (i_{d} < din_{d})"]
    offs = " + ".join(f"i_{d} * sx_{d}" for d in sp)
    fill = '-float("inf")' if kind == "max" else "0.0"
    if fused:
        k += pro.lines
        k.append(f"{indent}v = tl.where({ok}, {root}, {fill})")
    else:
        k.append(f"{indent}v = tl.load(x_plane + {offs}, mask={ok}, other={fill}).to(tl.float32)")
    k.append(f"{indent}acc = {'tl.maximum(acc, v)' if kind == 'max' else 'acc + v'}")
    if kind == "avg":
        if adaptive:
            count = " * ".join(f"(hi_{d} - lo_{d})" for d in sp)
        elif pool.attr("divisor") is not None:
            count = f"{float(pool.attr('divisor'))!r}"
        else:
            ends = []
            for d in sp:
                ends += [f"    end_{d} = tl.minimum(lo_{d} + KW_{d}, din_{d} + PD_{d})"]
            k += ends
            if pool.attr("count_include_pad"):
                count = " * ".join(f"(end_{d} - lo_{d})" for d in sp)
            else:
                count = " * ".join(f"(tl.minimum(end_{d}, din_{d}) - tl.maximum(lo_{d}, 0))" for d in sp)
        k.append(f"    acc = acc / {count}" if pool.attr("divisor") is not None and not adaptive
                 else f"    acc = acc / ({count}).to(tl.float32)")
    k += em.lines
    out_offs = " + ".join(f"idx_{d} * stride_out_{d}" for d in range(rank))
    k.append(f"    tl.store(out_ptr + {out_offs}, {result}.to(out_ptr.dtype.element_ty), mask=mask)")
    kernel = "\n".join(k) + "\n"

    entry = f"fused_pool{tag}"
    l = [f"def {entry}({', '.join(names + scalars)}):"]
    if fused:
        l += [f"    in_shape = _broadcast_shapes({', '.join(f'{n}.shape' for n in pro_leaves)})",
              f"    _x = {pro_leaves[0]}"]
    else:
        l += [f"    _x = {x_name}", "    in_shape = tuple(_x.shape)"]
    l.append(f"    din = tuple(in_shape[-{nd}:])")
    if adaptive:
        out_sp = pool.attr("out")
        l += [f"    spatial = {tuple(out_sp)}",
              "    window = tuple(-(-i // o) + 1 for i, o in zip(din, spatial))"]
        geom = ", ".join(f"KW_{d}=window[{d}]" for d in sp)
    else:
        kernel_, stride, padding, dil = (pool.attr(a) for a in ("kernel", "stride", "padding", "dilation"))
        ceil = pool.attr("ceil_mode")
        l += [f"    spatial = tuple(_pool_out(i, k, s, p, d, {ceil}) for i, k, s, p, d in "
              f"zip(din, {kernel_}, {stride}, {padding}, {dil}))"]
        geom = ", ".join(f"KW_{d}={kernel_[d]}, ST_{d}={stride[d]}, PD_{d}={padding[d]}, DL_{d}={dil[d]}" for d in sp)
    l.append(f"    out_shape = tuple(in_shape[:-{nd}]) + spatial")
    if nhwc:
        l.append(f"    out = torch.empty_permuted(out_shape, (0, 2, 3, 1), dtype={out_dtype_expr(plan)}, device=_x.device)")
    else:
        l.append(f"    out = torch.empty(out_shape, dtype={out_dtype_expr(plan)}, device=_x.device)")
    l += ["    if out.numel() == 0:",
          "        return out"]
    if fused:
        for n in pro_leaves:
            l.append(f"    {n}_p = list({n}.expand(in_shape).stride())")
        ptr_args = "".join(f"{n}, " for n in ptrs)
        input_args = "".join(f"*{n}_p, " for n in pro_leaves)
    elif nhwc:
        ptr_args = "_x, " + "".join(f"{n}, " for n in epi)
        input_args = "*_x.stride(), "
    else:
        # leading dims flattened (a view when they are contiguous; else a copy, a recorded host step)
        l.append("    x_3 = _reshape(_x, (-1,) + din)")
        ptr_args = "x_3, " + "".join(f"{n}, " for n in epi)
        input_args = "x_3.stride(0), *x_3.stride()[1:], "
    for n in epi:
        l.append(f"    {n}_s = list({n}.expand(out_shape).stride())")
    # the tile's columns: the last dim's outputs, or (channels-last) the channels
    l += [f"    width = out_shape[{1 if nhwc else -1}]",
          "    rows = out.numel() // width",
          f"    block_c = min({config.block_n}, triton.next_power_of_2(width))",
          f"    block_r = {config.block_n} // block_c",
          "    grid = (triton.cdiv(rows, block_r), triton.cdiv(width, block_c))",
          f"    _pool_kernel{tag}[grid](",
          f"        {ptr_args}out, {''.join(s + ', ' for s in scalars)}rows, *din, *out_shape,",
          f"        {input_args}{''.join(f'*{n}_s, ' for n in epi)}*out.stride(),",
          f"        {geom}, IDX64=_needs_i64(_x, out), BLOCK_R=block_r, BLOCK_C=block_c, num_warps={config.num_warps},",
          "    )",
          "    return out"]
    launcher = "\n".join(l) + "\n"
    return StageCode(kernels=(kernel,), launcher=launcher, entry=entry, helpers=(SPAN_HELPER, POOL_HELPER))


POOL_HELPER = '''def _pool_out(size, k, s, p, d, ceil_mode):
    """torch's pooled length: floor (or ceil) of the window count, and a last window
    that would start in the right padding is dropped."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out
'''
