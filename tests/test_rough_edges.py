"""The rough edges a new user met (issue 32), each reproduced here as it was met:
a resumed run's progress count, a task solved in an earlier run, an LLM run's
calls and costs, `memory export - | head`, and the memory's path when
EVOKERNEL_HOME points elsewhere or `--memory` names a directory."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evokernel
from evokernel import RunOptions
from evokernel.cli import app
from memory_store import MemoryStore

from executor_candidates import HONEST
from llm_server import llm_env, openai_reply, server  # noqa: F401  (fixtures)
from loop_doubles import RecordingPolicy, ScriptedExecutor, ok

runner = CliRunner()
ADD_RELU = Path(__file__).parent / "executor_cases" / "task_add_relu.py"
CPU = dict(device="cpu", trials=1, jobs=1, skills=False)


def _progress_console() -> tuple[io.StringIO, object]:
    from rich.console import Console

    text = io.StringIO()
    return text, Console(file=text, width=200, force_terminal=False)


def test_a_resumed_runs_progress_count_ends_at_its_budget(tmp_path):
    """It ended at 9/12: the steps committed before the resume were not counted."""
    from evokernel.cli._progress import RunProgress

    memory = tmp_path / "m.db"
    slow = RecordingPolicy(HONEST["add_relu"][1], delay_s=0.3)
    # The limit is checked before each step starts: the first starts, the second does not.
    cut = evokernel.run([ADD_RELU], RunOptions.of(budget=3, time_limit_s=0.1, **CPU), policy=slow,
                        executor=ScriptedExecutor(), memory=memory)
    assert not cut.complete and cut.tasks[0].attempts == 1
    text, console = _progress_console()
    with RunProgress(console, 3) as view:
        done = evokernel.run([ADD_RELU], RunOptions.of(budget=3, **CPU), policy=RecordingPolicy(HONEST["add_relu"][1]),
                             executor=ScriptedExecutor(), memory=memory, on_event=view)
    assert done.resumed and done.tasks[0].attempts == 3
    lines = text.getvalue().splitlines()
    assert "step 3/3" in lines[-1] and "| 3/3 steps" in lines[-1], lines


def test_a_task_solved_in_an_earlier_run_says_so_beside_its_first_latency(tmp_path):
    """It showed first correct "-" beside a first latency (and an "x first") from the earlier run."""
    from evokernel.cli._common import first_correct_cell

    memory = tmp_path / "m.db"
    options = RunOptions.of(budget=1, **CPU)
    first = evokernel.run([ADD_RELU], options, policy=RecordingPolicy(HONEST["add_relu"][1]),
                          executor=ScriptedExecutor(lambda source, n: ok(2.0)), memory=memory)
    assert first_correct_cell(first.tasks[0].first_correct_attempt, first.tasks[0].started_from_item_id) == "1"
    again = evokernel.run([ADD_RELU], options.replace(resume=False), policy=RecordingPolicy(HONEST["add_relu"][1]),
                          executor=ScriptedExecutor(lambda source, n: ok(1.0)), memory=memory)
    task = again.tasks[0]
    assert task.first_latency_ms == 2.0 and task.speedup_over_first == 2.0, "measured from the earlier run's kernel"
    assert task.first_correct_attempt is None and task.started_from_item_id is not None
    assert first_correct_cell(task.first_correct_attempt, task.started_from_item_id) == "earlier run"
    assert first_correct_cell(None, None) == "-"


def _answer() -> str:
    return "Here is the kernel.\n\n```python\n" + HONEST["add_relu"][1].strip() + "\n```\n"


def test_an_llm_run_links_its_calls_to_steps_and_shows_tokens_and_cost(tmp_path, server, llm_env, monkeypatch):  # noqa: F811
    """From the CLI, as a user runs it: the key, endpoint and prices come from the environment
    (read by the CLI), each call is linked to its step (`evokernel logs` shows it), the final
    table has tokens and cost, and the preamble names the memory EVOKERNEL_HOME points at."""
    import evokernel.loop._run as run_module

    home = tmp_path / "home"
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"test-model": {"input": 1000.0, "output": 2000.0}}))
    for name, value in (("EVOKERNEL_HOME", str(home)), ("OPENAI_BASE_URL", server.url + "/v1"),
                        ("OPENAI_API_KEY", "sk-test-not-a-real-key-000000"), ("EVOKERNEL_PRICES", str(prices)),
                        ("EVOKERNEL_LLM_MAX_ATTEMPTS", "1")):
        llm_env.setenv(name, value)
    monkeypatch.setattr(run_module, "make_executor", lambda options, devices, jobs: ScriptedExecutor())
    server.default = openai_reply(_answer(), tokens_in=11, tokens_out=7)
    res = runner.invoke(app, ["run", str(ADD_RELU), "--model", "openai:test-model", "--llm-only", "--budget", "2", "--no-skills",
                              "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert f"memory: {home / 'memory.db'}" in res.stderr
    assert "tokens in" in res.stdout and "cost $" in res.stdout
    row = next(line for line in res.stdout.splitlines() if "task_add_relu" in line)
    assert "22" in row and "14" in row and "0.0500" in row  # 2 calls: 22 in, 14 out, 22e-3 + 28e-3 USD
    with MemoryStore(home / "memory.db") as store:
        calls, steps, runs = store.llm_calls(), store.steps(), store.runs()
    assert [c["step_id"] for c in calls] == [s["id"] for s in steps] and len(steps) == 2
    logs = runner.invoke(app, ["logs", "--json"])
    assert [r["step_id"] for r in json.loads(logs.stdout)] == [s["id"] for s in reversed(steps)]
    assert runs[0]["config"]["signature"]["config"]["llm"]["models"] == [{"spec": "openai:test-model", "weight": 1.0}]
    assert "sk-test-not-a-real-key" not in json.dumps(runs) + logs.stdout, "no key in the run's record"


def test_a_directory_as_memory_is_one_line(tmp_path):
    for args in (["run", str(ADD_RELU)], ["refine"], ["memory", "stats"], ["memory", "export", "-"], ["logs"],
                 ["bench", str(ADD_RELU)]):
        res = runner.invoke(app, [*args, "--memory", str(tmp_path)])
        assert res.exit_code == 2, (args, res.output)
        assert res.stderr == (f"error: --memory {tmp_path} is a directory; give the database file inside it, "
                              f"e.g. {tmp_path / 'memory.db'}\n"), args
    assert list(tmp_path.iterdir()) == []


def test_memory_export_into_a_closed_pipe_exits_quietly(tmp_path):
    """`evokernel memory export - | head -1` exited 1 (or printed a traceback)."""
    bank = tmp_path / "m.db"
    with MemoryStore(bank) as store:  # more than a pipe's buffer, so the writer meets the closed end
        store.add_items([dict(kind="experience", task_key=f"t{i}", backend="triton", key_text=f"item {i}",
                              content="x" * 2000) for i in range(200)])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(evokernel.__file__).parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "evokernel.cli", "memory", "export", "-", "--memory", str(bank)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    first = proc.stdout.readline()
    proc.stdout.close()  # `head -1` has what it wanted
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert json.loads(first)["format"] == "evokernel-memory"
    assert "Traceback" not in err and "Exception ignored" not in err and "Error" not in err, err


@pytest.mark.parametrize("args, words", [
    (["run", str(ADD_RELU), "--timeout", "inf"], "'--timeout': timeout must be a positive number of seconds up to "
                                                 "604800 (a week), got inf"),
    (["run", str(ADD_RELU), "--timeout", "1e12"], "up to 604800 (a week), got 1e+12"),
    (["run", str(ADD_RELU), "--time-limit", "inf"], "'--time-limit': time limit must be a positive number of seconds"),
    (["run", str(ADD_RELU), "--size", "FULL"], "'--size': size must be full or small, got 'FULL'"),
    (["bench", str(ADD_RELU), "--size", "huge"], "'--size': size must be full or small, got 'huge'"),
    (["eval", str(ADD_RELU), str(ADD_RELU), "--size", "huge"], "size must be full or small, got 'huge'"),
    (["eval", str(ADD_RELU), str(ADD_RELU), "--timeout", "inf"], "up to 604800 (a week), got inf"),
])
def test_out_of_range_values_are_one_line_and_leave_no_run(tmp_path, monkeypatch, args, words):
    home = tmp_path / "home"
    monkeypatch.setenv("EVOKERNEL_HOME", str(home))
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: ") and words in res.stderr, res.stderr
    assert not home.exists(), "no memory, so no run left behind"


def test_bad_llm_settings_in_the_environment_are_one_line(tmp_path, llm_env):  # noqa: F811
    llm_env.setenv("EVOKERNEL_HOME", str(tmp_path / "home"))
    llm_env.setenv("EVOKERNEL_LLM_MAX_ATTEMPTS", "many")
    res = runner.invoke(app, ["run", str(ADD_RELU), "--model", "openai:gpt-5"])
    assert res.exit_code == 2 and res.stderr == "error: EVOKERNEL_LLM_MAX_ATTEMPTS='many' is not an integer\n"
    assert not (tmp_path / "home").exists()


def test_found_by_a_new_user_a_bad_device_or_an_export_file_is_one_line(tmp_path, monkeypatch):
    """`--device foo` ran the whole budget on the CPU; `--export FILE` failed with a traceback after the run."""
    monkeypatch.setenv("EVOKERNEL_HOME", str(tmp_path / "home"))
    a_file = tmp_path / "best.py"
    a_file.write_text("")
    for args, words in ((["run", str(ADD_RELU), "--device", "foo"], "'--device': device must be cpu, cuda or cuda:N"),
                        (["eval", str(ADD_RELU), str(ADD_RELU), "--device", "cuda:x"], "got 'cuda:x'"),
                        (["run", str(ADD_RELU), "--export", str(a_file)], f"--export {a_file} is a file")):
        res = runner.invoke(app, args)
        assert res.exit_code == 2 and res.stderr.count("\n") == 1 and words in res.stderr, (args, res.output)
    assert not (tmp_path / "home").exists()
    with pytest.raises(evokernel.RunError, match="device must be cpu, cuda or cuda:N"):
        RunOptions.of(device="gpu0")


def test_the_cli_sets_the_build_cache_from_the_environment(tmp_path, monkeypatch):
    """EVOKERNEL_CACHE is read by the CLI (the library and its workers are given the root)."""
    import backends
    from backends.cuda_backend import cache_root

    monkeypatch.setattr("backends._cache._root", None)
    monkeypatch.setenv("EVOKERNEL_CACHE", str(tmp_path / "builds"))
    res = runner.invoke(app, ["check", str(ADD_RELU), str(ADD_RELU)])
    assert res.exit_code in (0, 1), res.output
    assert backends.build_cache() == tmp_path / "builds"
    assert cache_root() == tmp_path / "builds" / "cuda"


def test_found_by_a_new_user_a_failed_import_or_report_leaves_nothing_behind(tmp_path):
    """`memory import` of a file that is not an export left an empty new bank; `report` of a file
    that is not a result left an empty report folder."""
    not_an_export = tmp_path / "items.jsonl"
    not_an_export.write_text('{"x": 1}\n')
    res = runner.invoke(app, ["memory", "import", str(not_an_export), "--memory", str(tmp_path / "new.db")])
    assert res.exit_code == 2 and "nothing was imported" in res.stderr
    res = runner.invoke(app, ["report", str(not_an_export)])
    assert res.exit_code == 2 and "not an EvoKernel result" in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["items.jsonl"]


def test_a_table_on_stderr_keeps_whole_values_off_a_terminal(capsys, monkeypatch):
    """`evokernel eval --json`'s summary goes to stderr, and was squeezed to 80 columns in a log."""
    from rich.table import Table

    from evokernel.cli._common import err_console

    monkeypatch.delenv("COLUMNS", raising=False)
    table = Table("task", "message")
    table.add_row("softmax", "a verifier message " * 10)
    err_console().print(table)
    assert "a verifier message " * 10 in capsys.readouterr().err


