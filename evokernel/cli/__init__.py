"""The `evokernel` command line: a thin layer over the library.

Each command group lives in its own module and only parses, calls one library
function and renders. Heavy imports (torch, SDKs) happen inside commands so that
`evokernel --help` stays instant.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="evokernel",
    help="A frozen LLM writes and refines kernels, guided by a value-learning episodic memory.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # keys live in locals; never print them
    add_completion=False,
)


def _register() -> None:
    from . import eval_cmd, run_cmd

    run_cmd.register(app)
    eval_cmd.register(app)
    from . import logs_cmd

    logs_cmd.register(app)
    from . import memory_cmd

    memory_cmd.register(app)
    from . import bench_cmd

    bench_cmd.register(app)


_register()


def main() -> None:
    app()
