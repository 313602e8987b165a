"""Verdicts and the evaluation result: failures are data, never exceptions."""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any


class Verdict(str, enum.Enum):
    OK = "ok"
    COMPILED = "compiled"  # compile-only verdict: the candidate cannot run here
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    WRONG_RESULT = "wrong_result"
    HACK = "hack"
    TIMEOUT = "timeout"
    CRASH = "crash"

    @property
    def feasible(self) -> bool:
        return self in (Verdict.OK, Verdict.COMPILED)

    def __str__(self) -> str:  # so f-strings print "ok", not "Verdict.OK"
        return self.value


@dataclasses.dataclass
class EvalResult:
    status: Verdict
    message: str = ""
    # Written for the LLM: what failed, where, and by how much.
    feedback: str = ""
    max_abs_error: float | None = None
    mean_abs_error: float | None = None
    latency_ms: float | None = None
    latency_iqr_ms: float | None = None
    latency_samples_ms: list[float] = dataclasses.field(default_factory=list)
    latency_source: str = "none"  # measured-gpu | interpreted-cpu | modelled-910b | none
    baselines: dict[str, float] = dataclasses.field(default_factory=dict)  # eager_ms, compile_ms
    compile: dict[str, Any] = dataclasses.field(default_factory=dict)
    launches: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    trials: int = 0
    device: str = ""
    seconds: float = 0.0
    worker_reused: bool = False
    # What isolated the candidate (backends/_sandbox.py): network mode
    # ("netns", "userns+netns", "audit-hook", "none", "allowed"), audit hook,
    # limits applied. {"enabled": False} when it was switched off.
    sandbox: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return self.status.feasible

    @property
    def speedup_eager(self) -> float | None:
        eager = self.baselines.get("eager_ms")
        if eager and self.latency_ms:
            return eager / self.latency_ms
        return None

    def effective_latency_ms(self) -> float:
        """Infinite unless feasible and timed: what rewards and rankings compare."""
        if self.feasible and self.latency_ms is not None:
            return self.latency_ms
        return math.inf

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["status"] = self.status.value
        d["speedup_eager"] = self.speedup_eager
        compile_ms = self.baselines.get("compile_ms")
        d["speedup_compile"] = compile_ms / self.latency_ms if compile_ms and self.latency_ms else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalResult":
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in fields}
        kwargs["status"] = Verdict(kwargs["status"])
        return cls(**kwargs)
