"""Row reductions and normalisations, with their pointwise prologue and epilogue.

The kernels see every operand through the (outer, N, inner) split of the
reduced tensor: N is the reduced group of dims, a "row" is one (outer, inner)
pair. Each region is addressed per operand with at most two strided runs
(``_rows_layout``), so broadcast parameters (a per-channel weight in a group
norm) are read in place rather than expanded; an operand constant along the row
(a class index, a per-row scale) is loaded once a row.

- Trailing reductions (inner == 1): a program takes BLOCK_M rows.
- Strided reductions (inner > 1): a program takes BLOCK_M consecutive inner
  positions of one outer index, so a tile's rows are contiguous in memory
  and its loads coalesce.
- One-pass: the whole row sits in registers (BLOCK_N = next power of two >= N).
  Multi-pass: each reduction loops over the row in BLOCK_N chunks, then a last
  loop writes the epilogue; values are reloaded rather than kept. The loops
  accumulate per lane ([BLOCK_M, BLOCK_N] accumulators) and reduce across the
  lanes once after the loop, as Inductor's looped reductions do, and a mean with
  its variance or a maximum with its sum of exponentials is one loop
  (``_row_passes``: Welford's update, the online softmax). Triton's autotuner
  picks the loop kernels' chunk width and warps per shape among a few tiles,
  and the one-pass kernel's warps.
- Split (few long rows): a first kernel reduces chunks of each row into
  partials, a second merges them (and, for a per-element result, stores the
  per-row values it needs), a third writes the per-element result chunk by
  chunk, as many programs as the first.
"""

from __future__ import annotations

import math

from ._config import LONG_ROW_TILES, ONE_PASS_MAX, Config
from ._emit import Emitter, StageCode, load_other, out_dtype_expr, scalar_sources, wrap_params
from ._gen_elementwise import SPAN_HELPER
from ._ir import Node, Plan, Ref
from ._pointwise import pointwise_expr
from ._row_passes import FusedPair, fused_pairs
from ._schedule import SPLIT_MAX_ROWS, SPLIT_MIN_COLS, domain_map

__all__ = ["generate_rows", "splittable", "SPLIT_MIN_COLS", "SPLIT_MAX_ROWS"]

_NEG_INF = '-float("inf")'
_POS_INF = 'float("inf")'
_REDUCE = {
    # kind: (masked fill, per-lane update, reduction across the lanes)
    "sum": ("0.0", "{acc} + {x}", "tl.sum"),
    "max": (_NEG_INF, "tl.maximum({acc}, {x})", "tl.max"),
    "min": (_POS_INF, "tl.minimum({acc}, {x})", "tl.min"),
    "prod": ("1.0", "{acc} * {x}", "prod"),
}
_ARG = {  # kind: (masked fill, value reduction, index reduction, comparison that replaces the best so far)
    "argmax": (_NEG_INF, "tl.max", "tl.argmax", ">"),
    "argmin": (_POS_INF, "tl.min", "tl.argmin", "<"),
}
LOOP_MODES = ("multipass", "partial", "apply")  # kernels that walk a row in BLOCK_N chunks
# The loop kernels' (BLOCK_N, num_warps) Triton's autotuner times per shape after the configuration's own:
# Inductor's looped reductions take 2048 x 16 warps (4 values a thread); ours took 4096 x 8 (16 a thread).
LOOP_TILES = ((2048, 16), (4096, 8), (1024, 4))
# Tiles of rows adjacent in memory (ADJACENT_ROWS of them, see _adjacent_rows): narrower chunks, as many
# elements a tile as the single-row tiles hold at most
ADJACENT_ROWS = 32
ADJACENT_TILES = ((512, 8), (256, 4), (128, 4))
ADJACENT_BLOCK_NS = tuple(sorted({bn for bn, _ in ADJACENT_TILES} - {bn for bn, _ in LOOP_TILES}))
ONE_PASS_WARPS = (4, 8, 16)  # the one-pass kernel's warps the autotuner times after the configuration's
SPLIT_PROGRAMS = 1024  # programs over all chunks of the few long rows (before rounding to whole tiles)

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
    """(tensor, layout) for a rows kernel; a copy only when no two-run layout exists: first of
    the dims from the operand's first varying one to the end of the region (outer, rows, inner)
    holding its last (a per-channel [C, 1, 1] over (N, C, H) rows copies C x H values, not the
    whole N x C x H x W), else of all of them."""
    layout = _rows_layout(t, full, g0, g1)
    if layout is None:
        e = t.expand(full)
        varying = [d for d in range(len(full)) if full[d] != 1 and e.stride(d) != 0]
        lo = varying[0] if varying else 0
        hi = min(end for end in (g0, g1, len(full)) if not varying or end > varying[-1])
        span = e[tuple(slice(None) if lo <= d < hi else slice(0, 1) for d in range(len(full)))]
        t = _contiguous(span)
        layout = _rows_layout(t, full, g0, g1)
        if layout is None:
            t = _contiguous(e)
            layout = _rows_layout(t, full, g0, g1)
    return t, layout
