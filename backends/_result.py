"""Verdicts and the evaluation result: failures are data, never exceptions.

`EvalResult` is the one record that crosses the executor's boundary (worker ->
parent -> loop -> memory). Its parts are typed: the kernels the toolchain
reported (`KernelFacts`), the baselines timed beside the candidate
(`Baselines`), and where the latency stands against the device's copy
bandwidth (`Roofline`). `to_dict`/`from_dict` are its JSON form; `from_dict`
also reads the older form that kept kernels and roofline facts in a loose
`compile` dict, so memories written before keep working.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any

RULE_SETS = ("strict", "kernelbench")


class Verdict(str, enum.Enum):
    OK = "ok"
    COMPILED = "compiled"  # compile-only verdict: the candidate cannot run here
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    WRONG_RESULT = "wrong_result"
    HACK = "hack"  # cheating: timers, streams, cached outputs, reaching the reference or the harness
    DISALLOWED = "disallowed"  # breaks the rule set without cheating (torch compute under strict, no own kernel)
    TIMEOUT = "timeout"
    CRASH = "crash"
    TASK_ERROR = "task_error"  # the task, not the candidate, prevents a verdict (does not fit, non-deterministic)
    # Not verifiable here: off the GPU the candidate ran code only reachable when its inputs are not on
    # the GPU (a PyTorch fallback), so its GPU path never ran (backends/_gpu_path.py). Judge it on a GPU.
    UNVERIFIED = "unverified"

    @property
    def feasible(self) -> bool:
        return self in (Verdict.OK, Verdict.COMPILED)

    @property
    def candidate_fault(self) -> bool:
        """False when the verdict says nothing about the candidate (the task or this machine could not judge it)."""
        return self not in (Verdict.TASK_ERROR, Verdict.UNVERIFIED)

    @property
    def compiles(self) -> bool:
        """The candidate got past its build (a wrong result still compiled)."""
        return self not in (Verdict.COMPILE_ERROR, Verdict.TASK_ERROR)

    def __str__(self) -> str:  # so f-strings print "ok", not "Verdict.OK"
        return self.value


class LatencySource(str, enum.Enum):
    """How a latency was obtained. Two latencies may be compared only when their sources are
    equal: a run compares with the memory's kernels of its own source, a skill is selected only
    for runs of the source it was verified under. String-valued, so stored JSON and the memory's
    `latency_source` column hold the label itself; a backend plugin names one of these."""

    MEASURED_GPU = "measured-gpu"  # CUDA events around each call on a GPU
    MEASURED_NPU = "measured-npu"  # an Ascend NPU's own timing (CANN)
    # wall clock of an interpreter on the CPU (Triton's): a correctness run, not the target's speed
    INTERPRETED_CPU = "interpreted-cpu"
    MODELLED_910B = "modelled-910b"  # the analytic Ascend 910B cost model (backends/ascendc/_cost.py)
    NONE = "none"  # nothing was timed

    @property
    def measured(self) -> bool:
        """Timed on the target hardware itself: speed, not a model's or an interpreter's number."""
        return self in (LatencySource.MEASURED_GPU, LatencySource.MEASURED_NPU)

    @property
    def interpreted(self) -> bool:
        return self is LatencySource.INTERPRETED_CPU

    @property
    def modelled(self) -> bool:
        return self is LatencySource.MODELLED_910B

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass
class KernelFacts:
    """What the toolchain said about one of the candidate's kernels."""

    name: str
    registers: int | None = None
    spills: int | None = None
    shared_bytes: int | None = None
    num_warps: int | None = None

    def summary(self) -> str:
        """'registers 32, spills 0' — the facts that are known, for prompts and tables."""
        return ", ".join(f"{n} {getattr(self, n)}" for n in ("registers", "spills", "shared_bytes") if getattr(self, n) is not None)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "KernelFacts":
        def whole(v: Any) -> int | None:
            return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

        return cls(name=str(d.get("name", "kernel")), registers=whole(d.get("registers")), spills=whole(d.get("spills")),
                   shared_bytes=whole(d.get("shared_bytes")), num_warps=whole(d.get("num_warps")))


