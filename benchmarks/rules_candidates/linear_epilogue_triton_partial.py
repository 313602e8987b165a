"""KernelBench level2/9: cuBLAS does the linear (torch.nn.functional.linear), an own Triton kernel the
subtract-multiply-ReLU epilogue. Partial: disallowed under strict, allowed under kernelbench, where the
own-kernel share shows how little of the time the own kernel takes."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def sub_mul_relu_kernel(y_ptr, out_ptr, n_elements, sub, mul, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum((y - sub) * mul, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x):
        y = F.linear(x, self.linear.weight, self.linear.bias)
        out = torch.empty_like(y)
        n = y.numel()
        sub_mul_relu_kernel[(triton.cdiv(n, 4096),)](y, out, n, self.subtract_value, self.multiply_value, BLOCK=4096)
        return out
