"""`evokernel logs`: show the LLM calls recorded in the memory database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ._common import fail_usage, memory_path, out_console


def _open_store(path: Path) -> Any:
    """The store whose `llm_calls()` we list (a seam for tests)."""
    from memory_store import MemoryStore

    return MemoryStore(path)


def _render_table(rows: list[dict]) -> None:
    from rich.table import Table

    table = Table(title=f"{len(rows)} LLM call{'s' if len(rows) != 1 else ''}")
    for name, justify in (
        ("id", "right"), ("time (UTC)", "left"), ("run", "right"), ("step", "right"),
        ("model", "left"), ("in", "right"), ("out", "right"), ("cost $", "right"),
        ("ms", "right"), ("parse", "left"), ("error", "left"),
    ):
        # Model names are what one scans for: never wrap them.
        table.add_column(name, justify=justify, no_wrap=name == "model")  # type: ignore[arg-type]

    from evokernel.llm import parse_summary

    def cell(value: Any, fmt: str = "{}") -> str:
        return "" if value is None else fmt.format(value)

    for row in rows:
        table.add_row(
            cell(row.get("id")),
            cell(row.get("created_utc")),
            cell(row.get("run_id")),
            cell(row.get("step_id")),
            f"{row.get('provider', '')}:{row.get('model', '')}",
            cell(row.get("tokens_in")),
            cell(row.get("tokens_out")),
            cell(row.get("cost_usd"), "{:.4f}"),
            cell(row.get("latency_ms"), "{:.0f}"),
            parse_summary(row),
            cell(row.get("error"))[:60],
        )
    out_console().print(table)


def register(app: typer.Typer) -> None:
    @app.command("logs")
    def logs(
        memory: Annotated[
            Optional[Path], typer.Option("--memory", help="Memory database (default: the user's).")
        ] = None,
        run: Annotated[Optional[int], typer.Option("--run", help="Only calls of this run (its id).")] = None,
        limit: Annotated[int, typer.Option("--limit", min=1, help="Most recent N calls.")] = 20,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON only.")] = False,
        call: Annotated[
            Optional[int],
            typer.Option("--call", min=1, help="Show one call in full: prompt as sent, answer, how it was parsed."),
        ] = None,
    ) -> None:
        """List the LLM calls logged in the memory database, newest first."""
        from evokernel.llm import format_call, mask_obj

        path = memory_path(memory, must_exist=True)
        try:
            rows = _open_store(path).llm_calls(run_id=run)  # oldest first
        except ValueError as exc:  # MemoryStoreError: an unusable file (named, with the check to run) or bad id
            raise fail_usage(str(exc)) from None
        if call is not None:
            found = [r for r in rows if r.get("id") == call]
            if not found:  # an id that is not there is bad input, as `memory show` says
                raise fail_usage(f"no LLM call with id {call} in {path}")
            # Masked again on the way out: the database may predate the masking.
            one = mask_obj(dict(found[0]))
            typer.echo(json.dumps(one, indent=2, default=str) if as_json else format_call(one))
            return
        rows = [mask_obj(dict(row)) for row in reversed(rows[-limit:])]
        if as_json:
            typer.echo(json.dumps(rows, indent=2, default=str))
        else:
            _render_table(rows)
