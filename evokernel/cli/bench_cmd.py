"""`evokernel bench`, `evokernel ablate` and `evokernel report`: benchmark
suites, the equal-budget comparison of memory and refinement, and the report."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ._common import (
    EXIT_OK,
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

EXIT_INTERRUPTED = 130

SuiteArg = Annotated[str, typer.Argument(
    help="A bundled suite (level1, level2, level3, npu), a directory of task files, or one task file.")]
PolicyOpt = Annotated[str, typer.Option(help="Offline policy when no --model is given.")]
LimitOpt = Annotated[Optional[int], typer.Option(min=1, help="Only the first K tasks, in sorted order.")]
SeedOpt = Annotated[int, typer.Option(help="Seed of the loop's random choices.")]
TrialsOpt = Annotated[int, typer.Option(min=1, help="Correctness trials with fresh seeded inputs.")]
RepsOpt = Annotated[int, typer.Option(min=1, help="Timed runs per candidate on a GPU.")]
OutOpt = Annotated[Optional[Path], typer.Option(
    help="Also write the JSON result here; a directory (or a path ending in /) gets a generated file name, "
         "e.g. --out benchmarks/results/.")]


def register(app: typer.Typer) -> None:
    app.command("bench")(bench_command)
    app.command("ablate")(ablate_command)
    app.command("report")(report_command)


def _command_line(ctx: typer.Context) -> str:
    """The command as invoked, rebuilt from click's parsed parameters (so it is
    right whether called from a shell or from a test runner)."""
    import click

    words = ctx.command_path.split()
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value is None or value is False or value == param.default:
            continue
        if isinstance(param, click.Argument):
            words.append(str(value))
        elif value is True:
            words.append(param.opts[0])
        else:
            for v in value if isinstance(value, (list, tuple)) else [value]:
                words += [param.opts[0], str(v)]
    return shlex.join(words)


class _Progress:
    """A progress bar on stderr, fed by the loop's events."""

    def __init__(self, total_steps: int, budget: int):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.budget = budget
        self.done: dict[tuple[str, str], int] = {}
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=err_console(), transient=False,
        )
        self.bar = self.progress.add_task("starting", total=total_steps)

    def __enter__(self) -> "_Progress":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def __call__(self, event: dict[str, Any]) -> None:
        key = (event.get("arm", ""), event.get("task", ""))
        prefix = f"[{event['arm']}] " if event.get("arm") else ""
        if event["type"] == "step_start":
            self.progress.update(self.bar, description=f"{prefix}{event['task']} step {event['step']} ({event['stage']})")
        elif event["type"] == "step_done":
            self.done[key] = self.done.get(key, 0) + 1
            self.progress.advance(self.bar)
        elif event["type"] == "stopped":
            left = self.budget - self.done.get(key, 0)
            self.done[key] = self.budget
            self.progress.advance(self.bar, left)
            self.progress.console.print(f"{prefix}{event['task']}: stopped: {event['reason']}", style="yellow",
                                        highlight=False, markup=False, soft_wrap=True)


def _options(**kw: Any):
    from evokernel.bench import BenchOptions

    return BenchOptions(**kw)


def _count_tasks(suite: str, options: Any) -> int:
    """Check the options and the suite before any work starts; the number of tasks, for the progress bar."""
    from evokernel.bench import BenchError, resolve_tasks

    try:
        options.validate()
        return len(resolve_tasks(suite, limit=options.limit))
    except BenchError as exc:
        raise fail_usage(str(exc))


def _write(data: dict[str, Any], out: Optional[Path]) -> None:
    if out is None:
        return
    from evokernel.bench import write_result

    path = write_result(data, out)
    err_console().print(f"wrote {path}", style="dim", highlight=False, soft_wrap=True)


