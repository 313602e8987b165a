"""benchmarks/probes/conv_layout_precision.py as a dry run on the CPU: a task's first convolution
found through the model's own forward, its four variants (task layout and channels-last, TF32
allowed and IEEE) run and checked against float64, a record written per task, a task without a
convolution recorded as such, and a rerun that finds the file complete."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "benchmarks" / "probes" / "conv_layout_precision.py"

CONV_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.pre = nn.Linear(12, 12)
        self.conv = nn.Conv2d(cin, cout, k)
        self.late = nn.Conv2d(cout, 2, 1)

    def forward(self, x):
        return self.late(torch.relu(self.conv(self.pre(x))))


def get_inputs():
    return [torch.rand(2, 3, 12, 12)]


def get_init_inputs():
    return [3, 8, 3]
'''

PLAIN_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.rand(4, 4)]


def get_init_inputs():
    return []
'''


def _probe():
    spec = importlib.util.spec_from_file_location("conv_layout_precision_probe", PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_dry_run_records_every_variant_of_the_first_convolution_and_resumes(tmp_path):
    level = tmp_path / "kb" / "level2"
    level.mkdir(parents=True)
    (level / "7_Linear_Conv2d_ReLU.py").write_text(CONV_TASK)
    (level / "8_Scale.py").write_text(PLAIN_TASK)
    out = tmp_path / "conv.json"
    argv = [str(tmp_path / "kb"), "--tasks", "7", "8", "--out", str(out), "--reps", "2", "--device", "cpu"]
    probe = _probe()
    assert probe.main(argv) == 0
    records = json.loads(out.read_text())["records"]
    conv = records["7_Linear_Conv2d_ReLU"]
    # the first convolution the forward reaches, with the tensor it got (the Linear's output)
    assert conv["module"].startswith("Conv2d(3, 8") and conv["input_shape"] == [2, 3, 12, 12]
    for layout in ("nchw", "nhwc"):
        for mode in ("tf32", "ieee"):
            variant = conv[f"{layout}_{mode}"]
            assert variant["ms"] > 0
            assert variant["error_vs_float64"] < 1e-6, variant
            assert variant["share_past_tolerance_vs_default"] == 0.0
            assert variant["output_channels_last"] is (layout == "nhwc")
            assert variant["cudnn_allow_tf32"] is (mode == "tf32")  # torch's default, or switched off
    assert records["8_Scale"] == {"status": "no convolution"}
    assert probe.main(argv) == 0  # both tasks recorded: nothing is run again
    assert json.loads(out.read_text())["records"] == records


def test_a_bf16_run_casts_the_model_and_inputs_and_times_torchs_flags_alone(tmp_path):
    level = tmp_path / "kb" / "level2"
    level.mkdir(parents=True)
    (level / "7_Linear_Conv2d_ReLU.py").write_text(CONV_TASK)
    out = tmp_path / "conv-bf16.json"
    argv = [str(tmp_path / "kb"), "--tasks", "7", "--out", str(out), "--reps", "2", "--device", "cpu",
            "--precision", "bf16"]
    assert _probe().main(argv) == 0
    conv = json.loads(out.read_text())["records"]["7_Linear_Conv2d_ReLU"]
    assert conv["status"] == "ok" and conv["dtype"] == "bfloat16"  # the Linear's output, cast with the model
    assert set(k for k in conv if k.startswith(("nchw", "nhwc"))) == {"nchw_tf32", "nhwc_tf32"}
    for layout in ("nchw", "nhwc"):
        variant = conv[f"{layout}_tf32"]
        # bf16 products of bf16 values against float64 on the same values: rounding of the output alone
        assert 0 < variant["error_vs_float64"] < 2e-2, variant
        assert variant["output_channels_last"] is (layout == "nhwc")
