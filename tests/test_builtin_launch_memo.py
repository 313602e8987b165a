"""A generated launcher's memo: the second launch with the same shapes calls the compiled
kernel's own launcher with exactly the arguments Triton would have bound, and nothing is
memoised where no compiled kernel comes back (the CPU interpreter).

On the GPU, `kernel[grid](...)` returns the compiled kernel and `compiled[grid](*args)` takes
every parameter in declaration order, constexprs included; here a stand-in kernel records both
entries, so the test checks the order the GPU path relies on without a GPU."""

from __future__ import annotations

import inspect

import torch

from backends._task import import_file
from builtin_case import Case, write
from evokernel.builtin import analyze, default_config, generate

CASE = Case("bn_relu_add", "x, y: return torch.relu(x * self.scale + self.shift) + y",
            "[torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5)]",
            init="self.scale = nn.Parameter(torch.randn(3, 1, 1))\nself.shift = nn.Parameter(torch.randn(3, 1, 1))")


class _Compiled:
    def __init__(self, record):
        self.record = record

    def __getitem__(self, grid):
        return lambda *args: self.record.append(("runner", grid, args))


class _Kernel:
    """Stands in for a @triton.jit function: binds like Triton (positional, then keywords in
    declaration order) and returns a compiled kernel, or None as the interpreter does."""

    def __init__(self, fn, record, compiled: bool):
        self.params = [p for p in inspect.signature(fn.fn).parameters]
        self.record, self.compiled = record, compiled

    def __getitem__(self, grid):
        def launch(*args, num_warps=None, **kwargs):
            bound = list(args) + [kwargs[name] for name in self.params[len(args):]]
            self.record.append(("jit", grid, tuple(bound)))
            return _Compiled(self.record) if self.compiled else None

        return launch


def _candidate(tmp_path, compiled: bool):
    task = write(CASE, tmp_path)
    plan = analyze(str(task), "strict")
    source = generate(plan, default_config(plan))
    path = tmp_path / f"cand_{compiled}.py"
    path.write_text(source)
    module = import_file(path, "cand_memo")
    record: list = []
    for name, value in list(vars(module).items()):
        if name.startswith("_fused_pointwise_kernel"):
            setattr(module, name, _Kernel(value, record, compiled))
    return module, record


def _call_twice(module, x, y):
    model = module.ModelNew()
    model(x, y)
    model(x + 1, y)  # same shapes, strides and alignment: the memo's key


def test_a_repeated_launch_calls_the_compiled_kernel_with_the_arguments_triton_bound(tmp_path):
    module, record = _candidate(tmp_path, compiled=True)
    x, y = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5)
    _call_twice(module, x, y)
    assert [entry[0] for entry in record] == ["jit", "runner"]
    (_, jit_grid, jit_args), (_, runner_grid, runner_args) = record
    assert runner_grid == tuple(jit_grid) + (1,) * (3 - len(jit_grid))  # the compiled launcher reads three dims
    assert len(runner_args) == len(jit_args)
    for a, b in zip(jit_args, runner_args):
        if isinstance(a, torch.Tensor):
            assert isinstance(b, torch.Tensor) and a.shape == b.shape
        else:
            assert a == b


def test_a_new_shape_goes_through_triton_again(tmp_path):
    module, record = _candidate(tmp_path, compiled=True)
    model = module.ModelNew()
    model(torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5))
    model(torch.randn(4, 3, 2, 5), torch.randn(4, 3, 2, 5))
    assert [entry[0] for entry in record] == ["jit", "jit"]


def test_nothing_is_memoised_without_a_compiled_kernel(tmp_path):
    module, record = _candidate(tmp_path, compiled=False)
    x, y = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5)
    _call_twice(module, x, y)
    assert [entry[0] for entry in record] == ["jit", "jit"]


def test_forward_reads_tensors_from_their_submodules_found_once():
    from evokernel.builtin._emit import _owner_chains

    lines, owners = _owner_chains([
        "buf0 = f(self.layer1[0].bn1.running_var.view(-1, 1, 1), self.fc.weight.T, self.h0.to(x.device))",
        "return g(self.w[0], self.layer1[0].bn1.weight, self.blocks[2].qkv.weight.transpose(-2, -1))",
    ])
    assert owners == ["self.layer1[0].bn1", "self.fc", "self.blocks[2].qkv"]
    assert lines == [
        "buf0 = f(owners[0].running_var.view(-1, 1, 1), owners[1].weight.T, self.h0.to(x.device))",
        "return g(self.w[0], owners[0].weight, owners[2].weight.transpose(-2, -1))",
    ]
