"""Task files: good ones load, bad ones get an error naming the file and the problem."""

from __future__ import annotations

import pytest

from backends import TaskError, load_task

GOOD = """
import torch
import torch.nn as nn

TOLERANCE = (1e-3, 1e-3)
CATEGORY = "elementwise"


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
"""


def write(tmp_path, text, name="task.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_good_task_loads(tmp_path):
    task = load_task(write(tmp_path, GOOD), run_reference=True)
    assert task.name == "task"
    assert task.tolerance == (1e-3, 1e-3)
    assert task.category == "elementwise"
    assert not task.has_input_groups
    assert task.key.startswith("task-")


@pytest.mark.parametrize(
    "text, problem",
    [
        (GOOD.replace("def get_inputs", "def get_inputz"), "missing required name(s): get_inputs"),
        (GOOD.replace("class Model", "class Modle"), "missing required name(s): Model"),
        (GOOD.replace("return x * 2", "return x *"), "syntax error at line"),
        (GOOD.replace("return x * 2", "return x @ torch.randn(3, 3)"), "the reference raised on get_inputs()"),
        (GOOD.replace("TOLERANCE = (1e-3, 1e-3)", "TOLERANCE = 'tight'"), "TOLERANCE must be a pair"),
        (GOOD.replace("import torch\n", "import torch\nimport no_such_module_here\n"), "importing the task raised ModuleNotFoundError"),
        (GOOD.replace("return [torch.randn(4, 4)]", "return [torch.randn(4, 4)]\n\n\ndef get_input_groups():\n    return [[torch.randn(2, 3, 4)[0, 0, 0, 0]]]"), "building the inputs raised"),
        (GOOD.replace("return x * 2", "return 3"), "must return a tensor"),
    ],
)
def test_bad_task_is_named(tmp_path, text, problem):
    path = write(tmp_path, text)
    with pytest.raises(TaskError) as err:
        load_task(path, run_reference=True)
    assert str(path) in str(err.value)
    assert problem in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(TaskError, match="no such file"):
        load_task(tmp_path / "nope.py")


SIZED = """
import os
import builtins

import torch
import torch.nn as nn

builtins.EVK_TASK_IMPORTS = getattr(builtins, "EVK_TASK_IMPORTS", 0) + 1
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")
N = 64 if SIZE == "full" else 8


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
"""


def test_size_is_a_value_and_part_of_the_key(tmp_path, monkeypatch):
    import os

    from backends import load_task_module

    monkeypatch.delenv("EVOKERNEL_SIZE", raising=False)
    path = write(tmp_path, SIZED)
    small, full = load_task(path, size="small"), load_task(path)
    assert (small.size, full.size) == ("small", "full")
    assert small.key == full.key + "@small"
    assert load_task_module(path, size="small").N == 8 and load_task_module(path).N == 64
    assert "EVOKERNEL_SIZE" not in os.environ, "the size is set only while the task file runs"


def test_task_file_is_executed_once_per_version_and_size(tmp_path):
    import builtins
    import os

    from backends import load_task_module

    path = write(tmp_path, SIZED, "counted.py")
    before = getattr(builtins, "EVK_TASK_IMPORTS", 0)
    for _ in range(3):
        load_task(path, size="small")
        load_task_module(path, size="small")
    assert builtins.EVK_TASK_IMPORTS == before + 1
    load_task_module(path, size="full")
    assert builtins.EVK_TASK_IMPORTS == before + 2
    path.write_text(SIZED + "\n# edited\n")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    load_task_module(path, size="small")
    assert builtins.EVK_TASK_IMPORTS == before + 3, "an edited file is imported again"


def test_bad_size_is_refused(tmp_path):
    with pytest.raises(ValueError, match="task size"):
        load_task(write(tmp_path, GOOD), size="../x")


BIG = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x @ torch.ones(3, 3)


def get_inputs():
    return [torch.randn(1 << 20, 1 << 20)]


def get_init_inputs():
    return []
"""


def test_full_size_reference_is_checked_on_meta(tmp_path):
    # 4 TiB of inputs: no host could draw them, so the check must run on the meta device.
    with pytest.raises(TaskError, match="the reference raised on get_inputs()"):
        load_task(write(tmp_path, BIG), run_reference=True)
    fine = BIG.replace("x @ torch.ones(3, 3)", "torch.relu(x)")
    assert load_task(write(tmp_path, fine, "fine.py"), run_reference=True).name == "fine"
