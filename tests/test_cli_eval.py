"""`evokernel eval` and `evokernel backends` through typer's runner: stdout
carries data only, exit codes say ok (0), rejected (1) and bad usage (2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evokernel.cli import app

from executor_candidates import DISALLOWED, HONEST

CASES = Path(__file__).parent / "executor_cases"
runner = CliRunner()


@pytest.fixture
def warm_worker(monkeypatch, cpu_executor):
    """`evokernel eval` served by the session's warm worker (conftest) where a test is about the
    command's output, not about a fresh worker: the Executor the command makes is recorded with its
    arguments and hands out the shared one, which the command's `with` does not close.
    test_eval_ok_json and test_eval_several_candidates_json_lines_in_order keep the real one."""
    import backends
    from loop_doubles import executor_handing_out

    Shared, made = executor_handing_out(cpu_executor)
    monkeypatch.setattr(backends, "Executor", Shared)
    return made


def _write(tmp_path, source, name="cand.py"):
    path = tmp_path / name
    path.write_text(source)
    return path


def test_eval_ok_json(tmp_path):
    task, source = HONEST["add_relu"]
    res = runner.invoke(app, ["eval", str(CASES / task), str(_write(tmp_path, source)), "--json", "--trials", "2"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.strip().splitlines()
    data = json.loads(lines[-1])
    for key in ("status", "message", "max_abs_error", "latency_ms", "baselines", "latency_source"):
        assert key in data
    assert data["status"] == "ok"
    assert data["latency_source"] == "interpreted-cpu"
    assert len(lines) == 1, "nothing but the JSON object on stdout"


def test_eval_rejected_exit_1(tmp_path, warm_worker):
    task, source, _ = DISALLOWED["torch_op_in_forward"]
    res = runner.invoke(app, ["eval", str(CASES / task), str(_write(tmp_path, source)), "--json"])
    assert res.exit_code == 1
    assert warm_worker == [{"device": "cpu", "timeout_s": 300.0}]
    assert json.loads(res.stdout.strip().splitlines()[-1])["status"] == "disallowed"


def test_eval_rich_summary(tmp_path, warm_worker):
    task, source = HONEST["add_relu"]
    res = runner.invoke(app, ["eval", str(CASES / task), str(_write(tmp_path, source)), "--trials", "1"])
    assert res.exit_code == 0
    assert warm_worker == [{"device": "cpu", "timeout_s": 300.0}]
    assert "status" in res.stdout and "ok" in res.stdout


def test_eval_bad_task_exit_2(tmp_path):
    bad = _write(tmp_path, "import torch\n\ndef get_inputs():\n    return []\n", "bad_task.py")
    res = runner.invoke(app, ["eval", str(bad), str(_write(tmp_path, HONEST["add_relu"][1]))])
    assert res.exit_code == 2
    assert "missing required name(s): Model, get_init_inputs" in res.stderr
    assert res.stdout == ""


def test_eval_unknown_backend_exit_2(tmp_path):
    task, source = HONEST["add_relu"]
    res = runner.invoke(app, ["eval", str(CASES / task), str(_write(tmp_path, source)), "--backend", "opencl"])
    assert res.exit_code == 2
    assert "unknown backend" in res.stderr


def test_eval_missing_candidate_exit_2(tmp_path):
    res = runner.invoke(app, ["eval", str(CASES / "task_add_relu.py"), str(tmp_path / "none.py")])
    assert res.exit_code == 2
    assert "cannot read candidate" in res.stderr


def test_backends_json():
    res = runner.invoke(app, ["backends", "--json"])
    assert res.exit_code == 0
    rows = {r["name"]: r for r in json.loads(res.stdout)["backends"]}
    assert rows["triton"]["mode"] in ("cpu-interpreter", "gpu")
    assert rows["cuda"]["mode"] in ("compile-only", "gpu", "unavailable")


def test_backends_table():
    res = runner.invoke(app, ["backends"])
    assert res.exit_code == 0, res.output
    for name in ("triton", "cuda", "ascendc"):
        assert name in res.stdout


def test_every_command_has_help():
    import typer.main

    group = typer.main.get_command(app)
    for name, command in group.commands.items():
        assert command.help, f"command {name} has no help"


# --- several candidates, manifests, KernelBench's options -----------------------------


@pytest.mark.slow
def test_eval_several_candidates_json_lines_in_order(tmp_path):
    ok = _write(tmp_path, HONEST["add_relu"][1], "ok.py")
    bad = _write(tmp_path, DISALLOWED["torch_op_in_forward"][1], "bad.py")
    res = runner.invoke(app, ["eval", str(CASES / "task_add_relu.py"), str(ok), str(bad), "--json", "--trials", "1"])
    assert res.exit_code == 1, res.output
    rows = [json.loads(line) for line in res.stdout.strip().splitlines()]
    assert [(Path(r["candidate"]).name, r["status"]) for r in rows] == [("ok.py", "ok"), ("bad.py", "disallowed")]
    assert rows[1]["worker_reused"], "one worker serves the batch"
    assert all(r["task"] == "task_add_relu" and r["backend"] == "triton" for r in rows)
    assert "1 of 2 feasible" in res.stderr and "[2/2] task_add_relu bad.py: disallowed" in res.stderr


@pytest.mark.slow
def test_eval_manifest(tmp_path, warm_worker):
    (tmp_path / "cands").mkdir()
    _write(tmp_path / "cands", HONEST["add_relu"][1], "ok.py")
    _write(tmp_path / "cands", HONEST["two_launches"][1], "two.py")
    manifest = tmp_path / "pairs.tsv"
    manifest.write_text(f"task\tcandidate\tbackend\n# a comment\n\n{CASES / 'task_add_relu.py'}\tcands/two.py\n"
                        f"{CASES / 'task_add_relu.py'}\tcands/ok.py\ttriton\n")
    res = runner.invoke(app, ["eval", "--manifest", str(manifest), "--json", "--trials", "1", "--atol", "1e-3",
                              "--kernelbench-seeding"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.stdout.strip().splitlines()]
    assert [Path(r["candidate"]).name for r in rows] == ["two.py", "ok.py"]
    assert all(r["status"] == "ok" for r in rows)
    assert "2 of 2 feasible" in res.stderr
    assert len(warm_worker) == 1, "one executor serves the manifest"


def test_eval_manifest_bad_line_exit_2(tmp_path):
    manifest = tmp_path / "pairs.tsv"
    manifest.write_text(f"{CASES / 'task_add_relu.py'}\t{_write(tmp_path, HONEST['add_relu'][1])}\n"
                        f"{CASES / 'task_add_relu.py'}\n")
    res = runner.invoke(app, ["eval", "--manifest", str(manifest)])
    assert res.exit_code == 2 and res.stdout == ""
    assert f"{manifest}:2: expected task<TAB>candidate[<TAB>backend]" in res.stderr
    manifest.write_text(f"{CASES / 'task_add_relu.py'}\t{tmp_path / 'cand.py'}\topencl\n")
    res = runner.invoke(app, ["eval", "--manifest", str(manifest)])
    assert res.exit_code == 2 and f"{manifest}:1: unknown backend 'opencl'" in res.stderr


def test_eval_usage_errors_exit_2(tmp_path):
    cand = _write(tmp_path, HONEST["add_relu"][1])
    only_task = runner.invoke(app, ["eval", str(CASES / "task_add_relu.py")])
    assert only_task.exit_code == 2 and "at least one candidate" in only_task.stderr
    both = runner.invoke(app, ["eval", str(CASES / "task_add_relu.py"), str(cand), "--manifest", str(cand)])
    assert both.exit_code == 2 and "not both" in both.stderr
    negative = runner.invoke(app, ["eval", str(CASES / "task_add_relu.py"), str(cand), "--atol", "-1"])
    assert negative.exit_code == 2
