"""Loading a KernelBench-format task file into a Task.

A task file defines `class Model(nn.Module)`, `get_inputs()` and
`get_init_inputs()`; optionally `get_input_groups()` (several input sets that
must all pass) and `TOLERANCE = (atol, rtol)`. Task files are the user's own
code and are trusted; candidates never are.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")

_counter = itertools.count()


class TaskError(ValueError):
    """A task file that cannot be used, with the file and the problem named."""

    def __init__(self, path: Path | str, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


@dataclasses.dataclass(frozen=True)
class Task:
    path: Path
    name: str
    source: str
    tolerance: tuple[float, float] | None
    has_input_groups: bool
    category: str

    @property
    def key(self) -> str:
        """Identity of the task for the memory: its name plus a hash of its source."""
        return f"{self.name}-{hashlib.sha256(self.source.encode()).hexdigest()[:10]}"


def _parse_tolerance(path: Path, value: Any) -> tuple[float, float] | None:
    if value is None:
        return None
    try:
        atol, rtol = (float(v) for v in value)
    except (TypeError, ValueError):
        raise TaskError(path, f"TOLERANCE must be a pair (atol, rtol), got {value!r}") from None
    if not (atol >= 0 and rtol >= 0):
        raise TaskError(path, f"TOLERANCE values must be non-negative, got {value!r}")
    return atol, rtol


def _static_names(path: Path, source: str) -> set[str]:
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise TaskError(path, f"syntax error at line {exc.lineno}: {exc.msg}") from None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def import_file(path: Path, prefix: str) -> ModuleType:
    """Import a Python file under a fresh module name (Triton needs a real file)."""
    module_name = f"{prefix}_{next(_counter)}_{abs(hash(str(path))) % 10**8}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def load_task_module(path: Path) -> ModuleType:
    """Import a task file, turning every failure into a TaskError."""
    try:
        module = import_file(path, "evokernel_task")
    except TaskError:
        raise
    except Exception as exc:
        raise TaskError(path, f"importing the task raised {type(exc).__name__}: {exc}") from None
    missing = [n for n in REQUIRED_NAMES if not hasattr(module, n)]
    if missing:
        raise TaskError(path, f"missing required name(s): {', '.join(missing)}")
    for name in ("get_inputs", "get_init_inputs"):
        if not callable(getattr(module, name)):
            raise TaskError(path, f"{name} must be a function")
    return module


def load_task(path: str | Path, *, run_reference: bool = False) -> Task:
    """Read and check a task file.

    With `run_reference`, the reference is also built and run once on
    `get_inputs()` (and every input group), so a reference that raises is
    reported here, naming the file, rather than as a failure of some candidate.
    """
    path = Path(path)
    if not path.is_file():
        raise TaskError(path, "no such file")
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(path, f"cannot read: {exc}") from None
    names = _static_names(path, source)
    missing = [n for n in REQUIRED_NAMES if n not in names]
    if missing:
        raise TaskError(path, f"missing required name(s): {', '.join(missing)}")
    module = load_task_module(path)
    tolerance = _parse_tolerance(path, getattr(module, "TOLERANCE", None))
    has_groups = callable(getattr(module, "get_input_groups", None))
    if run_reference:
        check_reference(path, module)
    return Task(
        path=path.resolve(),
        name=path.stem,
        source=source,
        tolerance=tolerance,
        has_input_groups=has_groups,
        category=str(getattr(module, "CATEGORY", "")),
    )


def input_sets(module: ModuleType) -> list[list[Any]]:
    """`get_inputs()` first, then every group of `get_input_groups()`."""
    sets = [list(module.get_inputs())]
    groups = getattr(module, "get_input_groups", None)
    if callable(groups):
        sets.extend(list(g) for g in groups())
    return sets


def check_reference(path: Path, module: ModuleType) -> None:
    import torch

    try:
        init = list(module.get_init_inputs())
    except Exception as exc:
        raise TaskError(path, f"get_init_inputs() raised {type(exc).__name__}: {exc}") from None
    try:
        model = module.Model(*init)
    except Exception as exc:
        raise TaskError(path, f"Model(*get_init_inputs()) raised {type(exc).__name__}: {exc}") from None
    if not isinstance(model, torch.nn.Module):
        raise TaskError(path, "Model must be a torch.nn.Module")
    try:
        sets = input_sets(module)
    except Exception as exc:
        raise TaskError(path, f"building the inputs raised {type(exc).__name__}: {exc}") from None
    for i, inputs in enumerate(sets):
        try:
            with torch.no_grad():
                out = model(*inputs)
        except Exception as exc:
            where = "get_inputs()" if i == 0 else f"input group {i - 1}"
            raise TaskError(path, f"the reference raised on {where}: {type(exc).__name__}: {exc}") from None
        if not _is_tensor_tree(out):
            raise TaskError(path, f"the reference must return a tensor or a tuple of tensors, got {type(out).__name__}")


def _is_tensor_tree(out: Any) -> bool:
    import torch

    if isinstance(out, torch.Tensor):
        return True
    if isinstance(out, (tuple, list)) and out:
        return all(_is_tensor_tree(o) for o in out)
    return False
