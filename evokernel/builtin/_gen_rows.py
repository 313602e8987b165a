"""Row reductions and normalisations, with their pointwise prologue and epilogue.

The kernels see every operand through the (outer, N, inner) split of the
reduced tensor: N is the reduced group of dims, a "row" is one (outer, inner)
pair. Each region is addressed per operand with at most two strided runs
(``_rows_layout``), so broadcast parameters (a per-channel weight in a group
norm) are read in place rather than expanded.

- Trailing reductions (inner == 1): a program takes BLOCK_M rows.
- Strided reductions (inner > 1): a program takes BLOCK_M consecutive inner
  positions of one outer index, so a tile's rows are contiguous in memory
  and its loads coalesce.
- One-pass: the whole row sits in registers (BLOCK_N = next power of two >= N).
  Multi-pass: each reduction loops over the row in BLOCK_N chunks, then a last
  loop writes the epilogue; values are reloaded rather than kept.
- Split (few long rows, independent sum/max/min reductions, a per-row output):
  a first kernel reduces chunks of each row into partials, a second combines
  them and writes the per-row epilogue.
"""

from __future__ import annotations

import math

from ._config import LONG_ROW_TILES, ONE_PASS_MAX, Config
from ._emit import Emitter, StageCode, load_other, out_dtype_expr, scalar_sources, wrap_params
from ._gen_elementwise import SPAN_HELPER
from ._ir import Node, Plan, Ref
from ._pointwise import pointwise_expr
from ._schedule import SPLIT_MAX_ROWS, SPLIT_MIN_COLS, domain_map

__all__ = ["generate_rows", "splittable", "SPLIT_MIN_COLS", "SPLIT_MAX_ROWS"]

_NEG_INF = '-float("inf")'
_POS_INF = 'float("inf")'
_REDUCE = {
    # kind: (initial accumulator, masked fill, chunk reduction, combine)
    "sum": ("tl.zeros([BLOCK_M], dtype=tl.float32)", "0.0", "tl.sum", "{acc} + {part}"),
    "max": (f"tl.full([BLOCK_M], {_NEG_INF}, tl.float32)", _NEG_INF, "tl.max", "tl.maximum({acc}, {part})"),
    "min": (f"tl.full([BLOCK_M], {_POS_INF}, tl.float32)", _POS_INF, "tl.min", "tl.minimum({acc}, {part})"),
    "prod": ("tl.full([BLOCK_M], 1.0, tl.float32)", "1.0", "prod", "{acc} * {part}"),
}
_ARG = {  # kind: (masked fill, value reduction, index reduction, comparison that replaces the best so far)
    "argmax": (_NEG_INF, "tl.max", "tl.argmax", ">"),
    "argmin": (_POS_INF, "tl.min", "tl.argmin", "<"),
}


LAYOUT_HELPER = '''def _runs(dims):
    """(size, stride) pairs, outermost first, merged where they walk contiguously."""
    runs = []
    for size, stride in dims:
        if size == 1:
            continue
        if runs and runs[-1][1] == stride * size:
            runs[-1] = (runs[-1][0] * size, stride)
        else:
            runs.append((size, stride))
    return runs


def _rows_layout(t, full, g0, g1):
    """How a kernel addresses ``t`` (broadcast to ``full``) in the (outer, N, inner)
    split at dims g0:g1: per region (lo size, lo stride, hi stride), index = hi * lo_size
    + lo. None when a region needs more than two runs (the caller then copies)."""
    t = t.expand(full)
    out = []
    for a, b in ((0, g0), (g0, g1), (g1, len(full))):
        runs = _runs(list(zip(full[a:b], t.stride()[a:b])))
        if len(runs) > 2:
            return None
        if not runs:
            out += [1, 0, 0]
        elif len(runs) == 1:
            out += [runs[0][0], runs[0][1], 0]
        else:
            out += [runs[1][0], runs[1][1], runs[0][1]]
    return out


def _rows_operand(t, full, g0, g1):
    """(tensor, layout) for a rows kernel; a copy only when no two-run layout exists."""
    layout = _rows_layout(t, full, g0, g1)
    if layout is None:
        t = t.expand(full).contiguous()
        layout = _rows_layout(t, full, g0, g1)
    return t, layout
'''


