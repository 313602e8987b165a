"""The C++ side of a generated candidate: one Ascend C kernel class per plan.

The kernel is a template on the storage type (float or half) with two entry
points; it always computes in fp32 (half inputs are Cast on arrival and the
result Cast back). Shapes, tiling, core split and buffer depth are kernel
arguments, so one build serves every configuration the policy tries.

A tile is ``nr`` rows of ``len`` columns starting at column ``c0``, each row
at ``pitch`` elements in the Unified Buffer (a multiple of 32 bytes). When a
whole row fits (``width >= myCols``) each tile is read once and everything is
computed on it (one pass). Otherwise rows are streamed in chunks of ``width``
columns: one pass over the row per reduction, accumulating chunk by chunk in
a vector, then a last pass that writes the output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evokernel.builtin import Plan

from ._layout import REDUCE_KINDS, Layout
from ._lower import LoweringError, Operand, flt, lower, scalar_expr

__all__ = ["KernelSpec", "kernel_source"]

PRELUDE = r"""#include "kernel_operator.h"
using namespace AscendC;

// fp32 views of what was copied in: half is Cast into a scratch slot, float is used as is.
__aicore__ inline void AsFloat(LocalTensor<float>& view, const LocalTensor<float>& raw,
                               const LocalTensor<float>& slot, uint32_t n)
{
    view = raw;
}
__aicore__ inline void AsFloat(LocalTensor<float>& view, const LocalTensor<half>& raw,
                               const LocalTensor<float>& slot, uint32_t n)
{
    Cast(slot, raw, RoundMode::CAST_NONE, n);
    view = slot;
}
// A persistent fp32 copy (vectors reused across tiles); n rounded up to whole 32-byte blocks for float.
__aicore__ inline void CopyAsFloat(const LocalTensor<float>& dst, const LocalTensor<float>& raw, uint32_t n)
{
    DataCopy(dst, raw, (n + 7) / 8 * 8);
}
__aicore__ inline void CopyAsFloat(const LocalTensor<float>& dst, const LocalTensor<half>& raw, uint32_t n)
{
    Cast(dst, raw, RoundMode::CAST_NONE, n);
}
// Where the last value is computed: straight into the output buffer for float,
// into an fp32 slot that FinishOut then rounds into the half output buffer.
__aicore__ inline LocalTensor<float> OutView(const LocalTensor<float>& out, const LocalTensor<float>& slot)
{
    return out;
}
__aicore__ inline LocalTensor<float> OutView(const LocalTensor<half>& out, const LocalTensor<float>& slot)
{
    return slot;
}
__aicore__ inline void FinishOut(const LocalTensor<float>& out, const LocalTensor<float>& value, uint32_t n) {}
__aicore__ inline void FinishOut(const LocalTensor<half>& out, const LocalTensor<float>& value, uint32_t n)
{
    Cast(out, value, RoundMode::CAST_RINT, n);
}
__aicore__ inline void StatsOut(const LocalTensor<float>& out, const LocalTensor<float>& stats, uint32_t n)
{
    DataCopy(out, stats, (n + 7) / 8 * 8);
}
__aicore__ inline void StatsOut(const LocalTensor<half>& out, const LocalTensor<float>& stats, uint32_t n)
{
    Cast(out, stats, RoundMode::CAST_RINT, n);
}

// GM <-> UB for nr rows of len elements, rows cols apart in GM and pitch apart in UB.
// Whole 32-byte blocks back to back go with DataCopy; anything else with DataCopyPad.
template <typename T>
__aicore__ inline void LoadTile(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t nr, uint32_t len,
                                uint32_t cols, uint32_t pitch)
{
    if ((nr == 1 || (len == cols && len == pitch)) && (len * sizeof(T)) % 32 == 0) {
        DataCopy(dst, src, nr * len);
        return;
    }
    uint32_t rowBytes = len * sizeof(T);
    uint32_t ubGapBlocks = (pitch * sizeof(T) - (rowBytes + 31) / 32 * 32) / 32;
    DataCopyExtParams params{static_cast<uint16_t>(nr), rowBytes, static_cast<uint32_t>((cols - len) * sizeof(T)),
                             ubGapBlocks, 0};
    DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
    DataCopyPad(dst, src, params, pad);
}

