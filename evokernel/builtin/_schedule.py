"""Scheduling a traced graph into kernels: which nodes share a kernel, and
which values are written to buffers between kernels.

Each kernel is one family's template: an anchor (matmul, conv, pool, scan)
with its pointwise epilogue, a row-reduction group with its prologue and
epilogue, or a pointwise chain. Nodes are taken in graph order and join the
open kernel while the kernel's family still accepts the grown subgraph (the
same checks that classify a single-kernel plan); otherwise the open kernel is
closed and its last value becomes a buffer the next kernels read like an
input. A value needed by a later kernel that is not its kernel's last one
forces a cut after it, and the grouping is redone until every buffer is some
kernel's last value.

Pointwise values computed from inputs alone ("free" nodes) are recomputed in
every kernel that reads them instead of being stored, unless an anchor, a
view or a copy needs them as a tensor. Views of computed values and
``torch.cat`` are made in ``forward`` on the buffers (views and copies are
allowed there); under the ``kernelbench`` rules a convolution or matmul that
feeds further work is the library's call, and the work after it our kernels,
except a fp32 matmul that our 3xTF32 kernel computes faster than cuBLAS.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

from ._build import Builder, Reject
from ._config import split_tf32_pays
from ._families import family
from ._ir import ANCHORS, Leaf, Node, Plan, ReduceGroup, Ref, TensorSpec
from ._pointwise import POINTWISE
from ._row_passes import fused_pairs

__all__ = ["schedule", "classify", "domain_map", "HOST_OPS", "LIBRARY_OPS"]

# stages of their own that need no configuration: made in forward (a copy, a library call), or a
# small kernel of ours (a random draw, an indexed read)
HOST_OPS = ("cat", "libconv", "libmm", "random", "gather", "topk", "scatter", "resample")
SPLIT_MIN_COLS = 16384  # rows at least this long, ...
SPLIT_MAX_ROWS = 512  # ... and at most this many of them, are reduced in parallel chunks
LIBRARY_OPS = {"conv": "libconv", "matmul": "libmm"}  # what the kernelbench rules hand to the library


def classify(nodes: list[Node], output: Ref, b: Builder):
    """(family, reduction group, matmul id, anchor id) of one kernel's subgraph; Reject when
    no single family covers it. Operands outside ``nodes`` count as inputs; ``b`` answers
    ``shape(ref)`` (a Builder, or the shapes of a stage with buffer operands)."""
    ids = {n.id for n in nodes}
    anchors = [n for n in nodes if n.op in ANCHORS]
    reductions = [n for n in nodes if n.op == "reduce"]
    for n in nodes:
        if n.op in HOST_OPS or n.op == "view":
            raise Reject(f"{n.op} is made in forward, not inside a kernel")
    if anchors:
        if len(anchors) > 1:
            raise Reject(f"{len(anchors)} {'/'.join(sorted({a.op for a in anchors}))} ops in one kernel")
        if reductions:
            raise Reject(f"a {anchors[0].op} combined with a reduction needs two kernels")
        anchor = anchors[0]
        # scans and pools compute a pointwise prologue on the fly; conv and matmul read buffers
        if anchor.op not in ("scan", "pool") and any(a.kind == "node" and a.value in ids for a in anchor.args):
            raise Reject(f"a {anchor.op} operand computed in the same kernel (no fused prologue)")
        if tuple(b.shape(output)) != tuple(anchor.shape):
            raise Reject(f"the {anchor.op} epilogue broadcasts its result to a larger shape")
        if anchor.op != "matmul" and any(n.op == "iota" for n in nodes):
            raise Reject(f"index-dependent epilogues are not supported after a {anchor.op}")
        return anchor.op, None, (anchor.id if anchor.op == "matmul" else None), anchor.id
    if reductions:
        return "rows", _check_rows(nodes, output, b), None, None
    return "elementwise", None, None, None


def _check_rows(nodes: list[Node], output: Ref, b: Builder) -> ReduceGroup:
    reductions = [n for n in nodes if n.op == "reduce"]
    full = b.shape(reductions[0].args[0])
    start, stop = reductions[0].attr("start"), reductions[0].attr("stop")
    for node in reductions:
        if (b.shape(node.args[0]), node.attr("start"), node.attr("stop")) != (full, start, stop):
            raise Reject("reductions over different dims or shapes in one kernel")
    rank = len(full)
    keep = tuple(1 if start <= i < stop else s for i, s in enumerate(full))
    squeezed = full[:start] + full[stop:]
    domain = domain_map(nodes, full, keep)
    for node in nodes:
        d = domain[node.id]
        arg_domains = [domain.get(a.value, "free") if a.kind == "node" else "free" for a in node.args]
        if node.op == "reduce":
            if arg_domains[0] == "red":
                raise Reject("a reduction of a reduced value (nested reductions) needs two kernels")
            if node.attr("kind") in ("argmax", "argmin") and node.id != output.value:
                raise Reject("an argmax/argmin index feeds further ops in the same kernel")
        elif d == "row":
            if node.shape != full:
                raise Reject(f"an op broadcasts the reduced tensor {full} to {node.shape}")
            for a, ad in zip(node.args, arg_domains):
                if ad == "red" and len(b.shape(a)) != rank:
                    raise Reject("a reduction result taken without keepdim is broadcast against the "
                                 "unreduced tensor (it lines up with the wrong dims)")
        elif d == "red":
            if node.shape not in (keep, squeezed):
                raise Reject(f"a reduced value is broadcast to shape {node.shape}")
        if node.op == "iota" and d != "free":
            raise Reject("an index value depends on a reduction")
    if output.kind == "node" and domain[output.value] == "row" and b.shape(output) != full:
        raise Reject("the output's shape is neither the reduced tensor's nor the reduction's")
    n_cols = math.prod(full[start:stop])
    if math.prod(full) // max(1, n_cols) <= SPLIT_MAX_ROWS and n_cols >= SPLIT_MIN_COLS:
        # few long rows: each reduction runs in parallel chunks (rows kernel, split mode), which needs
        # reductions that read no other one's result, but the second of a pair one pass computes
        # (_row_passes: a mean and its variance, a maximum and its sum of exponentials)
        first_of = {pair.second: pair.first for pair in fused_pairs(nodes)}
        by_id = {n.id: n for n in nodes}
        for node in reductions:
            before = {a.value for a in _ancestors(nodes, node) if by_id[a.value].op == "reduce"}
            if before - {first_of.get(node.id)}:
                raise Reject("few long rows: a reduction of values that depend on another one runs after it")
    return ReduceGroup(rank=rank, start=start, stop=stop, full_shape=full)


def _ancestors(nodes: list[Node], node: Node) -> list[Ref]:
    by_id = {n.id: n for n in nodes}
    out, stack, seen = [], list(node.args), set()
    while stack:
        ref = stack.pop()
        if ref.kind != "node" or ref.value in seen or ref.value not in by_id:
            continue
        seen.add(ref.value)
        out.append(ref)
        stack.extend(by_id[ref.value].args)
    return out


def domain_map(nodes: list[Node], full: tuple[int, ...], keep: tuple[int, ...]) -> dict[int, str]:
    """Per node: "row" (a value per element of the unreduced tensor), "red" (a value
    per row, i.e. per element of the reduced tensor) or "free" (depends on no
    reduction: computed in whichever domain its consumer needs)."""
    domain: dict[int, str] = {}
    for node in nodes:
        arg_domains = {domain[a.value] for a in node.args if a.kind == "node" and a.value in domain}
        if node.op == "reduce":
            domain[node.id] = "red"
        elif "row" in arg_domains:
            domain[node.id] = "row"
        elif "red" in arg_domains:
            # per-row values combined with a full-size operand become full-size again
            domain[node.id] = "row" if node.shape == full and full != keep else "red"
        else:
            domain[node.id] = "free"
    return domain


# ---------------------------------------------------------------- grouping
def _free_nodes(b: Builder, nodes: list[Node]) -> set[int]:
    """Pointwise nodes that depend on inputs only."""
    free: set[int] = set()
    for n in nodes:
        if n.op in ANCHORS or n.op in HOST_OPS or n.op in ("reduce", "view"):
            continue
        if all(a.kind != "node" or a.value in free for a in n.args):
            free.add(n.id)
    return free


class _Graph:
    def __init__(self, b: Builder, nodes: list[Node], output: Ref, keep: tuple[int, ...] = ()):
        self.b = b
        self.nodes = nodes
        self.by_id = {n.id: n for n in nodes}
        self.output = output
        self.users: dict[int, list[Node]] = {n.id: [] for n in nodes}
        for n in nodes:
            for a in n.args:
                if a.kind == "node":
                    self.users[a.value].append(n)
        free = _free_nodes(b, nodes)
        # free values an anchor, a view or a copy takes as a tensor are stored like any other;
        # a scan computes a pointwise prologue on the fly (a masked cumsum's x * mask)
        stored = {a.value for n in nodes if (n.op in ANCHORS and n.op != "scan") or n.op in HOST_OPS
                  or n.op == "view" for a in n.args if a.kind == "node"}
        stored.add(output.value)
        stored.update(keep)
        self.sunk = free - stored

    def closure(self, group: list[int]) -> list[int]:
        """The group's nodes plus the recomputed free nodes they read, in graph order."""
        out, stack = set(group), list(group)
        while stack:
            for a in self.by_id[stack.pop()].args:
                if a.kind == "node" and a.value in self.sunk and a.value not in out:
                    out.add(a.value)
                    stack.append(a.value)
        return sorted(out)


