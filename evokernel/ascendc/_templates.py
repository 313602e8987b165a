"""A complete Ascend C candidate file from a traced plan and a configuration.

    source = generate(plan, AscendCConfig("rows", tile_bytes=16384, block_dim=48, buffer_num=2))

The file builds its kernel with `backends.ascendc.load_inline` in
`ModelNew.__init__`; `forward` only checks inputs, allocates the output,
computes the tiling from the shapes (pure Python integer arithmetic: tile
size within the Unified Buffer budget, 32-byte aligned rows, cores to split
over) and launches the fp32 or fp16 entry point.
"""

from __future__ import annotations

import re

import dataclasses
from dataclasses import dataclass

from evokernel.builtin import Plan, scalar_sources
from evokernel.builtin._emit import BROADCAST_SHAPES
from evokernel.builtin._ir import Leaf, Node, Ref, TensorSpec

from ._config import FAMILIES, AscendCConfig, default_config
from ._kernel import kernel_source
from ._layout import layout_of
from ._lower import LoweringError
from ._matmul_kernel import ENTRY_F16, ENTRY_F32, MATMUL_SOURCE

__all__ = ["generate", "TemplateError", "covers"]

TemplateError = LoweringError
UB_BUDGET_BYTES = 196_608  # Unified Buffer of one 910B vector core

_LAUNCHER = '''
def _round_up(n, m):
    return (n + m - 1) // m * m


def _ub_bytes(cfg, tile_rows, pitch, esize, buffer_num):
    """Unified Buffer bytes the kernel's InitBuffer calls ask for (see Kernel::Init)."""
    stat_len = _round_up(tile_rows, 64)
    work_len = _round_up(-(-pitch // 64), 64)
    slot = tile_rows * pitch
    calc_slots = max(1, cfg["FULL_SLOTS"] + (1 + cfg["N_FULL"] if esize == 2 else 0))
    total = cfg["N_FULL"] * buffer_num * slot * esize
    total += pitch * esize if cfg["N_COL"] else 0
    total += buffer_num * max(slot, stat_len) * esize
    total += calc_slots * slot * 4
    total += cfg["COL_SLOTS"] * pitch * 4
    total += (cfg["STAT_SLOTS"] * stat_len + 64 + work_len) * 4
    return total


def _largest(lo, hi, fits):
    """The largest n in [lo, hi] with fits(n) (fits is monotone), or lo."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _tiling(cfg, rows, cols, esize):
    """(cores, shape arguments) for a rows x cols problem under a stage's configuration `cfg`."""
    if cfg["SPLIT"] == "elements":
        # one long row: each core takes a run of whole 256-byte repeats, then tiles of `width`
        per_core = _round_up(-(-cols // cfg["BLOCK_DIM"]), 64)
        cores = -(-cols // per_core)
        width = min(_round_up(cfg["TILE_BYTES"] // 4, 64), per_core)
        width = 64 * _largest(1, width // 64, lambda k: _ub_bytes(cfg, 1, 64 * k, esize, cfg["BUFFER_NUM"]) <= cfg["UB_BUDGET"])
        return cores, (1, cols, 0, per_core, 1, width, width)
    rows_per_core = -(-rows // min(cfg["BLOCK_DIM"], rows))
    cores = -(-rows // rows_per_core)
    pitch = _round_up(cols, 32 // esize)  # each row starts on a 32-byte boundary in UB
    if _ub_bytes(cfg, 1, pitch, esize, cfg["BUFFER_NUM"]) <= cfg["UB_BUDGET"]:
        # whole rows fit: read each once, as many rows per tile as the tile size asks and UB allows
        want = max(1, min(cfg["TILE_BYTES"] // (4 * pitch), rows_per_core, 4095))
        tile_rows = _largest(1, want, lambda r: _ub_bytes(cfg, r, pitch, esize, cfg["BUFFER_NUM"]) <= cfg["UB_BUDGET"])
        return cores, (rows, cols, rows_per_core, cols, tile_rows, cols, pitch)
    # rows longer than UB: stream each in chunks of `width` (a pass per reduction, then the output)
    width = min(_round_up(cfg["TILE_BYTES"] // 4, 64), cols // 64 * 64)
    width = 64 * _largest(1, max(1, width // 64), lambda k: _ub_bytes(cfg, 1, 64 * k, esize, cfg["BUFFER_NUM"]) <= cfg["UB_BUDGET"])
    return cores, (rows, cols, rows_per_core, cols, 1, width, width)
'''


