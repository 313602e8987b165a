"""`evokernel run` and `evokernel refine`: parse, call `evokernel.run`/`refine`, render."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from evokernel.options import RunOptions

from ._common import (
    EXIT_OK,
    EXIT_REJECTED,
    JsonOpt,
    call,
    err_console,
    first_correct_cell,
    memory_path,
    out_console,
    prepare,
    print_json,
    size_note,
)
from ._flags import settings


def register(app: typer.Typer) -> None:
    app.command("run")(run_command)
    app.command("refine")(refine_command)


MemoryOpt = Annotated[Optional[Path], typer.Option(help="Memory database (default: $EVOKERNEL_HOME/memory.db or the user's data directory).")]
RUN_SETTINGS = ("run", "evaluation", "llm", "loop", "execution")  # every run-shaped command takes them all


@settings(*RUN_SETTINGS)
def run_command(
    tasks: Annotated[Optional[list[str]], typer.Argument(help="Task files or bundled task names; none: the bundled examples.")] = None,
    memory: MemoryOpt = None,
    json_output: JsonOpt = False,
    *,
    options: RunOptions,
) -> None:
    """Draft each task until a kernel is correct, then refine its latency."""
    import evokernel

    result = _with_progress(evokernel.run, options, list(tasks or []), memory=memory_path(memory))
    _finish(result, json_output)


@settings(*RUN_SETTINGS, defaults={"budget": 10})
def refine_command(
    memory: MemoryOpt = None,
    json_output: JsonOpt = False,
    *,
    options: RunOptions,
) -> None:
    """Continue refining every task in the memory that already has a feasible kernel."""
    import evokernel

    result = _with_progress(evokernel.refine, options, memory=memory_path(memory))
    _finish(result, json_output)


def _with_progress(fn: Any, options: RunOptions, *args: Any, memory: Path) -> Any:
    """Say what runs where, then make the library call with a live view on stderr."""
    from ._progress import RunProgress

    options = prepare(options)
    view = RunProgress(err_console(), options.loop.budget, preamble=preamble(options, memory))
    with view:
        return call(fn, *args, options, memory=memory, on_event=view)


def preamble(options: RunOptions, memory: Path) -> list[str]:
    """What a run says once it has started: what runs where (`options` resolved)."""
    label = options.policy_label if options.llm is not None else f"{options.policy} (offline, not an LLM)"
    precision = "" if options.evaluation.precision == "fp32" else f"; precision: {options.evaluation.precision}"
    said = f"policy: {label}; backend: {options.backend}; device: {options.execution.run_device()}{precision}; memory: {memory}"
    note = size_note(options)
    return [note, said] if note else [said]


def _finish(result: Any, json_output: bool) -> None:
    console = err_console()
    for note in result.notes:
        console.print(note, style="dim", markup=False)
    for path in result.exported:
        console.print(f"wrote {path}", style="dim", markup=False)
    if json_output:
        print_json(result.to_dict())
    else:
        _final_table(result)
    raise typer.Exit(EXIT_OK if result.all_correct else EXIT_REJECTED)


def _final_table(result: Any) -> None:
    from rich.table import Table

    label = result.policy if result.policy_is_llm else f"{result.policy} (offline, not an LLM)"
    precision = result.options.evaluation.precision
    label += "" if precision == "fp32" else f", {precision}"
    usage = ("tokens in", "tokens out", "cost $") if result.policy_is_llm else ()
    table = Table("task", "correct", "attempts", "first correct", "best ms", "source", "x first", "x eager", "x compile",
                  "last verdict", *usage, title=f"run {result.run_id} ({label}){' resumed' if result.resumed else ''}")
    for t in result.tasks:
        cost = (str(t.tokens_in), str(t.tokens_out), f"{t.cost_usd:.4f}" if t.cost_usd else "-") if usage else ()
        table.add_row(
            t.name, "yes" if t.correct else ("stopped: " + t.stopped if t.stopped else "no"), str(t.attempts),
            first_correct_cell(t.first_correct_attempt, t.started_from_item_id), f"{t.best_latency_ms:.4f}" if t.best_latency_ms else "-", t.latency_source,
            f"{t.speedup_over_first:.2f}" if t.speedup_over_first else "-",
            f"{t.speedup_eager:.2f}" if t.speedup_eager else "-", f"{t.speedup_compile:.2f}" if t.speedup_compile else "-",
            t.last_status or "-", *cost,
        )
    if usage and len(result.tasks) > 1:
        spent = sum(t.cost_usd for t in result.tasks)
        table.add_row("total", "", str(sum(t.attempts for t in result.tasks)), *[""] * 7,
                      str(sum(t.tokens_in for t in result.tasks)), str(sum(t.tokens_out for t in result.tasks)),
                      f"{spent:.4f}" if spent else "-", end_section=True)
    out_console().print(table)

