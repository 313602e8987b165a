"""Row reductions and normalisations, with their pointwise prologue and epilogue.

The launcher views every operand as (outer, N, inner): N is the reduced group
of dims, a "row" is one (outer, inner) pair. A program takes BLOCK_M rows.
One-pass: the whole row sits in registers (BLOCK_N = next power of two >= N).
Multi-pass: each reduction loops over the row in BLOCK_N chunks, then a last
loop writes the epilogue; values are reloaded rather than kept.
"""

from __future__ import annotations

from ._config import ONE_PASS_MAX, Config
from ._emit import HELPERS, Emitter, header, model_class, out_dtype_expr, scalar_sources, wrap_params
from ._ir import Node, Plan, Ref
from ._trace import domain_map

__all__ = ["generate_rows"]

_NEG_INF = '-float("inf")'
_REDUCE = {
    # kind: (initial accumulator, masked fill, chunk reduction, combine)
    "sum": ("tl.zeros([BLOCK_M], dtype=tl.float32)", "0.0", "tl.sum", "{acc} + {part}"),
    "max": (f"tl.full([BLOCK_M], {_NEG_INF}, tl.float32)", _NEG_INF, "tl.max", "tl.maximum({acc}, {part})"),
    "min": ('tl.full([BLOCK_M], float("inf"), tl.float32)', 'float("inf")', "tl.min", "tl.minimum({acc}, {part})"),
}


class _RowsEmitter(Emitter):
    """ctx is "row" (a [BLOCK_M, BLOCK_N] tile), "red_k" or "red_s" (a [BLOCK_M]
    vector of per-row values, read from operands shaped like the keepdim or the
    squeezed reduction result)."""

    def __init__(self, plan: Plan, one_pass: bool):
        super().__init__(plan)
        group = plan.reduce
        full = group.full_shape
        self.keep = tuple(1 if group.start <= i < group.stop else s for i, s in enumerate(full))
        self.domain = domain_map(list(plan.nodes), full, self.keep)
        self.rank = group.rank
        self.one_pass = one_pass
        self.scope = 0  # bumped per loop so loop-local names never clash
        self.prologue: list[str] = []  # row offsets of each operand, emitted once at the top
        self.preps: list[tuple[str, str]] = []  # (leaf name, "full" | "sq") in first-use order

    # -- naming ---------------------------------------------------------
    def _arg(self, name: str, prep: str) -> str:
        return name if prep == "full" else f"{name}_sq"

    def _use(self, name: str, prep: str) -> str:
        arg = self._arg(name, prep)
        if (name, prep) not in self.preps:
            self.preps.append((name, prep))
            self.prologue.append(f"    {arg}_row = o * stride_{arg}_o + i * stride_{arg}_i")
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

    def load_leaf(self, name: str, ctx: str) -> str:
        if ctx == "row":
            arg = self._use(name, "full")
            var = f"l_{name}" if self.one_pass else f"l_{name}_p{self.scope}"
            self.emit(f"{var} = tl.load({arg}_ptr + {arg}_row[:, None] + cols[None, :] * stride_{arg}_n, "
                      "mask=mask, other=0.0).to(tl.float32)")
            return var
        arg = self._use(name, "full" if ctx == "red_k" else "sq")
        var = f"l_{arg}_r"
        self.emit(f"{var} = tl.load({arg}_ptr + {arg}_row, mask=row_mask, other=0.0).to(tl.float32)")
        return var

    def compute(self, node: Node, ctx: str) -> str:
        if self.domain[node.id] == "red":
            if node.op == "reduce":
                return self._reduce(node)
            own = self.red_ctx(node)
            operands = [self.value(a, own) for a in node.args]
            from ._pointwise import pointwise_expr

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

    def open_loop(self) -> None:
        self.scope += 1
        self.emit("for start in range(0, N, BLOCK_N):")
        self.indent += 1
        self.emit("cols = start + tl.arange(0, BLOCK_N)")
        self.emit("mask = row_mask[:, None] & (cols[None, :] < N)")

    def _reduce(self, node: Node) -> str:
        init, fill, chunk, combine = _REDUCE[node.attr("kind")]
        (src,) = node.args
        var = f"v{node.id}"
        if self.one_pass:
            v = self.value(src, "row")
            self.emit(f"{var} = {chunk}(tl.where(mask, {v}, {fill}), axis=1)")
            return var
        for dep in self.red_deps(src):
            self.value(dep, "red_k")
        acc = f"acc{node.id}"
        self.emit(f"{acc} = {init}")
        self.open_loop()
        v = self.value(src, "row")
        part = f"{chunk}(tl.where(mask, {v}, {fill}), axis=1)"
        self.emit(f"{acc} = " + combine.format(acc=acc, part=part))
        self.indent -= 1
        self.emit(f"{var} = {acc}")
        return var

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


