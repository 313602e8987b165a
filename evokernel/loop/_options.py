"""`RunOptions`: everything that shapes a run, as one frozen value.

The library never reads settings from the environment: the CLI (or any other
caller) builds a `RunOptions` and passes it in. Adding a setting is one line
here; a field marked `how` changes how a run is carried out but not what it
computes, so it is left out of the signature a resumed run must match.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

MEMORY_MODES = ("off", "task-only", "similarity", "value")
SIZES = ("full", "small")  # the sizes a task file's protocol knows (README: "Task files")
# The longest wait a setting may ask for: a week. More is a typo, and inf or 1e12 seconds
# overflow the OS's timers (select's time_t) deep inside a worker.
MAX_SECONDS = 7 * 24 * 3600.0
DEVICE_NAME = re.compile(r"(cpu|cuda|npu)(:\d+)?")  # what the backends run on
ENGINES = ("local", "ray")


class RunError(ValueError):
    """A run that cannot start: bad options, a task that does not load, an unusable
    memory or policy. Raised before any step runs; the CLI's exit code 2."""


def _how() -> dict[str, Any]:
    return {"how": True}


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunOptions:
    """Everything that shapes a run; recorded with it so it can be resumed or rebuilt.

    `size=None` means the device's default: "small" without a GPU (the CPU
    interpreter would take hours at full size), "full" on one. `device=None`
    means the first GPU, else the CPU. `jobs=None` lets the run choose (see
    `default_jobs`).
    """

    backend: str = "triton"
    budget: int = 30  # steps per task
    model: str | None = None  # PROVIDER:MODEL: the LLM policy; None: `policy`
    # The LLM policy's settings (several models with weights, prompt budget, multi-turn,
    # reasoning): an `evokernel.llm.LLMOptions`; None with `model` means its defaults.
    llm: Any = None
    policy: str = "builtin"
    # With a model: the builtin policy drafts first where it covers the task (no tokens) and the
    # LLM refines past it, or drafts where it stops (evokernel/policies/_hybrid.py). False: the LLM alone.
    builtin_first: bool = True
    memory_mode: str = "value"
    n_memories: int = 5
    skills: bool = True  # the verified skill library (evokernel/skills): proposed, verified, selected
    rerank: bool = True  # with an LLM, one short call reranks the recalled skills (else their stage values)
    seed: int = 0
    device: str | None = None
    size: str | None = None
    rules: str = "strict"
    min_own_share: float = 0.0  # under kernelbench: own kernels' least share of GPU time (0: report only)
    memory_budget_bytes: int | None = None  # at most this much device memory for one evaluation (None: what it has)
    timeout_s: float = dataclasses.field(default=300.0, metadata=_how())
    trials: int = 5
    reps: int = 100
    baselines: bool = True
    compile_baseline: bool = True  # with baselines: also time torch.compile (GPU)
    warmup: int = 10  # warm-up runs before the timed ones (GPU)
    # Executor options for comparisons with KernelBench (backends.EvalOptions): its input
    # seeding (seed 42, host-generator values) and tolerance overrides for every output.
    kernelbench_seeding: bool = False
    atol: float | None = None
    rtol: float | None = None
    port_from: tuple[str, ...] = ()  # other backends whose memories a step may draw on
    epsilon_start_point: float = 0.1
    # Independent samples (pass@k): every step drafts afresh, with no memories,
    # no feedback, no start point and a draft reward.
    independent_samples: bool = False
    resume: bool = dataclasses.field(default=True, metadata=_how())
    replay: bool = dataclasses.field(default=False, metadata=_how())  # answer repeated LLM requests from the cache
    jobs: int | None = dataclasses.field(default=None, metadata=_how())  # steps in flight at once
    gpus: tuple[int, ...] | None = dataclasses.field(default=None, metadata=_how())  # None: every visible GPU
    engine: str = dataclasses.field(default="local", metadata=_how())  # "local" worker pool or "ray"
    max_jobs_per_worker: int = dataclasses.field(default=200, metadata=_how())
    export: str | None = dataclasses.field(default=None, metadata=_how())  # directory for each task's best kernel
    # No new step starts after this many seconds of the run; the run stays unfinished, so the
    # same call resumes it (a leased machine's limit, a CI slot). None: no limit.
    time_limit_s: float | None = dataclasses.field(default=None, metadata=_how())

    def __post_init__(self) -> None:
        object.__setattr__(self, "port_from", tuple(self.port_from))
        if self.llm is not None and self.model is None:
            object.__setattr__(self, "model", self.llm.label if len(self.llm.models) == 1 else self.llm.models[0].spec)
        if self.gpus is not None:
            object.__setattr__(self, "gpus", tuple(int(g) for g in self.gpus))
        if self.export is not None:
            object.__setattr__(self, "export", os.fspath(self.export))
        problems = [
            (self.budget >= 1, f"budget must be at least 1 step per task, got {self.budget}"),
            (self.memory_mode in MEMORY_MODES,
             f"memory mode must be one of {', '.join(MEMORY_MODES)}, got {self.memory_mode!r}"),
            (self.n_memories >= 1, f"n_memories must be at least 1, got {self.n_memories}"),
            (self.size is None or self.size in SIZES, f"size must be {' or '.join(SIZES)}, got {self.size!r}"),
            (self.device is None or DEVICE_NAME.fullmatch(self.device) is not None,
             f"device must be cpu, cuda or cuda:N (npu:N for Ascend C), got {self.device!r}"),
            (self.rules in _rule_sets(), f"rules must be one of {', '.join(_rule_sets())}, got {self.rules!r}"),
            (0.0 <= self.min_own_share <= 1.0, f"min_own_share must be in [0, 1], got {self.min_own_share}"),
            (self.memory_budget_bytes is None or self.memory_budget_bytes > 0,
             f"memory budget must be a positive number of bytes, got {self.memory_budget_bytes}"),
            (0 < self.timeout_s <= MAX_SECONDS,
             f"timeout must be a positive number of seconds up to {MAX_SECONDS:g} (a week), got {self.timeout_s:g}"),
            (self.time_limit_s is None or 0 < self.time_limit_s <= MAX_SECONDS,
             f"time limit must be a positive number of seconds up to {MAX_SECONDS:g} (a week), got {self.time_limit_s}"),
            (self.trials >= 1, f"trials must be at least 1, got {self.trials}"),
            (self.reps >= 1, f"reps must be at least 1, got {self.reps}"),
            (0.0 <= self.epsilon_start_point <= 1.0, f"epsilon_start_point must be in [0, 1], got {self.epsilon_start_point}"),
            (self.jobs is None or self.jobs >= 1, f"jobs must be at least 1, got {self.jobs}"),
            (self.gpus is None or (len(self.gpus) > 0 and min(self.gpus) >= 0),
             f"gpus must be a non-empty list of device indices, got {self.gpus}"),
            (self.engine in ENGINES, f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}"),
            (self.max_jobs_per_worker >= 1, f"max_jobs_per_worker must be at least 1, got {self.max_jobs_per_worker}"),
            (self.backend not in self.port_from, f"--port-from {self.backend} is the run's own backend"),
            (self.model is None or ":" in self.model, f"model must look like PROVIDER:MODEL, got {self.model!r}"),
        ]
        for ok, message in problems:
            if not ok:
                raise RunError(message)

    def replace(self, **changes: Any) -> "RunOptions":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        # The LLM options render themselves: their keys, retry and prices stay out of a run's record.
        d = dataclasses.asdict(dataclasses.replace(self, llm=None))
        d["llm"] = None if self.llm is None else self.llm.to_dict()
        d["port_from"] = list(self.port_from)
        d["gpus"] = None if self.gpus is None else list(self.gpus)
        return d

    def identity(self) -> dict[str, Any]:
        """The options that decide what a run computes: a resumed run must match them."""
        how = {f.name for f in dataclasses.fields(self) if f.metadata.get("how")}
        return {k: v for k, v in self.to_dict().items() if k not in how}

    @property
    def policy_label(self) -> str:
        if self.llm is not None:
            return self.llm.label
        return self.model or self.policy


def _rule_sets() -> tuple[str, ...]:
    from backends import RULE_SETS

    return tuple(RULE_SETS)


def resolve_device(device: str | None) -> str:
    from backends import default_device

    return device or default_device()


def resolve_size(size: str | None, device: str) -> str:
    """The task size a run uses: as asked, else "small" on a CPU and "full" on a GPU."""
    if size is not None:
        return size
    return "full" if device.startswith("cuda") else "small"


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