'''


TILES_HELPER = f'''def _rows_tiles(configs, named_args, **kwargs):
    """The tiles (loop kernels) or warps (one-pass kernel) the autotuner times: the configuration's
    own alone on the CPU (Triton's interpreter) and for strided rows' loops (their tile spans inner
    positions), else the tiles of at most {ONE_PASS_MAX} elements."""
    on_gpu = any(getattr(value, "is_cuda", False) for value in named_args.values())
    loop = "BLOCK_N" in configs[0].kwargs
    if loop and kwargs.get("BLOCK_M", 1) == {ADJACENT_ROWS} and not kwargs.get("STRIDED", False):
        # a tile of adjacent rows (_adjacent_rows): the narrow chunks, the configuration's own only if it fits
        fits = [c for c in configs if {ADJACENT_ROWS} * c.kwargs["BLOCK_N"] <= {ONE_PASS_MAX}]
        return fits[:1] if not on_gpu else fits
    # the adjacent-row tiles' narrow chunks are theirs alone
    configs = [c for k, c in enumerate(configs) if k == 0 or not loop or c.kwargs["BLOCK_N"] not in {ADJACENT_BLOCK_NS}]
    if not on_gpu or (loop and kwargs.get("STRIDED", False)):
        return configs[:1]
    block_m = kwargs.get("BLOCK_M", 1)
    return [c for k, c in enumerate(configs) if k == 0 or block_m * c.kwargs.get("BLOCK_N", 1) <= {ONE_PASS_MAX}]


def _adjacent_rows(block_m, strided, *lays):
    """The rows a loop program takes: {ADJACENT_ROWS} where an operand's rows lie next to each other in
    memory and its row's elements do not (a channels-last tensor's channels, reduced over its
    spatial dims): a tile of them reads each position's run of channels at once, where a program of
    one row reads its row at the channel stride. Otherwise the configuration's."""
    if strided or block_m > 1:
        return block_m
    for lay in lays:
        if lay[1] == 1 and lay[0] >= {ADJACENT_ROWS} and lay[4] > 1:
            return {ADJACENT_ROWS}
    return block_m
