"""Cumulative sums and products along one dim (forward or reverse), with a
fused pointwise prologue (a masked cumsum's x * mask) and epilogue.

The launcher views the tensor as (outer, N, inner) around the scanned dim,
like the rows family (operands addressed in place through two-run layouts).
A program owns BLOCK_M rows and walks them in BLOCK_N chunks: each chunk is
scanned in registers and offset by the running total of the chunks before.
"""

from __future__ import annotations

from dataclasses import replace

from ._config import Config
from ._emit import Emitter, StageCode, load_other, out_dtype_expr, scalar_sources, wrap_params
from ._gen_elementwise import SPAN_HELPER
from ._gen_rows import LAYOUT_HELPER, _INDEX, _layout_params, LAYOUT_FLAGS, _prep_lines, layout_flags, row_offsets
from ._ir import Node, Plan, ReduceGroup

__all__ = ["generate_scan"]


class _ScanEmitter(Emitter):
    def __init__(self, plan: Plan, scan: Node, tag: str):
        super().__init__(plan)
        self.scan = scan
        self.tag = tag
        self.preps: list[tuple[str, str]] = []
        self.prologue: list[str] = []

    def load_leaf(self, name: str, ctx: str) -> str:
        if (name, "full") not in self.preps:
            self.preps.append((name, "full"))
            self.prologue += row_offsets(name, f"lay_{name}")
        p = f"lay_{name}"
        self.emit(f"if {p}_split:")
        self.emit(f"    {name}_cols = (cols[None, :] % {p}_nlo) * {p}_snlo + (cols[None, :] // {p}_nlo) * {p}_snhi")
        self.emit("else:")
        self.emit(f"    {name}_cols = cols[None, :] * {p}_snlo")
        var = f"l_{name}"
        self.emit(f"{var} = tl.load({name}_ptr + {name}_row[:, None] + {name}_cols, mask=mask, "
                  f"other={load_other(self.plan, name)}).to(tl.float32)")
        return var

    def compute(self, node: Node, ctx: str) -> str:
        if node.id != self.scan.id:
            return super().compute(node, ctx)
        (src,) = node.args
        v = self.value(src, ctx)
        if node.attr("kind") == "sum":
            self.emit(f"chunk = tl.cumsum(tl.where(mask, {v}, 0.0), axis=1)")
            self.emit("scanned = chunk + carry[:, None]")
            self.emit("carry_next = carry + tl.sum(tl.where(mask, " + v + ", 0.0), axis=1)")
        else:
            self.emit(f"chunk = tl.cumprod(tl.where(mask, {v}, 1.0), axis=1)")
            self.emit("scanned = chunk * carry[:, None]")
            self.emit(f"carry_next = carry * tl.reduce(tl.where(mask, {v}, 1.0), 1, _mul{self.tag})")
        return "scanned"


