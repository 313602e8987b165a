"""The options of one evaluation (`EvalOptions`), as plain data.

The parent (Executor, pool, Ray) builds them and sends them to a worker as a
dict; the worker (`_evaluate`, `_retime`) reads them back. They live here so
that both sides take them without importing each other.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import _inputs
from ._precision import PRECISIONS, TOLERANCES, check_precision
from ._result import RULE_SETS
from ._task import check_size


# The harness step a worker names while it compiles and times torch.compile's baseline.
COMPILE_BASELINE_STEP = "compiling and timing the torch.compile baseline"


@dataclasses.dataclass(frozen=True)
class EvalOptions:
    trials: int = 5
    seed: int = 1234
    timing: bool = True  # time the candidate (GPU: events; CPU: interpreted wall clock, fewer runs)
    reps: int = 100
    warmup: int = 10
    cpu_reps: int = 3
    baselines: bool = True  # eager and torch.compile, GPU only
    compile_baseline: bool = True
    # torch.compile's compile and timing of the reference, at most this long; past it the
    # baseline is left out with a warning and the verdict stands (inductor is not the candidate)
    compile_baseline_timeout_s: float = 120.0
    flush_l2: bool = True
    speedup_flag: float = 10.0
    size: str = "full"  # the task's size: EVOKERNEL_SIZE while its file and the candidate are imported
    atol: float | None = None  # overrides the task's TOLERANCE and the dtype default where set
    rtol: float | None = None
    # Draw inputs as KernelBench's eval does (backends/_inputs.py); its scripts use seed 42 (KERNELBENCH_SEED).
    kernelbench_seeding: bool = False
    memory_budget_bytes: int | None = None  # at most this much memory for one evaluation (None: what the device has)
    rules: str = "strict"  # the rule set (backends/_rules.py): "strict" or "kernelbench"
    min_own_share: float = 0.0  # under kernelbench, own kernels' share of GPU time below this is `disallowed`
    stress_trials: int = 2  # extra trials on other input distributions where the task's own are degenerate
    check_only: bool = False  # `evokernel check`: static rules and compile checks, nothing run
    # One of PRECISIONS: the models and floating inputs cast to it, as KernelBench's harness does
    # (backends/_precision.py); "fp32" runs the task as written.
    precision: str = "fp32"

    def __post_init__(self) -> None:
        check_size(self.size)
        for name in ("atol", "rtol"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")
        if self.trials < 1:
            raise ValueError(f"trials must be at least 1, got {self.trials}")
        if self.rules not in RULE_SETS:
            raise ValueError(f"unknown rule set {self.rules!r}; known: {', '.join(RULE_SETS)}")
        check_precision(self.precision)
        if not 0.0 <= self.min_own_share <= 1.0:
            raise ValueError(f"min_own_share must be between 0 and 1, got {self.min_own_share!r}")

    def tolerance(self, task_tolerance: tuple[float, float] | None) -> tuple[float | None, float | None] | None:
        """The (atol, rtol) override for the comparison: these options first, then the task's TOLERANCE,
        then (fp16 and bf16 runs) the precision's default; None leaves it to each output dtype's default."""
        low = TOLERANCES[self.precision] if self.precision != "fp32" else (None, None)
        atol = self.atol if self.atol is not None else (task_tolerance[0] if task_tolerance else low[0])
        rtol = self.rtol if self.rtol is not None else (task_tolerance[1] if task_tolerance else low[1])
        return None if atol is None and rtol is None else (atol, rtol)

    def seeds(self) -> tuple[list[int], int, int]:
        """Seeds of the correctness trials, the timing inputs and the re-check after timing."""
        trials = _inputs.trial_seeds(self.seed, self.trials, self.kernelbench_seeding)
        if self.kernelbench_seeding:  # KernelBench times (and re-draws) with the base seed
            return trials, self.seed, self.seed
        return trials, self.seed + 99, self.seed + 7

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "EvalOptions":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in (d or {}).items() if k in names})


__all__ = ["COMPILE_BASELINE_STEP", "PRECISIONS", "EvalOptions"]