def _is_host(n: Node) -> bool:
    return n.op in HOST_OPS or n.op == "view"


def _group(g: _Graph, forced: set[int]) -> list[list[int]]:
    groups: list[list[int]] = []
    cur: list[int] = []

    def close():
        nonlocal cur
        if cur:
            groups.append(cur)
        cur = []

    for n in g.nodes:
        if n.id in g.sunk:
            continue
        if _is_host(n):
            close()
            groups.append([n.id])
            continue
        if n.op in ANCHORS:
            # a pool takes the pointwise chain that computes its input as a prologue
            prologue = (n.op == "pool" and cur and cur[-1] == n.args[0].value and cur[-1] not in forced
                        and all(g.by_id[i].op in POINTWISE for i in cur) and _legal(g, cur + [n.id]))
            if not prologue:
                close()
        elif cur and (cur[-1] in forced or not _legal(g, cur + [n.id])):
            close()
        cur.append(n.id)
    close()
    return groups


def _legal(g: _Graph, group: list[int]) -> bool:
    sub = _subgraph(g, group, {})
    try:
        classify(sub[0], sub[1], _Shapes(g.b))
    except Reject:
        return False
    return True


def _subgraph(g: _Graph, group: list[int], buffers: dict[int, Leaf]):
    """The group's nodes with operands from other groups turned into buffer leaves
    (placeholder leaves while grouping). Shapes still come from the builder."""
    ids = g.closure(group)
    inside = set(ids)
    nodes = []
    for i in ids:
        n = g.by_id[i]
        args = tuple(Ref("leaf", buffers[a.value].name) if a.kind == "node" and a.value not in inside and a.value in buffers
                     else (Ref("ext", a.value) if a.kind == "node" and a.value not in inside else a) for a in n.args)
        nodes.append(replace(n, args=args))
    return nodes, Ref("node", group[-1])