def splittable(plan: Plan) -> bool:
    """Independent sum/max/min reductions and a per-row output: the row can be
    reduced in chunks by parallel programs and the partials combined after."""
    group = plan.reduce
    keep = tuple(1 if group.start <= i < group.stop else s for i, s in enumerate(group.full_shape))
    domain = domain_map(list(plan.nodes), group.full_shape, keep)
    if plan.output.kind != "node" or domain[plan.output.value] != "red":
        return False
    for node in plan.nodes:
        if node.op == "reduce":
            if node.attr("kind") not in _REDUCE:
                return False
            if _depends_on_reduction(plan, node.args[0]):
                return False
    return True


def _depends_on_reduction(plan: Plan, ref: Ref) -> bool:
    stack, seen = [ref], set()
    while stack:
        r = stack.pop()
        if r.kind != "node" or r.value in seen:
            continue
        seen.add(r.value)
        node = plan.node(r.value)
        if node.op == "reduce":
            return True
        stack.extend(node.args)
    return False


class _RowsEmitter(Emitter):
    """ctx is "row" (a [BLOCK_M, BLOCK_N] tile), "red_k" or "red_s" (a [BLOCK_M]
    vector of per-row values, read from operands shaped like the keepdim or the
    squeezed reduction result). ``mode``: onepass, multipass, partial, combine."""

    def __init__(self, plan: Plan, mode: str, tag: str = ""):
        super().__init__(plan)
        group = plan.reduce
        full = group.full_shape
        self.keep = tuple(1 if group.start <= i < group.stop else s for i, s in enumerate(full))
        self.domain = domain_map(list(plan.nodes), full, self.keep)
        self.rank = group.rank
        self.mode = mode
        self.one_pass = mode == "onepass"
        self.scope = 0  # bumped per loop so loop-local names never clash
        self.prologue: list[str] = []  # row offsets of each operand, emitted once at the top
        self.preps: list[tuple[str, str]] = []  # (leaf name, "full" | "sq") in first-use order
        self.iotas: list[Node] = []
        self.partials: list[Node] = []  # reductions whose partials the split kernels exchange
        self.tag = tag
        self.uses_mul = False

    # -- naming ---------------------------------------------------------
    def _arg(self, name: str, prep: str) -> str:
        return name if prep == "full" else f"{name}_sq"

    def _use(self, name: str, prep: str) -> str:
        arg = self._arg(name, prep)
        if (name, prep) not in self.preps:
            self.preps.append((name, prep))
            self.prologue += row_offsets(arg, f"lay_{arg}")
        return arg

    def red_ctx(self, node: Node) -> str:
        return "red_k" if len(node.shape) == self.rank else "red_s"

    def memo_key(self, ref: Ref, ctx: str):
        if ref.kind == "node" and self.domain[ref.value] == "red":
            return ("node", ref.value, "red", 0)
        return (ref.kind, ref.value, ctx, self.scope if ctx == "row" else 0)

    def var_name(self, node: Node, ctx: str) -> str:
        if self.domain[node.id] == "red":
            return f"v{node.id}"
        if ctx == "row":
            return f"v{node.id}" if self.one_pass else f"v{node.id}_p{self.scope}"
        return f"v{node.id}_{ctx[-1]}"

    def rsize(self) -> str:
        return "N"

    # -- values ---------------------------------------------------------
    def value(self, ref: Ref, ctx: str = "row") -> str:
        out = super().value(ref, ctx)
        if ref.kind == "node" and self.domain[ref.value] == "red" and ctx == "row":
            return f"{out}[:, None]"  # per-row value broadcast along the row
        return out

    def col_offsets(self, arg: str) -> str:
        """Emit the operand's offsets along the reduced group; a second run (a per-channel
        weight inside a group norm's group) costs a division, so only where needed."""
        p = f"lay_{arg}"
        var = f"{arg}_cols" if self.one_pass else f"{arg}_cols_p{self.scope}"
        self.emit(f"if {p}_split:")
        self.emit(f"    {var} = (cols[None, :] % {p}_nlo) * {p}_snlo + (cols[None, :] // {p}_nlo) * {p}_snhi")
        self.emit("else:")
        self.emit(f"    {var} = cols[None, :] * {p}_snlo")
        return var

    def load_leaf(self, name: str, ctx: str) -> str:
        other = load_other(self.plan, name)
        if ctx == "row":
            arg = self._use(name, "full")
            var = f"l_{name}" if self.one_pass else f"l_{name}_p{self.scope}"
            offs = self.col_offsets(arg)
            self.emit(f"{var} = tl.load({arg}_ptr + {arg}_row[:, None] + {offs}, "
                      f"mask=mask, other={other}).to(tl.float32)")
            return var
        arg = self._use(name, "full" if ctx == "red_k" else "sq")
        var = f"l_{arg}_r"
        self.emit(f"{var} = tl.load({arg}_ptr + {arg}_row, mask=row_mask, other={other}).to(tl.float32)")
        return var

    def compute(self, node: Node, ctx: str) -> str:
        if node.op == "iota":
            if ctx != "row":
                raise ValueError("an index value is only defined on the unreduced tensor")
            self.iotas.append(node)
            var = self.var_name(node, ctx)
            self.emit(f"{var} = ((((o[:, None] * N + cols[None, :]) * inner + i[:, None]) // iota{node.id}_div)"
                      f" % iota{node.id}_mod).to(tl.float32)")
            return var
        if self.domain[node.id] == "red":
            if node.op == "reduce":
                return self._reduce(node)
            own = self.red_ctx(node)
            operands = [self.value(a, own) for a in node.args]
            var = f"v{node.id}"
            self.emit(f"{var} = {pointwise_expr(node.op, operands, dict(node.attrs))}")
            return var
        return super().compute(node, ctx)

    def red_deps(self, ref: Ref, seen=None) -> list[Ref]:
        """Per-row values a row expression needs: computed before a loop opens."""
        seen = set() if seen is None else seen
        if ref.kind != "node" or ref.value in seen:
            return []
        seen.add(ref.value)
        if self.domain[ref.value] == "red":
            return [ref]
        out = []
        for arg in self.plan.node(ref.value).args:
            out += self.red_deps(arg, seen)
        return out

    def open_loop(self, lo: str = "0", hi: str = "N") -> None:
        self.scope += 1
        self.emit(f"for start in range({lo}, {hi}, BLOCK_N):")
        self.indent += 1
        self.emit("cols = start + tl.arange(0, BLOCK_N)")
        self.emit("mask = row_mask[:, None] & (cols[None, :] < N)")

    def _reduce(self, node: Node) -> str:
        kind = node.attr("kind")
        (src,) = node.args
        var = f"v{node.id}"
        if self.mode == "combine":
            init, fill, chunk, _ = _REDUCE[kind]
            self.partials.append(node)
            self.emit(f"p{node.id} = tl.load(part{node.id}_ptr + prow[:, None] + scols[None, :], "
                      f"mask=row_mask[:, None] & (scols[None, :] < n_split), other={fill})")
            self.emit(f"{var} = {self.chunk(chunk, f'p{node.id}')}")
            return var
        if kind in _ARG:
            return self._arg_reduce(node, src, var)
        init, fill, chunk, combine = _REDUCE[kind]
        if self.one_pass:
            v = self.value(src, "row")
            self.emit(f"{var} = {self.chunk(chunk, f'tl.where(mask, {v}, {fill})')}")
            return var
        for dep in self.red_deps(src):
            self.value(dep, "red_k")
        acc = f"acc{node.id}"
        self.emit(f"{acc} = {init}")
        if self.mode == "partial":
            self.partials.append(node)
            self.open_loop("c0", "c0 + chunk")
        else:
            self.open_loop()
        v = self.value(src, "row")
        part = self.chunk(chunk, f"tl.where(mask, {v}, {fill})")
        self.emit(f"{acc} = " + combine.format(acc=acc, part=part))
        self.indent -= 1
        self.emit(f"{var} = {acc}")
        return var

    def chunk(self, reduction: str, expr: str) -> str:
        """A tile reduced along its row axis; products through the kernel file's _mul."""
        if reduction == "prod":
            self.uses_mul = True
            return f"tl.reduce({expr}, 1, _mul{self.tag})"
        return f"{reduction}({expr}, axis=1)"

    def _arg_reduce(self, node: Node, src: Ref, var: str) -> str:
        fill, best_of, index_of, better = _ARG[node.attr("kind")]
        if self.one_pass:
            v = self.value(src, "row")
            self.emit(f"{var} = {index_of}(tl.where(mask, {v}, {fill}), axis=1)")
            return var
        for dep in self.red_deps(src):
            self.value(dep, "red_k")
        best, at = f"best{node.id}", f"at{node.id}"
        self.emit(f"{best} = tl.full([BLOCK_M], {fill}, tl.float32)")
        self.emit(f"{at} = tl.zeros([BLOCK_M], dtype=tl.int32)")
        self.open_loop()
        v = self.value(src, "row")
        self.emit(f"chunk_v = tl.where(mask, {v}, {fill})")
        self.emit(f"chunk_best = {best_of}(chunk_v, axis=1)")
        self.emit(f"chunk_at = {index_of}(chunk_v, axis=1) + start")
        # strictly better only: the first occurrence wins, as in torch
        self.emit(f"take = chunk_best {better} {best}")
        self.emit(f"{at} = tl.where(take, chunk_at, {at})")
        self.emit(f"{best} = tl.where(take, chunk_best, {best})")
        self.indent -= 1
        self.emit(f"{var} = {at}")
        return var

    def store_partials(self) -> None:
        for node in self.plan.nodes:
            if node.op == "reduce":
                var = self.value(Ref("node", node.id), "red_k")
                self.emit(f"tl.store(part{node.id}_ptr + (o * inner + i) * n_split + pid_s, {var}, mask=row_mask)")

    def store_output(self) -> None:
        out = self.plan.output
        if self.domain[out.value] == "red":
            v = self.value(out, "red_k")
            self.emit(f"tl.store(out_ptr + out_row, {v}.to(out_ptr.dtype.element_ty), mask=row_mask)")
            return
        if not self.one_pass:
            for dep in self.red_deps(out):
                self.value(dep, "red_k")
            self.open_loop()
        v = self.value(out, "row")
        self.emit(f"tl.store(out_ptr + out_row[:, None] + cols[None, :] * stride_out_n, "
                  f"{v}.to(out_ptr.dtype.element_ty), mask=mask)")
        if not self.one_pass:
            self.indent -= 1


