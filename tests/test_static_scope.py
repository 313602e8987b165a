"""The static rules' scope: what ModelNew runs, not what else the file holds,
and of that what the GPU path runs.

Mostly parse-only checks (fast), on small candidates that each isolate one
question of scope or classification; the last few run a candidate with a CPU
fallback in the session's CPU worker, where only the fallback can run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backends import Verdict, get_backend, static_findings, static_rejection
from backends._static import off_accelerator_lines, scope

from executor_candidates import ADD_RELU_KERNEL, HEADER, HONEST

CASES = Path(__file__).parent / "executor_cases"
FORWARD = """
class ModelNew(nn.Module):
    def forward(self, x, y):
        return add_relu(x, y)
"""
HONEST_SOURCE = HEADER + ADD_RELU_KERNEL + FORWARD


def rules_of(source: str, rules: str = "strict") -> set[str]:
    return {f.rule for f in static_findings(source, rules)}


def test_honest_catalogue_is_clean():
    for name, (_, source) in HONEST.items():
        assert static_findings(source) == [], name


def test_task_functions_and_constants_in_the_file_are_ignored():
    # What LLM answers look like: the task's sizes and get_inputs repeated, with torch.rand and a reseed.
    source = HONEST_SOURCE + """
batch_size = 16
dim = 16384


def get_inputs():
    torch.manual_seed(0)
    x = torch.rand(batch_size, dim)
    return [x, torch.randn_like(x).relu()]


def get_init_inputs():
    return []


def get_input_groups():
    return [get_inputs()]
"""
    assert static_findings(source) == []


def test_main_block_and_unreached_helpers_are_ignored():
    source = HONEST_SOURCE + """
def reference_check(x, y):
    return torch.relu(x + y) * 2  # never called by ModelNew


if __name__ == "__main__":
    import time
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    t0 = time.perf_counter()
    print(torch.allclose(ModelNew()(x, y), reference_check(x, y)), time.perf_counter() - t0)
"""
    assert static_findings(source) == []


def test_helpers_reached_from_forward_are_checked_transitively():
    source = HEADER + ADD_RELU_KERNEL + """
def finish(t):
    return torch.tanh(t)


def launch(x, y):
    return finish(add_relu(x, y))


class ModelNew(nn.Module):
    def forward(self, x, y):
        return launch(x, y)
"""
    found = static_findings(source)
    assert [f.rule for f in found] == ["torch-compute"] and "torch.tanh" in found[0].message
    assert rules_of(source, "kernelbench") == set()


def test_helpers_reached_through_an_alias_are_checked():
    source = HEADER + ADD_RELU_KERNEL + """
def finish(t):
    return torch.tanh(t)


post = finish


class ModelNew(nn.Module):
    def forward(self, x, y):
        return post(add_relu(x, y))
"""
    assert rules_of(source) == {"torch-compute"}


def test_setup_code_may_compute_but_not_cheat():
    # Weights and tables built in __init__ or at import are setup, not the forward's computation.
    source = HEADER + ADD_RELU_KERNEL + """
TABLE = torch.cos(torch.arange(16.0))


def make_scale(n):
    return torch.linspace(0, 1, n).exp()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", make_scale(16))

    def forward(self, x, y):
        return add_relu(x, y)
"""
    assert static_findings(source) == []
    cheating = source.replace("TABLE = torch.cos(torch.arange(16.0))", "torch.manual_seed(0)")
    assert rules_of(cheating) == {"reseed"}


def test_metadata_calls_are_not_compute():
    source = HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        if torch.is_grad_enabled() or not torch.is_floating_point(x):
            raise ValueError("inference on floats only")
        dev = torch.cuda.current_device() if torch.cuda.is_available() else None
        n = torch.numel(x)
        assert x.dtype == torch.float32 and x.shape == y.shape and n == x.numel(), dev
        z = torch.reshape(x, (-1,)).view(x.shape)
        return add_relu(z, y)
"""
    assert static_findings(source) == []


def test_global_holding_a_compiled_extension_is_allowed():
    source = HEADER + ADD_RELU_KERNEL + """
_cache = None


def _kernel():
    global _cache
    if _cache is None:
        _cache = add_relu
    return _cache


class ModelNew(nn.Module):
    def forward(self, x, y):
        return _kernel()(x, y)
"""
    assert static_findings(source) == []


def test_the_candidates_own_model_class_is_not_the_reference():
    # Answers sometimes keep a copy of the reference under its name; it is the candidate's own code.
    source = HEADER + ADD_RELU_KERNEL + """
class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y) * 2


class ModelNew(nn.Module):
    def forward(self, x, y):
        return add_relu(x, y)
"""
    assert static_findings(source) == []
    imported = "from task import Model\n" + HONEST_SOURCE
    assert rules_of(imported) == {"reference"}