def _live_out_problems(g: _Graph, groups: list[list[int]]) -> set[int]:
    owner = {i: gi for gi, grp in enumerate(groups) for i in grp}
    bad = set()
    for gi, grp in enumerate(groups):
        for i in g.closure(grp):
            for a in g.by_id[i].args:
                if a.kind == "node" and a.value not in g.sunk and owner[a.value] != gi:
                    src = groups[owner[a.value]]
                    if src[-1] != a.value:
                        bad.add(a.value)
    return bad


# ---------------------------------------------------------------- stages
def schedule(b: Builder, nodes: list[Node], output: Ref, rules: str = "strict",
             keep: tuple[int, ...] = ()) -> tuple[list[Plan], int, dict[int, Leaf]]:
    """Stage plans in launch order (each a single-kernel or host plan; leaves and
    nodes rewritten so operands from earlier stages are buffer leaves), the index
    of the main stage, and the buffer (as a leaf) of every stored node. ``keep``:
    nodes that must be stored (the output's views name them, or forward returns them too)."""
    from ._gen_attention import fuse_attention

    # matmul, score chain, softmax, matmul: one attention kernel, the scores never stored
    nodes = fuse_attention(b, nodes, [output, *(Ref("node", k) for k in keep)])
    g = _Graph(b, nodes, output, keep)
    if rules == "kernelbench":
        _to_library(g)
        _channels_last(g)
    # a cut after each kept node: a stored value is the last its kernel computes (its buffer)
    forced: set[int] = set(keep)
    for _ in range(len(nodes) + 1):
        groups = _group(g, forced)
        bad = _live_out_problems(g, groups)
        if not bad:
            break
        forced |= bad
    else:  # pragma: no cover - each round adds a cut, so this ends
        raise Reject("could not split the graph into kernels")

    buffers: dict[int, Leaf] = {}  # node id -> the leaf later stages read it through
    stages: list[Plan] = []
    for k, grp in enumerate(groups):
        last = g.by_id[grp[-1]]
        if last.op == "view":
            base = buffers[last.args[0].value]
            suffix = last.attr("suffix")
            for j, ref in enumerate(last.args[1:], 1):
                suffix = suffix.replace(f"@{j}", source_of(b, ref, buffers))
            buffers[last.id] = Leaf(name=f"{base.name}_v{last.id}", source=base.source + suffix,
                                    spec=TensorSpec(tuple(last.shape), b.dtypes[last.id]))
            continue
        name = f"buf{len(stages)}"
        sub_nodes, out_ref = _subgraph(g, grp, buffers)
        for n in sub_nodes:
            for a in n.args:
                if a.kind == "ext":  # pragma: no cover - guarded by the live-out fixed point
                    raise Reject("a value is read before the kernel computing it")
        # a stage knows the rules too: a recurrent stage lets the library project its inputs under kernelbench
        stages.append(replace(_stage_plan(b, sub_nodes, out_ref, buffers, name), rules=rules))
        buffers[last.id] = Leaf(name=name, source=name, spec=TensorSpec(tuple(last.shape), b.dtypes[last.id]))
    return stages, _main_stage(stages), buffers


