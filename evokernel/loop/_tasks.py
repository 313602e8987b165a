"""Where task files come from: paths, bundled example names, or a memory bank's runs."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from memory_store import MemoryStore

from evokernel._step import FEASIBLE_STATUSES


def resolve_task_args(args: list[str]) -> list[Path]:
    """Each argument is a task file, or the name of a bundled example task.

    With no argument: every bundled example (the README's default job).
    """
    from evokernel.tasks import bundled_task_names, bundled_task_path

    if not args:
        return [bundled_task_path(n) for n in bundled_task_names()]
    paths = []
    for arg in args:
        p = Path(arg)
        if p.exists() or p.suffix == ".py" or "/" in arg:
            paths.append(p)  # a missing file is reported by load_task, naming it
        else:
            paths.append(bundled_task_path(arg))  # KeyError names the bundled tasks
    return paths


def tasks_in_bank(store: MemoryStore, backend: str, cache_dir: Path) -> tuple[list[Path], list[str]]:
    """Tasks of earlier runs that have a feasible kernel for `backend`, for `evokernel refine`.

    A task file that moved or changed is rebuilt from the source the run recorded.
    Returns the paths and notes on what was skipped or rebuilt.
    """
    seen: dict[str, dict[str, Any]] = {}
    for run in store.runs():
        for t in run["config"].get("tasks", []):
            seen.setdefault(t["key"], t)
    paths, notes = [], []
    for key, t in seen.items():
        if not store.feasible_items(key, backend, statuses=FEASIBLE_STATUSES):
            continue
        path = Path(t["path"])
        source = t.get("source", "")
        if not (path.is_file() and path.read_text() == source):
            if not source:
                notes.append(f"skipped {t['name']}: its file is gone and the run kept no source")
                continue
            cache_dir.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256(source.encode()).hexdigest()[:10]
            path = cache_dir / digest / f"{t['name']}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(source)
            notes.append(f"{t['name']}: rebuilt from the source recorded in the memory ({path})")
        paths.append(path)
    return paths, notes
