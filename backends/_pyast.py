"""Parsing Python source, one thread at a time.

CPython 3.11 (and 3.12 before its fix) keeps the AST constructor's recursion
depth in interpreter-wide state, so two threads in `ast.parse` at once can fail
with "SystemError: AST constructor recursion depth mismatch" (CPython issue
106905). The loop proposes and checks several steps at once in threads, and a
run died of it; every parse in the library goes through this lock instead.
"""

from __future__ import annotations

import ast
import threading

__all__ = ["parse_python"]

_LOCK = threading.Lock()


def parse_python(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse`, serialised across the process's threads."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)
