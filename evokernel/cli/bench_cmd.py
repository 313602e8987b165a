"""`evokernel bench`, `evokernel ablate` and `evokernel report`: benchmark
suites, the equal-budget comparison of memory and refinement, and the report."""

from __future__ import annotations

import contextlib
import json
import shlex
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from evokernel.options import RunOptions

from ._common import (
    EXIT_OK,
    JsonOpt,
    err_console,
    fail_usage,
    first_correct_cell,
    interrupted,
    memory_path,
    out_console,
    prepare,
    print_json,
    size_note,
    stop_on_terminate,
)
from ._flags import settings
from .run_cmd import RUN_SETTINGS

SuiteArg = Annotated[str, typer.Argument(
    help="A bundled suite (level1, level2, level3, npu), a bundled task, a directory of task files, or one task file.")]
LimitOpt = Annotated[Optional[int], typer.Option(min=1, help="Only the first K tasks, in sorted order.")]
# Text, not a Path: a Path drops the trailing "/" that asks for a new directory.
OutOpt = Annotated[Optional[str], typer.Option(
    metavar="PATH", help="Also write the JSON result here; a directory (or a path ending in /) gets a generated file "
                         "name, e.g. --out benchmarks/results/.")]


def register(app: typer.Typer) -> None:
    app.command("bench")(bench_command)
    app.command("ablate")(ablate_command)
    app.command("report")(report_command)


def _command_line(ctx: typer.Context) -> str:
    """The command as invoked, rebuilt from click's parsed parameters (so it is
    right whether called from a shell or from a test runner)."""
    words = ctx.command_path.split()
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value is None or value == param.default:
            continue
        # By kind, not class: typer carries its own click, whose Argument is not `click.Argument`.
        if param.param_type_name == "argument":
            words.append(str(value))
        elif isinstance(value, bool):
            # a switch away from its default: --x, or --no-x for one that is on by default
            flags = param.opts if value else param.secondary_opts
            if flags:
                words.append(flags[0])
        else:
            for v in value if isinstance(value, (list, tuple)) else [value]:
                words += [param.opts[0], str(v)]
    return shlex.join(words)


def _write(data: dict[str, Any], out: Optional[str]) -> None:
    if out is None:
        return
    from evokernel.bench import write_result

    path = write_result(data, out)
    err_console().print(f"wrote {path}", style="dim", markup=False)


def _call(fn: Any, *args: Any, options: RunOptions, **kwargs: Any) -> Any:
    """The library call with a live view on stderr; a bench that cannot start is a usage error."""
    from evokernel.bench import BenchError, BenchInterrupted

    from ._progress import RunProgress

    options = prepare(options)
    note = size_note(options)
    try:
        with stop_on_terminate(), RunProgress(err_console(), options.loop.budget,
                                              preamble=[note] if note else []) as progress:
            return fn(*args, options, on_event=progress, **kwargs)
    except BenchInterrupted:
        raise  # the caller writes the results so far
    except KeyboardInterrupt:
        raise interrupted() from None
    except BenchError as exc:
        raise fail_usage(str(exc)) from None


@settings(*RUN_SETTINGS)
def bench_command(
    ctx: typer.Context,
    suite: SuiteArg,
    limit: LimitOpt = None,
    memory: Annotated[Optional[Path], typer.Option(
        help="Memory to use and grow; default: a fresh temporary memory, so the numbers do not depend on earlier runs.")] = None,
    json_output: JsonOpt = False,
    out: OutOpt = None,
    *,
    options: RunOptions,
) -> None:
    """Run the loop over a benchmark suite; report correctness, fast_p and speedups per task and overall.

    On a machine without a GPU the tasks run at their small size and the speed
    metrics are marked as not comparable (interpreted latencies, no baselines).
    Nothing is written unless --out says where (e.g. --out benchmarks/results/).
    """
    from evokernel.bench import BenchInterrupted, run_bench

    try:
        result = _call(run_bench, suite, options=options, limit=limit, memory=memory and memory_path(memory),
                       command=_command_line(ctx))
    except BenchInterrupted as stop:  # Ctrl-C, SIGINT or SIGTERM: what was measured is not lost
        data = stop.result.to_dict()
        _write(data, out)
        if json_output:
            print_json(data)
        resume = ("run the same command to resume" if memory is not None
                  else "this bench used a temporary memory, so running it again starts over (give --memory to resume)")
        raise interrupted(f'interrupted: the results so far are written ("complete": false); {resume}') from None
    data = result.to_dict()
    _write(data, out)
    if json_output:
        print_json(data)
    else:
        _render_bench(data)
    raise typer.Exit(EXIT_OK)