_INDEX = """\
    pid = tl.program_id(0)
    if STRIDED:
        # BLOCK_M consecutive inner positions of one outer index: contiguous rows
        o = tl.zeros([BLOCK_M], dtype=tl.int32) + pid // n_iblocks
        i = (pid % n_iblocks) * BLOCK_M + tl.arange(0, BLOCK_M)
        row_mask = i < inner
    else:
        o = pid * BLOCK_M + tl.arange(0, BLOCK_M)
        i = tl.zeros([BLOCK_M], dtype=tl.int32)
        row_mask = o < outer
    if IDX64:
        o = o.to(tl.int64)
        i = i.to(tl.int64)
"""


def row_offsets(arg: str, p: str) -> list[str]:
    """An operand's offset of each row of the tile. Inner positions in one run (the usual
    case) are addressed without the modulo, and contiguous ones (stride 1) as ``i`` itself:
    Triton then knows the rows of a strided reduction's tile are adjacent in memory and
    lays its threads along them (coalesced loads) instead of along the reduced dim."""
    outer = f"(o % {p}_olo) * {p}_solo + (o // {p}_olo) * {p}_sohi"
    return [f"    if {p}_isplit:",
            f"        {arg}_row = {outer} + (i % {p}_ilo) * {p}_silo + (i // {p}_ilo) * {p}_sihi",
            f"    elif {p}_icontig:",
            f"        {arg}_row = {outer} + i",
            "    else:",
            f"        {arg}_row = {outer} + i * {p}_silo"]