def known_fields(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    """The entries of `d` that are fields of the dataclass `cls` (a stored record may hold more, or fewer)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in d.items() if k in names}


@dataclasses.dataclass
class Baselines:
    """PyTorch timed on the same inputs, in the same worker and the same way (GPU only)."""

    eager_ms: float | None = None
    compile_ms: float | None = None
    # torch.compile's own output held to the candidate's check (the same tolerance and float64
    # oracle, on the re-check inputs): a speedup over a compiler whose result would be rejected
    # is not a like-for-like one. None where it was not checked.
    compile_correct: bool | None = None
    compile_check: str = ""  # one line: what the check found

    def speedup(self, name: str, latency_ms: float | None) -> float | None:
        base = getattr(self, f"{name}_ms")
        return base / latency_ms if base and latency_ms else None

    def present(self) -> dict[str, float]:
        """{'eager_ms': ..., 'compile_ms': ...} for the baselines that were timed."""
        return {k: v for k, v in (("eager_ms", self.eager_ms), ("compile_ms", self.compile_ms)) if v is not None}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "Baselines":
        return cls(**known_fields(cls, d or {}))


@dataclasses.dataclass
class Roofline:
    """The latency against the device's measured copy bandwidth."""

    copy_bandwidth_gbps: float
    min_bytes_moved: int  # inputs read once plus outputs written once
    achieved_gbps: float
    input_read_floor_ms: float | None = None  # only where inputs are too large to stay in L2


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    device: str
    input_bytes: int  # the input set that needs the most, as drawn
    output_bytes: int  # the reference's outputs for that set
    weight_bytes: int  # the reference model's parameters and buffers
    flush_bytes: int  # the L2 flush buffer (GPU timing)
    compare_bytes: int
    outputs_estimated: bool  # the meta run failed: outputs assumed as large as the inputs
    needed_bytes: int
    available_bytes: int
    available_from: str  # what bounded `available_bytes`

    @property
    def fits(self) -> bool:
        return self.needed_bytes <= self.available_bytes

    def describe(self) -> str:
        out = f"outputs {gib(self.output_bytes)}" + (" (estimated)" if self.outputs_estimated else "")
        return (
            f"one evaluation needs at least {gib(self.needed_bytes)} on {self.device} (inputs {gib(self.input_bytes)} "
            f"and a clone of them, reference and candidate {out} each, weights {gib(self.weight_bytes)} twice, "
            f"comparison {gib(self.compare_bytes)}, L2 flush {gib(self.flush_bytes)}); "
            f"{gib(self.available_bytes)} available ({self.available_from})"
        )

    def refusal(self) -> str:
        return (f"the task does not fit: {self.describe()}; needed {self.needed_bytes} bytes, "
                f"available {self.available_bytes} bytes")

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "fits": self.fits}


def gib(n: int | float) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GiB"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    return f"{int(n)} B"


