"""`evokernel memory ...`: inspect, move and benchmark the episodic memory.

Each command parses its options, makes one `memory_store` call and renders:
data on stdout (only JSON with `--json`), messages on stderr.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Iterator, Optional

import typer

from ._common import err_console, fail_usage, memory_path, out_console

memory_app = typer.Typer(
    name="memory",
    help="Inspect, check, export, import and benchmark the episodic memory.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_show_locals=False,
)

MemoryOption = Annotated[
    Optional[Path],
    typer.Option("--memory", help="Memory file (default: $EVOKERNEL_HOME/memory.db or ~/.local/share/evokernel/memory.db)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON on stdout and nothing else.")]


def register(app: typer.Typer) -> None:
    app.add_typer(memory_app, name="memory")


def _stderr():
    return err_console()


@contextlib.contextmanager
def _open(memory: Path | None, *, must_exist: bool = True) -> Iterator[Any]:
    """The store, for the duration of one command. A missing, unreadable or damaged
    file, or input the store refuses, is one line on stderr and exit code 2."""
    from memory_store import MemoryStore, MemoryStoreError

    path = memory_path(memory, must_exist=must_exist)
    try:
        with MemoryStore(path) as store:
            yield store
    except MemoryStoreError as exc:
        raise _fail(str(exc)) from None


def _fail(message: str) -> typer.Exit:
    return fail_usage(message)


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True))


@memory_app.command("check")
def check(memory: MemoryOption = None, as_json: JsonOption = False) -> None:
    """SQLite's integrity and foreign-key checks, the full-text index check and the schema; exit 1 on problems."""
    from memory_store import check_memory_file

    path = memory_path(memory, must_exist=True)
    report = check_memory_file(path)
    if as_json:
        _print_json({"path": report.path, "ok": report.ok, "problems": list(report.problems),
                     "notes": list(report.notes), "migrations": list(report.migrations)})
    else:
        for problem in report.problems:
            typer.echo(f"problem: {problem}")
        for note in report.notes:
            typer.echo(f"note: {note}")
        verdict = "sound" if report.ok else f"{len(report.problems)} problem(s)"
        typer.echo(f"{report.path}: {verdict}")
    if not report.ok:
        if not as_json:
            _stderr().print(
                f"{path} is damaged: keep a copy, then `evokernel memory export --memory {path} > items.jsonl` may save "
                "what is still readable, and `evokernel memory import items.jsonl --memory NEW.db` rebuilds a bank",
                markup=False)
        raise typer.Exit(1)


@memory_app.command("stats")
def stats(memory: MemoryOption = None, as_json: JsonOption = False) -> None:
    """Counts: items, tasks, kinds, backends, value updates, runs, steps."""
    from rich.table import Table

    with _open(memory) as store:
        data = store.stats()
    if as_json:
        _print_json(data)
        return
    table = Table(title=f"memory {data['path']}", show_header=False)
    for key in ("items", "tasks", "value_updates", "runs", "steps", "llm_calls", "embeddings", "size_bytes"):
        table.add_row(key, str(data[key]))
    for kind, count in data["by_kind"].items():
        table.add_row(f"kind {kind}", str(count))
    for backend, count in data["by_backend"].items():
        table.add_row(f"backend {backend}", str(count))
    out_console().print(table)


@memory_app.command("ls")
def ls(
    memory: MemoryOption = None,
    as_json: JsonOption = False,
    kind: Annotated[Optional[list[str]], typer.Option("--kind", help="Only this kind (repeatable).")] = None,
    backend: Annotated[Optional[list[str]], typer.Option("--backend", help="Only this backend (repeatable).")] = None,
    task: Annotated[Optional[str], typer.Option("--task", help="Only this task key.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many, newest first.")] = 50,
) -> None:
    """List items, newest first, without their content."""
    from rich.table import Table

    with _open(memory) as store:
        items = store.list_items(kinds=kind, backends=backend, task_key=task, limit=limit)
    columns = ("id", "kind", "task_key", "backend", "stage", "status", "latency_ms", "q_draft", "q_refine", "visits_draft", "visits_refine")
    if as_json:
        _print_json([{**{c: getattr(i, c) for c in columns}, **_skill_columns(i)} for i in items])
        return
    if kind and set(kind) == {"best_practice"}:
        _skills_table(items)
        return
    table = Table("id", "kind", "task", "backend", "stage", "status", "ms", "Qd", "Qr", "visits")
    for column in table.columns:
        column.overflow = "fold"  # wrap, never truncate a task key
    num = lambda v: "" if v is None else f"{v:.3g}"  # noqa: E731
    for i in items:
        table.add_row(
            str(i.id), i.kind, i.task_key, i.backend, i.stage, i.status or "", num(i.latency_ms),
            num(i.q_draft), num(i.q_refine), f"{i.visits_draft}/{i.visits_refine}",
        )
    out_console().print(table)


def _skill_columns(item: Any) -> dict[str, Any]:
    """A skill's title, verification and evidence count (for best_practice items)."""
    if item.kind != "best_practice":
        return {}
    from evokernel.skills import Skill

    skill = Skill.from_item(item)
    return {"title": skill.title, "verification": skill.verification.to_dict() if skill.verification else None,
            "evidence": len(skill.evidence), "source": skill.source}