LAYOUT_FLAGS = ("split", "isplit", "icontig")


def layout_flags(args: list[str]) -> str:
    """The constexpr flags of each operand's layout: a second run in the reduced group
    (split) or in the inner positions (isplit), inner positions adjacent (icontig)."""
    return "".join(f"lay_{a}_split={a}_lay[3] < n_cols, lay_{a}_isplit={a}_lay[6] < inner, "
                   f"lay_{a}_icontig={a}_lay[7] == 1, " for a in args)


def _layout_params(arg: str) -> list[str]:
    return [f"lay_{arg}_{k}" for k in ("olo", "solo", "sohi", "nlo", "snlo", "snhi", "ilo", "silo", "sihi")]


def _kernel(plan: Plan, mode: str, name: str, tag: str = ""):
    em = _RowsEmitter(plan, mode, tag)
    if mode == "partial":
        em.store_partials()
    else:
        em.store_output()
    args = [em._arg(n, p) for n, p in em.preps]
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]
    iotas = list(dict.fromkeys(em.iotas))
    parts = [n.id for n in dict.fromkeys(em.partials)]
    params = [f"{a}_ptr" for a in args] + [f"part{p}_ptr" for p in parts] + ["out_ptr"] + scalars
    params += ["outer", "N", "inner", "n_iblocks", "n_split", "chunk"]
    params += [p for a in args for p in _layout_params(a)] + ["stride_out_o", "stride_out_n", "stride_out_i"]
    params += [p for n in iotas for p in (f"iota{n.id}_div", f"iota{n.id}_mod")]
    flags = [f"lay_{a}_{k}: tl.constexpr" for a in args for k in LAYOUT_FLAGS]
    k = ["@triton.jit",
         f"def {name}(",
         *wrap_params(params),
         *wrap_params(flags),
         "    STRIDED: tl.constexpr, IDX64: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,",
         "    BLOCK_S: tl.constexpr,",
         "):",
         _INDEX.rstrip("\n")]
    if mode == "partial":
        k += ["    pid_s = tl.program_id(1)", "    c0 = pid_s * chunk"]
    if mode == "combine":
        k += ["    prow = (o * inner + i) * n_split", "    scols = tl.arange(0, BLOCK_S)"]
    k += em.prologue
    k.append("    out_row = o * stride_out_o + i * stride_out_i")
    if mode == "onepass":
        k += ["    cols = tl.arange(0, BLOCK_N)",
              "    mask = row_mask[:, None] & (cols[None, :] < N)"]
    k += em.lines
    text = "\n".join(k) + "\n"
    if em.uses_mul:
        text = f"@triton.jit\ndef _mul{tag}_{mode}(a, b):\n    return a * b\n\n\n" + text.replace(f"_mul{tag})", f"_mul{tag}_{mode})")
    return text, em.preps, iotas, parts


