"""`evokernel check`: the static rules and compile checks for one candidate, nothing run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evokernel.options import RunOptions

from ._common import (EXIT_OK, EXIT_REJECTED, JsonOpt, err_console, fail_usage, print_json, print_result_table,
                      use_environment_build_cache)
from ._flags import settings


def register(app: typer.Typer) -> None:
    app.command("check")(check_command)


@settings("run", "evaluation", "execution", only={"run": ("backend",), "evaluation": ("rules", "precision", "timeout_s"),
                                                 "execution": ("device",)},
          defaults={"timeout_s": 180.0},
          helps={"timeout_s": "Wall-clock limit for the compile checks, in seconds.",
                 "device": "Where the worker runs (default cpu: nothing runs on a GPU)."})
def check_command(
    task_file: Annotated[str, typer.Argument(help="KernelBench-format task file (Model, get_inputs, "
                                                "get_init_inputs) or the name of a bundled task.")],
    candidate_file: Annotated[Path, typer.Argument(help="Candidate source defining class ModelNew.")],
    json_output: JsonOpt = False,
    *,
    options: RunOptions,
) -> None:
    """Static rules plus the compile checks (Triton for sm_90, nvcc for CUDA), without running the candidate.

    Exit 0 when nothing is found, 1 when the candidate is rejected, 2 for bad usage.
    """
    from backends import TaskError, UnknownBackend, check, get_backend, load_task
    from evokernel.loop import resolve_task_args

    use_environment_build_cache()  # nvcc's checks are cached there
    backend, evaluation = options.backend, options.evaluation
    try:
        get_backend(backend)
    except (UnknownBackend, ImportError) as exc:
        raise fail_usage(str(exc))
    try:
        task = load_task(resolve_task_args([task_file])[0], precision=evaluation.precision)
    except KeyError as exc:
        raise fail_usage(exc.args[0])
    except TaskError as exc:
        raise fail_usage(str(exc))
    try:
        source = candidate_file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise fail_usage(f"{candidate_file}: cannot read candidate: {exc}")

    with err_console().status(f"checking {candidate_file.name} against {task.name} ({backend}, --rules {evaluation.rules})"):
        result = check(task.path, source, backend=backend, rules=evaluation.rules, precision=evaluation.precision,
                       device=options.execution.device, timeout_s=evaluation.timeout_s)

    if json_output:
        data = result.to_dict()
        data.update(task=task.name, backend=backend, precision=evaluation.precision)
        print_json(data)
    else:
        _render(result, task.name, backend, evaluation.precision)
    raise typer.Exit(EXIT_OK if result.feasible else EXIT_REJECTED)


def _render(result, task_name: str, backend: str, precision: str) -> None:
    from rich.table import Table

    colour = "green" if result.feasible else "red"
    table = Table(title=f"check {task_name} ({backend}, --rules {result.rules}, {precision})", show_header=False)
    table.add_row("status", f"[{colour}]{result.status.value}[/]")
    table.add_row("message", result.message)
    print_result_table(table, result)
