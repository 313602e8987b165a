"""benchmarks/results_from_memory.py: a bench's figures rebuilt from its memory equal the ones
the bench itself wrote, and an unfinished run says how much of it was attempted."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from evokernel.bench import run_bench
from evokernel.loop import RunOptions

ROOT = Path(__file__).resolve().parent.parent


def _load():
    spec = importlib.util.spec_from_file_location("results_from_memory", ROOT / "benchmarks" / "results_from_memory.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rebuilt_figures_match_the_bench_and_an_unfinished_run_counts_its_attempts(tmp_path):
    memory = tmp_path / "m.db"
    options = RunOptions.of(budget=1, device="cpu", policy="builtin")
    written = run_bench("relu_add", options, memory=memory).to_dict()
    rebuilt = _load().rebuild(memory)
    assert rebuilt["complete"] is False  # a rebuilt file never claims a finished run
    assert rebuilt["metrics"]["correct"] == written["metrics"]["correct"] >= 1
    assert [t["name"] for t in rebuilt["tasks"]] == [t["name"] for t in written["tasks"]]
    assert [t["best_latency_ms"] for t in rebuilt["tasks"]] == [t["best_latency_ms"] for t in written["tasks"]]
    assert rebuilt["rebuilt_from_memory"]["tasks_attempted"] == len(written["tasks"])
    assert rebuilt["environment"]["device"] == "cpu"


def test_the_command_says_what_is_missing_in_one_line(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "results_from_memory.py"), str(tmp_path / "none.db"),
                          "--out", str(tmp_path / "r.json")], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0 and "no memory" in out.stderr
    assert not (tmp_path / "r.json").exists()
