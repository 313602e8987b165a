"""KernelBench level1/23 (softmax over dim 1 of a 4096 x 393216 input): an online softmax in Triton,
one program per row, two passes over the row (clean)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_row
    out_row = out_ptr + row * stride_row
    neg_inf = -float("inf")
    m = tl.full((BLOCK,), neg_inf, tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=neg_inf)
        m_new = tl.maximum(m, x)
        # lanes that have seen nothing yet stay at -inf: keep their sum at 0, not NaN
        scale = tl.where(m_new == neg_inf, 0.0, tl.exp(m - m_new))
        s = s * scale + tl.where(x == neg_inf, 0.0, tl.exp(x - m_new))
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(tl.where(m == neg_inf, 0.0, s * tl.exp(m - row_max)), axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=neg_inf)
        tl.store(out_row + cols, tl.exp(x - row_max) / total, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        block = min(4096, triton.next_power_of_2(cols))
        softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=block, num_warps=8)
        return out