def _kernel(plan: Plan, one_pass: bool, name: str) -> tuple[str, list[tuple[str, str]]]:
    em = _RowsEmitter(plan, one_pass)
    em.store_output()
    args = [em._arg(n, p) for n, p in em.preps]
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]
    strides = [f"stride_{a}_{d}" for a in args + ["out"] for d in "oni"]
    params = [f"{a}_ptr" for a in args] + ["out_ptr"] + scalars + ["n_rows", "N", "inner"] + strides
    k = ["@triton.jit",
         f"def {name}(",
         *wrap_params(params),
         "    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,",
         "):",
         "    pid = tl.program_id(0)",
         "    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)",
         "    row_mask = rows < n_rows",
         "    # a row is an (outer, inner) pair of the (outer, N, inner) view",
         "    o = rows // inner",
         "    i = rows % inner"]
    k += em.prologue
    k.append("    out_row = o * stride_out_o + i * stride_out_i")
    if one_pass:
        k += ["    cols = tl.arange(0, BLOCK_N)",
              "    mask = row_mask[:, None] & (cols[None, :] < N)"]
    k += em.lines
    return "\n".join(k) + "\n", em.preps


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
        lines.append(f"{indent}{arg}_3d = {src}.expand(full).reshape(outer, n_cols, inner)")
    return lines


def generate_rows(plan: Plan, config: Config) -> str:
    group = plan.reduce
    looped, looped_preps = _kernel(plan, False, "_rows_kernel_multipass")
    kernels = [looped]
    if config.one_pass:
        one, one_preps = _kernel(plan, True, "_rows_kernel_onepass")
        kernels.insert(0, one)
    names = [leaf.name for leaf in plan.leaves]
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]
    full_leaves = sorted({n for n, p in looped_preps if p == "full"}, key=names.index)

    l = [f"def fused_rows({', '.join(names + scalars)}):"]
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
    # the output keeps the reference's shape: full, or full with the group reduced
    out_rank = len(plan.out_spec.shape)
    if plan.out_spec.shape == group.full_shape:
        l.append("    out_shape = full")
    elif out_rank == group.rank:
        l.append(f"    out_shape = full[:g0] + (1,) * (g1 - g0) + full[g1:]")
    else:
        l.append("    out_shape = full[:g0] + full[g1:]")
    l.append(f"    out = torch.empty(out_shape, dtype={out_dtype_expr(plan)}, device={names[0]}.device)")
    l.append("    if n_rows == 0 or n_cols == 0:")
    l.append("        return out")
    l.append("    out_3d = out.reshape(outer, -1, inner)")
    l.append("    grid_rows = lambda block_m: (triton.cdiv(n_rows, block_m),)")

    def launch(kernel: str, preps, block_m: str, block_n: str, indent: str) -> list[str]:
        lines = _prep_lines(plan, preps, indent)
        args = [(n if p == "full" else f"{n}_sq") for n, p in preps]
        ptrs = ", ".join(f"{a}_3d" for a in args)
        strides = " + ".join(f"list({a}_3d.stride())" for a in args + ["out"])
        lines.append(f"{indent}{kernel}[grid_rows({block_m})](")
        lines.append(f"{indent}    {ptrs}, out_3d, {''.join(s + ', ' for s in scalars)}n_rows, n_cols, inner,")
        lines.append(f"{indent}    *({strides}),")
        lines.append(f"{indent}    BLOCK_M={block_m}, BLOCK_N={block_n}, num_warps={config.num_warps},")
        lines.append(f"{indent})")
        return lines

    if config.one_pass:
        l.append("    block_n = triton.next_power_of_2(n_cols)")
        l.append(f"    if block_n <= {ONE_PASS_MAX}:")
        l.append("        # the whole row fits in registers: read it once")
        l.append(f"        block_m = max(1, min({config.block_m}, {ONE_PASS_MAX} // block_n))")
        l += launch("_rows_kernel_onepass", one_preps, "block_m", "block_n", "        ")
        l.append("        return out")
    l += launch("_rows_kernel_multipass", looped_preps, str(config.block_m), str(config.block_n), "    ")
    l.append("    return out")
    launcher = "\n".join(l) + "\n"
    return "\n\n".join([header(plan, config.text()), *kernels, HELPERS.strip() + "\n", launcher,
                        model_class(plan, "fused_rows")])
