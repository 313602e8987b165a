"""What a block of Python defines and needs, for putting a candidate file together.

Answers split a file across blocks, repeat pieces, and mix in snippets and
tests. To tell a whole module from a fragment, the parser asks each block
which names it binds at module level and which module-level names it reads
without binding them (its free globals); `symtable` answers both exactly,
through every nested function and class scope.
"""

from __future__ import annotations

import ast
import builtins
import re
import symtable
from dataclasses import dataclass

from backends import parse_python

_BUILTINS = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__builtins__"}
# Calls and statements that only exercise the model: test scaffolding, never part of the file.
_USAGE_CALLS = frozenset({"ModelNew", "Model", "get_inputs", "get_init_inputs", "print", "benchmark", "main"})
# load_inline's keyword arguments that carry kernel source.
SOURCE_KEYWORDS = ("cuda_sources", "cpp_sources", "source", "sources")


@dataclass(frozen=True)
class PySummary:
    """What one block of Python holds, as far as assembling a file goes."""

    parses: bool
    syntax_error: str | None = None
    defines: frozenset[str] = frozenset()  # module-level bindings (imports included)
    imports: frozenset[str] = frozenset()  # the subset bound by import statements
    needs: frozenset[str] = frozenset()  # free module-level names, builtins excluded
    model_new: bool = False  # a top-level `class ModelNew`
    model_new_forward: bool = False  # ... that defines `forward`
    functions_or_classes: bool = False
    def_names: frozenset[str] = frozenset()  # top-level functions and classes (constants excluded)
    usage_only: bool = False  # no definitions; only calls the model, prints or asserts
    star_import: bool = False
    source_args: tuple[tuple[str, str], ...] = ()  # (keyword, name) of load_inline-style source arguments
    last_import_line: int = 0  # 1-based line of the last top-level import (0: none)


def _module_symbols(tree: symtable.SymbolTable) -> tuple[set[str], set[str], set[str]]:
    """(bound, imported, free) names at module level, from the whole scope tree."""
    bound, imported, free = set(), set(), set()
    for sym in tree.get_symbols():
        name = sym.get_name()
        if sym.is_imported():
            imported.add(name)
            bound.add(name)
        elif sym.is_assigned() or sym.is_namespace():
            bound.add(name)
        elif sym.is_referenced():
            free.add(name)

    def walk(table: symtable.SymbolTable) -> None:
        for child in table.get_children():
            for sym in child.get_symbols():
                if sym.is_global() and sym.is_referenced() and not sym.is_assigned():
                    free.add(sym.get_name())
                if sym.is_declared_global() and sym.is_assigned():
                    bound.add(sym.get_name())
            walk(child)

    walk(tree)
    return bound, imported, free - bound


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id
        if isinstance(func, ast.Attribute):
            return func.attr
    return None


def _is_main_guard(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


def _usage_only(body: list[ast.stmt], has_defs: bool) -> bool:
    """A block with no definitions that runs the model, prints or asserts: a test, not the file."""
    if has_defs:
        return False
    uses = False
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Assert) or _is_main_guard(node):
            uses = True
            continue
        for sub in ast.walk(node):
            if _call_name(sub) in _USAGE_CALLS:
                uses = True
    return uses


def summarize(code: str) -> PySummary:
    try:
        tree = parse_python(code)
        table = symtable.symtable(code, "<block>", "exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes
        line = getattr(exc, "lineno", None)
        return PySummary(parses=False, syntax_error=f"{type(exc).__name__} at line {line}: {getattr(exc, 'msg', exc)}")
    bound, imported, free = _module_symbols(table)
    model_new = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None
    )
    forward = model_new is not None and any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "forward" for n in model_new.body
    )
    has_defs = any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in tree.body)
    star = any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in tree.body)
    source_args = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in SOURCE_KEYWORDS:
                    for sub in ast.walk(kw.value):
                        if isinstance(sub, ast.Name):
                            source_args.append((kw.arg, sub.id))
    last_import = max(
        (n.end_lineno or n.lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))), default=0
    )
    return PySummary(
        parses=True,
        defines=frozenset(bound),
        imports=frozenset(imported),
        needs=frozenset(free - _BUILTINS),
        model_new=model_new is not None,
        model_new_forward=forward,
        functions_or_classes=has_defs,
        def_names=frozenset(n.name for n in tree.body
                            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))),
        usage_only=_usage_only(tree.body, has_defs),
        star_import=star,
        source_args=tuple(dict.fromkeys(source_args)),
        last_import_line=last_import,
    )


_PY_START = re.compile(r"^(?:import \w|from [\w.]+ import |class \w+|def \w+\(|@\w|#!)")


def bare_code(text: str) -> tuple[str, int, int] | None:
    """Python written without fences: (code, first line, last line), 1-based.

    The code starts at a line that opens Python (an import, a def, a class, a
    decorator) and runs while it parses; prose after it is cut where the
    parser first stumbles. None when nothing of the kind parses.
    """
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _PY_START.match(line)]
    for start in starts[:3]:
        end = len(lines)
        for _ in range(8):
            chunk = "\n".join(lines[start:end]).rstrip()
            if not chunk:
                break
            try:
                tree = parse_python(chunk)
            except SyntaxError as exc:
                bad = (exc.lineno or 1) - 1  # first line the parser rejects, relative to start
                if bad <= 0:
                    break
                end = start + bad
                continue
            if any(isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)) for n in tree.body):
                while end > start and not lines[end - 1].strip():
                    end -= 1
                return chunk + "\n", start + 1, end
            break
    return None