def source_of(b: Builder, ref: Ref, buffers: dict[int, Leaf]) -> str:
    """The forward expression of a tensor: an input's, or a stored value's buffer."""
    if ref.kind == "leaf":
        return b.leaf_by_name(ref.value).source
    return buffers[ref.value].source


def _to_library(g: _Graph) -> None:
    """kernelbench rules: a conv or matmul whose result feeds more work is computed by
    the library; the work after it stays in our kernels. A lone one stays ours (a
    candidate must run a kernel of its own), and so does a fp32 matmul that our 3xTF32
    kernel computes faster than cuBLAS, with the work after it fused into its epilogue."""
    for i, n in enumerate(g.nodes):
        if n.op in LIBRARY_OPS and g.users[n.id] and not _split_tf32_matmul(g.b, n) and not _grouped_conv(g.b, n):
            lib = replace(n, op=LIBRARY_OPS[n.op])
            g.nodes[i] = lib
            g.by_id[n.id] = lib
    # the library result is a stored tensor; free-node bookkeeping is unchanged (anchors were never free)


# Channels-last convolutions (NHWC), the layout torch's inductor picks for inference where it pays:
# cuDNN's fast fp32/TF32 convolutions on Hopper are NHWC kernels, and a NCHW call pays a layout
# conversion of its input and its output, as kernels and as host time (on the H200, GoogleNet's 57
# convolutions: 74 us of host time each, 3 launches each). The measure is inductor's (torch/_inductor/
# graph.py, inference): each convolution's flops weighted by its kind's measured channels-last time
# over the default layout's; channels-last when the weighted sum is at most the plain one.
_NHWC_COST = {"grouped": 1.358, "small": 0.783, "in_out": 0.725, "default": 0.823}
# What the saving is weighed against, as the H200 ran them: a convolution's fp32 input copied to
# channels-last by torch (GoogleNet's inception module: 1.9 GB read and written in 2.3 ms) and the
# convolutions' TF32 rate (its 380 GFLOP of convolutions in about 4 ms)
_LAYOUT_COPY_BYTES = 0.85e12  # bytes read and written a second
_CONV_FLOPS = 1e14
# A depthwise convolution is bound by memory, not flops: torch's own NCHW kernel read and wrote
# EfficientNet's MBConv (1.7 GB) at 1.15 TB/s, cuDNN's NHWC one in 0.51 of its time
_DEPTHWISE_BYTES = 1.15e12
_DEPTHWISE_NHWC_COST = 0.51
# cuDNN's fp32 convolutions in the task's (NCHW) layout run IEEE products below this many input
# channels a group, TF32 from it on (H200; the builtin's own convolution follows it: _gen_conv)
TF32_MIN_CHANNELS = 16


