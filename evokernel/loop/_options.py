"""The loop's view of a run's settings: the records live in `evokernel.options` (importable
without torch, so the CLI builds its flags from them); here, what the loop adds to them."""

from __future__ import annotations

import os

from evokernel.options import (  # noqa: F401 (re-exported for the loop's modules)
    DEVICE_NAME,
    ENGINES,
    MAX_SECONDS,
    MEMORY_MODES,
    SIZES,
    EvaluationOptions,
    ExecutionOptions,
    LoopOptions,
    RunError,
    RunOptions,
)


def default_jobs(is_llm: bool, n_tasks: int, *, n_gpus: int = 0) -> int:
    """How many steps run at once when the caller did not say.

    An LLM step mostly waits on the network, so several go out at once (up to
    one per task); a builtin step is compile and evaluation work, bounded by
    the CPU cores (or the GPUs) that do it.
    """
    if is_llm:
        return max(1, min(n_tasks, 16))
    cores = os.cpu_count() or 1
    return max(1, min(n_tasks, n_gpus or cores))
