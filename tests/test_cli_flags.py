"""One settings tree, its flags declared once: every run-shaped command exposes the same
settings, with the records' own defaults, and `--precision` reaches the run, the memory's
task keys and what each command records."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

import evokernel
from evokernel.cli import app
from evokernel.cli._flags import GROUPS, group_settings
from evokernel.options import (EvaluationOptions, ExecutionOptions, LoopOptions, RunError, RunOptions, flag_of,
                               parse_bytes, parse_gpus)

from llm_server import llm_env  # noqa: F401 (the prompt test counts tokens offline)
from loop_doubles import RecordingPolicy, ScriptedExecutor, ok

runner = CliRunner()
ADD_RELU = Path(__file__).parent / "executor_cases" / "task_add_relu.py"
RUN_SHAPED = ("run", "refine", "bench", "ablate")
RECORDS = {"run": RunOptions, "evaluation": EvaluationOptions, "loop": LoopOptions, "execution": ExecutionOptions}


def _params(command: str) -> dict[str, object]:
    """A command's click parameters by name, as typer builds them."""
    click_app = typer.main.get_command(app)
    return {p.name: p for p in click_app.commands[command].params}


def _settings_flags(command: str) -> dict[str, tuple[str, ...]]:
    """The settings a command exposes: field name -> its flags."""
    names = {s.name for g in GROUPS for s in group_settings(g)}
    return {name: tuple(p.opts + p.secondary_opts) for name, p in _params(command).items() if name in names}


def test_run_refine_bench_and_ablate_expose_the_same_settings_flags():
    flags = {command: _settings_flags(command) for command in RUN_SHAPED}
    assert flags["run"], "run exposes no settings"
    for command in RUN_SHAPED[1:]:
        assert flags[command] == flags["run"], command
    # the drift the issue found: run without --warmup/--atol, refine without --trials, ablate without --rerank
    assert {"warmup", "atol", "trials", "rerank", "precision"} <= set(flags["run"])


def test_every_flagged_field_of_every_record_is_a_flag_of_run():
    exposed = _settings_flags("run")
    for record in RECORDS.values():
        for field in dataclasses.fields(record):
            if flag_of(field) is not None:
                assert field.name in exposed, f"{record.__name__}.{field.name}"
    for name in ("model", "context_tokens", "multi_turn", "reasoning_effort", "thinking_tokens"):
        assert name in exposed


def test_the_flags_defaults_are_the_records_own():
    params = _params("run")
    for record in RECORDS.values():
        defaults = record() if record is not RunOptions else RunOptions()
        for field in dataclasses.fields(record):
            flag = flag_of(field)
            if flag is None or flag.repeat or flag.parse is not None:
                continue  # a repeated or parsed flag has no default of its own (None: the field's)
            assert params[field.name].default == getattr(defaults, field.name), field.name
    assert _params("refine")["budget"].default == 10  # refine's own, as the library's refine()
    from evokernel.llm import LLMOptions

    llm = LLMOptions.from_specs(["openai:x"])
    for name in ("context_tokens", "multi_turn", "reasoning_effort", "thinking_tokens"):
        assert params[name].default == getattr(llm, name), name


def test_precision_is_a_flag_of_every_command_that_evaluates():
    for command in (*RUN_SHAPED, "eval", "check", "mcp"):
        assert "--precision" in _params(command)["precision"].opts, command


