"""EvoKernel: a frozen LLM writes and refines kernels, guided by a value-learning episodic memory.

    import evokernel
    result = evokernel.run(["softmax"], evokernel.RunOptions.of(budget=4), memory="memory.db")
    for task in result.tasks:
        print(task.name, task.correct, task.best_latency_ms, task.latency_source)

The names below load on first use, so `import evokernel` (and `evokernel --help`)
does not import torch.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("evokernel")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

_LAZY = {
    "run": "evokernel.loop",
    "refine": "evokernel.loop",
    "RunOptions": "evokernel.options",
    "EvaluationOptions": "evokernel.options",
    "LoopOptions": "evokernel.options",
    "ExecutionOptions": "evokernel.options",
    "RunResult": "evokernel.loop",
    "RunInterrupted": "evokernel.loop",
    "RunError": "evokernel.options",
    "TaskOutcome": "evokernel.loop",
    "Attempt": "evokernel.loop",
    "StepContext": "evokernel.loop",
    "Proposal": "evokernel.loop",
    "Policy": "evokernel.loop",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'evokernel' has no attribute {name!r}")
