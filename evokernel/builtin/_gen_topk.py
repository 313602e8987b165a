"""torch.topk's positions (int64, best first): a row kernel, ``ROWS`` rows of the input per
program, a row being the input along the topk dim and every other dim a row coordinate.

Pass j picks the best element after pass j-1's in the order (value descending, position
ascending): the largest value below the previous one, or equal to it at a later position.
Each pass is a max and a min over the row, with nothing to sort or mark, so a row that
fits one block is loaded once and a longer one is walked in blocks per pass (exact for any
length; k passes of n elements). The smallest values are the largest of the negated row
(negation is exact). Of equal values the first position comes first; torch leaves that
order unspecified, and the values read at the positions (a gather) agree either way.
NaN is not ordered here (torch ranks it above every number).
"""

from __future__ import annotations

from ._config import next_pow2
from ._emit import StageCode, strided, unravel, wrap_params
from ._ir import Plan

__all__ = ["generate_topk"]

MAX_BLOCK = 2048  # a row up to this long stays in registers; a longer one is walked in blocks this size
ROW_ELEMENTS = 2048  # short rows are packed into one program up to this many elements


def _kernel(rank: int, tag: str, compute: str, one_block: bool) -> str:
    rows_rank = max(1, rank - 1)  # the row coordinates (a 1-D input: one row)
    sizes = [f"size_{d}" for d in range(1, rows_rank)]
    x_strides = [f"stride_x_{d}" for d in range(rows_rank)]
    out_strides = [f"stride_o_{d}" for d in range(rows_rank)]
    params = ["x_ptr", "out_ptr", "n_rows", "n", "stride_n", "stride_k"] + sizes + x_strides + out_strides
    lines = ["@triton.jit", f"def _topk_kernel{tag}(", *wrap_params(params),
             "    K: tl.constexpr, LARGEST: tl.constexpr, ROWS: tl.constexpr, BLOCK_N: tl.constexpr,", "):",
             "    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)",
             "    row_ok = rows < n_rows",
             "    rem = rows"]
    lines += unravel(rows_rank)
    lines.append("    x_row = x_ptr + " + strided("c", "stride_x", rows_rank))
    lines.append("    out_row = out_ptr + " + strided("c", "stride_o", rows_rank))
    lines += [
        "    cols = tl.arange(0, BLOCK_N)",
        # the previous pick: +inf at position -1 lets every element through the first pass
        f"    prev_v = tl.full([ROWS], float('inf'), {compute})",
        "    prev_i = tl.full([ROWS], -1, tl.int64)",
    ]
    if one_block:
        lines += [
            "    inside = row_ok[:, None] & (cols[None, :] < n)",
            f"    v = tl.load(x_row[:, None] + cols[None, :].to(tl.int64) * stride_n, mask=inside, other=0).to({compute})",
            "    if not LARGEST:",
            "        v = -v",
            "    at = cols[None, :].to(tl.int64)",
            "    for j in range(K):",
            "        later = (v < prev_v[:, None]) | ((v == prev_v[:, None]) & (at > prev_i[:, None]))",
            "        cand = inside & later",
            "        best = tl.max(tl.where(cand, v, float('-inf')), axis=1)",
            "        pick = tl.min(tl.where(cand & (v == best[:, None]), at, n), axis=1)",
            "        tl.store(out_row + j * stride_k, pick, mask=row_ok)",
            "        prev_v, prev_i = best, pick",
        ]
    else:
        lines += [
            "    for j in range(K):",
            f"        best = tl.full([ROWS], float('-inf'), {compute})",
            "        pick = tl.full([ROWS], n, tl.int64)",
            "        for start in range(0, n, BLOCK_N):",
            "            at = start + cols[None, :].to(tl.int64)",
            "            inside = row_ok[:, None] & (at < n)",
            f"            v = tl.load(x_row[:, None] + at * stride_n, mask=inside, other=0).to({compute})",
            "            if not LARGEST:",
            "                v = -v",
            "            later = (v < prev_v[:, None]) | ((v == prev_v[:, None]) & (at > prev_i[:, None]))",
            "            cand = inside & later",
            "            block_best = tl.max(tl.where(cand, v, float('-inf')), axis=1)",
            "            block_pick = tl.min(tl.where(cand & (v == block_best[:, None]), at, n), axis=1)",
            # an earlier block keeps a tie (its position is smaller)
            "            better = (block_pick < n) & ((block_best > best) | (pick == n))",
            "            best = tl.where(better, block_best, best)",
            "            pick = tl.where(better, block_pick, pick)",
            "        tl.store(out_row + j * stride_k, pick, mask=row_ok)",
            "        prev_v, prev_i = best, pick",
        ]
    return "\n".join(lines) + "\n"


def generate_topk(plan: Plan, tag: str) -> StageCode:
    node = plan.node(plan.anchor_id)
    (src,) = (ref.value for ref in node.args)
    dim, k, largest = node.attr("dim"), node.attr("k"), node.attr("largest")
    rank = len(node.shape)
    n = plan.leaf(src).spec.shape[dim]
    block_n = min(next_pow2(n), MAX_BLOCK)
    one_block = n <= block_n
    rows = max(1, ROW_ELEMENTS // block_n)
    compute = "tl.float64" if plan.leaf(src).spec.dtype == "float64" else "tl.float32"
    entry = f"fused_topk{tag}"
    names = [leaf.name for leaf in plan.leaves]
    lines = [f"def {entry}({', '.join(names)}):",
             f"    _x = {src}",
             f"    _shape = tuple(_x.shape[:{dim}]) + ({k},) + tuple(_x.shape[{dim} + 1:])",
             "    _out = torch.empty(_shape, dtype=torch.int64, device=_x.device)",
             f"    _rest = [_d for _d in range(_x.dim()) if _d != {dim}] or [{dim}]  # a 1-D input: one row",
             "    _sizes = [_x.shape[_d] if _d != " + str(dim) + " else 1 for _d in _rest]",
             f"    _n_rows = _out.numel() // {k}",
             "    if _n_rows == 0:",
             "        return _out",
             f"    _topk_kernel{tag}[(triton.cdiv(_n_rows, {rows}),)](",
             f"        _x, _out, _n_rows, _x.shape[{dim}], _x.stride({dim}), _out.stride({dim}), *_sizes[1:],",
             "        *[_x.stride(_d) for _d in _rest], *[_out.stride(_d) for _d in _rest],",
             f"        K={k}, LARGEST={bool(largest)}, ROWS={rows}, BLOCK_N={block_n}, num_warps=4)",
             "    return _out"]
    return StageCode(kernels=(_kernel(rank, tag, compute, one_block),), launcher="\n".join(lines) + "\n", entry=entry)
