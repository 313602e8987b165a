"""benchmarks/probes/rnn_speed.py as a dry run on the CPU: a small GRU task file, its variants (the
default, a launch a step, one program a layer, programs meeting after every step) generated, built,
checked against eager and timed, a record each written at once, and a rerun that finds them done."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "benchmarks" / "probes" / "rnn_speed.py"

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, batch_first=True)

    def forward(self, x):
        out, h_n = self.gru(x)
        return h_n


batch_size = 3
seq_len = 5
input_size = 4
hidden_size = 16
num_layers = 2


def get_inputs():
    return [torch.rand(batch_size, seq_len, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
'''


def _run(argv: list[str]) -> None:
    # a child: the kernels run in Triton's interpreter, which must be chosen before Triton is imported
    proc = subprocess.run([sys.executable, str(PROBE), *argv], capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, TRITON_INTERPRET="1"), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_a_dry_run_checks_and_times_every_variant_and_resumes(tmp_path):
    level = tmp_path / "kb" / "level3"
    level.mkdir(parents=True)
    (level / "40_GRUHidden.py").write_text(TASK)
    out = tmp_path / "rnn.json"
    # one timed run and no warm-up (the CPU default is 2 and 1): each variant's timing is still taken and recorded,
    # and every extra run of a variant goes through Triton's interpreter
    argv = [str(tmp_path / "kb"), "--tasks", "40", "--out", str(out), "--device", "cpu", "--work", str(tmp_path / "w"),
            "--reps", "1", "--warmup", "0"]
    _run(argv)
    records = json.loads(out.read_text())["records"]
    variants = {key.split("/")[1] for key in records}
    assert {"eager", "default", "per_step", "one_pass", "coop_s2_n128", "coop_s16_n16"} <= variants, variants
    for key, record in records.items():
        assert record["status"] == "ok" and record["ms"] > 0, record
        if record["variant"] not in ("eager", "compile"):
            assert record["max_abs_error"] < 1e-5, record
    assert "split_n=16" in records["40_GRUHidden/coop_s16_n16"]["config"]
    _run(argv)  # the file holds every variant: nothing is timed again
    assert json.loads(out.read_text())["records"] == records