'''


def loop_tiles(config: Config) -> list[tuple[int, int]]:
    """(BLOCK_N, num_warps) of the loop kernels' autotuned tiles, the configuration's first."""
    return list(dict.fromkeys([(config.block_n, config.num_warps), *LOOP_TILES, *ADJACENT_TILES]))


def onepass_warps(config: Config) -> list[int]:
    """The one-pass kernel's autotuned warps (its tile is the rows' own), the configuration's first."""
    return list(dict.fromkeys([config.num_warps, *ONE_PASS_WARPS]))


def splittable(plan: Plan) -> bool:
    """Sum/max/min/prod reductions none of which needs another's finished result (but
    the second of a fused pair): the row can be reduced in chunks by parallel programs
    and the partials merged after."""
    seconds = {pair.second: pair.first for pair in fused_pairs(plan.nodes)}
    for node in plan.nodes:
        if node.op == "reduce":
            if node.attr("kind") not in _REDUCE:
                return False
            if _reductions_before(plan, node.args[0]) - {seconds.get(node.id)}:
                return False
    return True


def _reductions_before(plan: Plan, ref: Ref) -> set[int]:
    """The reductions a value depends on."""
    stack, seen, found = [ref], set(), set()
    while stack:
        r = stack.pop()
        if r.kind != "node" or r.value in seen:
            continue
        seen.add(r.value)
        node = plan.node(r.value)
        if node.op == "reduce":
            found.add(node.id)
        stack.extend(node.args)
    return found


def _row_output(plan: Plan) -> bool:
    """The result has a value per element of the reduced tensor (not one per row)."""
    group = plan.reduce
    keep = tuple(1 if group.start <= i < group.stop else s for i, s in enumerate(group.full_shape))
    return domain_map(list(plan.nodes), group.full_shape, keep)[plan.output.value] == "row"


def _made_before_reduce(plan: Plan) -> list[Node]:
    """The index values and constants (iota, full) that reductions of the plan read."""
    by_id = {n.id: n for n in plan.nodes}
    seen, stack = set(), [a.value for n in plan.nodes if n.op == "reduce" for a in n.args if a.kind == "node"]
    while stack:
        k = stack.pop()
        if k in seen or k not in by_id:
            continue
        seen.add(k)
        stack.extend(a.value for a in by_id[k].args if a.kind == "node")
    return [by_id[k] for k in sorted(seen) if by_id[k].op in ("iota", "full")]


def _iota_region(plan: Plan, node: Node) -> str:
    """Where an index value's dim lies in the (outer, N, inner) split."""
    group = plan.reduce
    dim = group.rank - (len(node.shape) - node.attr("dim"))
    return "outer" if dim < group.start else "inner" if dim >= group.stop else "group"


class _RowsEmitter(Emitter):
    """ctx is "row" (a [BLOCK_M, BLOCK_N] tile), "red_k" or "red_s" (a [BLOCK_M]
    vector of per-row values, read from operands shaped like the keepdim or the
    squeezed reduction result). ``mode``: onepass, multipass, partial, combine, apply."""

    def __init__(self, plan: Plan, mode: str, tag: str = ""):
        super().__init__(plan)
        group = plan.reduce
        full = group.full_shape
        self.keep = tuple(1 if group.start <= i < group.stop else s for i, s in enumerate(full))
        self.domain = domain_map(list(plan.nodes), full, self.keep)
        self.rank = group.rank
        self.mode = mode
        self.one_pass = mode == "onepass"
        self.loop = mode in LOOP_MODES
        self.scope = 0  # bumped per loop so loop-local names never clash
        self.prologue: list[str] = []  # row offsets of each operand, emitted once at the top
        self.preps: list[tuple[str, str]] = []  # (leaf name, "full" | "sq") in first-use order
        self.iotas: list[Node] = []
        self.partials: list[Node] = []  # reductions whose partials the split kernels exchange
        self.tag = tag
        self.uses_mul = False
        # pairs one loop computes (a whole row in registers needs no such loop)
        self.pairs: dict[int, FusedPair] = {}
        if not self.one_pass:
            for pair in fused_pairs(plan.nodes):
                self.pairs[pair.first] = self.pairs[pair.second] = pair

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
        general = f"(cols[None, :] % {p}_nlo) * {p}_snlo + (cols[None, :] // {p}_nlo) * {p}_snhi"
        self.emit(f"if {p}_split:")
        if self.loop:
            # a chunk no longer than the inner run crosses at most one of its ends: one comparison
            # an element instead of a division and a modulo
            self.emit(f"    if {p}_nlo >= BLOCK_N:")
            self.emit(f"        hi = start // {p}_nlo")
            self.emit(f"        lo = cols[None, :] - hi * {p}_nlo")
            self.emit(f"        {var} = tl.where(lo >= {p}_nlo, (lo - {p}_nlo) * {p}_snlo + (hi + 1) * {p}_snhi, "
                      f"lo * {p}_snlo + hi * {p}_snhi)")
            self.emit("    else:")
            self.emit(f"        {var} = {general}")
        else:
            self.emit(f"    {var} = {general}")
        self.emit("else:")
        self.emit(f"    {var} = cols[None, :] * {p}_snlo")
        return var

    def load_leaf(self, name: str, ctx: str) -> str:
        other = load_other(self.plan, name)
        if ctx == "row":
            arg = self._use(name, "full")
            var = f"l_{name}" if self.one_pass else f"l_{name}_p{self.scope}"
            self.emit(f"if lay_{arg}_bcast:  # the same value along the row: one load a row")
            self.emit(f"    {var} = tl.load({arg}_ptr + {arg}_row[:, None], mask=row_mask[:, None], "
                      f"other={other}).to(tl.float32)")
            self.emit("else:")
            self.indent += 1
            offs = self.col_offsets(arg)
            self.emit(f"{var} = tl.load({arg}_ptr + {arg}_row[:, None] + {offs}, "
                      f"mask=mask, other={other}).to(tl.float32)")
            self.indent -= 1
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
            self.emit(f"{var} = ({self._iota_index(node)}).to(tl.float32)")
            return var
        if self.domain[node.id] == "red":
            if self.mode == "apply":  # the merge kernel stored the per-row values
                var = f"v{node.id}"
                self.emit(f"{var} = tl.load(stat{node.id}_ptr + srow, mask=row_mask, other=0.0)")
                return var
            if node.op == "reduce":
                return self._reduce(node)
            own = self.red_ctx(node)
            operands = [self.value(a, own) for a in node.args]
            var = f"v{node.id}"
            self.emit(f"{var} = {pointwise_expr(node.op, operands, dict(node.attrs))}")
            return var
        return super().compute(node, ctx)

    def _iota_index(self, node: Node) -> str:
        """The index along the node's dim: from the column within the reduced group, or
        from the row's outer or inner position (the same along the row)."""
        div, mod = f"iota{node.id}_div", f"iota{node.id}_mod"
        region = _iota_region(self.plan, node)
        if region != "group":
            return f"(({'o' if region == 'outer' else 'i'} // {div}) % {mod})[:, None]"
        group = self.plan.reduce
        dim = group.rank - (len(node.shape) - node.attr("dim"))
        first, last = dim == group.start, dim == group.stop - 1
        if first and last:
            return "cols[None, :]"
        if last:
            return f"cols[None, :] % {mod}"
        if first:
            return f"cols[None, :] // {div}"
        return f"(cols[None, :] // {div}) % {mod}"

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

    def open_chunk_loop(self) -> None:
        """A loop over the program's part of the row: its chunk in the split kernels."""
        if self.mode in ("partial", "apply"):
            self.open_loop("c0", "c0 + chunk")
        else:
            self.open_loop()

    def _reduce(self, node: Node) -> str:
        kind = node.attr("kind")
        (src,) = node.args
        var = f"v{node.id}"
        pair = self.pairs.get(node.id)
        if self.mode == "combine":
            return self._merge_pair(pair, node.id) if pair else self._merge(node)
        if kind in _ARG:
            return self._arg_reduce(node, src, var)
        fill, update, across = _REDUCE[kind]
        if self.one_pass:
            v = self.value(src, "row")
            self.emit(f"{var} = {self.lanes(across, f'tl.where(mask, {v}, {fill})')}")
            return var
        if pair:
            return self._pair_loop(pair, node.id)
        for dep in self.red_deps(src):
            self.value(dep, "red_k")
        acc = f"acc{node.id}"
        self.emit(f"{acc} = tl.full([BLOCK_M, BLOCK_N], {fill}, tl.float32)")
        if self.mode == "partial":
            self.partials.append(node)
        self.open_chunk_loop()
        v = self.value(src, "row")
        self.emit(f"{acc} = " + update.format(acc=acc, x=f"tl.where(mask, {v}, {fill})"))
        self.indent -= 1
        self.emit(f"{var} = {self.lanes(across, acc)}")
        return var

    def _pair_loop(self, pair: FusedPair, want: int) -> str:
        """One loop for both reductions of a pair, per lane; the lanes merged after it."""
        a, b = pair.first, pair.second
        for dep in self.red_deps(pair.source):
            self.value(dep, "red_k")
        if self.mode == "partial":
            self.partials += [self.plan.node(a), self.plan.node(b)]
        if pair.kind == "welford":
            for acc in (f"wn{a}", f"wm{a}", f"wq{a}"):  # per lane: values seen, their mean, squared deviations
                self.emit(f"{acc} = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)")
            self.emit(f"wk{a} = tl.full([], 0.0, tl.float32)")
            self.open_chunk_loop()
            x = self.value(pair.source, "row")
            # a lane valid in this chunk was valid in every one before (only the row's end is
            # masked), so it has seen wk values: Welford's update with one reciprocal a chunk
            self.emit(f"wk{a} = wk{a} + 1.0")
            self.emit(f"wd{a} = {x} - wm{a}")
            self.emit(f"wm{a} = tl.where(mask, wm{a} + wd{a} * (1.0 / wk{a}), wm{a})")
            self.emit(f"wq{a} = tl.where(mask, wq{a} + wd{a} * ({x} - wm{a}), wq{a})")
            self.emit(f"wn{a} = wn{a} + tl.where(mask, 1.0, 0.0)")
            self.indent -= 1
            # the lanes merged (Chan et al.): the sum, then the deviations from the row's mean
            self.emit(f"v{a} = tl.sum(wn{a} * wm{a}, axis=1)")
            self.emit(f"wc{a} = wm{a} - (v{a} / tl.maximum(tl.sum(wn{a}, axis=1), 1.0))[:, None]")
            self.emit(f"v{b} = tl.sum(wq{a} + wn{a} * wc{a} * wc{a}, axis=1)")
        else:
            self.emit(f"om{a} = tl.full([BLOCK_M, BLOCK_N], {_NEG_INF}, tl.float32)")  # per lane: the maximum,
            self.emit(f"ol{a} = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)")  # the sum of exp(value - maximum)
            self.open_chunk_loop()
            x = self.value(pair.source, "row")
            self.emit(f"ox{a} = tl.where(mask, {x}, {_NEG_INF})")
            # exp(-|x - maximum|) rescales the sum when x is the new maximum, else is x's own term
            self.emit(f"oe{a} = tl.exp(-tl.abs(ox{a} - om{a}))")
            self.emit(f"ol{a} = tl.where(ox{a} > om{a}, ol{a} * oe{a} + 1.0, "
                      f"ol{a} + tl.where(ox{a} == {_NEG_INF}, 0.0, oe{a}))")
            self.emit(f"om{a} = tl.maximum(om{a}, ox{a})")
            self.indent -= 1
            self.emit(f"v{a} = tl.max(om{a}, axis=1)")
            self.emit(f"os{a} = tl.where(v{a} == {_NEG_INF}, 0.0, v{a})")
            self.emit(f"v{b} = tl.sum(tl.where(om{a} == {_NEG_INF}, 0.0, ol{a} * tl.exp(om{a} - os{a}[:, None])), axis=1)")
        return self._pair_done(a, b, want)

    def _pair_done(self, a: int, b: int, want: int) -> str:
        for node_id in (a, b):
            self.memo[self.memo_key(Ref("node", node_id), "red_k")] = f"v{node_id}"
        return f"v{want}"

    def _load_partials(self, node_id: int, fill: str) -> str:
        self.partials.append(self.plan.node(node_id))
        self.emit(f"p{node_id} = tl.load(part{node_id}_ptr + prow[:, None] + scols[None, :], "
                  f"mask=row_mask[:, None] & (scols[None, :] < n_split), other={fill})")
        return f"p{node_id}"

    def _merge(self, node: Node) -> str:
        fill, _, across = _REDUCE[node.attr("kind")]
        part = self._load_partials(node.id, fill)
        self.emit(f"v{node.id} = {self.lanes(across, part)}")
        return f"v{node.id}"

    def _merge_pair(self, pair: FusedPair, want: int) -> str:
        """The chunks' partials of a pair merged: (sum, squared deviations from the chunk's
        mean) or (maximum, sum of exponentials relative to it)."""
        a, b = pair.first, pair.second
        if pair.kind == "welford":
            pa, pb = self._load_partials(a, "0.0"), self._load_partials(b, "0.0")
            self.emit(f"pn{a} = tl.minimum(tl.maximum(N - scols * chunk, 0), chunk).to(tl.float32)[None, :]")
            self.emit(f"v{a} = tl.sum({pa}, axis=1)")
            self.emit(f"pc{a} = {pa} / tl.maximum(pn{a}, 1.0) - (v{a} / N)[:, None]")
            self.emit(f"v{b} = tl.sum({pb} + pn{a} * pc{a} * pc{a}, axis=1)")
        else:
            pa, pb = self._load_partials(a, _NEG_INF), self._load_partials(b, "0.0")
            self.emit(f"v{a} = tl.max({pa}, axis=1)")
            self.emit(f"os{a} = tl.where(v{a} == {_NEG_INF}, 0.0, v{a})")
            self.emit(f"v{b} = tl.sum(tl.where({pa} == {_NEG_INF}, 0.0, {pb} * tl.exp({pa} - os{a}[:, None])), axis=1)")
        return self._pair_done(a, b, want)

    def lanes(self, reduction: str, expr: str) -> str:
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

    def store_stats(self) -> None:
        """The merge kernel's per-row values the per-element pass reads."""
        for ref in self.red_deps(self.plan.output):
            v = self.value(ref, "red_k")
            self.emit(f"tl.store(stat{ref.value}_ptr + srow, {v}, mask=row_mask)")

    def store_output(self) -> None:
        out = self.plan.output
        if self.domain[out.value] == "red":
            v = self.value(out, "red_k")
            self.emit(f"tl.store(out_ptr + out_row, {v}.to(out_ptr.dtype.element_ty), mask=row_mask)")
            return
        if not self.one_pass:
            for dep in self.red_deps(out):
                self.value(dep, "red_k")
            self.open_chunk_loop()
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


def _row_flags(args: list[str]) -> str:
    """The layout flags, and whether the operand is the same all along the reduced group (bcast)."""
    return layout_flags(args) + "".join(f"lay_{a}_bcast={a}_lay[4] == 0 and {a}_lay[5] == 0, " for a in args)


def _layout_params(arg: str) -> list[str]:
    return [f"lay_{arg}_{k}" for k in ("olo", "solo", "sohi", "nlo", "snlo", "snhi", "ilo", "silo", "sihi")]


def _autotune_lines(config: Config, mode: str) -> list[str]:
    if mode == "onepass":
        tiles = ", ".join(f"triton.Config({{}}, num_warps={w})" for w in onepass_warps(config))
    else:
        tiles = ", ".join(f'triton.Config({{"BLOCK_N": {bn}}}, num_warps={w})' for bn, w in loop_tiles(config))
    return ["@triton.autotune(",
            f"    configs=[{tiles}],",
            '    key=["outer", "N", "inner", "BLOCK_M", "BLOCK_N", "STRIDED"],',
            '    prune_configs_by={"early_config_prune": lambda configs, named_args, **kwargs: '
            '_rows_tiles(configs, named_args, **kwargs)},',
            ")"]


def _kernel(plan: Plan, mode: str, name: str, config: Config, stat_ids: list[int], tag: str = ""):
    em = _RowsEmitter(plan, mode, tag)
    if mode == "partial":
        em.store_partials()
    elif mode == "combine" and stat_ids:
        em.store_stats()
    else:
        em.store_output()
    args = [em._arg(n, p) for n, p in em.preps]
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]
    iotas = list(dict.fromkeys(em.iotas))
    parts = [n.id for n in dict.fromkeys(em.partials)]
    stats = stat_ids if mode in ("combine", "apply") else []
    params = [f"{a}_ptr" for a in args] + [f"part{p}_ptr" for p in parts] + [f"stat{s}_ptr" for s in stats]
    params += ["out_ptr"] + scalars + ["outer", "N", "inner", "n_iblocks", "n_split", "chunk"]
    params += [p for a in args for p in _layout_params(a)] + ["stride_out_o", "stride_out_n", "stride_out_i"]
    params += [p for n in iotas for p in (f"iota{n.id}_div", f"iota{n.id}_mod")]
    flags = [f"lay_{a}_{k}: tl.constexpr" for a in args for k in (*LAYOUT_FLAGS, "bcast")]
    k = [*(_autotune_lines(config, mode) if mode in LOOP_MODES or mode == "onepass" else []),
         "@triton.jit",
         f"def {name}(",
         *wrap_params(params),
         *wrap_params(flags),
         "    STRIDED: tl.constexpr, IDX64: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,",
         "    BLOCK_S: tl.constexpr,",
         "):",
         _INDEX.rstrip("\n")]
    if mode in ("partial", "apply"):
        k += ["    pid_s = tl.program_id(1)", "    c0 = pid_s * chunk"]
    if mode == "combine":
        k += ["    prow = (o * inner + i) * n_split", "    scols = tl.arange(0, BLOCK_S)"]
    if stats:
        k.append("    srow = o * inner + i")
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
    row_out = _row_output(plan)
    # the per-row values the per-element pass after a split reads, stored by the merge kernel
    stat_ids = [r.value for r in _RowsEmitter(plan, "apply").red_deps(plan.output)] if split and row_out else []
    kernels = []
    variants = {}
    modes = (["onepass"] if config.one_pass else []) + ["multipass"]
    if split:
        modes += ["partial", "combine"] + (["apply"] if row_out else [])
    for mode in modes:
        kname = f"_rows_{mode}_kernel{tag}"
        source, preps, iotas, parts = _kernel(plan, mode, kname, config, stat_ids, tag)
        kernels.append(source)
        variants[mode] = (kname, preps, iotas, parts)
    full_leaves = sorted({n for n, p in variants["multipass"][1] if p == "full"}, key=names.index)

    entry = f"fused_rows{tag}"
    l = [f"def {entry}({', '.join(names + scalars)}):"]
    # an index or a constant before the reduction has its own shape: a dim only an arange gives
    # (``(starts[None, :] <= torch.arange(n)[:, None]).sum(1)``) is part of the reduced tensor's
    shapes = [f"{n}.shape" for n in full_leaves] + sorted({repr(tuple(n.shape)) for n in _made_before_reduce(plan)})
    l.append(f"    full = _broadcast_shapes({', '.join(shapes)})")
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
        stats = stat_ids if mode in ("combine", "apply") else []
        ptrs = "".join(f"{a}_t, " for a in args) + "".join(f"part{p}, " for p in parts)
        ptrs += "".join(f"stat{s}, " for s in stats)
        lays = " + ".join(f"{a}_lay" for a in args) or "[]"
        if mode == "multipass" and args:
            lines.append(f"{indent}block_m = _adjacent_rows(block_m, strided, {', '.join(f'{a}_lay' for a in args)})")
        flags = _row_flags(args)
        iota = []
        for node in iotas:
            back = len(node.shape) - node.attr("dim")
            end = {"outer": "g0", "group": "g1", "inner": "len(full)"}[_iota_region(plan, node)]
            iota += [f"_prod(full[len(full) - {back} + 1:{end}])", f"full[len(full) - {back}]"]
        # the loop kernels' BLOCK_N and warps are the autotuner's
        tile = "" if mode in LOOP_MODES else f"BLOCK_N={block_n}, "
        lines.append(f"{indent}{kname}[{grid}](")
        lines.append(f"{indent}    {ptrs}out_3d, {''.join(s + ', ' for s in scalars)}outer, n_cols, inner, "
                     f"n_iblocks({block_m}), {split_args},")
        lines.append(f"{indent}    *({lays}), *out_3d.stride(), {''.join(a + ', ' for a in iota)}")
        lines.append(f"{indent}    {flags}STRIDED=strided, IDX64=idx64, BLOCK_M={block_m}, {tile}"
                     f"BLOCK_S={block_s},")
        if mode == "combine":  # the others' warps are the autotuner's
            lines.append(f"{indent}    num_warps={warps or config.num_warps},")
        lines.append(f"{indent})")
        return lines

    l.append("    n_iblocks = lambda block_m: triton.cdiv(inner, block_m) if strided else 1")
    l.append("    grid_rows = lambda block_m: (outer * n_iblocks(block_m),) if strided else (triton.cdiv(outer, block_m),)")
    if split:
        # chunks of whole tiles of every width the autotuner may pick
        widest = max(bn for bn, _ in loop_tiles(config))
        bm = config.block_m
        l.append(f"    if n_rows <= {SPLIT_MAX_ROWS} and n_cols >= {SPLIT_MIN_COLS}:")
        l.append("        # few long rows: reduce chunks in parallel, then merge the partials")
        l.append(f"        n_split = max(1, min(triton.cdiv(n_cols, {widest} * 4), triton.cdiv({SPLIT_PROGRAMS}, n_rows), 4096))")
        l.append(f"        chunk = triton.cdiv(triton.cdiv(n_cols, n_split), {widest}) * {widest}")
        l.append("        n_split = triton.cdiv(n_cols, chunk)")
        for node in plan.nodes:
            if node.op == "reduce":
                l.append(f"        part{node.id} = torch.empty((n_rows, n_split), dtype=torch.float32, device=out.device)")
        for s in stat_ids:
            l.append(f"        stat{s} = torch.empty(n_rows, dtype=torch.float32, device=out.device)")
        l += launch("partial", str(bm), "", "        ", f"(grid_rows({bm})[0], n_split)", "n_split, chunk")
        l += launch("combine", "1", "1", "        ", "grid_rows(1)", "n_split, chunk",
                    "triton.next_power_of_2(n_split)", warps=4)
        if row_out:
            l.append("        # the per-element result, chunk by chunk")
            l += launch("apply", str(bm), "", "        ", f"(grid_rows({bm})[0], n_split)", "n_split, chunk")
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
    else:
        l.append("    block_m = 1")
    l += launch("multipass", "block_m", "", "    ", "grid_rows(block_m)")
    l.append("    return out")
    launcher = "\n".join(l) + "\n"
    return StageCode(kernels=tuple(kernels), launcher=launcher, entry=entry,
                     helpers=(SPAN_HELPER, LAYOUT_HELPER, TILES_HELPER))


def row_width(plan: Plan) -> int:
    group = plan.reduce
    return math.prod(group.full_shape[group.start:group.stop]) if group else 1
