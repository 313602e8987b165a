"""benchmarks/probes/rows_speed.py as a dry run on the CPU: one small task file, drafted by this
checkout and by a "baseline" checkout (this one again, so the drafts are the same text), a record
written at once, and a rerun that finds the task done."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks" / "probes"))

import rows_speed  # noqa: E402

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 64
dim = 393216


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
'''


@pytest.mark.slow
def test_a_dry_run_writes_a_record_per_task_and_resumes(tmp_path):
    level = tmp_path / "kb" / "level1"
    level.mkdir(parents=True)
    (level / "23_Softmax.py").write_text(TASK)
    out = tmp_path / "speed.json"
    argv = [str(tmp_path / "kb"), "--tasks", "23", "--out", str(out), "--device", "cpu", "--no-compile",
            "--baseline-tree", str(ROOT), "--work", str(tmp_path / "work"), "--timeout", "240"]
    assert rows_speed.main(argv) == 0
    record = json.loads(out.read_text())["tasks"]["23_Softmax"]
    assert record["status"] == "ok", record
    # configured from the full-size file (a multi-pass kernel for rows of 393216), run at the shrunk size
    assert "one_pass=False" in record["config"]
    assert record["new_ms"] > 0 and record["timing_method"].startswith("wall clock on CPU")
    assert record["baseline"] == {"status": "same_source"}
    assert rows_speed.main(argv) == 0  # the file holds the task: nothing is timed again
    assert json.loads(out.read_text())["tasks"]["23_Softmax"] == record


def test_tasks_are_found_by_number_or_name(tmp_path):
    for name in ("23_Softmax.py", "24_LogSoftmax.py", "123_Other.py"):
        (tmp_path / name).write_text("")
    assert [p.name for p in rows_speed.task_files(tmp_path, ["24", "23_Softmax"])] == ["24_LogSoftmax.py", "23_Softmax.py"]
    with pytest.raises(SystemExit):
        rows_speed.task_files(tmp_path, ["9"])