def bench_command(
    ctx: typer.Context,
    suite: SuiteArg,
    policy: PolicyOpt = "builtin",
    model: ModelOpt = None,
    backend: BackendOpt = "triton",
    budget: BudgetOpt = 30,
    limit: LimitOpt = None,
    memory: Annotated[Optional[Path], typer.Option(
        help="Memory to use and grow; default: a fresh temporary memory, so the numbers do not depend on earlier runs.")] = None,
    memory_mode: Annotated[str, typer.Option(help="off, task-only, similarity or value.")] = "value",
    device: DeviceOpt = None,
    seed: SeedOpt = 0,
    timeout: TimeoutOpt = 300.0,
    trials: TrialsOpt = 5,
    reps: RepsOpt = 100,
    json_output: JsonOpt = False,
    out: OutOpt = None,
) -> None:
    """Run the loop over a benchmark suite; report correctness, fast_p and speedups per task and overall.

    On a machine without a GPU the tasks run at their small size and the speed
    metrics are marked as not comparable (interpreted latencies, no baselines).
    Nothing is written unless --out says where (e.g. --out benchmarks/results/).
    """
    from evokernel.bench import BenchError, run_bench

    device = prepare_device(backend, device)
    options = _options(policy=policy, model=model, backend=backend, budget=budget, limit=limit,
                       memory=str(memory) if memory else None, memory_mode=memory_mode, seed=seed, device=device,
                       timeout_s=timeout, trials=trials, reps=reps)
    n = _count_tasks(suite, options)
    try:
        with _Progress(n * budget, budget) as progress:
            result = run_bench(suite, options, on_event=progress, command=_command_line(ctx))
    except KeyboardInterrupt:
        err_console().print("interrupted", style="yellow")
        raise typer.Exit(EXIT_INTERRUPTED)
    except BenchError as exc:
        raise fail_usage(str(exc))
    data = result.to_dict()
    _write(data, out)
    if json_output:
        print_json(data)
    else:
        _render_bench(data)
    raise typer.Exit(EXIT_OK)


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def _x(v: Any) -> str:
    return "–" if v is None else f"{v:.2f}x"


def _render_bench(data: dict[str, Any]) -> None:
    from rich.table import Table

    rows = data["tasks"]
    speeds = [b for b in ("eager", "compile") if any(r[f"speedup_{b}"] is not None for r in rows)]
    table = Table(title=f"{data['suite']} ({data['policy']}, budget {data['options']['budget']})")
    table.add_column("task")
    for name in ("ok", "steps", "1st ok", "best ms", "best/1st", *(f"vs {b}" for b in speeds)):
        table.add_column(name, justify="right")
    table.add_column("note")
    for r in rows:
        table.add_row(r["name"], "[green]yes[/]" if r["correct"] else "[red]no[/]", str(r["attempts"]),
                      str(r["first_correct_attempt"] or "–"), f"{r['best_latency_ms']:.4g}" if r["best_latency_ms"] else "–",
                      _x(r["speedup_over_first"]), *(_x(r[f"speedup_{b}"]) for b in speeds), _clip(r["stopped"] or "", 40))
    out = out_console()
    out.print(table)
    _render_metrics(out, data["metrics"])


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _render_metrics(out: Any, m: dict[str, Any]) -> None:
    from rich.table import Table

    first = m["attempts_to_first_correct"]
    table = Table("metric", "value", title="overall (denominator: all tasks)")
    table.add_row("correct", f"{_pct(m['correct_rate'])} ({m['correct']}/{m['tasks']})")
    table.add_row("compiled", f"{_pct(m['compile_rate'])} ({m['compiled']}/{m['tasks']})")
    for base in ("eager", "compile"):
        fast = m[f"fast_{base}"]
        if all(v is None for v in fast.values()):
            table.add_row(f"fast_p vs {base}", "– (no baseline timed: baselines run on a GPU only)")
        else:
            table.add_row(f"fast_p vs {base}", "  ".join(f"{k.removeprefix('fast_')}: {_pct(v)}" for k, v in fast.items()))
        table.add_row(f"geomean / median vs {base}", f"{_x(m[f'geomean_speedup_{base}'])} / {_x(m[f'median_speedup_{base}'])}")
    table.add_row("median best/first", _x(m["median_speedup_over_first"]))
    mean = "–" if first["mean"] is None else f"{first['mean']:.2f}"
    table.add_row("attempts to first correct", f"mean {mean}, median {first['median'] if first['median'] is not None else '–'}")
    if m.get("llm"):
        table.add_row("LLM tokens in/out", f"{m['llm']['tokens_in']} / {m['llm']['tokens_out']}")
        table.add_row("LLM cost", f"${m['llm']['cost_usd']:.4f}")
    out.print(table)
    if not m["speed_comparable"]:
        err_console().print(f"note: {m['speed_note']}", style="yellow", highlight=False, soft_wrap=True)


