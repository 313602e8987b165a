"""The command line as a newcomer meets it: bad input is one line on stderr with
exit code 2 and leaves no file behind; help is plain; tables keep whole values
when piped; a run not on a terminal still says what it is doing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evokernel.cli import app

from llm_server import llm_env  # noqa: F401  (fixture)

runner = CliRunner()
HERE = Path(__file__).parent
ADD_RELU = str(HERE / "executor_cases" / "task_add_relu.py")

OUTSIDE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.linalg.qr(x)[1]


def get_inputs():
    return [torch.randn(6, 6)]


def get_init_inputs():
    return []
'''


@pytest.fixture
def home(tmp_path, monkeypatch, llm_env):  # noqa: F811
    """An empty EvoKernel home: whatever a failed command leaves would show here."""
    home = tmp_path / "home"
    monkeypatch.setenv("EVOKERNEL_HOME", str(home))
    monkeypatch.delenv("EVOKERNEL_SIZE", raising=False)
    return home


def test_version():
    from evokernel import __version__

    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.stdout == f"evokernel {__version__}\n"


def _commands() -> list[list[str]]:
    import typer.main

    group = typer.main.get_command(app)
    out = []
    for name, command in group.commands.items():
        subs = getattr(command, "commands", None)
        out += [[name, sub] for sub in subs] if subs else [[name]]
    return out


@pytest.mark.parametrize("command", _commands(), ids=" ".join)
def test_help_is_plain_and_flags_show_no_type(command):
    res = runner.invoke(app, [*command, "--help"])
    assert res.exit_code == 0, res.output
    assert "<bool>" not in res.stdout and "╭" not in res.stdout
    assert "--help" in res.stdout


@pytest.mark.parametrize("args, words", [
    (["run", ADD_RELU, "--timeout", "-5"], "Invalid value for '--timeout': timeout must be a positive number of seconds"),
    (["run", ADD_RELU, "--budget", "0"], "Invalid value for '--budget'"),
    (["run", ADD_RELU, "--jobs", "0"], "Invalid value for '--jobs'"),
    (["run", ADD_RELU, "--bogus"], "--bogus"),
    (["run", ADD_RELU, "--gpus", "a,b"], "Invalid value for '--gpus': 'a,b' is not a list of device indices"),
    (["run", ADD_RELU, "--gpus", "0"], "--gpus 0: no GPU is visible here"),
    (["run", ADD_RELU, "--rules", "lax"], "rules must be one of strict, kernelbench"),
    (["run", ADD_RELU, "--memory-mode", "greedy"], "memory mode must be one of"),
    (["run", ADD_RELU, "--engine", "dask"], "engine must be one of local, ray"),
    (["run", ADD_RELU, "--backend", "tpu"], "unknown backend 'tpu'"),
    (["run", "sofmax"], "no bundled task 'sofmax'; available: linear_gelu, relu_add, softmax"),
    (["run", str(HERE / "nope.py")], "nope.py: no such file"),
    (["run", ADD_RELU, "--model", "nosuch:model"], "unknown provider 'nosuch'"),
    (["run", ADD_RELU, "--model", "openai:gpt-5"], "OPENAI_API_KEY is not set"),
    (["run", ADD_RELU, "--model", "gpt-5"], "must look like 'PROVIDER:MODEL', got 'gpt-5'"),
    (["refine"], "no memory at"),
    (["bench", "sofmax"], "neither a bundled suite"),
    (["bench", ADD_RELU, "--model", "anthropic:claude-x"], "ANTHROPIC_API_KEY is not set"),
    (["bench", ADD_RELU, "--policy", "clever"], "unknown policy 'clever'"),
    (["ablate", ADD_RELU, "--arm", "nope"], "unknown arm(s) nope"),
    (["memory", "stats"], "no memory at"),
    (["nosuchcommand"], "No such command 'nosuchcommand'"),
])
def test_bad_input_is_one_line_exit_2_and_no_file(home, args, words):
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert res.stdout == ""
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: "), res.stderr
    assert words in res.stderr
    assert not home.exists(), "a command that failed to start created files"


def test_a_damaged_memory_names_the_file_and_the_check(home, tmp_path):
    bad = tmp_path / "memory.db"
    bad.write_text("not a database\n" * 100)
    for args in (["run", ADD_RELU, "--memory", str(bad)], ["bench", ADD_RELU, "--memory", str(bad)],
                 ["refine", "--memory", str(bad)], ["memory", "ls", "--memory", str(bad)]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert res.stderr.count("\n") == 1 and str(bad) in res.stderr, res.stderr
        assert f"evokernel memory check --memory {bad}" in res.stderr
    assert bad.read_text() == "not a database\n" * 100


def test_piped_tables_keep_whole_values(home, tmp_path):
    name = "a_task_whose_name_is_far_longer_than_any_terminal_column_would_ever_allow_it_to_be_shown_whole"
    task = tmp_path / f"{name}.py"
    task.write_text(OUTSIDE)
    res = runner.invoke(app, ["bench", str(task), "--budget", "1"])
    assert res.exit_code == 0, res.output
    assert name in res.stdout and "…" not in res.stdout
    assert "outside the builtin" in res.stdout


@pytest.mark.slow
def test_bundled_names_in_bench_and_progress_lines_off_a_terminal(home):
    res = runner.invoke(app, ["bench", "relu_add", "--budget", "1", "--trials", "1", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [t["name"] for t in data["tasks"]] == ["relu_add"] and data["tasks"][0]["correct"]
    # stderr is not a terminal here: one plain line per step, with what is in flight
    assert "relu_add step 1/1 (draft): ok" in res.stderr and "proposing" in res.stderr
