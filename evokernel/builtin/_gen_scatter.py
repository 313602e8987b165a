"""Indexed writes (scatter, scatter_add, index_add; see _canon_route): two kernels.

The first makes the output's start: a strided copy of the base tensor, or its constant
(``torch.zeros_like`` of a computed value) filled in place. The second walks the index
(scatter: an element per index element, the source read at its coordinates) or the source
(index_add: its position along ``dim`` the 1-D index's entry there), every other coordinate
the output's own, and stores its value there, or adds it atomically. A plain write of two
elements to one place keeps either (torch does not say which); adds in float32 land in any
order, a rounding difference well within the tolerance. An index outside the dim writes
nothing (torch raises there).
"""

from __future__ import annotations

from ._emit import StageCode, strided, unravel, wrap_params
from ._gen_elementwise import SPAN_HELPER
from ._ir import Plan
from ._pointwise import literal

__all__ = ["generate_scatter"]

BLOCK = 1024


def _head(name: str, params: list[str], constexprs: str) -> list[str]:
    return ["@triton.jit", f"def {name}(", *wrap_params(params), f"    {constexprs}", "):",
            "    if IDX64:",
            "        offs = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
            "    else:",
            "        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
            "    mask = offs < n_elements"]


def _init_kernel(rank: int, tag: str, compute: str) -> str:
    sizes = [f"size_{d}" for d in range(1, rank)]
    params = ["base_ptr", "out_ptr", "n_elements", "fill"] + sizes + [f"stride_b_{d}" for d in range(rank)]
    lines = _head(f"_scatter_init{tag}", params, "HAS_BASE: tl.constexpr, IDX64: tl.constexpr, BLOCK_SIZE: tl.constexpr,")
    lines += ["    if HAS_BASE:", *("    " + line for line in ["    rem = offs"] + unravel(rank)),
              f"        v = tl.load(base_ptr + {strided('c', 'stride_b', rank)}, mask=mask, other=0)",
              "    else:",
              f"        v = tl.zeros([BLOCK_SIZE], {compute}) + fill",
              "    tl.store(out_ptr + offs, v.to(out_ptr.dtype.element_ty), mask=mask)"]
    return "\n".join(lines) + "\n"


def _write_kernel(rank: int, tag: str, compute: str) -> str:
    sizes = [f"size_{d}" for d in range(1, rank)]
    strides = [f"stride_{who}_{d}" for who in ("i", "s", "o") for d in range(rank)]
    params = ["idx_ptr", "src_ptr", "out_ptr", "n_elements", "n_dim", "stride_out_dim"] + sizes + strides + ["value", "alpha"]
    lines = _head(f"_scatter_kernel{tag}", params, "HAS_SRC: tl.constexpr, ADD: tl.constexpr, SCALED: tl.constexpr, "
                  "IDX64: tl.constexpr, BLOCK_SIZE: tl.constexpr,")
    lines += ["    rem = offs"] + unravel(rank)
    lines += [
        f"    pick = tl.load(idx_ptr + {strided('c', 'stride_i', rank)}, mask=mask, other=0).to(tl.int64)",
        "    inside = mask & (pick >= 0) & (pick < n_dim)",
        "    if HAS_SRC:",
        f"        v = tl.load(src_ptr + {strided('c', 'stride_s', rank)}, mask=inside, other=0)",
        "        if SCALED:",
        f"            v = v.to({compute}) * alpha",
        "    else:",
        f"        v = tl.zeros([BLOCK_SIZE], {compute}) + value",
        f"    target = out_ptr + {strided('c', 'stride_o', rank)} + pick * stride_out_dim",
        "    if ADD:",
        "        tl.atomic_add(target, v.to(out_ptr.dtype.element_ty), mask=inside)",
        "    else:",
        "        tl.store(target, v.to(out_ptr.dtype.element_ty), mask=inside)",
    ]
    return "\n".join(lines) + "\n"


def generate_scatter(plan: Plan, tag: str) -> StageCode:
    node = plan.node(plan.anchor_id)
    dim, walk, add = node.attr("dim"), node.attr("walk"), bool(node.attr("add"))
    fill, value, alpha = node.attr("fill"), node.attr("value"), float(node.attr("alpha"))
    rank = len(node.shape)
    operands = [ref.value for ref in node.args]
    base = operands.pop(0) if fill is None else None
    idx = operands.pop(0)
    src = operands.pop(0) if value is None else None
    out_dtype = plan.out_spec.dtype
    compute = "tl.float64" if out_dtype == "float64" else "tl.float32"
    entry = f"fused_scatter{tag}"
    names = [leaf.name for leaf in plan.leaves]
    # the operands first, all at once: a leaf's name may be one of the locals below
    lines = [f"def {entry}({', '.join(names)}):",
             f"    _base, _idx, _src = {base or 'None'}, {idx}, {src or 'None'}"]
    if base is None:
        lines.append(f"    _out = torch.empty({tuple(node.shape)!r}, dtype=torch.{out_dtype}, device=_idx.device)")
    else:
        lines.append("    _out = torch.empty(_base.shape, dtype=_base.dtype, device=_base.device)")
    lines += [
        "    if _out.numel() == 0:",
        "        return _out",
        "    # the start: the base copied, or the constant it was",
        f"    _scatter_init{tag}[(triton.cdiv(_out.numel(), {BLOCK}),)](",
        f"        _out if _base is None else _base, _out, _out.numel(), {literal(fill or 0.0)}, *_out.shape[1:],",
        f"        *(_base.stride() if _base is not None else [0] * {rank}),",
        "        HAS_BASE=_base is not None, IDX64=_needs_i64(_out, *([_base] if _base is not None else [])),",
        f"        BLOCK_SIZE={BLOCK}, num_warps=4)",
    ]
    if walk == "index":  # scatter: out[..., idx[c], ...] = src[c] at every index coordinate c
        lines += ["    _walk = tuple(_idx.shape)", "    _idx_strides = list(_idx.stride())"]
    else:  # index_add: out[..., idx[c_dim], ...] += src[c] at every source coordinate c
        lines += ["    _walk = tuple(_src.shape)",
                  f"    _idx_strides = [0] * {dim} + [_idx.stride(0)] + [0] * {rank - dim - 1}"]
    lines += [
        "    _n_walk = " + ("_idx.numel()" if walk == "index" else "_src.numel()"),
        "    if _n_walk == 0:",
        "        return _out",
        f"    _src_strides = list(_src.stride()) if _src is not None else [0] * {rank}",
        f"    _out_strides = [0 if _d == {dim} else _s for _d, _s in enumerate(_out.stride())]",
        f"    _scatter_kernel{tag}[(triton.cdiv(_n_walk, {BLOCK}),)](",
        f"        _idx, _out if _src is None else _src, _out, _n_walk, _out.shape[{dim}], _out.stride({dim}), *_walk[1:],",
        f"        *_idx_strides, *_src_strides, *_out_strides, {literal(value or 0.0)}, {literal(alpha)},",
        f"        HAS_SRC=_src is not None, ADD={add}, SCALED={alpha != 1.0}, IDX64=_needs_i64(_out, _idx, *([_src] if _src is not None else [])),",
        f"        BLOCK_SIZE={BLOCK}, num_warps=4)",
        "    return _out",
    ]
    return StageCode(kernels=(_init_kernel(rank, tag, compute), _write_kernel(rank, tag, compute)),
                     launcher="\n".join(lines) + "\n", entry=entry, helpers=(SPAN_HELPER,))
