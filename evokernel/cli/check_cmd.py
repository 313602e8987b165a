"""`evokernel check`: the static rules and compile checks for one candidate, nothing run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import (EXIT_OK, EXIT_REJECTED, BackendOpt, JsonOpt, RulesOpt, err_console, fail_usage, print_json,
                      print_result_table, use_environment_build_cache)


def register(app: typer.Typer) -> None:
    app.command("check")(check_command)


def check_command(
    task_file: Annotated[str, typer.Argument(help="KernelBench-format task file (Model, get_inputs, "
                                                "get_init_inputs) or the name of a bundled task.")],
    candidate_file: Annotated[Path, typer.Argument(help="Candidate source defining class ModelNew.")],
    backend: BackendOpt = "triton",
    rules: RulesOpt = "strict",
    timeout: Annotated[float, typer.Option(help="Wall-clock limit for the compile checks, in seconds.")] = 180.0,
    device: Annotated[Optional[str], typer.Option(help="Where the worker runs (default cpu: nothing runs on a GPU).")] = None,
    json_output: JsonOpt = False,
) -> None:
    """Static rules plus the compile checks (Triton for sm_90, nvcc for CUDA), without running the candidate.

    Exit 0 when nothing is found, 1 when the candidate is rejected, 2 for bad usage.
    """
    from backends import RULE_SETS, TaskError, UnknownBackend, check, get_backend, load_task
    from evokernel.loop import resolve_task_args

    use_environment_build_cache()  # nvcc's checks are cached there
    if rules not in RULE_SETS:
        raise fail_usage(f"unknown rule set {rules!r}; known: {', '.join(RULE_SETS)}")
    try:
        get_backend(backend)
    except (UnknownBackend, ImportError) as exc:
        raise fail_usage(str(exc))
    try:
        task = load_task(resolve_task_args([task_file])[0])
    except KeyError as exc:
        raise fail_usage(exc.args[0])
    except TaskError as exc:
        raise fail_usage(str(exc))
    try:
        source = candidate_file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise fail_usage(f"{candidate_file}: cannot read candidate: {exc}")

    with err_console().status(f"checking {candidate_file.name} against {task.name} ({backend}, --rules {rules})"):
        result = check(task.path, source, backend=backend, rules=rules, device=device, timeout_s=timeout)

    if json_output:
        data = result.to_dict()
        data["task"] = task.name
        data["backend"] = backend
        print_json(data)
    else:
        _render(result, task.name, backend)
    raise typer.Exit(EXIT_OK if result.feasible else EXIT_REJECTED)


def _render(result, task_name: str, backend: str) -> None:
    from rich.table import Table

    colour = "green" if result.feasible else "red"
    table = Table(title=f"check {task_name} ({backend}, --rules {result.rules})", show_header=False)
    table.add_row("status", f"[{colour}]{result.status.value}[/]")
    table.add_row("message", result.message)
    print_result_table(table, result)