SEVERAL_OUTPUTS = "forward returns several tensors; the templates' forward returns one"


def _stages(plan: Plan) -> tuple[Plan, ...]:
    return tuple(plan.stages) if plan.family == "pipeline" else (plan,)


def covers(plan: Plan) -> str | None:
    """None when the templates cover the plan (every stage of a pipeline), else the reason they do not."""
    if plan.returns is not None:
        return SEVERAL_OUTPUTS
    for stage in _stages(plan):
        try:
            if stage.family == "matmul":
                _matmul_parts(stage)
            else:
                layout_of(stage)
        except LoweringError as exc:
            return str(exc)
    return None


def _kernel_name(plan: Plan) -> str:
    stem = re.sub(r"\W+", "_", plan.name).strip("_").lower() or "task"
    if stem[0].isdigit():
        stem = "k" + stem
    return f"evk_{stem}"[:48]


@dataclass
class StageCode:
    """One kernel launch of a candidate: module-level blocks (kernel source,
    configuration), its launcher function, the load_inline line of
    ModelNew.__init__ and the launcher call (an expression) in forward."""

    blocks: list[str]
    launcher: str
    build: str
    call: str


def _leaf_args(plan: Plan) -> list[str]:
    return [plan.leaf(a).source for a in plan_tensor_args(plan)]


def plan_tensor_args(plan: Plan) -> list[str]:
    layout = layout_of(plan)
    return list(layout.full) + list(layout.col) + list(layout.scalar_leaves)