def _skills_table(items: list[Any]) -> None:
    """Skills with their verification: what re-timing measured and whether it admitted them."""
    from rich.table import Table

    from evokernel.skills import Skill

    table = Table("id", "status", "title", "from task", "by", "verified", "reruns", "source", "evidence", "Qd", "Qr",
                  "visits", title="skills (best_practice)")
    for column in table.columns:
        column.overflow = "fold"
    for item in items:
        s = Skill.from_item(item)
        v = s.verification
        verified = "" if v is None or v.speedup is None else f"{v.speedup:.2f}x ({v.baseline_ms:.4g} -> {v.skill_ms:.4g} ms)"
        first = s.evidence[0].task_name if s.evidence else item.task_key
        table.add_row(str(s.id), s.status.value, s.title, first, s.source, verified, str(v.reruns if v else ""),
                      v.latency_source if v else "", str(len(s.evidence)), f"{s.q_draft:.3g}", f"{s.q_refine:.3g}",
                      f"{s.visits_draft}/{s.visits_refine}")
    out_console().print(table)


@memory_app.command("show")
def show(
    item_id: Annotated[int, typer.Argument(help="Item id.")],
    memory: MemoryOption = None,
    as_json: JsonOption = False,
) -> None:
    """One item with all its columns and content."""
    with _open(memory) as store:
        item = store.get_item(item_id)
    record = {field: getattr(item, field) for field in item.__dataclass_fields__}
    if as_json:
        _print_json(record)
        return
    content = record.pop("content")
    for key, value in record.items():
        typer.echo(f"{key}: {json.dumps(value) if isinstance(value, dict) else value}")
    typer.echo("")
    typer.echo(content)


@memory_app.command("export")
def export(
    dest: Annotated[str, typer.Argument(help="File to write, or - for stdout.")] = "-",
    memory: MemoryOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write every item with its values as JSON lines."""
    if as_json and dest == "-":
        raise _fail("--json needs a file destination (the export itself goes to stdout)")
    with _open(memory) as store:
        if dest == "-":
            count = store.export_jsonl(sys.stdout)
            sys.stdout.flush()
        else:
            with open(dest, "w", encoding="utf-8") as fp:
                count = store.export_jsonl(fp)
    if as_json:
        _print_json({"exported": count, "path": dest})
    else:
        _stderr().print(f"exported {count} items to {'stdout' if dest == '-' else dest}")


@memory_app.command("import")
def import_(
    source: Annotated[str, typer.Argument(help="Export file to merge, or - for stdin.")],
    memory: MemoryOption = None,
    as_json: JsonOption = False,
) -> None:
    """Merge an export into the memory (ids remapped, duplicates skipped, all or nothing)."""
    from memory_store import MemoryStoreError

    if source != "-":
        try:
            fp = open(source, encoding="utf-8")
        except OSError as exc:
            raise _fail(f"cannot read {source}: {exc.strerror}") from None
    new_bank = not memory_path(memory).exists()
    with _open(memory, must_exist=False) as store:
        try:
            if source == "-":
                report = store.import_jsonl_report(sys.stdin)
            else:
                with fp:
                    report = store.import_jsonl_report(fp)
        except MemoryStoreError as exc:
            failed = f"{source}: {exc}; nothing was imported"
        else:
            failed = None
    if failed is not None:
        if new_bank:  # an import that imported nothing leaves no new bank behind
            for leftover in (store.path, Path(f"{store.path}-wal"), Path(f"{store.path}-shm")):
                with contextlib.suppress(OSError):
                    leftover.unlink()
        raise _fail(failed)
    if as_json:
        _print_json({"imported": report.imported, "skipped": report.skipped, "lines": report.lines})
    else:
        _stderr().print(f"imported {report.imported} items ({report.skipped} already present)")


@memory_app.command("bench")
def bench(
    items: Annotated[int, typer.Option("--items", min=1, help="How many synthetic items to insert.")] = 10_000,
    queries: Annotated[int, typer.Option("--queries", min=1, help="Timed retrievals.")] = 500,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the synthetic bank and queries.")] = 0,
    memory: Annotated[
        Optional[Path], typer.Option("--memory", help="New file to fill (default: a temporary file, deleted after).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Fill a new bank with realistic items and time inserts and retrieval."""
    import tempfile

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from memory_store import MemoryStoreError
    from memory_store._bench import run_bench

    console = _stderr()
    with tempfile.TemporaryDirectory(prefix="evokernel-bench-") as tmp:
        path = memory or Path(tmp) / "bench.db"
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, transient=True,
        ) as bar:
            tasks: dict[str, Any] = {}

            def progress(phase: str, done: int, total: int) -> None:
                if phase not in tasks:
                    tasks[phase] = bar.add_task(phase, total=total)
                bar.update(tasks[phase], completed=done)

            try:
                result = run_bench(path, items=items, queries=queries, seed=seed, progress=progress)
            except MemoryStoreError as exc:
                raise _fail(str(exc)) from None
    if as_json:
        _print_json(result)
        return
    for key in ("items", "insert_per_s", "insert_single_per_s", "retrieve_p50_ms", "retrieve_p99_ms", "retrieve_cpu_p50_ms", "retrieve_cpu_p99_ms"):
        if key in result:
            typer.echo(f"{key}: {result[key]}")
