"""Every parse of Python source in the library goes through backends.parse_python, whose
lock keeps two threads out of CPython 3.11's AST constructor at once (a threaded run died
there with "AST constructor recursion depth mismatch")."""

import ast
import threading
from pathlib import Path

import pytest

from backends import parse_python

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("evokernel", "backends", "memory_store")
ALLOWED = {"backends/_pyast.py"}  # the one place that calls ast.parse, under the lock


def _direct_parses(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "parse"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "ast"]


def test_the_library_parses_only_through_the_lock():
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel not in ALLOWED:
                found += [f"{rel}:{line}" for line in _direct_parses(path)]
    assert not found, f"ast.parse outside backends._pyast (use backends.parse_python): {found}"


def test_parse_python_is_ast_parse():
    tree = parse_python("def f(x):\n    return x + 1\n", filename="f.py")
    assert ast.dump(tree) == ast.dump(ast.parse("def f(x):\n    return x + 1\n"))
    with pytest.raises(SyntaxError) as info:
        parse_python("def f(:\n", filename="broken.py")
    assert info.value.filename == "broken.py"


def test_parse_python_from_many_threads():
    source = "\n".join(f"def f{i}(a, b):\n    return [a * b for _ in range({i})]\n" for i in range(200))
    errors, trees = [], []

    def work():
        try:
            for _ in range(20):
                trees.append(len(parse_python(source).body))
        except Exception as exc:  # the bug this lock prevents surfaces as SystemError
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and trees == [200] * 160