def vector_stage(plan: Plan, config: AscendCConfig, tag: str) -> StageCode:
    """An elementwise or rows stage on the vector cores (UB tiles, double-buffered queues)."""
    if plan.fixed_out_dtype:
        raise TemplateError("a cast that fixes the output dtype is not covered (the kernels keep the input dtype)")
    layout = layout_of(plan)
    name = _kernel_name(plan) + tag
    spec = kernel_source(plan, layout, name)
    leaves = {leaf.name: leaf for leaf in plan.leaves}
    args = spec.tensor_args
    scalars = [f"s{i}" for i in range(len(spec.scalar_args))]
    rank = len(plan.reduce.full_shape) if plan.reduce else len(plan.out_spec.shape)
    keepdim = len(plan.out_spec.shape) == rank
    cfg = (f"_CFG{tag} = dict(TILE_BYTES={config.tile_bytes}, BLOCK_DIM={min(config.block_dim, 48)}, "
           f"BUFFER_NUM={config.buffer_num}, UB_BUDGET={UB_BUDGET_BYTES}, SPLIT=\"{spec.split}\",\n"
           f"             # slots of the generated kernel, from which its Unified Buffer use is computed\n"
           f"             N_FULL={spec.n_full}, N_COL={spec.n_col}, FULL_SLOTS={spec.full_slots}, "
           f"COL_SLOTS={spec.col_slots}, STAT_SLOTS={spec.stat_slots})")
    launch = [f"def _launch{tag}(ops, {', '.join(args + scalars)}):"]
    launch.append(f"    cfg = _CFG{tag}")
    launch.append(f"    dtype = {args[0]}.dtype")
    launch.append("    if dtype not in (torch.float32, torch.float16):")
    launch.append("        raise TypeError(f'the Ascend C kernel takes float32 or float16, not {dtype}')")
    for a in args[1:]:
        launch.append(f"    if {a}.dtype != dtype:")
        launch.append(f"        raise TypeError('{a} has another dtype than {args[0]}')")
    full0 = layout.full[0]
    launch.append(f"    full = tuple({full0}.shape)")
    for a in layout.full[1:]:
        launch.append(f"    if tuple({a}.shape) != full:")
        launch.append(f"        raise ValueError('{a} must have the shape of {full0}')")
    if spec.split == "elements":
        launch.append("    rows, cols = 1, 1")
        launch.append("    for size in full:")
        launch.append("        cols *= size")
        launch.append("    out_shape = full")
    else:
        g = spec.group_dims
        launch.append("    cols = 1")
        launch.append(f"    for size in full[len(full) - {g}:]:")
        launch.append("        cols *= size")
        launch.append("    rows = 1")
        launch.append(f"    for size in full[:len(full) - {g}]:")
        launch.append("        rows *= size")
        if layout.out_domain == "full":
            launch.append("    out_shape = full")
        elif keepdim:
            launch.append(f"    out_shape = full[:len(full) - {g}] + (1,) * {g}")
        else:
            launch.append(f"    out_shape = full[:len(full) - {g}]")
    for a in layout.col:
        launch.append(f"    if {a}.numel() != cols:")
        launch.append(f"        raise ValueError('{a} must broadcast along the rows (cols elements)')")
    for a in layout.scalar_leaves:
        launch.append(f"    if {a}.numel() != 1:")
        launch.append(f"        raise ValueError('{a} must have one element')")
    launch.append(f"    out = torch.empty(out_shape, dtype=dtype, device={full0}.device)")
    launch.append("    if out.numel() == 0 or cols == 0:")
    launch.append("        return out")
    launch.append(f"    cores, shape = _tiling(cfg, rows, cols, {full0}.element_size())")
    launch.append("    rows, cols, rows_per_core, cols_per_core, tile_rows, width, pitch = shape")
    launch.append("    stat_len = _round_up(tile_rows, 64)")
    launch.append("    work_len = _round_up(-(-pitch // 64), 64)")
    launch.append(f"    kernel = ops.{spec.entry_f32} if dtype == torch.float32 else ops.{spec.entry_f16}")
    tensors = ", ".join(f"{a}.contiguous()" for a in args)
    floats = "".join(f"float({s}), " for s in scalars)
    launch.append(f"    kernel({tensors}, out, {floats}rows, cols, rows_per_core, cols_per_core, tile_rows,")
    launch.append("           width, pitch, cfg[\"BUFFER_NUM\"], stat_len, work_len, float(cols), block_dim=cores)")
    launch.append("    return out")
    call_args = [leaves[a].source for a in args] + scalar_sources(plan)
    blocks = [f'KERNEL_SOURCE{tag} = r"""\n{spec.source}"""\n', cfg]
    build = (f'self._ops{tag} = load_inline(name="{name}", source=KERNEL_SOURCE{tag}, '
             f'functions=["{spec.entry_f32}", "{spec.entry_f16}"])')
    return StageCode(blocks, "\n".join(launch) + "\n", build, f"_launch{tag}(self._ops{tag}, {', '.join(call_args)})")