def _precision(data: dict[str, Any]) -> str:
    """The title's note for a result in another precision than fp32 (', bf16'); results made before
    --precision existed are fp32."""
    precision = data["options"].get("precision", "fp32")
    return "" if precision == "fp32" else f", {precision}"


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def _x(v: Any) -> str:
    return "–" if v is None else f"{v:.2f}x"


def _render_bench(data: dict[str, Any]) -> None:
    from rich.table import Table

    rows = data["tasks"]
    speeds = [b for b in ("eager", "compile") if any(r[f"speedup_{b}"] is not None for r in rows)]
    table = Table(title=f"{data['suite']} ({data['policy']}, budget {data['options']['budget']}{_precision(data)})")
    table.add_column("task")
    for name in ("ok", "steps", "1st ok", "best ms", "best/1st", *(f"vs {b}" for b in speeds)):
        table.add_column(name, justify="right")
    table.add_column("note")
    for r in rows:
        table.add_row(r["name"], "[green]yes[/]" if r["correct"] else "[red]no[/]", str(r["attempts"]),
                      first_correct_cell(r["first_correct_attempt"], r.get("started_from_item_id")),
                      f"{r['best_latency_ms']:.4g}" if r["best_latency_ms"] else "–",
                      _x(r["speedup_over_first"]), *(_x(r[f"speedup_{b}"]) for b in speeds), r["stopped"] or "")
    out = out_console()
    out.print(table)
    _render_metrics(out, data["metrics"])


def _render_metrics(out: Any, m: dict[str, Any]) -> None:
    from rich.table import Table

    from evokernel.bench import below_half_line

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
    for b in m.get("below_half_of_compile") or []:  # issue 30's floor: each such task, and why where known
        out.print(below_half_line(b), markup=False, highlight=False, soft_wrap=True)
    if not m["speed_comparable"]:
        err_console().print(f"note: {m['speed_note']}", style="yellow", highlight=False, soft_wrap=True)


@settings(*RUN_SETTINGS)
def ablate_command(
    ctx: typer.Context,
    suite: SuiteArg,
    limit: LimitOpt = None,
    arm: Annotated[Optional[list[str]], typer.Option(
        help="Run only these arms (repeatable): independent, refine, similarity, value, no-skills.")] = None,
    memory: Annotated[Optional[Path], typer.Option(
        help="Start every arm from its own copy of this memory (never written); default: empty memories.")] = None,
    json_output: JsonOpt = False,
    out: OutOpt = None,
    *,
    options: RunOptions,
) -> None:
    """Compare independent samples, refinement without memory, similarity-only and value-driven retrieval at equal budget.

    Each arm sets its own memory mode, independent sampling and a fresh run; every other setting applies to all arms."""
    from evokernel.bench import ARM_SETTINGS, run_ablation

    given = [name for name in ARM_SETTINGS if name in ctx.params and _given(ctx, name)]
    if given:
        flags = ", ".join(_flag(ctx, name) for name in given)
        raise fail_usage(f"{flags}: each ablation arm sets this itself; choose arms with --arm")
    result = _call(run_ablation, suite, options=options, limit=limit, memory=memory and memory_path(memory), arms=arm,
                   command=_command_line(ctx))
    data = result.to_dict()
    _write(data, out)
    for note in data["notes"]:
        err_console().print(f"note: {note}", style="yellow", markup=False)
    if json_output:
        print_json(data)
    else:
        _render_ablation(data)
    raise typer.Exit(EXIT_OK)


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the user gave this flag (not its default)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def _flag(ctx: typer.Context, name: str) -> str:
    return next((p.opts[0] for p in ctx.command.params if p.name == name), name)


def _render_ablation(data: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table("arm", "correct", "compiled", "fast_1 vs eager", "median best/first", "to first correct (mean / median)",
                  title=f"{data['suite']}: equal budget of {data['options']['budget']} steps per task "
                        f"({data['policy']}{_precision(data)})",
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
    created = not out_dir.exists()
    try:
        files = write_report(data, out_dir)
    except ReportError as exc:
        if created:  # a report that was not written leaves no folder behind
            with contextlib.suppress(OSError):
                out_dir.rmdir()
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
