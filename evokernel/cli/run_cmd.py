"""`evokernel run` and `evokernel refine`: the draft/refine loop from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ._common import (
    EXIT_OK,
    EXIT_REJECTED,
    BackendOpt,
    BudgetOpt,
    DeviceOpt,
    JsonOpt,
    ModelOpt,
    TimeoutOpt,
    err_console,
    fail_usage,
    out_console,
    prepare_device,
    print_json,
)


def register(app: typer.Typer) -> None:
    app.command("run")(run_command)
    app.command("refine")(refine_command)


PolicyOpt = Annotated[Optional[str], typer.Option(help="'builtin': the offline policy (not an LLM); the default without --model.")]
MemoryOpt = Annotated[Optional[Path], typer.Option(help="Memory database (default: the user's data directory).")]
ModeOpt = Annotated[str, typer.Option("--memory-mode", help="off, task-only, similarity or value (ablations).")]
ExportOpt = Annotated[Optional[Path], typer.Option(help="Write each task's best kernel to this directory.")]
ResumeOpt = Annotated[bool, typer.Option(help="Continue a matching unfinished run.")]
ReplayOpt = Annotated[bool, typer.Option(help="Answer repeated LLM requests from the response cache (exact, free rerun).")]
PortOpt = Annotated[Optional[list[str]], typer.Option("--port-from", help="Also retrieve memories of this backend (porting).")]


def run_command(
    tasks: Annotated[Optional[list[str]], typer.Argument(help="Task files or bundled task names; none: the bundled examples.")] = None,
    backend: BackendOpt = "triton",
    model: ModelOpt = None,
    policy: PolicyOpt = None,
    budget: BudgetOpt = 30,
    memory: MemoryOpt = None,
    memory_mode: ModeOpt = "value",
    device: DeviceOpt = None,
    timeout: TimeoutOpt = 300.0,
    export: ExportOpt = None,
    resume: ResumeOpt = True,
    replay: ReplayOpt = False,
    port_from: PortOpt = None,
    seed: Annotated[int, typer.Option(help="Seed for retrieval and start-point choices.")] = 0,
    json_output: JsonOpt = False,
) -> None:
    """Draft each task until a kernel is correct, then refine its latency."""
    from evokernel.loop import resolve_task_args

    try:
        paths = resolve_task_args(list(tasks or []))
    except KeyError as exc:
        raise fail_usage(str(exc.args[0]))
    _run(paths, backend, model, policy, budget, memory, memory_mode, device, timeout, export, resume, replay,
         port_from or [], seed, json_output, notes=[])


def refine_command(
    backend: BackendOpt = "triton",
    model: ModelOpt = None,
    policy: PolicyOpt = None,
    budget: BudgetOpt = 10,
    memory: MemoryOpt = None,
    device: DeviceOpt = None,
    timeout: TimeoutOpt = 300.0,
    export: ExportOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Continue refining every task in the memory that already has a feasible kernel."""
    from evokernel.loop import tasks_in_bank
    from memory_store import MemoryStore, default_memory_path

    path = memory or default_memory_path()
    if not path.exists():
        raise fail_usage(f"no memory at {path}")
    with MemoryStore(path) as store:
        paths, notes = tasks_in_bank(store, backend, path.parent / "refine-tasks")
    if not paths:
        raise fail_usage(f"no task in {path} has a feasible {backend} kernel to refine")
    _run(paths, backend, model, policy, budget, path, "value", device, timeout, export, True, False, [], 0,
         json_output, notes=notes)