def _ieee_in_task_layout(b: Builder, conv: Node) -> bool:
    """Whether cuDNN computes this fp32 convolution in IEEE products in the task's layout and in TF32
    channels-last: fewer than TF32_MIN_CHANNELS input channels a group, not depthwise (one channel a
    group: FMA kernels either way). A half-precision convolution has no TF32 switch (tensor-core
    products of its own dtype in either layout): never. In its task's layout cuDNN took its generic
    `implicit_convolve_sgemm` for KernelBench level2's 3- and 8-channel bf16 convolutions on the H100,
    57-84% of those pipelines' time (kernelbench-level2-h100-builtin-bf16-7e6d8d8.json)."""
    if b.dtype(conv.args[0]) != "float32":
        return False
    cin_g = b.shape(conv.args[0])[1] // conv.attr("groups")
    return cin_g < TF32_MIN_CHANNELS and not (conv.attr("groups") > 1 and b.shape(conv.args[1])[1] == 1)


def _nhwc_kind(b: Builder, conv: Node) -> str:
    w = b.shape(conv.args[1])
    if conv.attr("groups") > 1 and w[1] > 1:
        return "grouped"
    if w[0] <= 64 and w[1] <= 64:
        return "small"
    if w[0] * 2 <= w[1] and w[2] > 1:
        return "in_out"
    return "default"


