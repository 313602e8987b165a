"""`evokernel eval` and `evokernel backends` through typer's runner: stdout
carries data only, exit codes say ok (0), rejected (1) and bad usage (2)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from evokernel.cli import app

from executor_candidates import DISALLOWED, HONEST

CASES = Path(__file__).parent / "executor_cases"
runner = CliRunner()


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


def test_eval_rejected_exit_1(tmp_path):
    task, source, _ = DISALLOWED["torch_op_in_forward"]
    res = runner.invoke(app, ["eval", str(CASES / task), str(_write(tmp_path, source)), "--json"])
    assert res.exit_code == 1
    assert json.loads(res.stdout.strip().splitlines()[-1])["status"] == "disallowed"


def test_eval_rich_summary(tmp_path):
    task, source = HONEST["add_relu"]
    res = runner.invoke(app, ["eval", str(CASES / task), str(_write(tmp_path, source)), "--trials", "1"])
    assert res.exit_code == 0
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
