"""Loading a KernelBench-format task file into a Task: the one loader.

A task file defines `class Model(nn.Module)`, `get_inputs()` and
`get_init_inputs()`; optionally `get_input_groups()` (several input sets that
must all pass) and `TOLERANCE = (atol, rtol)`. Task files are the user's own
code and are trusted; candidates never are.

Size: a task file may read `EVOKERNEL_SIZE` when it is imported ("full", the
default, or a smaller size such as "small" for the CPU interpreter). The size
is a value passed to `load_task`/`load_task_module`; the variable is set only
while the file executes, because that is how the task-file protocol hears it.
Imported modules are cached by (path, content hash, task size), so the
executor, the builtin policy and the degenerate filter share one import.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import hashlib
import importlib.util
import itertools
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any
from ._pyast import parse_python

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
SIZE_VARIABLE = "EVOKERNEL_SIZE"  # what a task file reads at import to pick its size
FULL = "full"
FULL_PRECISION = "fp32"  # the task as written; another precision is part of its key

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
    size: str = FULL
    precision: str = FULL_PRECISION  # what the models and floating inputs are cast to (EvalOptions.precision)

    @property
    def key(self) -> str:
        """Identity of the task for the memory: its name, a hash of its source and,
        when not full, its size and, when not fp32, its precision (latencies at two
        sizes or precisions are not comparable)."""
        base = f"{self.name}-{hashlib.sha256(self.source.encode()).hexdigest()[:10]}"
        size = "" if self.size == FULL else f"@{self.size}"
        precision = "" if self.precision == FULL_PRECISION else f"@{self.precision}"
        return base + size + precision


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
        tree = parse_python(source, filename=str(path))
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


@contextlib.contextmanager
def task_size(size: str):
    """`EVOKERNEL_SIZE` set to `size` while a task file (or code it defines) runs."""
    previous = os.environ.get(SIZE_VARIABLE)
    os.environ[SIZE_VARIABLE] = size
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(SIZE_VARIABLE, None)
        else:
            os.environ[SIZE_VARIABLE] = previous


def check_size(size: str) -> str:
    if not isinstance(size, str) or not size or not size.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"a task size is a word such as 'full' or 'small', got {size!r}")
    return size


_modules: dict[tuple[str, str, str], ModuleType] = {}


def load_task_module(path: str | Path, *, size: str = FULL) -> ModuleType:
    """Import a task file at `size`, once per (path, content, size);
    every failure becomes a TaskError naming the file."""
    path = Path(path)
    check_size(size)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        raise TaskError(path, "no such file") from None
    # The content, not only the mtime: a file rewritten within the clock's granularity is still seen.
    key = (str(path.resolve()), digest, size)
    cached = _modules.get(key)
    if cached is not None:
        return cached
    try:
        with task_size(size):
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
    _modules[key] = module
    return module


def load_task(path: str | Path, *, size: str = FULL, precision: str = FULL_PRECISION,
              run_reference: bool = False) -> Task:
    """Read and check a task file, imported at `size`, to run in `precision` (recorded
    in the task and its key; the reference check runs the task as written).

    With `run_reference`, the reference is also built and run once on
    `get_inputs()` (and every input group), so a reference that raises is
    reported here, naming the file, rather than as a failure of some candidate.
    Inputs larger than `REFERENCE_CHECK_BYTES` are checked on the meta device
    (shapes and dtypes, no data), so a full-size task costs no host memory here.
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
    module = load_task_module(path, size=size)
    tolerance = _parse_tolerance(path, getattr(module, "TOLERANCE", None))
    has_groups = callable(getattr(module, "get_input_groups", None))
    if run_reference:
        with task_size(size):
            check_reference(path, module)
    return Task(
        path=path.resolve(),
        name=path.stem,
        source=source,
        tolerance=tolerance,
        has_input_groups=has_groups,
        category=str(getattr(module, "CATEGORY", "")),
        size=size,
        precision=precision,
    )


def input_sets(module: ModuleType) -> list[list[Any]]:
    """`get_inputs()` first, then every group of `get_input_groups()`."""
    sets = [list(module.get_inputs())]
    groups = getattr(module, "get_input_groups", None)
    if callable(groups):
        sets.extend(list(g) for g in groups())
    return sets


# Above this many bytes in one input set the reference check runs on the meta
# device: a full-size KernelBench task (6.4 GB inputs) is checked for shape and
# dtype errors without drawing its inputs on the host.
REFERENCE_CHECK_BYTES = 256 << 20


def tensor_bytes(values: Any) -> int:
    """Bytes held by the tensors in a (nested) list or tuple."""
    import torch

    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, (list, tuple)):
        return sum(tensor_bytes(v) for v in values)
    return 0


def meta_inconclusive(exc: BaseException) -> bool:
    """A failure of the meta device itself (no meta kernel, data-dependent op), not of the task."""
    return isinstance(exc, NotImplementedError) or "meta" in str(exc).lower()


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
    meta = False
    try:
        with torch.device("meta"):
            shapes = input_sets(module)
        meta = max(tensor_bytes(s) for s in shapes) > REFERENCE_CHECK_BYTES
    except Exception:
        pass  # the real draw below reports it
    try:
        if meta:
            sets = shapes
            model = model.to("meta")
        else:
            sets = input_sets(module)
    except Exception as exc:
        raise TaskError(path, f"building the inputs raised {type(exc).__name__}: {exc}") from None
    for i, inputs in enumerate(sets):
        try:
            with torch.no_grad():
                out = model(*inputs)
        except Exception as exc:
            if meta and meta_inconclusive(exc):
                return  # cannot be checked without the data; the executor will say
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
