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

from evokernel.builtin import Plan, scalar_sources

from ._config import AscendCConfig
from ._kernel import kernel_source
from ._layout import layout_of
from ._lower import LoweringError

__all__ = ["generate", "TemplateError", "covers"]

TemplateError = LoweringError
UB_BUDGET_BYTES = 196_608  # Unified Buffer of one 910B vector core

_LAUNCHER = '''
def _round_up(n, m):
    return (n + m - 1) // m * m


def _ub_bytes(tile_rows, pitch, esize, buffer_num):
    """Unified Buffer bytes the kernel's InitBuffer calls ask for (see Kernel::Init)."""
    stat_len = _round_up(tile_rows, 64)
    work_len = _round_up(-(-pitch // 64), 64)
    slot = tile_rows * pitch
    calc_slots = max(1, FULL_SLOTS + (1 + N_FULL if esize == 2 else 0))
    total = N_FULL * buffer_num * slot * esize
    total += pitch * esize if N_COL else 0
    total += buffer_num * max(slot, stat_len) * esize
    total += calc_slots * slot * 4
    total += COL_SLOTS * pitch * 4
    total += (STAT_SLOTS * stat_len + 64 + work_len) * 4
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


def _tiling(rows, cols, esize):
    """(cores, shape arguments) for a rows x cols problem under this file's configuration."""
    if SPLIT == "elements":
        # one long row: each core takes a run of whole 256-byte repeats, then tiles of `width`
        per_core = _round_up(-(-cols // BLOCK_DIM), 64)
        cores = -(-cols // per_core)
        width = min(_round_up(TILE_BYTES // 4, 64), per_core)
        width = 64 * _largest(1, width // 64, lambda k: _ub_bytes(1, 64 * k, esize, BUFFER_NUM) <= UB_BUDGET)
        return cores, (1, cols, 0, per_core, 1, width, width)
    rows_per_core = -(-rows // min(BLOCK_DIM, rows))
    cores = -(-rows // rows_per_core)
    pitch = _round_up(cols, 32 // esize)  # each row starts on a 32-byte boundary in UB
    if _ub_bytes(1, pitch, esize, BUFFER_NUM) <= UB_BUDGET:
        # whole rows fit: read each once, as many rows per tile as the tile size asks and UB allows
        want = max(1, min(TILE_BYTES // (4 * pitch), rows_per_core, 4095))
        tile_rows = _largest(1, want, lambda r: _ub_bytes(r, pitch, esize, BUFFER_NUM) <= UB_BUDGET)
        return cores, (rows, cols, rows_per_core, cols, tile_rows, cols, pitch)
    # rows longer than UB: stream each in chunks of `width` (a pass per reduction, then the output)
    width = min(_round_up(TILE_BYTES // 4, 64), cols // 64 * 64)
    width = 64 * _largest(1, max(1, width // 64), lambda k: _ub_bytes(1, 64 * k, esize, BUFFER_NUM) <= UB_BUDGET)
    return cores, (rows, cols, rows_per_core, cols, 1, width, width)
'''


def covers(plan: Plan) -> str | None:
    """None when the templates cover the plan, else the reason they do not."""
    try:
        layout_of(plan)
    except LoweringError as exc:
        return str(exc)
    return None


def _kernel_name(plan: Plan) -> str:
    stem = re.sub(r"\W+", "_", plan.name).strip("_").lower() or "task"
    if stem[0].isdigit():
        stem = "k" + stem
    return f"evk_{stem}"[:48]


def generate(plan: Plan, config: AscendCConfig) -> str:
    """The candidate file; raises TemplateError outside the templates' coverage."""
    if plan.fixed_out_dtype:
        raise TemplateError("a cast that fixes the output dtype is not covered (the kernels keep the input dtype)")
    layout = layout_of(plan)
    name = _kernel_name(plan)
    spec = kernel_source(plan, layout, name)
    leaves = {leaf.name: leaf for leaf in plan.leaves}
    args = spec.tensor_args
    scalars = [f"s{i}" for i in range(len(spec.scalar_args))]
    rank = len(plan.reduce.full_shape) if plan.reduce else len(plan.out_spec.shape)
    keepdim = len(plan.out_spec.shape) == rank

    head = [
        f'"""Builtin-policy candidate for {plan.name}: Ascend C, {plan.family} family ({config.text()}).',
        "",
        "Written by EvoKernel's offline template generator (not an LLM). The kernel computes in fp32",
        f'and has two entries, {spec.entry_f32} and {spec.entry_f16}."""',
        "import torch",
        "import torch.nn as nn",
        "from backends.ascendc import load_inline",
        "",
    ]
    if plan.preamble:
        head += [plan.preamble, ""]
    consts = [
        f"TILE_BYTES = {config.tile_bytes}",
        f"BLOCK_DIM = {config.block_dim}",
        f"BUFFER_NUM = {config.buffer_num}",
        f"UB_BUDGET = {UB_BUDGET_BYTES}",
        f'SPLIT = "{spec.split}"',
        "# slots of the generated kernel, from which its Unified Buffer use is computed",
        f"N_FULL, N_COL, FULL_SLOTS, COL_SLOTS, STAT_SLOTS = {spec.n_full}, {spec.n_col}, {spec.full_slots}, "
        f"{spec.col_slots}, {spec.stat_slots}",
    ]
    launch = [f"def _launch(ops, {', '.join(args + scalars)}):"]
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
    launch.append(f"    cores, shape = _tiling(rows, cols, {full0}.element_size())")
    launch.append("    rows, cols, rows_per_core, cols_per_core, tile_rows, width, pitch = shape")
    launch.append("    stat_len = _round_up(tile_rows, 64)")
    launch.append("    work_len = _round_up(-(-pitch // 64), 64)")
    launch.append(f"    kernel = ops.{spec.entry_f32} if dtype == torch.float32 else ops.{spec.entry_f16}")
    tensors = ", ".join(f"{a}.contiguous()" for a in args)
    floats = "".join(f"float({s}), " for s in scalars)
    launch.append(f"    kernel({tensors}, out, {floats}rows, cols, rows_per_core, cols_per_core, tile_rows,")
    launch.append("           width, pitch, BUFFER_NUM, stat_len, work_len, float(cols), block_dim=cores)")
    launch.append("    return out")

    call_args = [leaves[a].source for a in args] + scalar_sources(plan)
    views = "".join(plan.out_views)
    if any(v.startswith((".transpose", ".permute", ".t(", ".T", ".mT", ".swap", ".movedim")) for v in plan.out_views):
        views += ".contiguous()"
    forward_params = f"self, {plan.forward_args}" if plan.forward_args else "self"
    model = [
        "class ModelNew(nn.Module):",
        plan.init_source,
        f'        self._ops = load_inline(name="{name}", source=KERNEL_SOURCE,',
        f'                                functions=["{spec.entry_f32}", "{spec.entry_f16}"])',
        "",
        f"    def forward({forward_params}):",
        f"        return _launch(self._ops, {', '.join(call_args)}){views}",
    ]
    parts = ["\n".join(head), f'KERNEL_SOURCE = r"""\n{spec.source}"""\n', "\n".join(consts), _LAUNCHER.strip() + "\n",
             "\n".join(launch) + "\n", "\n".join(model) + "\n"]
    return "\n\n".join(parts)
