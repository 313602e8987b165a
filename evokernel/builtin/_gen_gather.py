"""Indexed reads (``x[idx]``, ``index_select``, ``gather``): one kernel over the output's
elements. Each element's coordinates address the index tensor and the source through
per-dim strides (0 where a tensor does not have the dim); the index read there picks
the position along the source's indexed dim. Negative indices count from the end, as
in torch; one outside the dim reads 0 instead of faulting (torch raises there).

Mode "select": the output is src.shape[:d] + idx.shape + src.shape[d+1:]; "gather":
it is idx.shape, and every other dim of the source is read at the output's position.
"""

from __future__ import annotations

from ._emit import StageCode, strided, unravel, wrap_params
from ._gen_elementwise import SPAN_HELPER
from ._ir import Plan

__all__ = ["generate_gather"]

BLOCK = 1024


def _kernel(rank: int, tag: str) -> str:
    sizes = [f"size_{d}" for d in range(1, rank)]
    idx_strides = [f"stride_idx_{d}" for d in range(rank)]
    src_strides = [f"stride_src_{d}" for d in range(rank)]
    params = ["src_ptr", "idx_ptr", "out_ptr", "n_elements", "n_src", "stride_src_dim"] + sizes + idx_strides + src_strides
    lines = ["@triton.jit", f"def _gather_kernel{tag}(", *wrap_params(params),
             "    IDX64: tl.constexpr, BLOCK_SIZE: tl.constexpr,", "):",
             "    if IDX64:",
             "        offs = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
             "    else:",
             "        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
             "    mask = offs < n_elements",
             "    rem = offs"]
    lines += unravel(rank)
    lines.append("    at_idx = " + strided("c", "stride_idx", rank))
    lines.append("    at_src = " + strided("c", "stride_src", rank))
    lines += [
        "    pick = tl.load(idx_ptr + at_idx, mask=mask, other=0).to(tl.int64)",
        "    pick = tl.where(pick < 0, pick + n_src, pick)  # negative indices count from the end",
        "    inside = mask & (pick >= 0) & (pick < n_src)",
        "    value = tl.load(src_ptr + at_src + pick * stride_src_dim, mask=inside, other=0)",
        "    tl.store(out_ptr + offs, value.to(out_ptr.dtype.element_ty), mask=mask)",
    ]
    return "\n".join(lines) + "\n"


def generate_gather(plan: Plan, tag: str) -> StageCode:
    node = plan.node(plan.anchor_id)
    src, idx = (ref.value for ref in node.args)
    dim, mode = node.attr("dim"), node.attr("mode")
    rank = max(1, len(node.shape))
    entry = f"fused_gather{tag}"
    names = [leaf.name for leaf in plan.leaves]
    lines = [f"def {entry}({', '.join(names)}):",
             f"    src, idx = {src}, {idx}"]
    if mode == "select":
        lines += [f"    # out = src.shape[:{dim}] + idx.shape + src.shape[{dim} + 1:]",
                  f"    shape = tuple(src.shape[:{dim}]) + tuple(idx.shape) + tuple(src.shape[{dim} + 1:])",
                  f"    idx_strides = [0] * {dim} + list(idx.stride()) + [0] * (src.dim() - {dim} - 1)",
                  f"    src_strides = list(src.stride()[:{dim}]) + [0] * idx.dim() + list(src.stride()[{dim} + 1:])"]
    else:
        lines += ["    # out[..., i, ...] = src[..., idx[..., i, ...], ...] along the gathered dim",
                  "    shape = tuple(idx.shape)",
                  "    idx_strides = list(idx.stride())",
                  f"    src_strides = [0 if d == {dim} else s for d, s in enumerate(src.stride())]"]
    lines += [
        "    out = torch.empty(shape, dtype=src.dtype, device=src.device)",
        "    if out.numel() == 0:",
        "        return out",
        f"    pad = {rank} - len(shape)  # a 0-dim result: one element",
        "    sizes = [1] * pad + list(shape)",
        "    idx_strides, src_strides = [0] * pad + idx_strides, [0] * pad + src_strides",
        f"    _gather_kernel{tag}[(triton.cdiv(out.numel(), {BLOCK}),)](",
        f"        src, idx, out, out.numel(), src.shape[{dim}], src.stride({dim}), *sizes[1:], *idx_strides, *src_strides,",
        f"        IDX64=_needs_i64(out, src, idx), BLOCK_SIZE={BLOCK}, num_warps=4)",
        "    return out",
    ]
    return StageCode(kernels=(_kernel(rank, tag),), launcher="\n".join(lines) + "\n", entry=entry,
                     helpers=(SPAN_HELPER,))