_MATMUL_LAUNCHER = '''
def _fit_bases(bm, bn, bk, m, n, k, esize, buf):
    """The configured base block, shrunk to the problem and until L1, L0A, L0B and L0C hold it."""
    r16 = lambda v: -(-v // 16) * 16
    bm, bn, bk = min(bm, r16(m)), min(bn, r16(n)), min(bk, r16(k))
    def fits(bm, bn, bk):
        a, b = r16(bm) * r16(bk) * esize * buf, r16(bk) * r16(bn) * esize * buf
        return a + b <= 524288 and a <= 65536 and b <= 65536 and r16(bm) * r16(bn) * 4 <= 131072
    while not fits(bm, bn, bk):
        if bk > 16:
            bk //= 2
        elif bn > 16:
            bn //= 2
        else:
            bm //= 2
    return bm, bn, bk


def _matmul_cube(ops, lhs, rhs, cfg):
    """lhs @ rhs on the cube cores: (..., M, K) @ (..., K, N) with torch's batch broadcasting."""
    dtype = lhs.dtype
    if dtype not in (torch.float32, torch.float16) or rhs.dtype != dtype:
        raise TypeError(f"the Ascend C matmul takes two float32 or two float16 operands, not {lhs.dtype}, {rhs.dtype}")
    m, k, n = lhs.shape[-2], lhs.shape[-1], rhs.shape[-1]
    batch = _broadcast_shapes(tuple(lhs.shape[:-2]), tuple(rhs.shape[:-2]))
    out = torch.empty(batch + (m, n), dtype=dtype, device=lhs.device)
    if out.numel() == 0:
        return out
    if k == 0:
        return out.fill_(0)
    if rhs.dim() == 2:
        # a shared right operand: the left operand's batch dims fold into M
        a, b, nb, rows = lhs.reshape(-1, k), rhs, 1, out.numel() // n
    else:
        a = lhs.expand(batch + (m, k)).reshape(-1, m, k)
        b = rhs.expand(batch + (k, n)).reshape(-1, k, n)
        nb, rows = a.shape[0], m
    # a right operand stored K-major (the transpose of a contiguous tensor, as a Linear weight) goes as is
    bt = b.transpose(-1, -2)
    trans = 1 if bt.is_contiguous() else 0
    b = bt if trans else b.contiguous()
    a = a.contiguous()
    bm, bn, bk = _fit_bases(cfg["BASE_M"], cfg["BASE_N"], cfg["BASE_K"], rows, n, k, a.element_size(),
                            cfg["BUFFER_NUM"])
    tiles = nb * -(-rows // bm) * -(-n // bn)
    kernel = ops.evk_matmul_f32 if dtype == torch.float32 else ops.evk_matmul_f16
    kernel(a, b, out, nb, rows, n, k, trans, rows * k, k * n, bm, bn, bk, cfg["BUFFER_NUM"],
           block_dim=min(cfg["BLOCK_DIM"], tiles))
    return out
'''


def _matmul_parts(plan: Plan) -> tuple[Node, Plan | None]:
    """The matmul node of a matmul stage and, when it has a pointwise epilogue, the
    epilogue as an elementwise plan reading the product from a leaf "mm"."""
    mm = plan.node(plan.matmul_id)
    for ref in mm.args:
        if ref.kind != "leaf":
            raise LoweringError("a matmul operand computed in the same stage is not covered")
        if plan.leaf(ref.value).spec.dtype not in ("float32", "float16"):
            raise LoweringError(f"matmul operand {ref.value} is {plan.leaf(ref.value).spec.dtype}; the cube "
                                "kernels take float32 and float16")
    if plan.output.kind == "node" and plan.output.value == mm.id:
        return mm, None
    dtype = plan.leaf(mm.args[0].value).spec.dtype
    product = Leaf("mm", "mm", TensorSpec(tuple(mm.shape), dtype))

    def swap(ref: Ref) -> Ref:
        return Ref("leaf", "mm") if ref.kind == "node" and ref.value == mm.id else ref

    nodes = tuple(dataclasses.replace(n, args=tuple(swap(a) for a in n.args)) for n in plan.nodes if n.id != mm.id)
    if any(n.op in ("reduce", "matmul") for n in nodes):
        raise LoweringError("a matmul stage with a reduction in its epilogue is not covered")
    used = {a.value for n in nodes for a in n.args if a.kind == "leaf"}
    leaves = (product,) + tuple(leaf for leaf in plan.leaves if leaf.name in used and leaf.name != "mm")
    epilogue = dataclasses.replace(plan, family="elementwise", leaves=leaves, nodes=nodes, matmul_id=None,
                                   out_views=(), reduce=None, stages=(), name=plan.name + "_epilogue")
    layout_of(epilogue)
    return mm, epilogue


def matmul_stage(plan: Plan, config: AscendCConfig, tag: str) -> list[StageCode]:
    """The cube kernel (and, for a pointwise epilogue, an elementwise kernel after it)."""
    mm, epilogue = _matmul_parts(plan)
    lhs, rhs = (plan.leaf(ref.value).source for ref in mm.args)
    cfg = (f"_CFG{tag} = dict(BASE_M={config.base_m}, BASE_N={config.base_n}, BASE_K={config.base_k}, "
           f"BLOCK_DIM={min(config.block_dim, 24)}, BUFFER_NUM={config.buffer_num})")
    name = _kernel_name(plan) + tag + "_mm"
    build = (f'self._mm{tag} = load_inline(name="{name}", source=MATMUL_SOURCE, '
             f'functions=["{ENTRY_F16}", "{ENTRY_F32}"])')
    cube = StageCode([cfg], "", build, f"_matmul_cube(self._mm{tag}, {lhs}, {rhs}, _CFG{tag})")
    if epilogue is None:
        return [cube]
    epi_config = AscendCConfig("elementwise", tile_bytes=config.tile_bytes)
    cube.call = f"mm = {cube.call}"
    return [cube, vector_stage(epilogue, epi_config, tag + "_epi")]


