"""benchmarks/kernelbench_coverage.py on a two-task stand-in for a KernelBench checkout: each file is
planned at full size, shrunk, and its default candidate checked by the CPU executor, in the precision
asked for (a bf16 run casts the reference too: the CPU has no bf16 avg_pool3d, so that task's reference
fails there, in bf16, and the task is reported as the task's error, not the candidate's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "kernelbench_coverage.py"

RELU = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


batch_size = 64
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

POOL3D = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool3d(2)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(2, 3, 4, 4, 4)]


def get_init_inputs():
    return []
'''


@pytest.mark.slow
def test_coverage_checks_the_shrunk_tasks_in_the_precision_asked_for(tmp_path):
    precision = "bf16"
    level = tmp_path / "kb" / "level1"
    level.mkdir(parents=True)
    (level / "19_ReLU.py").write_text(RELU)
    (level / "46_Average_Pooling_3D.py").write_text(POOL3D)
    out = tmp_path / "coverage.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "kb"), "--levels", "1", "--precision", precision,
                           "--work", str(tmp_path / "work"), "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env=dict(os.environ, TRITON_INTERPRET="1"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["precision"] == precision
    # kept with the figures: what measured them and the command that did
    assert report["environment"]["torch"] and f"--precision {precision}" in report["environment"]["command"]
    rows = {r["task"]: r for r in report["levels"]["level1"]["tasks"]}
    assert rows["19_ReLU"]["status"] == "ok", rows["19_ReLU"]
    pool = rows["46_Average_Pooling_3D"]
    assert pool["status"] == "task_error" and "BFloat16" in pool["message"], pool
    assert f"level1 (strict, {precision})" in proc.stdout
