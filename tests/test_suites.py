"""The benchmark suites and bundled tasks: format, size switch, counts, and the degenerate filter."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest
import torch

from evokernel.bench.degenerate import check_task, load_task_module, main, task_files
from evokernel.tasks import bundled_task_names, bundled_task_path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
MINIMUM_COUNTS = {"level1": 40, "level2": 20, "level3": 5, "npu": 40, "multi_output": 3}
CATEGORIES = {
    "elementwise", "reduction", "normalization", "softmax", "matmul", "conv",
    "pooling", "loss", "scan", "attention", "fusion", "network",
}
FULL_SIZE_BYTES_LIMIT = 8 * 1024**3  # inputs + output of one full-size task
NAME_PATTERN = re.compile(r"^(\d\d)_[a-z0-9_]+\.py$")

SUITE_FILES = [f for suite in MINIMUM_COUNTS for f in task_files([BENCHMARKS / suite])]
ALL_TASKS = SUITE_FILES + [bundled_task_path(n) for n in bundled_task_names()]


def _task_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _input_groups(module) -> list[list]:
    if hasattr(module, "get_input_groups"):
        return [list(g) for g in module.get_input_groups()]
    return [list(module.get_inputs())]


# ---------------------------------------------------------------- every task file


@pytest.mark.parametrize("path", ALL_TASKS, ids=_task_id)
def test_task_loads_and_runs_at_small_size(path: Path) -> None:
    module = load_task_module(path, size="small")
    assert module.SIZE == "small"
    assert module.CATEGORY in CATEGORIES
    doc = (module.__doc__ or "").strip()
    assert doc and "\n" not in doc, "needs a one-line module docstring"
    if hasattr(module, "TOLERANCE"):
        atol, rtol = module.TOLERANCE
        assert 0 < atol <= 1e-2 and 0 < rtol <= 1e-2
    init = module.get_init_inputs()
    assert isinstance(init, list)
    torch.manual_seed(0)
    model = module.Model(*init)
    assert isinstance(model, torch.nn.Module)
    torch.manual_seed(0)
    groups = _input_groups(module)
    assert groups
    for inputs in groups:
        assert inputs, "a task needs at least one input"
        for x in inputs:
            assert isinstance(x, (torch.Tensor, int, float, bool))
            if isinstance(x, torch.Tensor):
                assert x.device.type == "cpu"
        with torch.no_grad():
            outputs = _tensors(model(*inputs))
        assert outputs, "forward must return tensors"
    if hasattr(module, "get_input_groups"):
        torch.manual_seed(0)
        first = module.get_inputs()
        assert [tuple(x.shape) for x in _tensors(first)] == [tuple(x.shape) for x in _tensors(groups[0])]


@pytest.mark.parametrize("path", ALL_TASKS, ids=_task_id)
def test_full_size_is_bounded_and_differs_from_small(path: Path) -> None:
    """Shape arithmetic on the meta device: nothing is allocated at full size."""
    full = load_task_module(path, size="full")
    small = load_task_module(path, size="small")
    assert full.SIZE == "full"
    with torch.device("meta"):
        model = full.Model(*full.get_init_inputs())
        full_groups = _input_groups(full)
        for inputs in full_groups:
            with torch.no_grad():
                outputs = _tensors(model(*inputs))
            moved = sum(t.numel() * t.element_size() for t in _tensors(inputs) + outputs)
            assert moved < FULL_SIZE_BYTES_LIMIT
        small_groups = _input_groups(small)
    full_shapes = [tuple(t.shape) for g in full_groups for t in _tensors(g)]
    small_shapes = [tuple(t.shape) for g in small_groups for t in _tensors(g)]
    assert full_shapes != small_shapes


# ---------------------------------------------------------------- suites


def test_suite_counts_meet_minimums() -> None:
    for suite, minimum in MINIMUM_COUNTS.items():
        count = len(task_files([BENCHMARKS / suite]))
        assert count >= minimum, f"{suite}: {count} tasks, want >= {minimum}"


@pytest.mark.parametrize("suite", sorted(MINIMUM_COUNTS))
def test_suite_files_are_numbered_from_01_without_gaps(suite: str) -> None:
    names = [f.name for f in task_files([BENCHMARKS / suite])]
    numbers = []
    for name in names:
        match = NAME_PATTERN.match(name)
        assert match, f"{suite}/{name} is not NN_name.py"
        numbers.append(int(match.group(1)))
    assert numbers == list(range(1, len(names) + 1))


@pytest.mark.parametrize("path", task_files([BENCHMARKS / "npu"]), ids=_task_id)
def test_npu_tasks_cover_several_shapes_and_both_dtypes(path: Path) -> None:
    module = load_task_module(path, size="small")
    assert hasattr(module, "get_input_groups")
    groups = module.get_input_groups()
    dtypes = {t.dtype for g in groups for t in _tensors(g) if t.is_floating_point()}
    shapes = {tuple(_tensors(g)[0].shape) for g in groups}
    assert {torch.float32, torch.float16} <= dtypes
    assert len(shapes) >= 3


def test_bundled_tasks() -> None:
    assert bundled_task_names() == ["linear_gelu", "relu_add", "softmax"]
    assert bundled_task_path("softmax") == bundled_task_path("softmax.py")
    assert bundled_task_path("relu_add").is_file()
    with pytest.raises(KeyError, match="available"):
        bundled_task_path("no_such_task")


# ---------------------------------------------------------------- the degenerate filter

_TASK_HEADER = """\
    \"\"\"{doc}\"\"\"
    import torch
    import torch.nn as nn

    CATEGORY = "elementwise"