def test_found_by_a_new_user_evokernel_home_naming_a_file_is_one_line(tmp_path, monkeypatch):
    """EVOKERNEL_HOME pointing at a file made `run` end in a FileExistsError traceback."""
    a_file = tmp_path / "home"
    a_file.write_text("")
    monkeypatch.setenv("EVOKERNEL_HOME", str(a_file))
    res = runner.invoke(app, ["run", str(ADD_RELU)])
    assert res.exit_code == 2 and res.stderr == (
        f"error: the memory {a_file / 'memory.db'} cannot be made: {a_file} is a file, not a folder\n")
    with pytest.raises(evokernel.RunError, match="cannot open a memory at"):  # the library says so too
        evokernel.run([ADD_RELU], RunOptions.of(**CPU), memory=a_file / "memory.db", executor=ScriptedExecutor())


def test_an_llm_run_resumes(tmp_path, server):  # noqa: F811
    """An LLM run's recorded options held its models as a tuple, read back as a list: the same
    command never matched its unfinished run and started a new one."""
    from evokernel.policies import get_policy

    from llm_server import local_llm

    server.default = openai_reply(_answer())
    memory = tmp_path / "m.db"
    llm = local_llm(server, "openai:test-model")
    options = RunOptions.of(budget=2, llm=llm, time_limit_s=0.05, **CPU)
    with MemoryStore(memory) as store:
        slow = ScriptedExecutor(delay=lambda n: 0.2)
        cut = evokernel.run([ADD_RELU], options, policy=get_policy(llm=llm, log=store), store=store, executor=slow)
        assert not cut.complete and cut.tasks[0].attempts == 1
        done = evokernel.run([ADD_RELU], options.replace(time_limit_s=None), policy=get_policy(llm=llm, log=store),
                             store=store, executor=ScriptedExecutor())
    assert done.resumed and done.run_id == cut.run_id and done.tasks[0].attempts == 2