def _run(paths, backend, model, policy, budget, memory, memory_mode, device, timeout, export, resume, replay,
         port_from, seed, json_output, notes) -> None:
    from backends import TaskError, load_task
    from evokernel.loop import RunConfig, export_best, run_tasks
    from evokernel.policies import get_policy
    from memory_store import MemoryStore, MemoryStoreError, default_memory_path

    console = err_console()
    if model and policy:
        raise fail_usage("give --model or --policy, not both")
    device = prepare_device(backend, device)
    for note in notes:
        console.print(note, style="dim")
    for p in paths:
        try:
            load_task(p, run_reference=True)
        except TaskError as exc:
            raise fail_usage(str(exc))
    try:
        config = RunConfig(backend=backend, budget=budget, memory_mode=memory_mode, seed=seed, device=device,
                           timeout_s=timeout, port_from=tuple(port_from))
    except ValueError as exc:
        raise fail_usage(str(exc))
    memory_path = memory or default_memory_path()
    try:
        store = MemoryStore(memory_path)
    except MemoryStoreError as exc:
        raise fail_usage(str(exc))
    with store:
        try:
            pol = get_policy(model=model, policy=policy, log=store, replay=replay)
        except (ValueError, ImportError) as exc:
            raise fail_usage(str(exc))
        label = pol.name if pol.is_llm else "builtin (offline, not an LLM)"
        console.print(f"policy: {label}; backend: {backend}; device: {device}; memory: {memory_path}", highlight=False)
        view = _Progress(console, [Path(p).stem for p in paths], budget)
        try:
            with view:
                result = run_tasks(paths, pol, store, config, on_event=view.update)
        except KeyboardInterrupt:
            console.print("interrupted: every completed step is in the memory; run the same command to resume")
            raise typer.Exit(130)
        written = export_best(store, result, export) if export else []
    for w in written:
        console.print(f"wrote {w}", style="dim")
    if json_output:
        data = result.to_dict()
        print_json(data)
    else:
        _final_table(result, label)
    raise typer.Exit(EXIT_OK if all(t.correct for t in result.tasks) else EXIT_REJECTED)


class _Progress:
    """A live per-task view on stderr: stage, attempts, best latency, speedup."""

    def __init__(self, console, names: list[str], budget: int):
        self.console = console
        self.rows: dict[str, dict[str, Any]] = {n: {"stage": "draft", "attempts": 0, "status": "", "best": None, "speedup": None} for n in names}
        self.budget = budget
        self.live = None

    def __enter__(self):
        from rich.live import Live

        self.live = Live(self._table(), console=self.console, refresh_per_second=4, transient=False)
        self.live.__enter__()
        return self

    def __exit__(self, *exc):
        if self.live is not None:
            self.live.__exit__(*exc)

    def update(self, event: dict[str, Any]) -> None:
        row = self.rows.get(event.get("task", ""))
        if row is not None:
            if event["type"] == "step_start":
                row.update(stage=event["stage"], status="running")
            elif event["type"] == "step_done":
                row.update(attempts=event["step"], status=event["status"], best=event["best_latency_ms"], speedup=event["speedup_over_first"])
            elif event["type"] == "stopped":
                row.update(status="stopped: " + event["reason"][:60])
        if self.live is not None:
            self.live.update(self._table())

    def _table(self):
        from rich.table import Table

        table = Table("task", "stage", "attempts", "last verdict", "best ms", "x first")
        for name, r in self.rows.items():
            table.add_row(name, r["stage"], f"{r['attempts']}/{self.budget}", r["status"],
                          f"{r['best']:.4f}" if r["best"] else "-", f"{r['speedup']:.2f}" if r["speedup"] else "-")
        return table


def _final_table(result, label: str) -> None:
    from rich.table import Table

    table = Table("task", "correct", "attempts", "first correct", "best ms", "source", "x first", "x eager", "x compile",
                  title=f"run {result.run_id} ({label}){' resumed' if result.resumed else ''}")
    for t in result.tasks:
        table.add_row(
            t.name, "yes" if t.correct else ("stopped: " + t.stopped if t.stopped else "no"), str(t.attempts),
            str(t.first_correct_attempt or "-"), f"{t.best_latency_ms:.4f}" if t.best_latency_ms else "-", t.latency_source,
            f"{t.speedup_over_first:.2f}" if t.speedup_over_first else "-",
            f"{t.speedup_eager:.2f}" if t.speedup_eager else "-", f"{t.speedup_compile:.2f}" if t.speedup_compile else "-",
        )
    out_console().print(table)