def generate_scan(plan: Plan, config: Config, tag: str = "") -> StageCode:
    scan = plan.node(plan.anchor_id)
    dim = scan.attr("dim")
    rank = len(scan.shape)
    # the scanned dim is the "row" of a rows-style (outer, N, inner) split
    view = replace(plan, reduce=ReduceGroup(rank=rank, start=dim, stop=dim + 1, full_shape=tuple(scan.shape)))
    em = _ScanEmitter(view, scan, tag)
    em.indent = 2
    result = em.value(plan.output)
    names = [leaf.name for leaf in plan.leaves]
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]
    args = [n for n, _ in em.preps]
    params = [f"{a}_ptr" for a in args] + ["out_ptr"] + scalars + ["outer", "N", "inner", "n_iblocks"]
    params += [p for a in args for p in _layout_params(a)] + ["stride_out_o", "stride_out_n", "stride_out_i"]
    flags = [f"lay_{a}_{k}: tl.constexpr" for a in args for k in LAYOUT_FLAGS]
    init = "0.0" if scan.attr("kind") == "sum" else "1.0"
    k = ["@triton.jit", f"def _mul{tag}(a, b):", "    return a * b", "", "",
         "@triton.jit", f"def _scan_kernel{tag}(", *wrap_params(params), *wrap_params(flags),
         "    REVERSE: tl.constexpr, STRIDED: tl.constexpr, IDX64: tl.constexpr, BLOCK_M: tl.constexpr,",
         "    BLOCK_N: tl.constexpr,", "):", _INDEX.rstrip("\n")]
    k += em.prologue
    k += ["    out_row = o * stride_out_o + i * stride_out_i",
          f"    carry = tl.full([BLOCK_M], {init}, tl.float32)",
          "    for start in range(0, N, BLOCK_N):",
          "        steps = start + tl.arange(0, BLOCK_N)",
          "        if REVERSE:",
          "            cols = N - 1 - steps  # walk the row from its end",
          "        else:",
          "            cols = steps",
          "        mask = row_mask[:, None] & (steps[None, :] < N)"]
    k += em.lines
    k += [f"        tl.store(out_ptr + out_row[:, None] + cols[None, :] * stride_out_n, "
          f"{result}.to(out_ptr.dtype.element_ty), mask=mask)",
          "        carry = carry_next"]
    kernel = "\n".join(k) + "\n"

    entry = f"fused_scan{tag}"
    full_leaves = ", ".join(f"{n}.shape" for n in args)
    c = config
    args_text = ", ".join(names + scalars)
    l = [f"def {entry}_out({args_text}):",
         '    """The result\'s (shape, dims in memory order or None, dtype, device)."""',
         f"    return _broadcast_shapes({full_leaves}), None, {out_dtype_expr(plan)}, {names[0]}.device",
         "",
         "",
         f"def {entry}({args_text}, out=None):",
         "    # out: where to write (a part of a cat, say; its rows, scanned dim and the rest each one",
         "    # strided run); by default a new tensor",
         f"    full, _, dtype, device = {entry}_out({args_text})",
         f"    g0, g1 = {dim} - {rank} + len(full), {dim} - {rank} + len(full) + 1",
         "    outer, n_cols, inner = _prod(full[:g0]), full[g0], _prod(full[g1:])",
         "    if out is None:",
         "        out = torch.empty(full, dtype=dtype, device=device)",
         "    elif tuple(out.shape) != tuple(full) or _view3(out, g0, g1) is None:",
         "        raise ValueError(f'cannot write a scan of shape {tuple(full)} into {tuple(out.shape)}, {out.stride()}')",
         "    if out.numel() == 0:",
         "        return out",
         "    out_3d = _view3(out, g0, g1)",
         "    strided = inner > 1",
         f"    block_m = min(64, triton.next_power_of_2(inner)) if strided else {c.block_m}",
         f"    block_n = 16 if strided else min({c.block_n}, triton.next_power_of_2(n_cols))",
         "    n_iblocks = triton.cdiv(inner, block_m) if strided else 1",
         "    grid = (outer * n_iblocks,) if strided else (triton.cdiv(outer, block_m),)"]
    l += _prep_lines(view, em.preps)
    ptrs = "".join(f"{a}_t, " for a in args)
    lays = " + ".join(f"{a}_lay" for a in args)
    flag_args = layout_flags(args)
    l += [f"    _scan_kernel{tag}[grid](",
          f"        {ptrs}out_3d, {''.join(s + ', ' for s in scalars)}outer, n_cols, inner, n_iblocks,",
          f"        *({lays}), *out_3d.stride(),",
          f"        {flag_args}REVERSE={scan.attr('reverse')}, STRIDED=strided,",
          f"        IDX64=_needs_i64(out, {', '.join(args)}), BLOCK_M=block_m, BLOCK_N=block_n, "
          f"num_warps={c.num_warps},",
          "    )",
          "    return out"]
    launcher = "\n".join(l) + "\n"
    return StageCode(kernels=(kernel,), launcher=launcher, entry=entry, helpers=(SPAN_HELPER, LAYOUT_HELPER, VIEW3))


VIEW3 = '''def _view3(t, g0, g1):
    """t as (dims before g0, dims g0:g1, dims from g1) without a copy; None where a group of dims is
    not one strided run."""
    groups = []
    for dims in (range(0, g0), range(g0, g1), range(g1, t.dim())):
        size, stride = 1, 1
        for d in reversed(dims):
            if t.shape[d] == 1:
                continue
            if size > 1 and t.stride(d) != stride * size:
                return None
            if size == 1:
                stride = t.stride(d)
            size *= t.shape[d]
        groups.append((size, stride))
    return t.as_strided([g[0] for g in groups], [g[1] for g in groups])
'''