def _channels_last(g: _Graph) -> None:
    """kernelbench rules: run the library's convolutions channels-last (NHWC, NDHWC) when every value
    computed from their results reaches only readers that take any layout, and it pays.
    Such readers: our pointwise kernels (their output takes the layout of their full-size operand, as
    torch's own do), torch.cat of such values alone, our 2-D pooling (its channels-last tiles: pixels by
    channels), a reduction over the spatial dims (global pooling) or over the channels, a view of values with one spatial
    position and a flatten or reshape (which copies where it must). Anything else (our own convolution
    or matmul, a softmax over a row of pixels, attention, a cat with a value in the task's layout) keeps
    the whole graph in the task's layout.

    When it pays, as measured on the H100 (benchmarks/results/channels-last-level2-h100-bd4a260.json,
    31 KernelBench level2 tasks, each draft against itself with the layout forced):
    - a graph whose convolutions' results reach only pointwise kernels, cats, pools and views that copy
      nothing, each convolution reading a value in the task's layout the only one to read it: always.
      Channels-last was 1.26-1.72x faster on all 15 such tasks whose drafts compared (2-D and 3-D,
      forward and transposed), the input's layout copy included;
    - with a spatial reduction among the readers, 3-D or transposed convolutions keep the task's layout
      where the reduction's result is read back beside the full-size values (a norm's statistics: with
      the rows kernels' adjacent-row tiles, channels-last was 0.68x on 15_ConvTranspose3d_BatchNorm_Subtract
      and 0.73x on 17_Conv2d_InstanceNorm_Divide), and run channels-last where it is only pooled (1.36x
      and 1.47x on the transposed global pools of 42 and 44, 1.02x on 77: rows-adjacent-nhwc-h100-aed1d15.json;
      without those tiles it was 0.64-0.96x there); they keep the task's layout before a copying flatten
      (not measured);
    - otherwise (2-D forward convolutions beside a norm's spatial statistics or a copying flatten, grouped
      convolutions, or an input in the task's layout read by several convolutions: GoogleNet's
      inception module, a lone block's input read by three), the flop measure above weighs the
      convolutions' saving against the layout copies.

    Whatever it saves, a graph whose convolutions all have fewer than TF32_MIN_CHANNELS input channels a
    group keeps the task's layout: cuDNN runs those in IEEE fp32 in the task's layout and in TF32
    channels-last, and the result is then far less accurate than the reference (on the H100, 8 KernelBench
    level2 tasks with 3- and 8-channel convolutions, 1% of elements past 1e-4, and level3's SqueezeNet fire
    module failed the evaluation channels-last). Where some convolution runs TF32 either way, its
    rounding is the reference's too."""
    b = g.b
    convs = [n for n in g.nodes if n.op == "libconv" and n.attr("nd") in (2, 3) and len(n.shape) == n.attr("nd") + 2]
    if not convs or all(_ieee_in_task_layout(b, c) for c in convs):
        return
    follows: set[int] = set()  # values whose layout is (or may be) channels-last
    pools: list[int] = []
    conv_ids = {n.id for n in convs}
    copying_view = normalizes = False
    pooled: set[int] = set()  # spatial reductions of such values, and pointwise work on them
    for n in g.nodes:
        if n.id in conv_ids:
            follows.add(n.id)
            continue
        reads = [a.kind == "node" and a.value in follows for a in n.args]
        if not any(reads):
            if n.op in POINTWISE and any(a.kind == "node" and a.value in pooled for a in n.args):
                pooled.add(n.id)
            continue
        rank = len(b.shape(n.args[0]))
        if n.op in POINTWISE and n.op not in ("iota", "full"):
            follows.add(n.id)
            # a spatial reduction's result read back beside the full-size values (a norm's statistics;
            # one only pooled is read by the rows kernels' adjacent-row tiles: _gen_rows._adjacent_rows)
            normalizes = normalizes or any(a.kind == "node" and a.value in pooled for a in n.args)
        elif n.op == "cat" and all(reads):
            follows.add(n.id)
        elif n.op == "pool" and n.attr("nd") == 2 and len(n.shape) == 4:
            follows.add(n.id)
            pools.append(n.id)
        elif n.op == "reduce" and rank in (4, 5) and (n.attr("start"), n.attr("stop")) == (2, rank):
            pooled.add(n.id)
        elif n.op == "reduce" and rank in (4, 5) and (n.attr("start"), n.attr("stop")) == (1, 2):
            # over the channels (a min, a softmax's statistics): a pixel's channels lie contiguous
            # channels-last; the result has one channel, the same in either layout. On the H100, 1.62x and
            # 1.63x on level2's 25 and 91 (channel-reduce-nhwc-h100-577f8fc.json): cuDNN's own layout
            # conversions had been 38% of their time
            pass
        elif n.op == "view" and math.prod(b.shape(n.args[0])[2:]) == 1:
            pass
        elif n.op == "view" and _copying_view(n):
            copying_view = True
        else:
            return
    forward_2d = all(c.attr("nd") == 2 and not c.attr("transposed") for c in convs)
    if (normalizes or copying_view) and not forward_2d:
        return
    # inputs in the task's layout, each copied to channels-last by the convolution reading it
    copied_inputs = [c.args[0] for c in convs if not (c.args[0].kind == "node" and c.args[0].value in follows)]
    copies = Counter((x.kind, x.value) for x in copied_inputs)
    grouped = any(_nhwc_kind(b, c) == "grouped" for c in convs)  # slower channels-last (the measure above)
    # a value our kernels wrote in the task's layout, copied: weighed (level3's DenseNet transition, a
    # BatchNorm-ReLU output copied for a 1x1 convolution and a pool, ran 0.72x channels-last on the H100)
    computed = any(kind == "node" for kind, _ in copies)
    if normalizes or copying_view or grouped or computed or any(k > 1 for k in copies.values()):
        saved_s = 0.0  # the convolutions' time channels-last saves, estimated
        for conv in convs:
            w = b.shape(conv.args[1])
            if conv.attr("groups") > 1 and w[1] == 1:
                moved = 4.0 * (math.prod(b.shape(conv.args[0])) + math.prod(conv.shape))
                saved_s += moved / _DEPTHWISE_BYTES * (1 - _DEPTHWISE_NHWC_COST)
            else:
                flops = 2.0 * math.prod(conv.shape) * math.prod(w[1:])
                saved_s += flops / _CONV_FLOPS * (1 - _NHWC_COST[_nhwc_kind(b, conv)])
        copied = sum(math.prod(b.shape(x)) for x in copied_inputs)
        if saved_s <= 0 or copied * 8 / _LAYOUT_COPY_BYTES > saved_s:
            return
    for i, n in enumerate(g.nodes):
        if n.id in conv_ids or n.id in pools:
            n = replace(n, attrs=tuple(sorted(n.attrs + (("channels_last", True),))))
            g.nodes[i] = n
            g.by_id[n.id] = n


