"""Constructs of whole models outside the bundled suites that the builtin front end once
refused or got wrong, each on a small model run end to end on the CPU: a slice write
(``out[..., a:b] = v``), ..."""

import textwrap

import pytest

from builtin_case import explain, ok
from evokernel.builtin import Unsupported, analyze, generate


def _task(tmp_path, name: str, text: str):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return path


def _evaluate(executor, path, rules: str):
    from backends import EvalOptions

    plan = analyze(path, rules)
    assert not isinstance(plan, Unsupported), plan.reason
    options = EvalOptions.from_dict({"rules": rules, "timing": False, "baselines": False, "trials": 1})
    return executor.evaluate(path, generate(plan), backend="triton", options=options)


# ShiftViT's token shift: channel groups rolled and written into a copy by slice; an integer
# index, a negative slice and a scalar write besides
SLICE_WRITES = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, y):
        out = x.clone()
        out[..., 0:2] = torch.roll(x[..., 0:2], shifts=1, dims=1)
        out[..., 2:4] = torch.roll(x[..., 2:4], shifts=-1, dims=2)
        out[:, 1] = y
        out[:, :, -2:, 5] = 0.5
        return self.proj(out)


def get_inputs():
    return [torch.randn(2, 3, 5, 8), torch.randn(2, 5, 8)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("rules", ["strict", "kernelbench"])
def test_slice_writes_into_a_copy_are_correct(cpu_executor, tmp_path, rules):
    result = _evaluate(cpu_executor, _task(tmp_path, "slice_writes", SLICE_WRITES), rules)
    assert ok(result), explain(result)


@pytest.mark.parametrize("write, needle", [("out[idx] = 1.0", "tensor index"), ("out[:, ::2] = 1.0", "strided slice"),
                                           ("out.view(-1)[:3] = 1.0", "through a view")])
def test_an_unsupported_slice_write_says_why_in_one_line(tmp_path, write, needle):
    path = _task(tmp_path, "bad_write", f"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, idx):
        out = x.clone()
        {write}
        return out * 2


def get_inputs():
    return [torch.randn(4, 6), torch.tensor([0, 2])]


def get_init_inputs():
    return []
""")
    plan = analyze(path, "strict")
    assert isinstance(plan, Unsupported) and "\n" not in plan.reason and needle in plan.reason, plan
