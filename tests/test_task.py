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
