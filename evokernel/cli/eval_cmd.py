"""`evokernel eval` and `evokernel backends`: the executor from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import (EXIT_OK, EXIT_REJECTED, JsonOpt, RulesOpt, err_console, fail_usage, out_console, prepare_device,
                      print_json)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
    app.command("backends")(backends_command)


def eval_command(
    task_file: Annotated[Path, typer.Argument(help="KernelBench-format task: Model, get_inputs, get_init_inputs.")],
    candidate_file: Annotated[Path, typer.Argument(help="Candidate source defining class ModelNew.")],
    backend: Annotated[str, typer.Option(help="Executor backend (see `evokernel backends`).")] = "triton",
    timeout: Annotated[float, typer.Option(help="Wall-clock limit for the candidate, in seconds.")] = 300.0,
    device: Annotated[Optional[str], typer.Option(help="cuda:N or cpu; default: the first GPU if any.")] = None,
    trials: Annotated[int, typer.Option(min=1, help="Correctness trials with fresh seeded inputs.")] = 5,
    reps: Annotated[int, typer.Option(min=1, help="Timed runs on a GPU.")] = 100,
    baselines: Annotated[bool, typer.Option(help="Time eager and torch.compile baselines (GPU).")] = True,
    rules: RulesOpt = "strict",
    min_own_share: Annotated[float, typer.Option(min=0.0, max=1.0, help="Under kernelbench: own kernels' least share of GPU time (0: report only).")] = 0.0,
    json_output: JsonOpt = False,
) -> None:
    """Compile, verify and time one candidate kernel against a task's reference."""
    from backends import RULE_SETS, EvalOptions, Executor, TaskError, UnknownBackend, get_backend, load_task

    device = prepare_device(backend, device)
    try:
        task = load_task(task_file, run_reference=True)
    except TaskError as exc:
        raise fail_usage(str(exc))
    try:
        source = candidate_file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise fail_usage(f"{candidate_file}: cannot read candidate: {exc}")
    try:
        get_backend(backend)
    except (UnknownBackend, ImportError) as exc:
        raise fail_usage(str(exc))

    console = err_console()
    if rules not in RULE_SETS:
        raise fail_usage(f"unknown rule set {rules!r}; known: {', '.join(RULE_SETS)}")
    options = EvalOptions(trials=trials, reps=reps, baselines=baselines, rules=rules, min_own_share=min_own_share)
    with console.status(f"evaluating {candidate_file.name} on {task.name} ({backend}, {device})"):
        with Executor(device=device, timeout_s=timeout) as executor:
            result = executor.evaluate(task.path, source, backend=backend, options=options)

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
    table = Table(title=f"{task_name} ({backend})", show_header=False)
    table.add_row("status", f"[{colour}]{result.status.value}[/]")
    table.add_row("message", result.message)
    table.add_row("rules", result.rules)
    if result.own_kernel_share is not None:
        table.add_row("own kernel share", f"{100 * result.own_kernel_share:.1f}% of GPU time")
    if result.degenerate:
        table.add_row("degenerate task", result.degenerate)
    if result.max_abs_error is not None:
        table.add_row("max abs error", f"{result.max_abs_error:.3g}")
    if result.latency_ms is not None:
        table.add_row("latency", f"{result.latency_ms:.4f} ms (IQR {result.latency_iqr_ms or 0:.4f}, {result.latency_source})")
    for name, ms in result.baselines.present().items():
        table.add_row(name.replace("_ms", ""), f"{ms:.4f} ms (speedup {ms / result.latency_ms:.2f}x)" if result.latency_ms else f"{ms:.4f} ms")
    for k in result.kernels:
        table.add_row("kernel", f"{k.name} {k.summary()}")
    for w in result.warnings:
        table.add_row("warning", f"[yellow]{w}[/]")
    out = out_console()
    out.print(table)
    if not result.feasible and result.feedback and result.feedback != result.message:
        out.print(result.feedback, highlight=False, markup=False)


def backends_command(
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
) -> None:
    """List the executor backends and how each runs on this machine."""
    from backends import backend_names, get_backend

    rows = []
    for name in backend_names():
        try:
            mode = get_backend(name).mode()
        except Exception as exc:  # a broken plugin is reported, not fatal
            mode = {"mode": "unavailable", "can_run": False, "detail": f"{type(exc).__name__}: {exc}"}
        rows.append({"name": name, **mode})
    if json_output:
        print_json({"backends": rows})
        return
    from rich.table import Table

    table = Table("backend", "mode", "runs here", "detail")
    for r in rows:
        table.add_row(r["name"], r["mode"], "yes" if r.get("can_run") else "no", r.get("detail", ""))
    out_console().print(table)
