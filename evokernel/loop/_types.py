"""Plain data the loop passes around: the record of each attempt, and what a
run reports per task. A policy's view of a step and its proposal are in
evokernel/_step.py."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from backends import Baselines, EvalResult, KernelFacts, LatencySource, Roofline, Verdict
from evokernel._step import latency_source_of, stored_result

from ._options import RunOptions

if TYPE_CHECKING:
    from memory_store import Item


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One step's result as the run accounts for it, built from the executor's
    `EvalResult` (live) or from the trace the step stored (resume): one builder,
    so a resumed run counts exactly what a straight one does."""

    step: int
    stage: str
    verdict: Verdict
    message: str
    latency_ms: float | None
    latency_source: LatencySource
    baselines: Baselines
    kernels: tuple[KernelFacts, ...] = ()
    roofline: Roofline | None = None
    samples_ms: tuple[float, ...] = ()
    item_id: int | None = None
    reward: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    own_kernel_share: float | None = None  # GPU time in the candidate's own kernels (GPU runs)
    slowest_kernel: str = ""  # the kernel with the most GPU time in a call (GPU runs) ...
    slowest_kernel_share: float | None = None  # ... and its share of that time
    # what the policy that wrote the kernel knows, from measurements, to hold it below the library's
    # speed (the builtin's `speed_limits`); () where it said nothing
    speed_limits: tuple[str, ...] = ()
    degenerate: str = ""  # why the task's outputs cannot tell a kernel from a no-op, when no stress trial helped
    stress_trials: tuple[str, ...] = ()  # the stress trials the candidate had to pass
    device: str = ""  # where it was evaluated ("cuda:1"; "" where not known)
    # the accuracy oracle's measures (RMS errors against the reference run in float64), or why it had none
    reference_error: float | None = None
    candidate_error: float | None = None
    oracle_unavailable: str = ""
    warnings: tuple[str, ...] = ()  # the executor's, first lines (a re-run with the GPU to itself says why)
    seconds: float = 0.0  # the evaluation's wall time in the worker ...
    step_seconds: dict[str, float] = dataclasses.field(default_factory=dict)  # ... by the executor's steps

    def __post_init__(self) -> None:
        object.__setattr__(self, "latency_source", LatencySource(self.latency_source))  # given as its label

    @property
    def feasible(self) -> bool:
        return self.verdict.feasible

    @property
    def status(self) -> str:
        return self.verdict.value

    @property
    def timed(self) -> bool:
        return self.feasible and self.latency_ms is not None and math.isfinite(self.latency_ms)

    @classmethod
    def from_result(cls, result: "EvalResult", *, step: int, stage: str, item_id: int | None = None,
                    reward: float | None = None, tokens_in: int = 0, tokens_out: int = 0,
                    cost_usd: float | None = None, speed_limits: Sequence[str] | None = ()) -> "Attempt":
        return cls(
            step=step, stage=stage, verdict=result.status, message=result.message,
            latency_ms=result.latency_ms if result.feasible else None, latency_source=result.latency_source,
            baselines=result.baselines, kernels=tuple(result.kernels), roofline=result.roofline,
            samples_ms=tuple(result.latency_samples_ms), item_id=item_id, reward=reward,
            tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost_usd, own_kernel_share=result.own_kernel_share,
            slowest_kernel=result.slowest_kernel, slowest_kernel_share=result.slowest_kernel_share,
            speed_limits=tuple(str(s) for s in speed_limits or ()),
            degenerate=result.degenerate, stress_trials=tuple(result.stress_trials), device=result.device,
            reference_error=result.reference_error, candidate_error=result.candidate_error,
            oracle_unavailable=result.oracle_unavailable,
            warnings=tuple(w.splitlines()[0][:300] for w in result.warnings if w.strip()),
            seconds=result.seconds, step_seconds=dict(result.step_seconds),
        )

    @classmethod
    def from_item(cls, item: "Item", *, step: int, stage: str, reward: float | None = None) -> "Attempt":
        """The attempt a stored trace records (its `feedback` is the EvalResult as stored)."""
        result = stored_result(item) or EvalResult(Verdict(item.status or Verdict.RUNTIME_ERROR))
        extra = item.extra or {}
        return cls.from_result(result, step=step, stage=stage, item_id=item.id, reward=reward,
                               tokens_in=int(extra.get("tokens_in") or 0), tokens_out=int(extra.get("tokens_out") or 0),
                               cost_usd=extra.get("cost_usd"), speed_limits=extra.get("speed_limits"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step, "stage": self.stage, "status": self.status, "message": self.message,
            "latency_ms": self.latency_ms, "latency_source": self.latency_source.value, "reward": self.reward,
            "item_id": self.item_id, "own_kernel_share": self.own_kernel_share,
            **({"slowest_kernel": self.slowest_kernel, "slowest_kernel_share": self.slowest_kernel_share}
               if self.slowest_kernel else {}),
            **({"speed_limits": list(self.speed_limits)} if self.speed_limits else {}),
            **self.baselines.present(),
            **({"compile_correct": self.baselines.compile_correct}
               if self.baselines.compile_correct is not None else {}),
            **({"device": self.device} if self.device else {}),
            **({"reference_error": self.reference_error, "candidate_error": self.candidate_error}
               if self.candidate_error is not None else {}),
            **({"oracle_unavailable": self.oracle_unavailable} if self.oracle_unavailable else {}),
            **({"warnings": list(self.warnings)} if self.warnings else {}),
            **({"seconds": round(self.seconds, 3)} if self.seconds else {}),
        }


@dataclasses.dataclass
class TaskOutcome:
    name: str
    task_key: str
    path: str
    correct: bool = False
    attempts: int = 0
    first_correct_attempt: int | None = None
    first_latency_ms: float | None = None
    best_latency_ms: float | None = None
    best_item_id: int | None = None
    latency_source: LatencySource = LatencySource.NONE
    eager_ms: float | None = None
    compile_ms: float | None = None
    compile_correct: bool | None = None  # torch.compile's own output passed the candidate's check (None: not checked)
    compile_check: str = ""  # what that check found, in one line
    stage: str = "draft"
    stopped: str | None = None  # why the policy stopped early
    statuses: list[str] = dataclasses.field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    compile_ok_attempts: int = 0
    achieved_gbps: float | None = None  # of the best kernel: minimum bytes moved over its latency
    copy_gbps: float | None = None  # device copy bandwidth measured in the same worker
    started_from_item_id: int | None = None  # continual refinement: the memory's best kernel this run started from
    last_status: str | None = None
    last_message: str = ""
    own_kernel_share: float | None = None  # of the best kernel
    slowest_kernel: str = ""  # of the best kernel: its kernel with the most GPU time ...
    slowest_kernel_share: float | None = None  # ... and that kernel's share of it
    speed_limits: tuple[str, ...] = ()  # of the best kernel: what its policy knows holds it back
    # Why the task's outputs cannot tell a right kernel from a wrong one (no stress trial helped);
    # its speedups stay out of a suite's geometric means.
    degenerate: str = ""
    stress_tested: bool = False  # candidates also had to match stress trials (a degenerate reference, fixed)
    history: list[Attempt] = dataclasses.field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.latency_source = LatencySource(self.latency_source)  # given as its label

    def start_from(self, item: "Item") -> None:
        """Continual refinement: the memory's best kernel (from before this run) is
        both where this run starts and the one to beat."""
        known = (stored_result(item) or EvalResult(Verdict.OK)).baselines
        self.first_latency_ms = self.best_latency_ms = item.latency_ms
        self.best_item_id = self.started_from_item_id = item.id
        self.latency_source = latency_source_of(item)
        self.correct = True
        self.stage = "refine"
        self.eager_ms, self.compile_ms = known.eager_ms, known.compile_ms
        self.compile_correct, self.compile_check = known.compile_correct, known.compile_check

    def restore(self, store: Any, run_id: int) -> "Item | None":
        """Account for the steps run `run_id` committed for this task, as they were recorded (a
        resumed run; a bench rebuilt from its memory). Returns the last step's item, or None."""
        last = None
        for step in store.steps(run_id, self.task_key):
            if not step["result_item_id"]:
                continue
            last = store.get_item(step["result_item_id"])
            self.record(Attempt.from_item(last, step=self.attempts + 1, stage=step["stage"], reward=step["reward"]))
        return last

    def record(self, attempt: Attempt) -> None:
        """Account for one attempt: the only place a run's numbers change."""
        self.history.append(attempt)
        self.attempts += 1
        self.statuses.append(attempt.status)
        self.last_status, self.last_message = attempt.status, attempt.message
        self.stage = attempt.stage
        self.tokens_in += attempt.tokens_in
        self.tokens_out += attempt.tokens_out
        self.cost_usd += attempt.cost_usd or 0.0
        if attempt.verdict.compiles:
            self.compile_ok_attempts += 1
        self.degenerate = attempt.degenerate or self.degenerate
        self.stress_tested = self.stress_tested or bool(attempt.stress_trials)
        if attempt.baselines.compile_correct is not None:  # the task's baseline, whatever the candidate's verdict
            self.compile_correct, self.compile_check = attempt.baselines.compile_correct, attempt.baselines.compile_check
        if not attempt.feasible:
            return
        self.correct = True
        self.stage = "refine"
        if self.first_correct_attempt is None and attempt.stage == "draft":
            self.first_correct_attempt = self.attempts
        self.latency_source = attempt.latency_source
        self.eager_ms = attempt.baselines.eager_ms if attempt.baselines.eager_ms is not None else self.eager_ms
        self.compile_ms = attempt.baselines.compile_ms if attempt.baselines.compile_ms is not None else self.compile_ms
        if attempt.timed:
            if self.first_latency_ms is None:
                self.first_latency_ms = attempt.latency_ms
            if self.best_latency_ms is None or attempt.latency_ms < self.best_latency_ms:
                self.best_latency_ms = attempt.latency_ms
                self.best_item_id = attempt.item_id
                self.own_kernel_share = attempt.own_kernel_share
                self.slowest_kernel, self.slowest_kernel_share = attempt.slowest_kernel, attempt.slowest_kernel_share
                self.speed_limits = attempt.speed_limits
                roof = attempt.roofline
                self.achieved_gbps = roof.achieved_gbps if roof is not None else None
                self.copy_gbps = roof.copy_bandwidth_gbps if roof is not None else None
        elif self.best_item_id is None:
            self.best_item_id = attempt.item_id

    @property
    def speedup_over_first(self) -> float | None:
        if self.first_latency_ms and self.best_latency_ms:
            return self.first_latency_ms / self.best_latency_ms
        return None

    @property
    def speedup_eager(self) -> float | None:
        return self.eager_ms / self.best_latency_ms if self.eager_ms and self.best_latency_ms else None

    @property
    def speedup_compile(self) -> float | None:
        return self.compile_ms / self.best_latency_ms if self.compile_ms and self.best_latency_ms else None

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "history"}
        d["statuses"] = list(self.statuses)
        d.update(
            speedup_over_first=self.speedup_over_first,
            speedup_eager=self.speedup_eager,
            speedup_compile=self.speedup_compile,
            attempt_log=[a.to_dict() for a in self.history],
        )
        return d