def _copying_view(n: Node) -> bool:
    """A flatten or reshape alone (VGG's classifier input): it copies a channels-last value into
    the plain layout where no view exists, so what reads it sees the layout the task wrote."""
    suffix = n.attr("suffix") or ""
    return len(n.args) == 1 and suffix.count(").") == 0 and suffix.startswith((".flatten(", ".reshape("))


def _grouped_conv(b: Builder, n: Node) -> bool:
    """A grouped convolution that is not depthwise stays ours: on the H200 cuDNN runs such a
    convolution's groups on streams of its own (ShuffleNet: one activity per group off the
    current stream), which the side-stream rule rejects."""
    return n.op == "conv" and n.attr("groups") > 1 and b.shape(n.args[1])[1] != 1


def _split_tf32_matmul(b: Builder, n: Node) -> bool:
    return n.op == "matmul" and split_tf32_pays(*(b.shape(r) for r in n.args), (b.dtype(r) for r in n.args))


def _stage_plan(b: Builder, nodes: list[Node], out_ref: Ref, buffers: dict[int, Leaf], name: str) -> Plan:
    used: list[str] = []
    for n in nodes:
        for a in n.args:
            if a.kind == "leaf" and a.value not in used:
                used.append(a.value)
    by_name = {leaf.name: leaf for leaf in b.leaves.values()} | {leaf.name: leaf for leaf in buffers.values()}
    leaves = tuple(by_name[u] for u in used)
    out_node = next(n for n in nodes if n.id == out_ref.value)
    dtype = b.dtypes[out_node.id]
    fixed = any(n.op == "cast" for n in nodes) or dtype.startswith("int")
    if out_node.op in HOST_OPS:
        family, group, mm, anchor = "host", None, None, out_node.id
    else:
        family, group, mm, anchor = classify(nodes, out_ref, _Shapes(b, leaves))
    if not leaves and b.leaves:
        # index arithmetic alone (a T5 bucket table, an arange a gather reads): a tensor of the
        # model's passed along only to say on which device to compute it
        leaves = (next(iter(b.leaves.values())),)
    return Plan(family=family, name=name, leaves=leaves, nodes=tuple(nodes), output=out_ref,
                out_spec=TensorSpec(tuple(out_node.shape), dtype), forward_args="", init_source="",
                fixed_out_dtype=fixed, reduce=group, matmul_id=mm, anchor_id=anchor, buffer=name)


