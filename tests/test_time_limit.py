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
        RunOptions.of(time_limit_s=0)
    assert runner.invoke(app, ["bench", "relu_add", "--time-limit", "-1"]).exit_code == 2
    # how the run is carried out, not what it computes: a resumed run need not repeat it
    assert "time_limit_s" not in RunOptions.of(time_limit_s=5).identity()


def test_an_interrupted_bench_hands_back_what_it_measured_and_resumes(tmp_path):
    """Ctrl-C (or `timeout -s INT`) in the second evaluation: the interrupt still propagates,
    carrying the first step's result (`complete` false); the same bench on its memory finishes."""
    from pathlib import Path

    from executor_candidates import HONEST
    from loop_doubles import RecordingPolicy, ScriptedExecutor, ok

    from evokernel.bench import BenchInterrupted, run_bench

    task = Path(__file__).parent / "executor_cases" / "task_add_relu.py"
    memory = tmp_path / "m.db"

    def script(source, n):
        if n == 2:
            raise KeyboardInterrupt
        return ok(1.0)

    options = RunOptions.of(budget=3, trials=1, device="cpu")
    with pytest.raises(BenchInterrupted) as stop:
        run_bench(task, options, memory=memory, policy=RecordingPolicy(HONEST["add_relu"][1]),
                  executor=ScriptedExecutor(script))
    partial = stop.value.result.to_dict()
    assert isinstance(stop.value, KeyboardInterrupt) and partial["complete"] is False
    assert [t["attempts"] for t in partial["tasks"]] == [1] and partial["metrics"]["correct"] == 1
    done = run_bench(task, options, memory=memory, policy=RecordingPolicy(HONEST["add_relu"][1]),
                     executor=ScriptedExecutor())
    assert done.complete and done.to_dict()["tasks"][0]["attempts"] == 3


def test_the_bench_command_writes_the_results_so_far_when_interrupted(tmp_path, monkeypatch):
    from evokernel import bench
    from evokernel.bench import BenchInterrupted, BenchResult

    partial = BenchResult(suite="relu_add", metrics={}, tasks=[], environment={}, options={"budget": 2}, policy="builtin",
                          policy_is_llm=False, accuracy_by_iteration=[], run_id=1, memory="m.db", complete=False)

    def interrupted(*args, **kwargs):
        raise BenchInterrupted(partial)

    monkeypatch.setattr(bench, "run_bench", interrupted)
    out = tmp_path / "results.json"
    res = runner.invoke(app, ["bench", "relu_add", "--memory", str(tmp_path / "m.db"), "--json", "--out", str(out)])
    assert res.exit_code == 130, res.output
    assert json.loads(out.read_text())["complete"] is False and json.loads(res.stdout)["complete"] is False
    assert "results so far are written" in res.stderr and "run the same command to resume" in res.stderr


def test_sigterm_inside_the_block_is_an_interrupt_and_the_handler_is_restored():
    import os
    import signal
    import time

    from evokernel.cli._exit import stop_on_terminate

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        with stop_on_terminate():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises at the next bytecode: this never finishes
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.slow
def test_a_background_bench_stopped_by_sigterm_writes_its_results_so_far(tmp_path):
    """A bench a script started with `&` has SIGINT ignored (bash does that to background jobs):
    SIGTERM, as `kill` and `timeout` send, still ends it with the results written."""
    import os
    import signal
    import subprocess
    import sys

    out, memory = tmp_path / "results.json", tmp_path / "m.db"
    env = {**os.environ, "EVOKERNEL_HOME": str(tmp_path / "home")}
    cmd = [sys.executable, "-m", "evokernel.cli", "bench", "relu_add", "--policy", "builtin", "--budget", "50",
           "--memory", str(memory), "--out", str(out)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    lines = []
    for line in proc.stderr:  # the first finished step: the run is under way and has something to write
        lines.append(line)
        if "step 1/50" in line:
            break
    proc.send_signal(signal.SIGINT)  # ignored, as in a background job
    proc.send_signal(signal.SIGTERM)
    _, rest = proc.communicate(timeout=120)
    assert proc.returncode == 130, "".join(lines) + rest
    data = json.loads(out.read_text())
    assert data["complete"] is False and 1 <= data["tasks"][0]["attempts"] < 50
    assert "results so far are written" in rest