@dataclasses.dataclass
class EvalResult:
    status: Verdict
    message: str = ""
    # Written for the LLM: what failed, where, and by how much.
    feedback: str = ""
    rules: str = "strict"  # the rule set the candidate was judged under (RULE_SETS)
    precision: str = "fp32"  # the precision the task ran in (backends/_precision.py: fp32, fp16, bf16)
    max_abs_error: float | None = None
    mean_abs_error: float | None = None
    # Accuracy against the reference run in float64 on the same inputs (backends/_oracle.py):
    # RMS errors relative to the output's RMS, the worst over the input sets; None without one.
    reference_error: float | None = None  # the task's own reference
    candidate_error: float | None = None
    # Passed on some input set only against the float64 output: the reference's own rounding
    # put elements past the tolerance that this candidate computes more accurately.
    by_accuracy: bool = False
    oracle_unavailable: str = ""  # why there is no float64 reference ("" when there is, or nothing ran)
    latency_ms: float | None = None
    latency_iqr_ms: float | None = None
    latency_samples_ms: list[float] = dataclasses.field(default_factory=list)
    latency_source: LatencySource = LatencySource.NONE
    timing_method: str = ""
    baselines: Baselines = dataclasses.field(default_factory=Baselines)
    kernels: list[KernelFacts] = dataclasses.field(default_factory=list)
    compile_seconds: float = 0.0
    roofline: Roofline | None = None
    launches: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    trials: int = 0
    device: str = ""
    seconds: float = 0.0
    # Where those seconds went, by the executor's step names ("timing the eager baseline",
    # "candidate", ...): the seconds from the evaluation's start to its first named step are not in it.
    step_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    worker_reused: bool = False
    # The worker that produced this result must not serve another candidate
    # (a CUDA error poisons the context; an allocator may be left broken).
    retire_worker: bool = False
    # What the evaluation needed and had in memory (backends/_memory.py); None when not planned.
    memory: MemoryPlan | None = None
    # Share of the candidate's GPU time spent in its own kernels, against library
    # kernels (backends/_share.py); None off the GPU or when it was not measured.
    own_kernel_share: float | None = None
    # The kernel (own or library, by name) with the most GPU time in one call, and its share of it
    # (backends/_share.py): where a slow candidate spends its time; "" and None off the GPU.
    slowest_kernel: str = ""
    slowest_kernel_share: float | None = None
    # Why the task's reference cannot tell right kernels from wrong ones, when no
    # stress distribution fixed it (backends/_stress.py); "" for a sound task.
    # Bench reports keep such tasks' speedups out of geometric means.
    degenerate: str = ""
    # Labels of the stress trials the candidate had to pass (a degenerate task that stress fixed).
    stress_trials: list[str] = dataclasses.field(default_factory=list)
    # What isolated the candidate (backends/_sandbox.py): network mode
    # ("netns", "userns+netns", "audit-hook", "none", "allowed"), audit hook,
    # limits applied. {"enabled": False} when it was switched off.
    sandbox: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        self.latency_source = LatencySource(self.latency_source)  # given as its label (JSON, a plugin backend)

    @property
    def feasible(self) -> bool:
        return self.status.feasible

    @property
    def speedup_eager(self) -> float | None:
        return self.baselines.speedup("eager", self.latency_ms)

    @property
    def speedup_compile(self) -> float | None:
        return self.baselines.speedup("compile", self.latency_ms)

    def effective_latency_ms(self) -> float:
        """Infinite unless feasible and timed: what rewards and rankings compare."""
        if self.feasible and self.latency_ms is not None:
            return self.latency_ms
        return math.inf

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["status"] = self.status.value
        d["latency_source"] = self.latency_source.value
        d["speedup_eager"] = self.speedup_eager
        d["speedup_compile"] = self.speedup_compile
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalResult":
        kwargs = known_fields(cls, d)
        kwargs["status"] = Verdict(kwargs["status"])
        legacy = d.get("compile") if isinstance(d.get("compile"), dict) else {}
        kwargs["baselines"] = Baselines.from_dict(d.get("baselines"))
        kwargs["kernels"] = [KernelFacts.from_dict(k) for k in (d.get("kernels") or legacy.get("kernels") or []) if isinstance(k, dict)]
        roof = d.get("roofline")
        if isinstance(roof, dict):
            kwargs["roofline"] = Roofline(**{k: roof.get(k) for k in ("copy_bandwidth_gbps", "min_bytes_moved", "achieved_gbps", "input_read_floor_ms")})
        elif legacy.get("copy_bandwidth_gbps") and legacy.get("achieved_gbps") is not None:
            kwargs["roofline"] = Roofline(legacy["copy_bandwidth_gbps"], int(legacy.get("min_bytes_moved") or 0),
                                          legacy["achieved_gbps"], legacy.get("input_read_floor_ms"))
        mem = d.get("memory")
        if isinstance(mem, dict):
            kwargs["memory"] = MemoryPlan(**known_fields(MemoryPlan, mem))
        if "timing_method" not in d and legacy.get("timing_method"):
            kwargs["timing_method"] = legacy["timing_method"]
        if "compile_seconds" not in d and legacy.get("seconds"):
            kwargs["compile_seconds"] = float(legacy["seconds"])
        return cls(**kwargs)