class _Shapes:
    """Builder-like shape lookups for a kernel's subgraph: its operands may be buffer
    leaves, or ("ext", id) placeholders for other kernels' values while grouping."""

    def __init__(self, b: Builder, leaves: tuple[Leaf, ...] = ()):
        self._b = b
        self._leaves = {leaf.name: leaf for leaf in leaves}

    def shape(self, ref: Ref) -> tuple[int, ...]:
        if ref.kind == "leaf" and ref.value in self._leaves:
            return self._leaves[ref.value].spec.shape
        if ref.kind == "ext":
            return self._b.nodes[ref.value].shape
        return self._b.shape(ref)


def stage_cost(plan: Plan) -> float:
    """A rough amount of work, to pick the stage a configuration tunes: the family's own measure,
    else the elements the stage reads or writes."""
    work = family(plan.family).work
    if work is not None:
        return work(plan)
    return float(max([math.prod(leaf.spec.shape) for leaf in plan.leaves] + [math.prod(plan.out_spec.shape)]))


def host_work(plan: Plan) -> float:
    return 0.0  # a library call or a host-side op: never the stage a configuration tunes


def matmul_work(plan: Plan) -> float:
    mm = plan.node(plan.matmul_id)
    k = plan.leaf(mm.args[0].value).spec.shape[-1] if mm.args[0].kind == "leaf" else 1
    return 2.0 * math.prod(mm.shape) * k


def conv_work(plan: Plan) -> float:
    conv = plan.node(plan.anchor_id)
    w = plan.leaf(conv.args[1].value).spec.shape
    return 2.0 * math.prod(conv.shape) * math.prod(w[1:]) * (w[0] / conv.shape[1] if conv.attr("transposed") else 1)


def rows_work(plan: Plan) -> float:
    return float(math.prod(plan.reduce.full_shape))


def rnn_work(plan: Plan) -> float:
    """Every step's input and recurrent products."""
    r = dict(plan.node(plan.anchor_id).attrs)
    inputs = r["input_size"] + (r["layers"] - 1) * r["directions"] * r["hidden"] + r["layers"] * r["hidden"]
    gates = {"LSTM": 4, "GRU": 3}.get(r["mode"], 1)
    return 2.0 * r["seq_len"] * r["batch"] * r["directions"] * gates * r["hidden"] * inputs


def attention_work(plan: Plan) -> float:
    """The two products per (query, key) pair."""
    att = plan.node(plan.anchor_id)
    q, k, v = (plan.leaf(a.value).spec.shape for a in att.args[:3])
    keys = k[-1] if att.attr("k_layout") == "kt" else k[-2]
    return 2.0 * math.prod(att.shape[:-1]) * keys * (q[-1] + v[-1])


def _main_stage(stages: list[Plan]) -> int:
    costs = [stage_cost(s) for s in stages]
    return max(range(len(stages)), key=lambda i: (costs[i], -i))