template <typename T>
__aicore__ inline void StoreTile(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t nr, uint32_t len,
                                 uint32_t cols, uint32_t pitch)
{
    if ((nr == 1 || (len == cols && len == pitch)) && (len * sizeof(T)) % 32 == 0) {
        DataCopy(dst, src, nr * len);
        return;
    }
    uint32_t rowBytes = len * sizeof(T);
    uint32_t ubGapBlocks = (pitch * sizeof(T) - (rowBytes + 31) / 32 * 32) / 32;
    DataCopyExtParams params{static_cast<uint16_t>(nr), rowBytes, ubGapBlocks,
                             static_cast<uint32_t>((cols - len) * sizeof(T)), 0};
    DataCopyPad(dst, src, params);
}

// A scalar read of a value a vector instruction wrote waits for the vector pipe, and the
// other way round.
__aicore__ inline void SyncVtoS()
{
    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(e);
    WaitFlag<HardEvent::V_S>(e);
}
__aicore__ inline void SyncStoV()
{
    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_V));
    SetFlag<HardEvent::S_V>(e);
    WaitFlag<HardEvent::S_V>(e);
}
"""


@dataclass
class KernelSpec:
    """What the Python launcher must know about the generated kernel."""

    entry_f32: str
    entry_f16: str
    tensor_args: list[str]  # leaf names in kernel-argument order (then the output)
    scalar_args: list[str]  # forward-level scalar expressions, passed as float
    n_full: int
    n_col: int
    full_slots: int  # fp32 tile slots for values (not counting the half-only ones)
    col_slots: int  # fp32 column-vector slots (col inputs, computed vectors, the accumulator)
    stat_slots: int
    split: str
    out_domain: str
    group_dims: int
    source: str = field(repr=False, default="")


class _Pool:
    """Slots of one kind, reused once their value is dead."""

    def __init__(self, prefix: str, first: int = 0):
        self.prefix = prefix
        self.first = first
        self.free: list[int] = []
        self.count = 0

    def take(self, avoid: set[str] = frozenset()) -> str:
        for i in sorted(self.free):
            name = f"{self.prefix}{self.first + i}"
            if name not in avoid:
                self.free.remove(i)
                return name
        i = self.count
        self.count += 1
        return f"{self.prefix}{self.first + i}"

    def give(self, name: str) -> None:
        if name.startswith(self.prefix):
            i = int(name[len(self.prefix):]) - self.first
            if 0 <= i < self.count and i not in self.free:
                self.free.append(i)


class _Section:
    """The body of one compute function: which nodes it evaluates, into which slots."""

    def __init__(self, gen: "_Gen", node_ids: list[int], uses_after: dict[int, int]):
        self.gen = gen
        self.lines: list[str] = []
        self.full = _Pool("f")
        self.col = _Pool("cv", first=len(gen.layout.col))
        self.where: dict[int, str] = {}  # node id -> storage name in this section
        self.node_ids = node_ids
        # last position (index into node_ids) where each node is read; beyond the section: never freed
        self.last_use: dict[int, int] = {}
        for pos, nid in enumerate(node_ids):
            for ref in gen.plan.node(nid).args:
                if ref.kind == "node":
                    self.last_use[ref.value] = pos
        for nid, pos in uses_after.items():
            self.last_use[nid] = pos

    def emit(self, text: str, indent: int = 2) -> None:
        self.lines.append("    " * indent + text)


class _Gen:
    def __init__(self, plan: Plan, layout: Layout):
        self.plan = plan
        self.layout = layout
        scalars: list[str] = []
        for node in plan.nodes:
            for ref in node.args:
                if ref.kind == "scalar" and ref.value not in scalars:
                    scalars.append(ref.value)
        self.scalar_args = scalars
        self.max_full = 0
        self.max_col = 0

    # -- operands ------------------------------------------------------------
    def scalar_text(self, ref) -> str:
        if ref.kind == "const":
            return flt(ref.value)
        if ref.kind == "scalar":
            return f"s{self.scalar_args.index(ref.value)}"
        if ref.kind == "rsize":
            return "colsF"
        if ref.kind == "leaf":
            return f"sv_{ref.value}"
        node = self.plan.node(ref.value)
        return scalar_expr(node.op, [self.scalar_text(a) for a in node.args])

    def dom(self, ref) -> str:
        lay = self.layout
        if ref.kind == "leaf":
            return "full" if ref.value in lay.full else "col" if ref.value in lay.col else "scalar"
        if ref.kind == "node":
            return lay.domain[ref.value]
        return "scalar"

    def storage(self, sec: _Section, ref) -> str:
        if ref.kind == "leaf":
            return f"v_{ref.value}" if ref.value in self.layout.full else f"cv{self.layout.col.index(ref.value)}"
        if self.layout.domain[ref.value] == "row":
            return f"st{self.layout.stat_slot[ref.value]}"
        return sec.where[ref.value]

    # -- one node ----------------------------------------------------------------
    def emit_node(self, sec: _Section, pos: int, out_view: str | None) -> None:
        node = self.plan.node(sec.node_ids[pos])
        d_dom = self.layout.domain[node.id]
        if d_dom == "scalar":
            return  # folded into the expressions that use it
        if node.op == "reduce":
            raise AssertionError("reductions are emitted by the pass that owns them")  # pragma: no cover
        doms = [self.dom(a) for a in node.args]
        per_row = d_dom == "full" and any(d in ("col", "row") for d in doms)
        operands, tensors, row_reads = [], {}, []
        for i, (ref, d) in enumerate(zip(node.args, doms)):
            if d == "scalar":
                operands.append(Operand("scalar", self.scalar_text(ref)))
            elif d == "row" and per_row:
                var = f"q{len(row_reads)}"
                row_reads.append(f"float {var} = {self.storage(sec, ref)}.GetValue(r);")
                operands.append(Operand("scalar", var))
            else:
                operands.append(Operand("tensor", "ab"[i]))
                tensors["ab"[i]] = (self.storage(sec, ref), d)
        ops, n_scratch = lower(node.op, operands, dict(node.attrs))

        # the result: the output view, its row statistic, or a slot (reusing a dying operand's)
        pool = sec.full if d_dom == "full" else sec.col if d_dom == "col" else None
        dying = [tensors[s][0] for s in tensors
                 if (ref := node.args["ab".index(s)]).kind == "node" and sec.last_use.get(ref.value, -1) == pos
                 and self.layout.domain[ref.value] == d_dom]
        if out_view is not None:
            dst = out_view
        elif d_dom == "row":
            dst = f"st{self.layout.stat_slot[node.id]}"
        elif dying:
            dst = dying[0]
        else:
            dst = pool.take()
        inputs = {name for name, _ in tensors.values()}
        scratch = [pool.take(avoid=inputs | {dst}) if pool else "" for _ in range(n_scratch)]
        if d_dom == "row" and n_scratch:
            raise LoweringError(f"{node.op} of a per-row value is not covered")
        sec.where[node.id] = dst
        if pool is not None:
            for name in dying:
                if name != dst:
                    pool.give(name)
            for name in scratch:
                pool.give(name)

        sym = {"d": (dst, d_dom), **tensors}
        sym.update({f"t{i}": (s, d_dom) for i, s in enumerate(scratch)})

        def view(s: str) -> str:
            name, d = sym[s]
            return f"{name}[r * pitch]" if per_row and d == "full" else name

        count = "len" if per_row or d_dom == "col" else "nr" if d_dom == "row" else "tileN"
        calls = []
        for op in ops:
            args = [view(op.dst)] + [view(s) for s in op.srcs]
            if op.scalar is not None:
                args.append(op.scalar)
            calls.append(f"{op.api}({', '.join(args)}, {count});")
        label = f"// v{node.id} = {node.op}({', '.join(self._ref_text(a) for a in node.args)})"
        sec.emit(label)
        if per_row:
            if row_reads:
                sec.emit("SyncVtoS();")
            sec.emit("for (uint32_t r = 0; r < nr; ++r) {")
            for line in row_reads + calls:
                sec.emit(line, 3)
            sec.emit("}")
        else:
            for line in calls:
                sec.emit(line)

    def _ref_text(self, ref) -> str:
        if ref.kind == "node":
            return f"v{ref.value}"
        if ref.kind == "leaf":
            return ref.value
        if ref.kind == "const":
            return repr(ref.value)
        return "N" if ref.kind == "rsize" else str(ref.value)

    # -- sections ------------------------------------------------------------------
    def ancestors(self, target: int) -> list[int]:
        """Nodes of the full/col domains a value needs, in graph order (row values are stored)."""
        need: set[int] = set()

        def visit(nid: int) -> None:
            if nid in need:
                return
            need.add(nid)
            for ref in self.plan.node(nid).args:
                if ref.kind == "node" and self.layout.domain[ref.value] in ("full", "col"):
                    visit(ref.value)

        visit(target)
        return [n.id for n in self.plan.nodes if n.id in need]

    def leaves_of(self, node_ids: list[int]) -> tuple[list[str], list[str]]:
        used = {ref.value for nid in node_ids for ref in self.plan.node(nid).args if ref.kind == "leaf"}
        return ([n for n in self.layout.full if n in used], [n for n in self.layout.col if n in used])

    def row_nodes_after(self, done: set[int]) -> list[int]:
        """Per-row pointwise nodes computable once the reductions in `done` are finished."""
        ready = []
        for node in self.plan.nodes:
            if self.layout.domain[node.id] != "row" or node.op == "reduce" or node.id in done:
                continue
            if all(r.kind != "node" or r.value in done or self.layout.domain[r.value] == "scalar"
                   for r in node.args):
                ready.append(node.id)
                done.add(node.id)
        return ready

    def section(self, name: str, node_ids: list[int], *, reduce_id: int | None, one_pass: bool,
                full_out: bool) -> tuple[str, list[str], list[str]]:
        """A compute function over one tile; returns (C++ text, full leaves, col leaves)."""
        lay = self.layout
        out_id = self.plan.output.value
        body_ids = [n for n in node_ids if self.plan.node(n).op != "reduce"]
        uses_after: dict[int, int] = {}
        if reduce_id is not None and not one_pass:
            src = self.plan.node(reduce_id).args[0]
            if src.kind == "node":
                uses_after[src.value] = len(body_ids)  # read by the accumulation after the last node
        sec = _Section(self, body_ids, uses_after)
        full_leaves, col_leaves = self.leaves_of(node_ids + ([reduce_id] if reduce_id is not None else []))
        if one_pass:
            # a reduction reads its operand between two nodes: keep the operand's slot until
            # the first node after it (which may then take the slot for its result)
            before = 0
            for nid in node_ids:
                node = self.plan.node(nid)
                if node.op != "reduce":
                    before += 1
                elif node.args[0].kind == "node":
                    src = node.args[0].value
                    sec.last_use[src] = max(sec.last_use.get(src, -1), before)
        pos = 0
        for nid in node_ids:
            node = self.plan.node(nid)
            if node.op == "reduce":
                self._reduce_rows(sec, node)
                continue
            view = "vout" if (full_out and nid == out_id) else None
            self.emit_node(sec, pos, view)
            pos += 1
        if reduce_id is not None and not one_pass:
            node = self.plan.node(reduce_id)
            src = self.storage(sec, node.args[0])
            combine = REDUCE_KINDS[node.attr("kind")][1]
            sec.emit(f"// accumulate {self._ref_text(node.args[0])} chunk by chunk for the {node.attr('kind')} "
                     f"v{node.id}")
            sec.emit(f"if (c0 == 0) DataCopy(acc, {src}, len);  // the first chunk is a whole width")
            sec.emit(f"else {combine}(acc, acc, {src}, len);")
        self.max_full = max(self.max_full, sec.full.count)
        self.max_col = max(self.max_col, sec.col.count)

        lines = [f"    __aicore__ inline void {name}(uint32_t nr, uint32_t len, uint32_t c0)", "    {"]
        lines.append("        const uint32_t tileN = nr * pitch;  // a whole tile, rows at their UB pitch")
        lines.append("        LocalTensor<float> calc = calcBuf.Get<float>();")
        lines.append("        LocalTensor<float> colv = colBuf.Get<float>();")
        lines.append("        LocalTensor<float> stat = statBuf.Get<float>();")
        lines.append("        LocalTensor<float> acc = colv[accSlot * pitch];")
        lines.append("        LocalTensor<float> red = stat[statSlots * statLen];")
        lines.append("        LocalTensor<float> work = stat[statSlots * statLen + 64];")
        for i in range(len(lay.col)):
            lines.append(f"        LocalTensor<float> cv{i} = colv[{i} * pitch];")
        for i in range(sec.col.count):
            k = len(lay.col) + i
            lines.append(f"        LocalTensor<float> cv{k} = colv[{k} * pitch];")
        for i in range(sec.full.count):
            lines.append(f"        LocalTensor<float> f{i} = calc[{i} * slotLen];")
        for i in range(lay.n_stats):
            lines.append(f"        LocalTensor<float> st{i} = stat[{i} * statLen];")
        for j, leaf in enumerate(full_leaves):
            k = lay.full.index(leaf)
            lines.append(f"        LocalTensor<T> in_{leaf} = inQ{k}.template DeQue<T>();")
            lines.append(f"        LocalTensor<float> v_{leaf};")
            lines.append(f"        AsFloat(v_{leaf}, in_{leaf}, calc[sizeof(T) == 2 ? (fullSlots + 1 + {k}) * slotLen : 0],"
                         " tileN);")
        if full_out:
            lines.append("        LocalTensor<T> outT = outQ.template AllocTensor<T>();")
            half_slot = "calc[sizeof(T) == 2 ? fullSlots * slotLen : 0]"
            lines.append(f"        LocalTensor<float> vout = OutView(outT, {half_slot});")
        lines += sec.lines
        if full_out:
            lines.append("        FinishOut(outT, vout, tileN);")
            lines.append("        outQ.EnQue(outT);")
        for leaf in full_leaves:
            lines.append(f"        inQ{lay.full.index(leaf)}.FreeTensor(in_{leaf});")
        lines.append("    }")
        return "\n".join(lines), full_leaves, col_leaves

    def _reduce_rows(self, sec: _Section, node) -> None:
        """One-pass reduction: each row of the tile reduced into its statistic."""
        api = REDUCE_KINDS[node.attr("kind")][0]
        src = self.storage(sec, node.args[0])
        st = f"st{self.layout.stat_slot[node.id]}"
        sec.emit(f"// v{node.id} = {node.attr('kind')} over each row")
        sec.emit("for (uint32_t r = 0; r < nr; ++r) {")
        sec.emit(f"{api}(red, {src}[r * pitch], work, len);", 3)
        sec.emit("SyncVtoS();", 3)
        sec.emit(f"{st}.SetValue(r, red.GetValue(0));", 3)
        sec.emit("}")
        sec.emit("SyncStoV();")


def _copy_in(name: str, full_leaves: list[str], col_leaves: list[str], layout: Layout) -> str:
    lines = [f"    __aicore__ inline void {name}(uint32_t r0, uint32_t nr, uint32_t c0, uint32_t len)", "    {"]
    for leaf in full_leaves:
        k = layout.full.index(leaf)
        lines += [f"        LocalTensor<T> t{k} = inQ{k}.template AllocTensor<T>();",
                  f"        LoadTile(t{k}, gm_{leaf}[r0 * cols + c0], nr, len, cols, pitch);",
                  f"        inQ{k}.EnQue(t{k});"]
    lines.append("    }")
    return "\n".join(lines)


def _load_cols(name: str, col_leaves: list[str], layout: Layout) -> str:
    lines = [f"    __aicore__ inline void {name}(uint32_t c0, uint32_t len)", "    {"]
    if col_leaves:
        lines.append("        LocalTensor<float> colv = colBuf.Get<float>();")
    for leaf in col_leaves:
        k = layout.col.index(leaf)
        lines += ["        {",
                  "            LocalTensor<T> t = colQ.template AllocTensor<T>();",
                  f"            LoadTile(t, gm_{leaf}[c0], 1, len, len, pitch);",
                  "            colQ.EnQue(t);",
                  "            t = colQ.template DeQue<T>();",
                  f"            CopyAsFloat(colv[{k} * pitch], t, len);",
                  "            colQ.FreeTensor(t);",
                  "        }"]
    lines.append("    }")
    return "\n".join(lines)


def kernel_source(plan: Plan, layout: Layout, name: str) -> KernelSpec:
    """The Ascend C source for the plan; raises LoweringError when an op has no lowering."""
    gen = _Gen(plan, layout)
    out_id = plan.output.value
    full_out = layout.out_domain == "full"
    methods: list[str] = []

    # one pass: the whole graph on a tile of whole rows
    all_ids = [n.id for n in plan.nodes if layout.domain[n.id] != "scalar"]
    text, f_one, c_one = gen.section("ComputeOnePass", all_ids, reduce_id=None, one_pass=True, full_out=full_out)
    methods += [text, _copy_in("CopyInOnePass", f_one, c_one, layout), _load_cols("LoadColsOnePass", c_one, layout)]
    one_pass_body = ["        LoadColsOnePass(0, myCols);",
                     "        for (uint32_t r0 = 0; r0 < myRows; r0 += tileRows) {",
                     "            uint32_t nr = myRows - r0 < tileRows ? myRows - r0 : tileRows;",
                     "            CopyInOnePass(r0, nr, 0, myCols);",
                     "            ComputeOnePass(nr, myCols, 0);",
                     "            " + ("CopyOutTile(r0, nr, 0, myCols);" if full_out else "CopyOutStats(r0, nr);"),
                     "        }"]

    # streamed rows: a pass per reduction, then the output pass
    multi_body = ["        for (uint32_t r0 = 0; r0 < myRows; ++r0) {"]
    done: set[int] = set()
    for k, rid in enumerate(layout.reductions):
        node = plan.node(rid)
        src = node.args[0]
        ids = gen.ancestors(src.value) if src.kind == "node" else []
        text, f_k, c_k = gen.section(f"ComputePass{k}", ids or [], reduce_id=rid, one_pass=False, full_out=False)
        methods += [text, _copy_in(f"CopyInPass{k}", f_k, c_k, layout), _load_cols(f"LoadColsPass{k}", c_k, layout)]
        api = REDUCE_KINDS[node.attr("kind")][0]
        multi_body += ["            for (uint32_t c0 = 0; c0 < myCols; c0 += width) {",
                       "                uint32_t len = myCols - c0 < width ? myCols - c0 : width;",
                       f"                LoadColsPass{k}(c0, len);",
                       f"                CopyInPass{k}(r0, 1, c0, len);",
                       f"                ComputePass{k}(1, len, c0);",
                       "            }",
                       f"            FinishPass{k}();"]
        done.add(rid)
        row_ids = gen.row_nodes_after(done)
        fin = _Section(gen, row_ids, {})
        for pos in range(len(row_ids)):
            gen.emit_node(fin, pos, None)
        st = f"st{layout.stat_slot[rid]}"
        lines = [f"    __aicore__ inline void FinishPass{k}()", "    {",
                 "        const uint32_t nr = 1;",
                 "        LocalTensor<float> colv = colBuf.Get<float>();",
                 "        LocalTensor<float> stat = statBuf.Get<float>();",
                 "        LocalTensor<float> acc = colv[accSlot * pitch];",
                 "        LocalTensor<float> red = stat[statSlots * statLen];",
                 "        LocalTensor<float> work = stat[statSlots * statLen + 64];"]
        lines += [f"        LocalTensor<float> st{i} = stat[{i} * statLen];" for i in range(layout.n_stats)]
        lines += [f"        {api}(red, acc, work, width);  // every lane of acc holds a partial {node.attr('kind')}",
                  "        SyncVtoS();",
                  f"        {st}.SetValue(0, red.GetValue(0));",
                  "        SyncStoV();"]
        lines += fin.lines
        lines.append("    }")
        methods.append("\n".join(lines))
    if full_out:
        ids = gen.ancestors(out_id)
        text, f_o, c_o = gen.section("ComputeOut", ids, reduce_id=None, one_pass=False, full_out=True)
        methods += [text, _copy_in("CopyInOut", f_o, c_o, layout), _load_cols("LoadColsOut", c_o, layout)]
        multi_body += ["            for (uint32_t c0 = 0; c0 < myCols; c0 += width) {",
                       "                uint32_t len = myCols - c0 < width ? myCols - c0 : width;",
                       "                LoadColsOut(c0, len);",
                       "                CopyInOut(r0, 1, c0, len);",
                       "                ComputeOut(1, len, c0);",
                       "                CopyOutTile(r0, 1, c0, len);",
                       "            }"]
    else:
        multi_body += ["            {",
                       "                LocalTensor<float> stat = statBuf.Get<float>();",
                       "                LocalTensor<T> o = outQ.template AllocTensor<T>();",
                       f"                StatsOut(o, stat[{layout.stat_slot[out_id]} * statLen], 1);",
                       "                outQ.EnQue(o);",
                       "            }",
                       "            CopyOutStats(r0, 1);"]
    multi_body.append("        }")

    if not full_out:
        # one pass: the statistics of the tile's rows go out together
        one_pass_body.insert(-2, "            StageStats(nr);")
        methods.append("\n".join([
            "    __aicore__ inline void StageStats(uint32_t nr)", "    {",
            "        LocalTensor<float> stat = statBuf.Get<float>();",
            "        LocalTensor<T> o = outQ.template AllocTensor<T>();",
            f"        StatsOut(o, stat[{layout.stat_slot[out_id]} * statLen], nr);",
            "        outQ.EnQue(o);", "    }"]))

    tensors = list(layout.full) + list(layout.col) + list(layout.scalar_leaves)
    spec = KernelSpec(
        entry_f32=f"{name}_f32", entry_f16=f"{name}_f16", tensor_args=tensors, scalar_args=gen.scalar_args,
        n_full=len(layout.full), n_col=len(layout.col), full_slots=gen.max_full,
        col_slots=len(layout.col) + gen.max_col + 1, stat_slots=layout.n_stats, split=layout.split,
        out_domain=layout.out_domain, group_dims=layout.group_dims,
    )
    spec.source = _assemble(spec, layout, methods, one_pass_body, multi_body, name)
    return spec


def _assemble(spec: KernelSpec, layout: Layout, methods: list[str], one_pass: list[str], multi: list[str],
              name: str) -> str:
    gm_params = ", ".join(f"GM_ADDR p_{t}" for t in spec.tensor_args + ["out"])
    scalar_params = "".join(f", float s{i}" for i in range(len(spec.scalar_args)))
    shape_params = ("uint32_t rows, uint32_t cols, uint32_t rowsPerCore, uint32_t colsPerCore, uint32_t tileRows, "
                    "uint32_t width, uint32_t pitch, uint32_t bufNum, uint32_t statLen, uint32_t workLen, float colsF")
    shape_args = "rows, cols, rowsPerCore, colsPerCore, tileRows, width, pitch, bufNum, statLen, workLen, colsF"
    init = [
        f"    __aicore__ inline void Init({gm_params}{scalar_params}, {shape_params})",
        "    {",
        "        this->cols = cols; this->tileRows = tileRows; this->width = width; this->pitch = pitch;",
        "        this->statLen = statLen; this->colsF = colsF;",
        *[f"        this->s{i} = s{i};" for i in range(len(spec.scalar_args))],
        "        uint32_t first = 0, colBase = 0;",
        "        if (rowsPerCore == 0) {  // one long row: its elements are split over the cores",
        "            colBase = colsPerCore * GetBlockIdx();",
        "            myRows = colBase < cols ? 1 : 0;",
        "            myCols = colBase < cols ? (cols - colBase < colsPerCore ? cols - colBase : colsPerCore) : 0;",
        "        } else {  // whole rows per core",
        "            first = rowsPerCore * GetBlockIdx();",
        "            myRows = first < rows ? (rows - first < rowsPerCore ? rows - first : rowsPerCore) : 0;",
        "            myCols = cols;",
        "        }",
        "        if (myRows == 0) return;",
        "        uint32_t span = (myRows - 1) * cols + myCols;",
    ]
    for leaf in layout.full:
        init.append(f"        gm_{leaf}.SetGlobalBuffer((__gm__ T*)p_{leaf} + first * cols + colBase, span);")
    for leaf in layout.col:
        init.append(f"        gm_{leaf}.SetGlobalBuffer((__gm__ T*)p_{leaf}, cols);")
    for leaf in layout.scalar_leaves:
        init += ["        {",
                 f"            GlobalTensor<T> g; g.SetGlobalBuffer((__gm__ T*)p_{leaf}, 1);",
                 f"            sv_{leaf} = static_cast<float>(g.GetValue(0));",
                 "        }"]
    if spec.out_domain == "full":
        init.append("        gm_out.SetGlobalBuffer((__gm__ T*)p_out + first * cols + colBase, span);")
    else:
        init.append("        gm_out.SetGlobalBuffer((__gm__ T*)p_out + first, myRows);")
    init.append("        slotLen = tileRows * pitch;")
    init.append(f"        fullSlots = {spec.full_slots};")
    init.append(f"        statSlots = {spec.stat_slots};")
    init.append(f"        accSlot = {spec.col_slots - 1};")
    for k in range(spec.n_full):
        init.append(f"        pipe.InitBuffer(inQ{k}, bufNum, slotLen * sizeof(T));")
    if spec.n_col:
        init.append("        pipe.InitBuffer(colQ, 1, pitch * sizeof(T));")
    init.append("        uint32_t outLen = slotLen > statLen ? slotLen : statLen;")
    init.append("        pipe.InitBuffer(outQ, bufNum, outLen * sizeof(T));")
    init.append(f"        // half needs fp32 slots for the output and for each tile input ({spec.n_full})")
    init.append(f"        uint32_t calcSlots = fullSlots + (sizeof(T) == 2 ? 1 + {spec.n_full} : 0);")
    init.append("        if (calcSlots == 0) calcSlots = 1;  // Get() needs an initialised buffer")
    init.append("        pipe.InitBuffer(calcBuf, calcSlots * slotLen * sizeof(float));")
    init.append(f"        pipe.InitBuffer(colBuf, {spec.col_slots} * pitch * sizeof(float));")
    init.append("        pipe.InitBuffer(statBuf, (statSlots * statLen + 64 + workLen) * sizeof(float));")
    init.append("    }")

    process = ["    __aicore__ inline void Process()", "    {", "        if (myRows == 0) return;",
               "        if (width >= myCols) {", *["    " + l for l in one_pass], "        } else {",
               *["    " + l for l in multi], "        }", "    }"]
    copy_out = [
        "    __aicore__ inline void CopyOutTile(uint32_t r0, uint32_t nr, uint32_t c0, uint32_t len)", "    {",
        "        LocalTensor<T> o = outQ.template DeQue<T>();",
        "        StoreTile(gm_out[r0 * cols + c0], o, nr, len, cols, pitch);",
        "        outQ.FreeTensor(o);", "    }",
        "    __aicore__ inline void CopyOutStats(uint32_t r0, uint32_t nr)", "    {",
        "        LocalTensor<T> o = outQ.template DeQue<T>();",
        "        DataCopyPad(gm_out[r0], o, DataCopyExtParams{1, static_cast<uint32_t>(nr * sizeof(T)), 0, 0, 0});",
        "        outQ.FreeTensor(o);", "    }"]
    members = ["    TPipe pipe;"]
    members += [f"    TQue<TPosition::VECIN, 2> inQ{k};" for k in range(spec.n_full)]
    if spec.n_col:
        members.append("    TQue<TPosition::VECIN, 1> colQ;")
    members += ["    TQue<TPosition::VECOUT, 2> outQ;",
                "    TBuf<TPosition::VECCALC> calcBuf, colBuf, statBuf;"]
    members += [f"    GlobalTensor<T> gm_{leaf};" for leaf in layout.full + layout.col]
    members.append("    GlobalTensor<T> gm_out;")
    members += [f"    float sv_{leaf} = 0.0f;" for leaf in layout.scalar_leaves]
    members += [f"    float s{i} = 0.0f;" for i in range(len(spec.scalar_args))]
    members += ["    uint32_t myRows = 0, myCols = 0, cols = 0, tileRows = 1, width = 0, pitch = 0, statLen = 0;",
                "    uint32_t slotLen = 0, fullSlots = 0, statSlots = 0, accSlot = 0;",
                "    float colsF = 1.0f;"]
    cls = ["template <typename T>", f"class Kernel_{name} {{", "public:", *init, *process, "", "private:",
           "\n\n".join(methods), *copy_out, "", *members, "};"]
    entries = []
    call_args = ", ".join(f"p_{t}" for t in spec.tensor_args + ["out"])
    call_args += "".join(f", s{i}" for i in range(len(spec.scalar_args)))
    for suffix, ctype in (("f32", "float"), ("f16", "half")):
        entries.append(
            f'extern "C" __global__ __aicore__ void {name}_{suffix}({gm_params}{scalar_params}, {shape_params})\n'
            "{\n"
            f"    Kernel_{name}<{ctype}> op;\n"
            f"    op.Init({call_args}, {shape_args});\n"
            "    op.Process();\n"
            "}\n")
    return PRELUDE + "\n" + "\n".join(cls) + "\n\n" + "\n".join(entries)
