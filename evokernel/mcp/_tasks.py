"""What a tool's `task` argument names: a file, a bundled task, SUITE/NAME, or a task the memory recorded."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ._errors import ToolInputError


def recorded_tasks(store: Any) -> dict[str, dict[str, Any]]:
    """The tasks earlier runs recorded (key -> name, path, source), first record first."""
    seen: dict[str, dict[str, Any]] = {}
    for run in store.runs():
        for t in run["config"].get("tasks", []):
            if isinstance(t, dict) and t.get("key"):
                seen.setdefault(t["key"], t)
    return seen


def task_path(ref: str, store: Any) -> Path:
    """The task file `ref` names; ToolInputError saying what may be given when it names none."""
    from evokernel.bench import BUNDLED_SUITES, benchmarks_root
    from evokernel.tasks import bundled_task_names, bundled_task_path

    text = (ref or "").strip()
    if not text:
        raise ToolInputError("task is empty: give a task file path, a bundled task name or a key from list_tasks")
    path = Path(text).expanduser()
    if path.is_file():
        return path
    if text in bundled_task_names():
        return bundled_task_path(text)
    suite, _, name = text.partition("/")
    if suite in BUNDLED_SUITES and name:
        candidate = benchmarks_root() / suite / (name if name.endswith(".py") else f"{name}.py")
        if candidate.is_file():
            return candidate
    recorded = recorded_tasks(store)
    record = recorded.get(text)
    if record is None:  # a task's name, when the memory knows one task by it
        named = [t for t in recorded.values() if t.get("name") == text]
        if len({t.get("source") for t in named}) == 1:
            record = named[0]
    if record is not None:
        return _recorded_file(record, store.path.parent / "mcp-tasks")
    raise ToolInputError(
        f"no task {text!r}: give a task file path, a bundled task ({', '.join(bundled_task_names())}), "
        f"SUITE/NAME in a bundled suite ({', '.join(BUNDLED_SUITES)}) or a task key from list_tasks")


def _recorded_file(record: dict[str, Any], cache_dir: Path) -> Path:
    """A recorded task's file if unchanged, else rebuilt from the recorded source under
    `cache_dir` (as `evokernel refine` rebuilds one)."""
    path = Path(record.get("path") or "")
    source = record.get("source") or ""
    if path.is_file() and path.read_text() == source:
        return path
    if not source:
        raise ToolInputError(f"task {record.get('key')!r}: its file {path} is gone and its run kept no source")
    digest = hashlib.sha256(source.encode()).hexdigest()[:10]
    rebuilt = cache_dir / digest / f"{record.get('name') or 'task'}.py"
    if not rebuilt.is_file():
        rebuilt.parent.mkdir(parents=True, exist_ok=True)
        rebuilt.write_text(source)
    return rebuilt
