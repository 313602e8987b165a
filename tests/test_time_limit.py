"""--time-limit: no new step after the limit, the results marked incomplete, and the same
command resumes the unfinished run to the end."""

import json

from typer.testing import CliRunner

from evokernel.cli import app
from evokernel.loop import RunError, RunOptions

import pytest

runner = CliRunner()


def test_a_bench_cut_by_its_time_limit_says_so_and_the_same_command_finishes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_HOME", str(tmp_path / "home"))
    memory = tmp_path / "bench.db"
    args = ["bench", "relu_add", "--policy", "builtin", "--budget", "2", "--memory", str(memory), "--json"]
    # A limit far below one step's time: the first step starts (the limit is checked before a
    # step starts), no later one does.
    cut = runner.invoke(app, args + ["--time-limit", "0.001"])
    assert cut.exit_code in (0, 1), cut.stderr
    data = json.loads(cut.stdout)
    assert data["complete"] is False
    assert data["tasks"][0]["attempts"] < 2
    assert "time limit" in cut.stderr
    done = runner.invoke(app, args)
    data = json.loads(done.stdout)
    assert data["complete"] is True and data["tasks"][0]["attempts"] == 2
    assert "(resumed)" in done.stderr


def test_time_limit_is_checked():
    with pytest.raises(RunError, match="time limit"):
        RunOptions(time_limit_s=0)
    assert runner.invoke(app, ["bench", "relu_add", "--time-limit", "-1"]).exit_code == 2
    # how the run is carried out, not what it computes: a resumed run need not repeat it
    assert "time_limit_s" not in RunOptions(time_limit_s=5).identity()