@pytest.mark.parametrize("args", [
    ["run", str(ADD_RELU)], ["refine"], ["bench", str(ADD_RELU)], ["ablate", str(ADD_RELU)],
    ["eval", str(ADD_RELU), str(ADD_RELU)], ["check", str(ADD_RELU), str(ADD_RELU)], ["mcp"],
], ids=lambda a: a[0])
def test_a_bad_precision_is_one_line_exit_2(tmp_path, monkeypatch, args):
    monkeypatch.setenv("EVOKERNEL_HOME", str(tmp_path / "home"))
    res = runner.invoke(app, [*args, "--precision", "fp8"])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == "error: Invalid value for '--precision': precision must be one of fp32, fp16, bf16, got 'fp8'\n"
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("args, words", [
    (["--memory-budget", "lots"], "'--memory-budget': 'lots' is not a size such as 8G"),
    (["--memory-budget", "-1G"], "'-1G' is not a positive size"),
    (["--gpus", ","], "'--gpus': give at least one device index"),
    (["--n-memories", "0"], "Invalid value for '--n-memories'"),
    (["--port-from", "triton"], "--port-from triton is the run's own backend"),
    (["--reps", "0"], "Invalid value for '--reps'"),
    (["--warmup", "-1"], "Invalid value for '--warmup'"),
    # an LLM setting names its flag too
    (["--model", "openai:x", "--reasoning-effort", "huge"], "Invalid value for '--reasoning-effort': reasoning effort"),
    (["--model", "gpt5"], "Invalid value for '--model': provider spec must look like 'PROVIDER:MODEL'"),
    (["--model", "openai:x@-1"], "Invalid value for '--model': a model's weight must be positive"),
])
def test_bad_settings_are_one_line_exit_2(tmp_path, monkeypatch, args, words):
    monkeypatch.setenv("EVOKERNEL_HOME", str(tmp_path / "home"))
    res = runner.invoke(app, ["run", str(ADD_RELU), *args])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and words in res.stderr, res.stderr


