"""The `evokernel` command line: a thin layer over the library.

Each command group lives in its own module and only parses, calls one library
function and renders. Heavy imports (torch, SDKs) happen inside commands so that
`evokernel --help` stays instant. Usage errors are one line on stderr (exit 2).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from ._common import EXIT_INTERRUPTED, EXIT_USAGE, one_line


class _Group(TyperGroup):
    """Click's own error output is a usage block plus the error; here it is one line."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # caught here: click would turn it into exit code 1
            _stdout_closed()
            raise typer.Exit(0) from None  # the reader had what it wanted (`... | head`): not a failure of ours

    def main(self, args: Any = None, prog_name: Any = None, complete_var: Any = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.Abort:
            sys.exit(EXIT_INTERRUPTED)
        except Exception as exc:
            # Click's errors (typer may ship its own copy of click): they format a message and carry an exit code.
            if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
                raise
            kinds = {c.__name__ for c in type(exc).__mro__}
            if "NoArgsIsHelpError" in kinds:  # a bare `evokernel` or `evokernel memory`: the help itself
                sys.stderr.write(exc.format_message().rstrip() + "\n")
                sys.exit(exc.exit_code)
            message = one_line(exc.format_message())
            if "UsageError" in kinds:
                message += f" (see `{self._command_path(exc, args)} --help`)"
            sys.stderr.write(f"error: {message}\n")
            sys.exit(exc.exit_code)
        sys.exit(code if isinstance(code, int) else 0)

    def _command_path(self, exc: Any, args: Any) -> str:
        """The command a usage error is about: its context's, else the subcommand the arguments name
        (click's parser raises some errors, e.g. an option missing its value, without a context)."""
        ctx = getattr(exc, "ctx", None)
        if ctx is not None and ctx.command is not self:
            return ctx.command_path
        words = list(sys.argv[1:] if args is None else args)
        path = ["evokernel"]
        group: Any = self
        for word in words:
            sub = getattr(group, "commands", {}).get(word)
            if sub is None:
                break
            path.append(word)
            group = sub
        return " ".join(path)


def _stdout_closed() -> None:
    """The reader of stdout went away: point stdout at /dev/null, so that the flush at
    exit does not fail a second time with a traceback of its own."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


app = typer.Typer(
    name="evokernel",
    cls=_Group,
    help="A frozen LLM writes and refines kernels, guided by a value-learning episodic memory.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: whole lines when piped, no <bool> on flags
    pretty_exceptions_show_locals=False,  # keys live in locals; never print them
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        from evokernel import __version__

        typer.echo(f"evokernel {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """A frozen LLM writes and refines kernels, guided by a value-learning episodic memory."""


def _register() -> None:
    from . import bench_cmd, browse_cmd, check_cmd, eval_cmd, logs_cmd, mcp_cmd, memory_cmd, run_cmd

    check_cmd.register(app)

    run_cmd.register(app)
    eval_cmd.register(app)
    logs_cmd.register(app)
    memory_cmd.register(app)
    bench_cmd.register(app)
    mcp_cmd.register(app)
    browse_cmd.register(app)


_register()


def main() -> None:
    app()