"""

GOOD_TASK = _TASK_HEADER.format(doc="Good: a scaled sum with a learned bias.") + """
    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.bias = nn.Parameter(torch.randn(n))

        def forward(self, x, y):
            return torch.tanh(x) + 0.5 * y + self.bias


    def get_inputs():
        return [torch.randn(37, 19), torch.randn(37, 19)]


    def get_init_inputs():
        return [19]
"""

# Each degenerate task and the check it must trip.
DEGENERATE_TASKS = {
    "near_zero": """
    class Model(nn.Module):
        def forward(self, x):
            return x * 1e-7

    def get_inputs():
        return [torch.randn(50, 20)]

    def get_init_inputs():
        return []
""",
    "ignores_input": """
    class Model(nn.Module):
        def forward(self, x, y):
            return torch.relu(x) + 1e-9 * y

    def get_inputs():
        return [torch.randn(50, 20), torch.randn(50, 20)]

    def get_init_inputs():
        return []
""",
    "fixed_parameter": """
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(20)  # weight 1, bias 0 under every seed

        def forward(self, x):
            return self.norm(x)

    def get_inputs():
        return [torch.randn(50, 20)]

    def get_init_inputs():
        return []
""",
    "ignores_weights": """
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(20))

        def forward(self, x):
            return x + 1e-9 * self.w

    def get_inputs():
        return [torch.randn(50, 20)]

    def get_init_inputs():
        return []
""",
    "non_finite": """
    class Model(nn.Module):
        def forward(self, x):
            return torch.log(x)  # negative inputs give NaN

    def get_inputs():
        return [torch.randn(50, 20)]

    def get_init_inputs():
        return []
""",
    "nondeterministic": """
    class Model(nn.Module):
        def forward(self, x):
            return x + torch.rand_like(x)

    def get_inputs():
        return [torch.randn(50, 20)]

    def get_init_inputs():
        return []
""",
    "mutates_inputs": """
    class Model(nn.Module):
        def forward(self, x):
            return x.mul_(2.0)

    def get_inputs():
        return [torch.randn(50, 20)]

    def get_init_inputs():
        return []
""",
    "mostly_zero": """
    class Model(nn.Module):
        def forward(self, x):
            return torch.relu(x - 2.0)

    def get_inputs():
        return [torch.randn(200, 50)]

    def get_init_inputs():
        return []
""",
    "load_error": """
    raise RuntimeError("broken task")
""",
}


def _write_task(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(_TASK_HEADER.format(doc=f"Degenerate on purpose: {name}.") + body))
    return path


def test_filter_passes_a_good_task(tmp_path: Path) -> None:
    path = tmp_path / "good.py"
    path.write_text(textwrap.dedent(GOOD_TASK))
    assert check_task(path, seeds=2) == []


@pytest.mark.parametrize("check", sorted(DEGENERATE_TASKS))
def test_filter_flags_a_degenerate_task(tmp_path: Path, check: str) -> None:
    path = _write_task(tmp_path, check, DEGENERATE_TASKS[check])
    findings = check_task(path, seeds=2)
    assert check in {f.check for f in findings}, findings
    assert all(f.path == str(path) for f in findings)


def test_filter_sets_the_size_while_loading(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("EVOKERNEL_SIZE", "full")
    path = tmp_path / "sized.py"
    path.write_text(textwrap.dedent(GOOD_TASK) + textwrap.dedent("""
        import os
        if os.environ["EVOKERNEL_SIZE"] != "small":
            raise RuntimeError("loaded at the wrong size")
    """))
    assert check_task(path, seeds=1) == []
    # One import per file version and size (the executor's loader caches it); the
    # caller's environment is restored afterwards.
    assert load_task_module(path) is load_task_module(path)
    assert os.environ["EVOKERNEL_SIZE"] == "full"


def test_filter_command_exit_codes(tmp_path: Path, capsys) -> None:
    good = tmp_path / "good.py"
    good.write_text(textwrap.dedent(GOOD_TASK))
    assert main([str(good), "--seeds", "1"]) == 0
    assert f"OK      {good}" in capsys.readouterr().out

    bad = _write_task(tmp_path, "near_zero", DEGENERATE_TASKS["near_zero"])
    assert main([str(tmp_path), "--seeds", "1"]) == 1
    out = capsys.readouterr().out
    assert f"FLAGGED {bad}" in out and "near_zero" in out
    assert "1 OK, 1 flagged" in out

    assert main([str(tmp_path / "missing")]) == 2