@pytest.mark.parametrize("line, rule", [
    ("from torch.cuda import Stream", "stream"),
    ("s = getattr(torch.cuda, 'Stream')", "stream"),
    ("ns = torch.cuda.__dict__", "reference"),
    ("ctx = torch.autocast('cuda')", "reduced-precision"),
    ("torch.set_float32_matmul_precision('medium')", "global-state"),
    ("g = torch.cuda.CUDAGraph()", "cuda-graph"),
    ("import time", "timer"),
])
def test_cheating_is_caught_in_any_spelling(line, rule):
    source = HEADER + ADD_RELU_KERNEL + f"\n{line}\n" + FORWARD
    assert rule in rules_of(source), static_findings(source)
    assert rule in rules_of(source, "kernelbench")


def test_verdicts_name_the_rule_and_the_rule_set_that_allows_it():
    triton = get_backend("triton")
    partial = HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.tanh(add_relu(x, y))
"""
    strict = static_rejection(partial, triton, "strict")
    assert strict.status == Verdict.DISALLOWED and strict.rules == "strict"
    assert "torch-compute" in strict.message and "--rules kernelbench allows it" in strict.message
    assert static_rejection(partial, triton, "kernelbench") is None

    fallback = partial.replace("        return torch.tanh(add_relu(x, y))",
                               "        try:\n            return add_relu(x, y)\n        except RuntimeError:\n            return x")
    for rules in ("strict", "kernelbench"):
        r = static_rejection(fallback, triton, rules)
        assert r.status == Verdict.DISALLOWED and "try-except" in r.message and "allows it" not in r.message

    timer = HONEST_SOURCE.replace("class ModelNew", "import timeit\n\n\nclass ModelNew")
    r = static_rejection(timer, triton, "kernelbench")
    assert r.status == Verdict.HACK and "timer" in r.message


def test_hack_outranks_disallowed_in_one_candidate():
    source = HEADER + ADD_RELU_KERNEL + """
import threading


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.tanh(add_relu(x, y))
"""
    r = static_rejection(source, get_backend("triton"), "strict")
    assert r.status == Verdict.HACK and "thread" in r.message
    assert "torch-compute" in r.feedback  # every finding is listed


def test_scope_reports_contexts():
    s = scope(__import__("ast").parse(HEADER + ADD_RELU_KERNEL + """
def build():
    return 1


def step(x):
    return x


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = build()

    def forward(self, x, y):
        return step(add_relu(x, y))


def get_inputs():
    return []
"""))
    assert s.reached["build"] == "setup" and s.reached["step"] == "forward" and s.reached["add_relu"] == "forward"
    assert "get_inputs" not in s.reached


# ---------------------------------------------------------------- code the GPU path never runs

CPU_FALLBACK = HEADER + ADD_RELU_KERNEL + """
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, x, y):
        if not x.is_cuda:
            return torch.relu(x + y) * 2
        return add_relu(x, y)
"""


@pytest.mark.parametrize("forward, off_gpu", [
    # the body of a test that only holds off the GPU
    ("if not x.is_cuda:\n            return F.relu(x + y) * 2\n        return add_relu(x, y)", True),
    ("if x.device.type == 'cpu' or not torch.cuda.is_available():\n            return F.relu(x + y) * 2\n"
     "        return add_relu(x, y)", True),
    # the else of a test that always holds on the GPU, and what follows an if that returns
    ("if x.is_cuda and y.device.type == 'cuda':\n            return add_relu(x, y)\n        else:\n"
     "            return torch.relu(x + y) * 2", True),
    ("if x.is_cuda:\n            return add_relu(x, y)\n        z = torch.softmax(x, -1)\n        return z", True),
    ("return add_relu(x, y) if x.is_cuda else torch.relu(x + y) * 2", True),
    # ...but not when the GPU may take that way too
    ("if x.is_cuda and x.numel() > 4096:\n            return add_relu(x, y)\n        return torch.relu(x + y) * 2", False),
    ("if not x.is_cuda or x.numel() < 8:\n            return torch.relu(x + y) * 2\n        return add_relu(x, y)", False),
    ("if x.is_cuda:\n            x = x.contiguous()\n        return torch.relu(add_relu(x, y))", False),
])
def test_compute_only_reachable_off_the_gpu_is_not_the_gpu_paths(forward, off_gpu):
    source = HEADER + ADD_RELU_KERNEL + "\nimport torch.nn.functional as F\n\n\nclass ModelNew(nn.Module):\n" \
        "    def forward(self, x, y):\n        " + forward + "\n"
    assert (rules_of(source) == set()) is off_gpu, static_findings(source)
    assert bool(off_accelerator_lines(source)) is off_gpu


def test_cheating_off_the_gpu_is_still_cheating():
    source = CPU_FALLBACK.replace("return torch.relu(x + y) * 2", "torch.manual_seed(0)\n            return torch.relu(x + y) * 2")
    assert rules_of(source) == {"reseed"}


def test_torch_on_shapes_and_sizes_is_not_compute():
    source = HEADER + ADD_RELU_KERNEL + """
