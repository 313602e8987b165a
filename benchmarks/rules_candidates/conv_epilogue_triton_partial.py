"""KernelBench level2/1 (Conv2d, ReLU, bias add): cuDNN does the convolution, an own Triton kernel the
ReLU and the per-channel bias (partial)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def relu_bias_kernel(y_ptr, bias_ptr, out_ptr, n_elements, hw, channels, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    y = tl.load(y_ptr + offs, mask=mask)
    c = (offs // hw) % channels
    b = tl.load(bias_ptr + c, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(y, 0.0) + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        out = torch.empty_like(y)
        n, c, h, w = y.shape
        relu_bias_kernel[(triton.cdiv(y.numel(), 4096),)](y, self.bias, out, y.numel(), h * w, c, BLOCK=4096)
        return out