def generate(plan: Plan, config: AscendCConfig) -> str:
    """The candidate file; raises TemplateError outside the templates' coverage."""
    if plan.returns is not None:
        raise TemplateError(SEVERAL_OUTPUTS)
    stages = _stages(plan)
    main = plan.main if plan.family == "pipeline" else 0
    codes: list[list[StageCode]] = []
    for k, stage in enumerate(stages):
        stage_config = config if k == main else default_config(stage.family) \
            if stage.family in FAMILIES else None
        if stage_config is None or stage.family not in FAMILIES:
            raise TemplateError(f"a {stage.family} stage is not covered by the Ascend C templates "
                                "(elementwise, rows and matmul are)")
        if stage_config.family != stage.family:
            raise TemplateError(f"the configuration is for the {stage_config.family} family, the stage is "
                                f"{stage.family}")
        tag = f"_s{k}" if len(stages) > 1 else ""
        codes.append(matmul_stage(stage, stage_config, tag) if stage.family == "matmul"
                     else [vector_stage(stage, stage_config, tag)])
    flat = [c for group in codes for c in group]
    uses_matmul = any(s.family == "matmul" for s in stages)
    families = ", ".join(s.family for s in stages)
    head = [
        f'"""Builtin-policy candidate for {plan.name}: Ascend C, {families} ({config.text()}).',
        "",
        "Written by EvoKernel's offline template generator (not an LLM). Vector kernels compute in fp32",
        "and have fp32 and fp16 entries; matmuls run on the cube cores (fp16 in, fp32 accumulate).\"\"\"",
        "import torch",
        "import torch.nn as nn",
        "from backends.ascendc import load_inline",
        "",
    ]
    if plan.preamble:
        head += [plan.preamble, ""]
    parts = ["\n".join(head)]
    if uses_matmul:
        parts.append(f'MATMUL_SOURCE = r"""\n{MATMUL_SOURCE}"""\n')
    for code in flat:
        parts.extend(code.blocks)
    helpers = [BROADCAST_SHAPES.strip() + "\n"] if uses_matmul else []
    if any(c.launcher for c in flat):
        helpers.append(_LAUNCHER.strip() + "\n")
    if uses_matmul:
        helpers.append(_MATMUL_LAUNCHER.strip() + "\n")
    parts.extend(helpers)
    parts.extend(code.launcher for code in flat if code.launcher)
    # forward: every launch in order; a stage's result is its buffer, the last one is returned
    body: list[str] = []
    for k, (stage, group) in enumerate(zip(stages, codes)):
        for code in group:
            body.append(code.call)
        if k < len(stages) - 1:
            body[-1] = f"{stage.buffer} = {body[-1].split(' = ', 1)[1] if body[-1].startswith('mm = ') else body[-1]}"
    views = "".join(plan.out_views)
    if any(v.startswith((".transpose", ".permute", ".t(", ".T", ".mT", ".swap", ".movedim")) for v in plan.out_views):
        views += ".contiguous()"
    forward_params = f"self, {plan.forward_args}" if plan.forward_args else "self"
    model = ["class ModelNew(nn.Module):", plan.init_source]
    model += [f"        {code.build}" for code in flat]
    model += ["", f"    def forward({forward_params}):"]
    model += [f"        {line}" for line in body[:-1]]
    model.append(f"        return {body[-1].split(' = ', 1)[1] if body[-1].startswith('mm = ') else body[-1]}{views}")
    parts.append("\n".join(model) + "\n")
    return "\n\n".join(parts)

