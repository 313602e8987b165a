"""backends._hardware: measured device limits cached per device, and a task's floor from a meta run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backends import HardwareFacts, hardware_facts, measure_hardware, task_cost

TASKS = Path(__file__).parent / "tasks"
CASES = Path(__file__).parent / "executor_cases"
TINY = {"copy_bytes": 1 << 20, "matmul_n": {"fp32": 64}, "reps": 3}


def test_measure_on_cpu_gives_positive_numbers():
    facts = measure_hardware("cpu", **TINY)
    assert facts.device == "cpu" and not facts.is_gpu
    assert facts.copy_gbps > 0 and facts.peak_tflops["fp32"] > 0
    assert "median of 3 copies of 1048576 bytes" in facts.method
    assert HardwareFacts.from_dict(json.loads(json.dumps(facts.to_dict()))) == facts


def test_measured_once_then_read_from_the_cache(tmp_path):
    cache = tmp_path / "hardware.json"
    first = hardware_facts("cpu", cache_path=cache, isolated=False, measure=TINY)
    again = hardware_facts("cpu", cache_path=cache, isolated=False, measure=TINY)
    assert again == first and len(json.loads(cache.read_text())) == 1
    fresh = hardware_facts("cpu", cache_path=cache, isolated=False, measure=TINY, refresh=True)
    assert fresh.measured_utc >= first.measured_utc
    cache.write_text("{broken")  # a broken cache costs a measurement, never a crash
    assert hardware_facts("cpu", cache_path=cache, isolated=False, measure=TINY) is not None


def test_no_facts_without_a_gpu():
    assert hardware_facts("cpu", cache_path=None) is None


@pytest.mark.slow
def test_measured_in_a_child_process(tmp_path):
    facts = hardware_facts("cpu", cache_path=tmp_path / "hw.json", measure=TINY)
    assert facts is not None and facts.copy_gbps > 0 and (tmp_path / "hw.json").is_file()


def test_task_cost_counts_bytes_and_matmul_flops_on_meta():
    add = task_cost(CASES / "task_add_relu.py")
    assert (add.min_bytes, add.flops, add.dtype) == (3 * 37 * 1000 * 4, 0, "fp32")
    linear = task_cost(TASKS / "mm_linear_gelu.py")
    # x (2, 5, 37) @ W^T (37, 29): 2 * 10 * 37 * 29 FLOPs; bytes: x, W, b and the output.
    assert linear.flops == 2 * 10 * 37 * 29
    assert linear.min_bytes == 4 * (2 * 5 * 37 + 29 * 37 + 29 + 2 * 5 * 29)


def test_task_cost_says_why_when_it_cannot(tmp_path):
    task = tmp_path / "needs_cuda.py"
    task.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                    "        return x.nonzero()\n\ndef get_inputs():\n    return [torch.randn(4)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    cost = task_cost(task)
    assert cost.min_bytes is None and "meta run failed" in cost.note
    assert task_cost(tmp_path / "missing.py").note