def ablate_command(
    ctx: typer.Context,
    suite: SuiteArg,
    policy: PolicyOpt = "builtin",
    model: ModelOpt = None,
    backend: BackendOpt = "triton",
    budget: BudgetOpt = 30,
    limit: LimitOpt = None,
    arm: Annotated[Optional[list[str]], typer.Option(
        help="Run only these arms (repeatable): independent, refine, similarity, value.")] = None,
    memory: Annotated[Optional[Path], typer.Option(
        help="Start every arm from its own copy of this memory (never written); default: empty memories.")] = None,
    device: DeviceOpt = None,
    seed: SeedOpt = 0,
    timeout: TimeoutOpt = 300.0,
    trials: TrialsOpt = 5,
    reps: RepsOpt = 100,
    json_output: JsonOpt = False,
    out: OutOpt = None,
) -> None:
    """Compare independent samples, refinement without memory, similarity-only and value-driven retrieval at equal budget."""
    from evokernel.bench import ARM_NAMES, BenchError, run_ablation

    device = prepare_device(backend, device)
    unknown = [a for a in arm or [] if a not in ARM_NAMES]
    if unknown:
        raise fail_usage(f"unknown arm(s) {', '.join(unknown)}; known: {', '.join(ARM_NAMES)}")
    if memory is not None and not memory.is_file():
        raise fail_usage(f"no memory at {memory}")
    n_arms = len(arm) if arm else len(ARM_NAMES)
    options = _options(policy=policy, model=model, backend=backend, budget=budget, limit=limit,
                       memory=str(memory) if memory else None, seed=seed, device=device, timeout_s=timeout,
                       trials=trials, reps=reps)
    n = _count_tasks(suite, options)
    try:
        with _Progress(n * budget * n_arms, budget) as progress:
            result = run_ablation(suite, options, arms=arm, on_event=progress, command=_command_line(ctx))
    except KeyboardInterrupt:
        err_console().print("interrupted", style="yellow")
        raise typer.Exit(EXIT_INTERRUPTED)
    except BenchError as exc:
        raise fail_usage(str(exc))
    data = result.to_dict()
    _write(data, out)
    for note in data["notes"]:
        err_console().print(f"note: {note}", style="yellow", highlight=False, soft_wrap=True)
    if json_output:
        print_json(data)
    else:
        _render_ablation(data)
    raise typer.Exit(EXIT_OK)


def _render_ablation(data: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table("arm", "correct", "compiled", "fast_1 vs eager", "median best/first", "to first correct (mean / median)",
                  title=f"{data['suite']}: equal budget of {data['options']['budget']} steps per task ({data['policy']})",
                  caption="; ".join(f"{a['name']}: {a['label']}" for a in data["arms"]))
    for a in data["arms"]:
        m = a["metrics"]
        first = m["attempts_to_first_correct"]
        mean = "–" if first["mean"] is None else f"{first['mean']:.2f}"
        table.add_row(a["name"], f"{_pct(m['correct_rate'])} ({m['correct']}/{m['tasks']})", _pct(m["compile_rate"]),
                      _pct(m["fast_eager"]["fast_1"]), _x(m["median_speedup_over_first"]),
                      f"{mean} / {first['median'] if first['median'] is not None else '–'}")
    out_console().print(table)
    arms = data["arms"]
    if arms and not arms[0]["metrics"]["speed_comparable"]:
        err_console().print(f"note: {arms[0]['metrics']['speed_note']}", style="yellow", highlight=False, soft_wrap=True)


def report_command(
    results: Annotated[Path, typer.Argument(help="A JSON result from `evokernel bench` or `evokernel ablate`.")],
    out: Annotated[Optional[Path], typer.Option(
        help="Directory for report.md and the PNG plots; default: RESULTS without .json.")] = None,
    json_output: JsonOpt = False,
) -> None:
    """Write a markdown report with plots (speedups, accuracy per iteration, fast_p over p) from a results file."""
    from evokernel.bench import ReportError, write_report

    try:
        data = json.loads(results.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise fail_usage(f"{results}: cannot read a JSON result: {exc}")
    if not isinstance(data, dict):
        raise fail_usage(f"{results}: not an EvoKernel result")
    out_dir = out or results.with_suffix("")
    try:
        files = write_report(data, out_dir)
    except ReportError as exc:
        raise fail_usage(f"{results}: {exc}")
    console = err_console()
    for s in files.skipped:
        console.print(f"skipped {s}", style="yellow", highlight=False, soft_wrap=True)
    if json_output:
        print_json({"markdown": str(files.markdown), "images": [str(p) for p in files.images], "skipped": files.skipped})
    else:
        out_console().print(str(files.markdown), highlight=False, soft_wrap=True)
        for p in files.images:
            out_console().print(str(p), highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_OK)