def test_an_ablation_refuses_the_settings_its_arms_set(tmp_path, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_HOME", str(tmp_path / "home"))
    res = runner.invoke(app, ["ablate", str(ADD_RELU), "--memory-mode", "off"])
    assert res.exit_code == 2 and "--memory-mode: each ablation arm sets this itself" in res.stderr


# --- the tree -------------------------------------------------------------------


def test_flat_names_route_to_their_records_and_unknown_names_fail():
    options = RunOptions.of(budget=3, trials=2, jobs=4, precision="bf16", backend="cuda")
    assert (options.loop.budget, options.evaluation.trials, options.execution.jobs) == (3, 2, 4)
    assert options.evaluation.precision == "bf16" and options.backend == "cuda"
    assert options.replace(budget=5).loop.budget == 5 and options.replace(budget=5).evaluation.trials == 2
    with pytest.raises(TypeError, match="no setting 'budgett'"):
        RunOptions.of(budgett=3)
    with pytest.raises(RunError, match="must be an EvaluationOptions"):
        RunOptions(evaluation=LoopOptions())  # type: ignore[arg-type]


def test_the_identity_is_every_field_that_decides_what_a_run_computes():
    options = RunOptions.of(budget=3, precision="fp16")
    identity = options.identity()
    for record in (EvaluationOptions, LoopOptions, ExecutionOptions):
        for field in dataclasses.fields(record):
            assert (field.name in identity) != bool(field.metadata["how"]), field.name
    assert identity["precision"] == "fp16" and identity["budget"] == 3
    assert options.replace(jobs=2, time_limit_s=5, resume=False).identity() == identity
    assert options.replace(precision="bf16").identity() != identity
    assert options.replace(n_memories=2).identity() != identity


def test_the_device_is_worked_out_in_one_place():
    assert ExecutionOptions(device="cuda:1").run_device() == "cuda:1"
    assert ExecutionOptions(gpus=(2, 3)).run_device() == "cuda:2"  # measured on the first GPU it runs on
    assert RunOptions.of(device="cpu").resolved().evaluation.size == "small"
    assert RunOptions.of(device="cuda:0").resolved().evaluation.size == "full"
    assert RunOptions.of(device="cuda:0", size="small").resolved().evaluation.size == "small"
    assert RunOptions.of(device="cpu").resolved().execution.device == "cpu"
    assert RunOptions().resolved().execution.device is None, "planning still sees every visible GPU"


def test_text_values_parse_or_say_why():
    assert parse_bytes("8G") == 8 << 30 and parse_bytes("512m") == 512 << 20 and parse_bytes("1000") == 1000
    assert parse_gpus("0, 1") == (0, 1)
    for bad in ("inf", "nan", "0", "G"):
        with pytest.raises(ValueError):
            parse_bytes(bad)


# --- precision: the key, the executor, the records -----------------------------


def test_precision_enters_the_task_key_as_the_size_does():
    from backends import load_task

    full = load_task(ADD_RELU).key
    assert load_task(ADD_RELU, precision="fp32").key == full, "fp32 keys are the keys memories already hold"
    assert load_task(ADD_RELU, precision="fp16").key == full + "@fp16"
    assert load_task(ADD_RELU, size="small", precision="bf16").key == full + "@small@bf16"


class _Recording(ScriptedExecutor):
    def __init__(self):
        super().__init__(script=lambda source, n: ok(1.0))
        self.options = []

    def evaluate(self, task_path, source, *, backend="triton", options=None, timeout_s=None):
        self.options.append(options)
        return super().evaluate(task_path, source, backend=backend, options=options, timeout_s=timeout_s)


def test_a_run_in_fp16_evaluates_in_fp16_and_keeps_it_apart(tmp_path):
    executor = _Recording()
    memory = tmp_path / "m.db"
    result = evokernel.run([ADD_RELU], RunOptions.of(budget=1, precision="fp16", device="cpu", jobs=1),
                           policy=RecordingPolicy("# k\n"), executor=executor, memory=memory)
    (task,) = result.tasks
    assert task.task_key.endswith("@small@fp16")
    assert [o.precision for o in executor.options] == ["fp16"]
    assert result.to_dict()["config"]["precision"] == "fp16"
    from memory_store import MemoryStore

    with MemoryStore(memory) as store:
        (item,) = store.list_items(kinds=["trace"], limit=None)
        assert item.task_key == task.task_key and item.extra["precision"] == "fp16"
    # The same task in fp32 is another task: it does not start from the fp16 kernel
    again = evokernel.run([ADD_RELU], RunOptions.of(budget=1, device="cpu", jobs=1), policy=RecordingPolicy("# k\n"),
                          executor=_Recording(), memory=memory)
    assert again.tasks[0].task_key != task.task_key and again.tasks[0].started_from_item_id is None


def test_a_bench_records_its_precision(tmp_path):
    from evokernel.bench import run_bench
    from evokernel.bench._runner import result_path

    result = run_bench(ADD_RELU, RunOptions.of(budget=1, precision="bf16", device="cpu", jobs=1),
                       policy=RecordingPolicy("# k\n"), executor=_Recording())
    data = result.to_dict()
    assert data["environment"]["precision"] == "bf16" and data["options"]["precision"] == "bf16"
    assert "-small-bf16-" in result_path(tmp_path, data).name
    from evokernel.bench import write_report

    assert "| precision | bf16 |" in write_report(data, tmp_path / "report").markdown.read_text()


def test_the_cli_says_and_records_the_precision_it_runs_in(tmp_path, monkeypatch):
    from evokernel.cli.run_cmd import preamble

    said = preamble(RunOptions.of(precision="bf16", device="cpu").resolved(), tmp_path / "m.db")
    assert "size 'small'" in said[0] and "device: cpu; precision: bf16; memory: " in said[1]
    assert "precision" not in preamble(RunOptions.of(device="cpu").resolved(), tmp_path / "m.db")[1]
    monkeypatch.setenv("EVOKERNEL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(evokernel, "run", _fake_run)
    res = runner.invoke(app, ["run", str(ADD_RELU), "--precision", "bf16", "--device", "cpu", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["config"]["precision"] == "bf16"


def _fake_run(tasks, options, *, memory, on_event=None):
    """The library call the command makes, answered without a run (the command's side is tested)."""
    from evokernel.loop import RunResult

    return RunResult(0, "builtin", False, options, [], memory_path=str(memory), size="small", device="cpu")


def test_refine_takes_the_tasks_with_a_kernel_at_its_own_precision_once_each(tmp_path):
    memory = tmp_path / "m.db"
    for precision in ("fp16", "bf16"):
        evokernel.run([ADD_RELU], RunOptions.of(budget=1, precision=precision, device="cpu", jobs=1),
                      policy=RecordingPolicy("# k\n"), executor=_Recording(), memory=memory)
    with pytest.raises(RunError, match="no task in .* kernel at size small and precision fp32 to refine"):
        evokernel.refine(RunOptions.of(budget=1, device="cpu", jobs=1), memory=memory, executor=_Recording())
    policy = RecordingPolicy("# faster\n")
    result = evokernel.refine(RunOptions.of(budget=1, precision="fp16", device="cpu", jobs=1), memory=memory,
                              policy=policy, executor=_Recording())
    assert [t.task_key[-5:] for t in result.tasks] == ["@fp16"], "one task, at the precision refined"
    assert [c.stage for c in policy.contexts] == ["refine"]


def test_each_step_and_the_llms_prompt_know_the_precision(tmp_path, llm_env):
    from evokernel.llm import PromptInputs, build_prompt

    policy = RecordingPolicy("# k\n")
    evokernel.run([ADD_RELU], RunOptions.of(budget=1, precision="bf16", device="cpu", jobs=1), policy=policy,
                  executor=_Recording(), memory=tmp_path / "m.db")
    assert [c.precision for c in policy.contexts] == ["bf16"]
    task = dict(task_name="relu_add", task_source=ADD_RELU.read_text(), backend="triton", stage="draft")
    said = build_prompt(PromptInputs(**task, precision="bf16")).user_text
    assert "Precision: bf16." in said and "torch.bfloat16" in said
    assert "Precision:" not in build_prompt(PromptInputs(**task)).user_text


def test_an_mcp_session_works_on_its_precision(tmp_path):
    from evokernel.mcp import AgentSession

    with AgentSession(RunOptions.of(device="cpu", precision="fp16"), memory=tmp_path / "m.db",
                      executor=_Recording()) as session:
        shown = session.show_task(str(ADD_RELU))
        assert shown.precision == "fp16" and shown.key.endswith("@small@fp16")
        assert any("runs in fp16" in note for note in shown.notes)
        listed = session.list_tasks(str(ADD_RELU.parent))
        assert listed.precision == "fp16" and any(e.key == shown.key for e in listed.listed)
        verdict = session.submit_candidate(str(ADD_RELU), "# k\n", [], None)
        assert session.executor.options[-1].precision == "fp16" and verdict is not None
        assert session.best_kernel(str(ADD_RELU)).precision == "fp16"


def test_bench_out_ending_in_a_slash_makes_that_directory(tmp_path, monkeypatch):
    """`--out res/` wrote a file named res: the option was a Path, which drops the slash."""
    import evokernel.bench as bench

    real = bench.run_bench

    def fake(source, options, **kw):
        return real(source, options, policy=RecordingPolicy("# k\n"), executor=_Recording(),
                               limit=kw["limit"], memory=kw["memory"], command=kw["command"])

    monkeypatch.setenv("EVOKERNEL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(bench, "run_bench", fake)
    out = tmp_path / "results"
    res = runner.invoke(app, ["bench", str(ADD_RELU), "--budget", "1", "--device", "cpu", "--jobs", "1",
                              "--json", "--out", f"{out}/"])
    assert res.exit_code == 0, res.output
    (written,) = out.iterdir()
    assert written.name.startswith("bench-task_add_relu-") and json.loads(written.read_text())["complete"] is True


def test_a_flag_missing_its_value_points_at_its_commands_help(tmp_path, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_HOME", str(tmp_path / "home"))
    res = runner.invoke(app, ["run", str(ADD_RELU), "--precision"])
    assert res.exit_code == 2
    assert res.stderr == "error: Option '--precision' requires an argument. (see `evokernel run --help`)\n"