@dataclasses.dataclass
class RunResult:
    run_id: int
    policy: str
    policy_is_llm: bool
    options: RunOptions
    tasks: list[TaskOutcome]
    resumed: bool = False
    memory_path: str = ""
    accuracy_by_iteration: list[float] = dataclasses.field(default_factory=list)
    size: str = "full"
    device: str = ""
    jobs: int = 1
    exported: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    complete: bool = True  # False: the time limit stopped it before every task used its budget (resumable)

    @property
    def config(self) -> RunOptions:  # the name older callers used
        return self.options

    @property
    def all_correct(self) -> bool:
        return all(t.correct for t in self.tasks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "policy": self.policy,
            "policy_is_llm": self.policy_is_llm,
            "config": self.options.to_dict(),
            "size": self.size,
            "device": self.device,
            "jobs": self.jobs,
            "resumed": self.resumed,
            "complete": self.complete,
            "memory": self.memory_path,
            "accuracy_by_iteration": self.accuracy_by_iteration,
            "exported": self.exported,
            "notes": self.notes,
            "tasks": [t.to_dict() for t in self.tasks],
        }


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) during a run: still an interrupt, carrying the run's result so far
    (`complete` False; every finished step is in the memory, the one in flight is not)."""

    def __init__(self, result: RunResult):
        super().__init__("interrupted")
        self.result = result

