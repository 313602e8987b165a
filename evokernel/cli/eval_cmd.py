"""`evokernel eval` and `evokernel backends`: the executor from the command line."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from evokernel.options import EvaluationOptions, RunOptions

from ._common import (EXIT_OK, EXIT_REJECTED, err_console, fail_usage, one_line, out_console, prepare, print_json,
                      print_result_table, size_note)
from ._flags import settings


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
    app.command("backends")(backends_command)


@settings("run", "evaluation", "execution", only={"run": ("backend",), "execution": ("device",)},
          helps={"backend": "Executor backend (see `evokernel backends`); a manifest row may name its own.",
                 "device": "cuda:N or cpu; default: the first GPU, else the CPU."})
def eval_command(
    paths: Annotated[Optional[list[str]], typer.Argument(
        help="TASK CANDIDATE [CANDIDATE ...]: a KernelBench-format task file (or bundled task name) and candidate "
             "files defining class ModelNew.", show_default=False)] = None,
    manifest: Annotated[Optional[Path], typer.Option(
        help="A TSV file of pairs to evaluate, one per line: task, candidate and optionally backend (paths relative "
             "to the file); a header line and # comments are skipped.")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Seed of the inputs and weights; default 1234, or 42 with --kernelbench-seeding.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object per evaluated pair on stdout (JSON Lines), and nothing else there.")] = False,
    *,
    options: RunOptions,
) -> None:
    """Compile, verify and time candidate kernels against a task's reference.

    One worker serves every pair (and is replaced after a crash, a timeout or a
    CUDA error). Several candidates or a --manifest print one result per pair,
    in order, and a summary table on stderr.
    """
    from backends import EvalJob, Executor

    options = prepare(options)
    device, evaluation = options.execution.run_device(), options.evaluation
    try:
        eval_options = evaluation.executor_options(**({} if seed is None else {"seed": seed}))
    except ValueError as exc:
        raise fail_usage(str(exc)) from None
    pairs = _pairs(paths or [], manifest, options.backend, evaluation)
    jobs = [EvalJob(p.task.path, p.source, backend=p.backend, options=eval_options) for p in pairs]
    note = size_note(options)
    console = err_console()
    if note:
        console.print(note, style="dim")
    batch = manifest is not None or len(pairs) > 1
    results = []
    with Executor(device=device, timeout_s=evaluation.timeout_s) as executor:
        if batch:
            for i, (pair, result) in enumerate(zip(pairs, executor.evaluate_many(jobs)), 1):
                results.append(result)
                console.print(f"[{i}/{len(pairs)}] {pair.task.name} {pair.label}: {result.status.value} "
                              f"{one_line(result.message)[:200]}", markup=False)
                if json_output:
                    print_json(_record(pair, result))
        else:
            pair = pairs[0]
            with console.status(f"evaluating {pair.label} on {pair.task.name} ({pair.backend}, {device})"):
                results = list(executor.evaluate_many(jobs))
            if json_output:
                print_json(_record(pair, results[0]))
    if batch:
        _summary(pairs, results, console if json_output else out_console())
    elif not json_output:
        _render(results[0], pairs[0])
    raise typer.Exit(EXIT_OK if all(r.feasible for r in results) else EXIT_REJECTED)


@dataclasses.dataclass(frozen=True)
class _Pair:
    task: Any  # backends.Task
    candidate: Path
    source: str
    backend: str
    label: str  # how the candidate is named in messages


def _pairs(paths: list[str], manifest: Path | None, default_backend: str, evaluation: EvaluationOptions) -> list[_Pair]:
    """Every (task, candidate, backend) to evaluate, each checked before any runs:
    a task that does not load, a candidate that cannot be read or an unknown
    backend is one line on stderr and exit 2."""
    if manifest is not None:
        if paths:
            raise fail_usage("give either TASK CANDIDATE... or --manifest, not both")
        rows = _manifest_rows(manifest, default_backend)
    else:
        if len(paths) < 2:
            raise fail_usage("give a task and at least one candidate: evokernel eval TASK CANDIDATE [CANDIDATE ...]")
        rows = [(paths[0], c, default_backend, "") for c in paths[1:]]
    return _checked(rows, evaluation)


def _manifest_rows(manifest: Path, default_backend: str) -> list[tuple[str, str, str, str]]:
    try:
        text = manifest.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise fail_usage(f"{manifest}: cannot read manifest: {exc}") from None
    rows = []
    base = manifest.resolve().parent
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cols = [c.strip() for c in line.split("\t")]
        if n == 1 and [c.lower() for c in cols[:2]] == ["task", "candidate"]:
            continue  # a header
        if len(cols) not in (2, 3) or not all(cols):
            raise fail_usage(f"{manifest}:{n}: expected task<TAB>candidate[<TAB>backend], got {line!r}")
        task, candidate = cols[0], str(base / cols[1])  # base / an absolute path is that path
        if "/" in task or task.endswith(".py") or (base / task).exists():
            task = str(base / task)  # else the name of a bundled task
        rows.append((task, candidate, cols[2] if len(cols) == 3 else default_backend, f"{manifest}:{n}: "))
    if not rows:
        raise fail_usage(f"{manifest}: no task/candidate pairs in the manifest")
    return rows


def _checked(rows: list[tuple[str, str, str, str]], evaluation: EvaluationOptions) -> list[_Pair]:
    from backends import TaskError, UnknownBackend, backend_names, get_backend, load_task
    from evokernel.loop import resolve_task_args

    tasks: dict[str, Any] = {}
    known: set[str] = set()
    pairs = []
    for task_arg, candidate, backend, where in rows:
        if backend not in known:
            if backend not in backend_names():
                raise fail_usage(f"{where}unknown backend {backend!r}; known: {', '.join(backend_names())}")
            try:
                get_backend(backend)
            except (UnknownBackend, ImportError) as exc:
                raise fail_usage(f"{where}{exc}") from None
            known.add(backend)
        if task_arg not in tasks:
            try:
                path = resolve_task_args([task_arg])[0]
                tasks[task_arg] = load_task(path, size=evaluation.size, precision=evaluation.precision,
                                            run_reference=True)
            except KeyError as exc:
                raise fail_usage(f"{where}{exc.args[0]}") from None
            except TaskError as exc:
                raise fail_usage(f"{where}{exc}") from None
        try:
            source = Path(candidate).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise fail_usage(f"{where}{candidate}: cannot read candidate: {exc}") from None
        pairs.append(_Pair(tasks[task_arg], Path(candidate), source, backend, Path(candidate).name))
    return pairs


def _record(pair: _Pair, result: Any) -> dict[str, Any]:
    data = result.to_dict()
    data.update(task=pair.task.name, task_path=str(pair.task.path), candidate=str(pair.candidate), backend=pair.backend,
                precision=pair.task.precision)
    return data


def _summary(pairs: list[_Pair], results: list[Any], console: Any) -> None:
    from rich.table import Table

    table = Table("#", "task", "candidate", "backend", "status", "latency ms", "speedup eager", "message",
                  title=f"{sum(r.feasible for r in results)} of {len(results)} feasible")
    for i, (pair, r) in enumerate(zip(pairs, results), 1):
        colour = "green" if r.feasible else "red"
        table.add_row(str(i), pair.task.name, pair.label, pair.backend, f"[{colour}]{r.status.value}[/]",
                      f"{r.latency_ms:.4f}" if r.latency_ms is not None else "-",
                      f"{r.speedup_eager:.2f}x" if r.speedup_eager is not None else "-", one_line(r.message))
    console.print(table)


def _render(result, pair: _Pair) -> None:
    from rich.table import Table

    colour = "green" if result.feasible else "red"
    table = Table(title=f"{pair.task.name} ({pair.backend}, {pair.task.precision})", show_header=False)
    table.add_row("status", f"[{colour}]{result.status.value}[/]")
    table.add_row("message", result.message)
    table.add_row("rules", result.rules)
    if result.own_kernel_share is not None:
        table.add_row("own kernel share", f"{100 * result.own_kernel_share:.1f}% of GPU time")
    if result.slowest_kernel_share is not None:
        table.add_row("slowest kernel", f"{result.slowest_kernel} ({100 * result.slowest_kernel_share:.1f}% of GPU time)")
    if result.degenerate:
        table.add_row("degenerate task", result.degenerate)
    if result.max_abs_error is not None:
        table.add_row("max abs error", f"{result.max_abs_error:.3g}")
    if result.latency_ms is not None:
        table.add_row("latency", f"{result.latency_ms:.4f} ms (IQR {result.latency_iqr_ms or 0:.4f}, {result.latency_source})")
    for name, ms in result.baselines.present().items():
        table.add_row(name.replace("_ms", ""), f"{ms:.4f} ms (speedup {ms / result.latency_ms:.2f}x)" if result.latency_ms else f"{ms:.4f} ms")
    if result.baselines.compile_check:
        table.add_row("torch.compile's output", result.baselines.compile_check)
    print_result_table(table, result)


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
