"""Answers shaped like real models' answers, written for these tests.

Real answers to kernel prompts differ from a clean single block: reasoning
sections with drafts and pseudo-code, fence labels such as ```triton, a whole
file followed by a snippet or a test block, pieces across blocks, CUDA source
in its own ```cuda block, and answers cut by the token limit. These are our
own texts with those shapes, for the task in tests/executor_cases/task_add_relu.py
(relu(x + y) * 2).
"""

from __future__ import annotations

HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"

KERNEL = '''
@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0) * 2.0, mask=mask)
'''

# A draft a model writes while reasoning: it forgets the factor 2 (a wrong result if run).
DRAFT_KERNEL = KERNEL.replace(" * 2.0, mask=mask)", ", mask=mask)")

MODEL_NEW = '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x = x.contiguous()
        y = y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        add_relu_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
'''

GOOD_FILE = HEADER + KERNEL + "\n" + MODEL_NEW
DRAFT_FILE = HEADER + DRAFT_KERNEL + "\n" + MODEL_NEW


def fence(code: str, label: str = "python") -> str:
    return f"```{label}\n{code.strip()}\n```"


# Case 1: reasoning inline (vLLM/Ollama with a Qwen3- or R1-style model). The
# reasoning holds a faulty draft and a pseudo-code fence; the answer after it
# holds the final file.
THINK_THEN_ANSWER = f"""<think>
The operator is relu(x + y) * 2, purely elementwise, so one pass over memory is enough.
Let me draft it first.

{fence(DRAFT_FILE)}

Wait, I dropped the multiplication by two. The structure should be:

```
for each block of offsets:
    load x, y (masked)
    store max(x + y, 0) * 2
```

That is one load per input and one store, so it is bandwidth bound. Block 1024 is fine.
</think>

The kernel fuses the add, the ReLU and the scale into a single pass:

{fence(GOOD_FILE)}

Each program handles 1024 elements and masks the tail.
"""

# The same reasoning, with the final file under the label of the language it is written in:
# a parser that only knows ```python finds nothing but the draft.
THINK_THEN_TRITON = THINK_THEN_ANSWER.replace(fence(GOOD_FILE), fence(GOOD_FILE, "triton"))

# The chat template opened the section in the prompt: only the closing tag is in the text.
CLOSE_TAG_ONLY = THINK_THEN_ANSWER.replace("<think>\n", "", 1)

# Case 2: the model labels the fence with the language it writes in.
TRITON_LABEL = "Here is a fused Triton implementation.\n\n" + fence(GOOD_FILE, "triton") + "\n"

# Case 3: a whole file, then a snippet quoted while explaining, then a test block.
FILE_SNIPPET_TEST = f"""I wrote one fused kernel.

{fence(GOOD_FILE)}

The important part is the launch inside `forward`:

```python
class ModelNew(nn.Module):
    def forward(self, x, y):
        add_relu_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
```

You can check it like this:

```python
model = ModelNew().cuda()
x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
print((model(x, y) - torch.relu(x + y) * 2).abs().max())
```
"""

# Pieces across blocks: imports and kernel in one, ModelNew in another, then a test
# block and a later stub; only the first two make the file.
PIECES = f"""First the kernel:

{fence(HEADER + KERNEL)}

Then the module that launches it:

{fence(MODEL_NEW)}

Usage:

{fence("if __name__ == '__main__':" + chr(10) + "    m = ModelNew()" + chr(10) + "    print(m(torch.ones(8), torch.ones(8)))")}

If you prefer, the class can also be declared like this:

```python
class ModelNew(nn.Module):
    ...
```
"""

# Case 4: the token limit cut a second, improved version; the first one is a draft.
CUT_SECOND_VERSION = f"""A first version:

{fence(DRAFT_FILE)}

Now an improved version that also handles the scale correctly:

```python
{HEADER}
@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_el"""

# Code without any fence, with a sentence before and after.
BARE = "Sure.\n" + GOOD_FILE + "\nThis fuses the three operations.\n"
BARE_WITHOUT_MODEL_NEW = "Sure.\n" + HEADER + KERNEL + "\nThe module is left to you.\n"

# A CUDA answer: the kernel in a ```cuda block, the Python file naming it.
CUDA_KERNEL = r'''
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void add_relu_kernel(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i] + y[i];
        out[i] = (v > 0.f ? v : 0.f) * 2.f;
    }
}

torch::Tensor add_relu(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.is_cuda() && y.is_cuda(), "inputs must be CUDA tensors\n");
    auto out = torch::empty_like(x);
    int n = x.numel();
    add_relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
'''

CUDA_PYTHON = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = "torch::Tensor add_relu(torch::Tensor x, torch::Tensor y);"

module = load_inline(
    name="add_relu_ext",
    cpp_sources=cpp_src,
    cuda_sources=cuda_src,
    functions=["add_relu"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return module.add_relu(x.contiguous(), y.contiguous())
'''

CUDA_SPLIT = f"""The CUDA kernel:

{fence(CUDA_KERNEL, "cuda")}

And the Python side that builds it (`cuda_src` is the source above):

{fence(CUDA_PYTHON)}
"""
