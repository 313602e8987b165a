"""Kernels a candidate repeats under other names are defined once (evokernel/builtin/_kernel_share.py):
29_SwinMLP's candidate compiled 305 kernels on its first call, past the H200 evaluation's 120 s."""

import re
import textwrap
from dataclasses import replace

import pytest

from builtin_case import check_in_interpreter
from evokernel.builtin import Unsupported, analyze, generate
from evokernel.builtin._kernel_share import share_identical_kernels

SOURCE = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl


    def _launch(kernel, grid, *args, **kwargs):
        return kernel[grid](*args, **kwargs)


    @triton.jit
    def scale_kernel_s1(block0_x_ptr, block0_out_ptr, n, block0_factor, BLOCK: tl.constexpr, block0_FLAG: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        block0_mask = offs < n
        v = tl.load(block0_x_ptr + offs, mask=block0_mask)
        if block0_FLAG:
            v = v * block0_factor
        tl.store(block0_out_ptr + offs, v, mask=block0_mask)


    @triton.jit
    def scale_kernel_s2(
        a_much_longer_name_for_block1_x_ptr, a_much_longer_name_for_block1_out_ptr,
        n, block1_factor, BLOCK: tl.constexpr, block1_FLAG: tl.constexpr
    ):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        block1_mask = offs < n
        v = tl.load(a_much_longer_name_for_block1_x_ptr + offs, mask=block1_mask)
        if block1_FLAG:
            v = v * block1_factor
        tl.store(a_much_longer_name_for_block1_out_ptr + offs, v, mask=block1_mask)


    @triton.jit
    def shift_kernel_s3(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr, FLAG: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        v = tl.load(x_ptr + offs, mask=mask)
        if FLAG:
            v = v + factor
        tl.store(out_ptr + offs, v, mask=mask)


    def run(x):
        n = x.numel()
        a, b, c = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
        _launch(scale_kernel_s1, (triton.cdiv(n, 64),), x, a, n, 2.0, BLOCK=64, block0_FLAG=True)
        _launch(scale_kernel_s2, (triton.cdiv(n, 64),), a, b, n, 3.0, BLOCK=64, block1_FLAG=True)
        _launch(shift_kernel_s3, (triton.cdiv(n, 64),), b, c, n, 1.0, BLOCK=64, FLAG=True)
        return c
''')


def _kernels(text: str) -> list[str]:
    return re.findall(r"@triton.jit\ndef (\w+)\(", text)


def test_a_kernel_repeated_under_other_names_is_defined_once_and_its_launches_renamed():
    shared = share_identical_kernels(SOURCE)
    assert _kernels(shared) == ["scale_kernel_s1", "shift_kernel_s3"]  # s3 differs: + not *
    assert "_launch(scale_kernel_s1, (triton.cdiv(n, 64),), a, b, n, 3.0, BLOCK=64, block0_FLAG=True)" in shared
    compile(shared, "shared", "exec")


def test_the_shared_kernels_compute_what_the_repeated_ones_did(tmp_path):
    check = ("import torch\nx = torch.arange(100, dtype=torch.float32)\n"
             "assert torch.equal(mod.run(x), x * 6 + 1)\nprint('same')\n")
    check_in_interpreter(tmp_path, check, share_identical_kernels(SOURCE), "same")


def test_a_kernel_launched_through_an_alias_with_a_renamed_keyword_is_kept():
    launch = "    _launch(scale_kernel_s2, (triton.cdiv(n, 64),), a, b, n, 3.0, BLOCK=64, block1_FLAG=True)"
    assert launch in SOURCE
    aliased = SOURCE.replace(launch, "    k = scale_kernel_s2\n"
                                     "    _launch(k, (triton.cdiv(n, 64),), a, b, n, 3.0, BLOCK=64, block1_FLAG=True)")
    assert _kernels(share_identical_kernels(aliased)) == ["scale_kernel_s1", "scale_kernel_s2", "shift_kernel_s3"]
    # an alias whose launches pass no renamed parameter by keyword is replaced
    positional = SOURCE.replace(launch, "    k = scale_kernel_s2\n"
                                        "    _launch(k, (triton.cdiv(n, 64),), a, b, n, 3.0, 64, True)")
    shared = share_identical_kernels(positional)
    assert _kernels(shared) == ["scale_kernel_s1", "shift_kernel_s3"] and "k = scale_kernel_s1\n" in shared


def test_names_a_decorator_mentions_are_part_of_the_kernel():
    tuned = SOURCE.replace("@triton.jit\ndef scale_kernel_s1(",
                           "@triton.autotune(configs=[triton.Config({})], key=['n', 'block0_factor'])\n"
                           "@triton.jit\ndef scale_kernel_s1(")
    tuned = tuned.replace("@triton.jit\ndef scale_kernel_s2(",
                          "@triton.autotune(configs=[triton.Config({})], key=['n', 'block1_factor'])\n"
                          "@triton.jit\ndef scale_kernel_s2(")
    assert len(_kernels(share_identical_kernels(tuned))) == 3


def test_a_kernel_another_kernel_calls_is_kept():
    line = "    v = tl.load(x_ptr + offs, mask=mask)\n"
    assert line in SOURCE
    called = SOURCE.replace(line, line + "    scale_kernel_s2\n")
    assert "scale_kernel_s2" in _kernels(share_identical_kernels(called))


MLP = '''
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + torch.relu(self.fc(self.norm(x)))


class Model(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.Sequential(*[Block(width) for _ in range(depth)])

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(4, 32)]


def get_init_inputs():
    return [32, 4]
'''


@pytest.mark.parametrize("rules", ["kernelbench", "strict"])
def test_a_model_of_repeated_blocks_compiles_each_kernel_once_and_is_correct(cpu_executor, tmp_path, rules,
                                                                             monkeypatch):
    from backends import EvalOptions

    import evokernel.builtin._emit as emit
    from builtin_case import explain, ok

    path = tmp_path / "blocks.py"
    path.write_text(MLP)
    plan = analyze(path, rules)
    assert not isinstance(plan, Unsupported), plan.reason
    source = generate(plan)
    with monkeypatch.context() as patched:
        patched.setattr(emit, "share_identical_kernels", lambda text: text)
        unshared = _kernels(generate(replace(plan)))  # a copy writes afresh (the plan keeps what analyze wrote)
    # four blocks, about one block's kernels (the first block's epilogue reads the model's input, not a buffer)
    assert 0 < len(_kernels(source)) * 3 <= len(unshared), (_kernels(source), unshared)
    result = cpu_executor.evaluate(path, source, backend="triton",
                                   options=EvalOptions.from_dict({"rules": rules, "timing": False, "baselines": False,
                                                                  "trials": 2}))
    assert ok(result), explain(result)
