"""Example tasks that ship inside the package, for a first run without a checkout.

Each is a task file in the KernelBench format (see benchmarks/README.md):
`relu_add` (a broadcasting elementwise chain), `softmax` (row softmax) and
`linear_gelu` (linear layer plus GELU).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["bundled_task_names", "bundled_task_path"]

_TASK_DIR = Path(__file__).resolve().parent


def bundled_task_names() -> list[str]:
    """Names of the bundled tasks, sorted: ["linear_gelu", "relu_add", "softmax"]."""
    return sorted(p.stem for p in _TASK_DIR.glob("*.py") if not p.name.startswith("_"))


def bundled_task_path(name: str) -> Path:
    """Path of the bundled task file `name` (with or without ".py").

    Raises KeyError naming the available tasks when there is none by that name.
    """
    stem = name[:-3] if name.endswith(".py") else name
    if stem not in bundled_task_names():
        raise KeyError(f"no bundled task {name!r}; available: {', '.join(bundled_task_names())}")
    return _TASK_DIR / f"{stem}.py"