def _prep_lines(plan: Plan, preps, indent="    ") -> list[str]:
    group = plan.reduce
    nred = group.stop - group.start
    lines = []
    for name, prep in preps:
        arg = name if prep == "full" else f"{name}_sq"
        src = name
        if prep == "sq":
            # operand shaped like the squeezed result: put the reduced dims back as 1s
            lines.append(f"{indent}{arg} = {name}.reshape([1] * (len(full) - {nred} - {name}.dim()) + list({name}.shape))")
            lines.append(f"{indent}{arg} = {arg}.reshape(list({arg}.shape[:g0]) + [1] * {nred} + "
                         f"list({arg}.shape[g0:]))")
            src = arg
        lines.append(f"{indent}{arg}_t, {arg}_lay = _rows_operand({src}, full, g0, g1)")
    return lines


def generate_rows(plan: Plan, config: Config, tag: str = "") -> StageCode:
    group = plan.reduce
    names = [leaf.name for leaf in plan.leaves]
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]
    split = splittable(plan)
    kernels = []
    variants = {}
    modes = (["onepass"] if config.one_pass else []) + ["multipass"] + (["partial", "combine"] if split else [])
    for mode in modes:
        kname = f"_rows_{mode}_kernel{tag}"
        source, preps, iotas, parts = _kernel(plan, mode, kname, tag)
        kernels.append(source)
        variants[mode] = (kname, preps, iotas, parts)
    full_leaves = sorted({n for n, p in variants["multipass"][1] if p == "full"}, key=names.index)

    entry = f"fused_rows{tag}"
    l = [f"def {entry}({', '.join(names + scalars)}):"]
    l.append(f"    full = _broadcast_shapes({', '.join(f'{n}.shape' for n in full_leaves)})")
    if group.stop == group.rank:
        # a trailing group: count from the end, so any number of leading dims works
        l.append(f"    g0, g1 = len(full) - {group.stop - group.start}, len(full)")
    else:
        l.append(f"    g0, g1 = {group.start}, {group.stop}")
    l.append("    outer = _prod(full[:g0])")
    l.append("    n_cols = _prod(full[g0:g1])")
    l.append("    inner = _prod(full[g1:])")
    l.append("    n_rows = outer * inner")
    out_rank = len(plan.out_spec.shape)
    if plan.out_spec.shape == group.full_shape:
        l.append("    out_shape = full")
    elif out_rank == group.rank:
        l.append("    out_shape = full[:g0] + (1,) * (g1 - g0) + full[g1:]")
    else:
        l.append("    out_shape = full[:g0] + full[g1:]")
    l.append(f"    out = torch.empty(out_shape, dtype={out_dtype_expr(plan)}, device={names[0]}.device)")
    l.append("    if n_rows == 0 or n_cols == 0:")
    l.append("        return out")
    l.append("    out_3d = out.reshape(outer, -1, inner)")
    l.append("    strided = inner > 1")
    l.append(f"    idx64 = _needs_i64(out, {', '.join(names)})")

    def launch(mode: str, block_m: str, block_n: str, indent: str, grid: str, split_args: str = "1, 1",
               block_s: str = "1", warps: int | None = None) -> list[str]:
        kname, preps, iotas, parts = variants[mode]
        lines = _prep_lines(plan, preps, indent)
        args = [(n if p == "full" else f"{n}_sq") for n, p in preps]
        ptrs = "".join(f"{a}_t, " for a in args) + "".join(f"part{p}, " for p in parts)
        lays = " + ".join(f"{a}_lay" for a in args) or "[]"
        flags = layout_flags(args)
        iota = []
        for node in iotas:
            back = len(node.shape) - node.attr("dim")
            iota += [f"_prod(full[len(full) - {back} + 1:])", f"full[len(full) - {back}]"]
        lines.append(f"{indent}{kname}[{grid}](")
        lines.append(f"{indent}    {ptrs}out_3d, {''.join(s + ', ' for s in scalars)}outer, n_cols, inner, "
                     f"n_iblocks({block_m}), {split_args},")
        lines.append(f"{indent}    *({lays}), *out_3d.stride(), {''.join(a + ', ' for a in iota)}")
        lines.append(f"{indent}    {flags}STRIDED=strided, IDX64=idx64, BLOCK_M={block_m}, BLOCK_N={block_n}, "
                     f"BLOCK_S={block_s},")
        lines.append(f"{indent}    num_warps={warps or config.num_warps},")
        lines.append(f"{indent})")
        return lines

    l.append("    n_iblocks = lambda block_m: triton.cdiv(inner, block_m) if strided else 1")
    l.append("    grid_rows = lambda block_m: (outer * n_iblocks(block_m),) if strided else (triton.cdiv(outer, block_m),)")
    if split:
        l.append(f"    if n_rows <= {SPLIT_MAX_ROWS} and n_cols >= {SPLIT_MIN_COLS}:")
        l.append("        # few long rows: reduce chunks in parallel, then combine the partials")
        l.append(f"        n_split = max(1, min(triton.cdiv(n_cols, {config.block_n} * 4), triton.cdiv(1024, n_rows), 4096))")
        l.append(f"        chunk = triton.cdiv(triton.cdiv(n_cols, n_split), {config.block_n}) * {config.block_n}")
        l.append("        n_split = triton.cdiv(n_cols, chunk)")
        for node in plan.nodes:
            if node.op == "reduce":
                l.append(f"        part{node.id} = torch.empty((n_rows, n_split), dtype=torch.float32, device=out.device)")
        l += launch("partial", str(config.block_m), str(config.block_n), "        ",
                    "(grid_rows(%d)[0], n_split)" % config.block_m, "n_split, chunk")
        l += launch("combine", "1", "1", "        ", "grid_rows(1)", "n_split, chunk",
                    "triton.next_power_of_2(n_split)", warps=4)
        l.append("        return out")
    if config.one_pass:
        l.append("    block_n = triton.next_power_of_2(n_cols)")
        l.append(f"    block_m = max(1, min({config.block_m}, {ONE_PASS_MAX} // block_n))")
        l.append(f"    if block_n <= {ONE_PASS_MAX} and (not strided or block_m >= 16):")
        l.append("        # the whole row fits in registers: read it once")
        l += launch("onepass", "block_m", "block_n", "        ", "grid_rows(block_m)")
        l.append("        return out")
    if config.block_m > 1:
        l.append(f"    block_m = {config.block_m} if strided or n_cols <= {config.block_n * LONG_ROW_TILES} else 1  # long rows: one a program")
        l += launch("multipass", "block_m", str(config.block_n), "    ", "grid_rows(block_m)")
    else:
        l += launch("multipass", "1", str(config.block_n), "    ", "grid_rows(1)")
    l.append("    return out")
    launcher = "\n".join(l) + "\n"
    return StageCode(kernels=tuple(kernels), launcher=launcher, entry=entry, helpers=(SPAN_HELPER, LAYOUT_HELPER))


def row_width(plan: Plan) -> int:
    group = plan.reduce
    return math.prod(group.full_shape[group.start:group.stop]) if group else 1