import math


class ModelNew(nn.Module):
    def forward(self, x, y):
        n = int(torch.prod(torch.tensor(x.shape[1:])))
        rows, cols = x.shape[0], math.prod(x.shape[1:])
        assert n == cols and torch.tensor(rows * cols).item() == x.numel()
        return add_relu(x, y)
"""
    assert static_findings(source) == []
    for compute in ("torch.prod(x)", "torch.prod(torch.tensor(x.tolist()))", "torch.sum(torch.tensor(x.shape) * x[0, 0])",
                    "torch.randn(x.shape)"):
        assert "torch-compute" in rules_of(source.replace("torch.prod(torch.tensor(x.shape[1:]))", compute)), compute


def test_shape_arithmetic_is_not_compute_at_run_time_either():
    import math

    import torch

    from backends._backend import LaunchLog
    from backends._guard import record_ops

    x = torch.randn(4, 5, 6)
    with record_ops(LaunchLog()) as ops:
        assert int(torch.prod(torch.tensor(x.shape[1:]))) == 30 == math.prod(x.shape[1:])
    assert ops.forbidden == {}
    with record_ops(LaunchLog()) as ops:
        torch.tensor([0.5, 2.0]).sum()  # floating data is data, even from Python numbers
        torch.prod(torch.tensor(x.shape) * x.shape[0])
        torch.tensor(list(range(1000))).sum()  # larger than any shape
    assert ops.forbidden == {"sum": 2}


@pytest.mark.parametrize("rules", ["strict", "kernelbench"])
def test_a_cpu_fallback_run_off_the_gpu_is_unverified_not_disallowed(cpu_executor, rules):
    from backends import EvalOptions, check

    task = CASES / "task_add_relu.py"
    options = EvalOptions(trials=2, cpu_reps=1, timing=False, rules=rules)
    clean = cpu_executor.evaluate(task, CPU_FALLBACK, backend="triton", options=options)
    assert clean.status == Verdict.UNVERIFIED, clean.message
    fallback_line = CPU_FALLBACK.splitlines().index("            return torch.relu(x + y) * 2") + 1
    assert "not verifiable here" in clean.message and f"(line {fallback_line})" in clean.message
    assert not clean.status.feasible and not clean.status.candidate_fault
    # A partial kernel's GPU path computes with torch too: strict says so without running it.
    partial = CPU_FALLBACK.replace("return add_relu(x, y)", "return torch.tanh(add_relu(x, y))")
    expected = Verdict.UNVERIFIED if rules == "kernelbench" else Verdict.DISALLOWED
    assert cpu_executor.evaluate(task, partial, backend="triton", options=options).status == expected
    dry = check(task, CPU_FALLBACK, rules=rules, executor=cpu_executor)  # meta tensors are not on the GPU either
    assert dry.status == Verdict.UNVERIFIED and "were not compiled" in dry.message


def test_an_off_gpu_branch_that_computes_nothing_changes_no_verdict(cpu_executor):
    from backends import EvalOptions

    source = CPU_FALLBACK.replace("        if not x.is_cuda:\n            return torch.relu(x + y) * 2\n",
                                  "        block = 1024\n        if x.device.type != 'cuda':\n            block = 256\n")
    result = cpu_executor.evaluate(CASES / "task_add_relu.py", source, backend="triton",
                                   options=EvalOptions(trials=2, cpu_reps=1, timing=False))
    assert result.status == Verdict.OK, result.feedback


def test_a_helper_only_a_cpu_fallback_calls_is_off_the_gpu_path_too():
    source = HEADER + ADD_RELU_KERNEL + """
import torch.nn.functional as F


def torch_fallback(x, y):
    return F.relu(x + y) * 2


class ModelNew(nn.Module):
    def forward(self, x, y):
        if not x.is_cuda:
            return torch_fallback(x, y)
        return add_relu(x, y)
"""
    assert static_findings(source) == []
    assert off_accelerator_lines(source) == [source.splitlines().index("    return F.relu(x + y) * 2") + 1]
    # called on the GPU path as well, it is the GPU path's
    both = source.replace("        return add_relu(x, y)", "        return torch_fallback(add_relu(x, y), y)")
    assert rules_of(both) == {"torch-compute"}
