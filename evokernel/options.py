"""A run's settings as a tree of typed records, one per part that reads them.

    RunOptions(backend="triton",
               evaluation=EvaluationOptions(trials=5, precision="fp16"),   # how each candidate is judged
               llm=LLMOptions.from_specs(["openai:gpt-5"]),                  # evokernel.llm: the LLM policy
               loop=LoopOptions(budget=8),                                   # what each step sees and learns
               execution=ExecutionOptions(jobs=4))                           # where and how the steps run
    RunOptions.of(budget=8, trials=5, jobs=4)                                # the same, by field name

The library never reads settings from the environment: the CLI (or any other
caller) builds a `RunOptions` and passes it in. Each field says once how it
appears on the command line (`setting(...)`'s `Flag`), and every run-shaped
command builds its flags from these records, so they cannot drift apart. A
field marked `how` changes how a run is carried out but not what it computes:
it is left out of `identity()`, what a resumed run must match.

This module imports nothing heavy (no torch), so the CLI can read the records
while it builds its help.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from backends import EvalOptions
    from evokernel.llm import LLMOptions

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


# --- how a field appears on the command line -----------------------------------


@dataclasses.dataclass(frozen=True)
class Flag:
    """A setting's command-line form. `name` defaults to `--field-name`; a bool gets
    `--x/--no-x` unless `name` says otherwise; `parse` turns the text given into the
    field's value (a ValueError says what is wrong); `repeat` takes the flag several times."""

    help: str
    name: str | None = None
    metavar: str | None = None
    min: float | None = None
    max: float | None = None
    parse: Callable[[str], Any] | None = None
    repeat: bool = False


def setting(default: Any = dataclasses.MISSING, help: str | None = None, *, how: bool = False,
            factory: Callable[[], Any] | None = None, **flag: Any) -> Any:
    """A record's field: its default, whether it is `how` (out of the run's identity) and,
    with `help`, its flag. Without `help` the field is the library's only."""
    metadata = {"how": how, "flag": Flag(help, **flag) if help is not None else None}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def flag_of(field: dataclasses.Field) -> Flag | None:
    return field.metadata.get("flag")


# --- values given as text -------------------------------------------------------


def parse_bytes(text: str) -> int:
    """'8G', '512M', '1000000' -> bytes (powers of 1024 for K/M/G/T)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    try:
        value = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError:
        raise ValueError(f"{text!r} is not a size such as 8G, 512M or a number of bytes") from None
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{text!r} is not a positive size")
    return int(value)


def parse_gpus(text: str) -> tuple[int, ...]:
    """'0,1' -> (0, 1)."""
    try:
        gpus = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a list of device indices such as 0,1") from None
    if not gpus:
        raise ValueError("give at least one device index, such as 0 or 0,1")
    return gpus


def _seconds(name: str, value: float | None, *, optional: bool = False) -> tuple[bool, str]:
    ok = (optional and value is None) or (value is not None and 0 < value <= MAX_SECONDS)
    given = value if value is None else f"{value:g}"
    return ok, f"{name} must be a positive number of seconds up to {MAX_SECONDS:g} (a week), got {given}"


def _check(problems: list[tuple[bool, str]]) -> None:
    for ok, message in problems:
        if not ok:
            raise RunError(message)


# --- the records ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvaluationOptions:
    """How each candidate is judged: the executor's settings (`backends.EvalOptions`) for a run.

    `size=None` means the device's default: "small" without a GPU (the CPU
    interpreter would take hours at full size), "full" on one (`RunOptions.resolved`).
    The size and the precision are part of each task's key in the memory: latencies
    at another size or precision are not comparable.
    """

    rules: str = setting("strict", "Rule set: strict (own kernels only) or kernelbench (partial replacement).")
    size: str | None = setting(None, "Task size: full or small; default: small without a GPU, full on one.")
    precision: str = setting(
        "fp32", "Precision the task runs in: fp32 (as written), fp16 or bf16 (the models and floating inputs cast, "
                "as KernelBench's --precision); part of each task's key in the memory.", metavar="fp32|fp16|bf16")
    trials: int = setting(5, "Correctness trials with fresh seeded inputs.", min=1)
    reps: int = setting(100, "Timed runs per candidate on a GPU (KernelBench: num_perf_trials).", min=1)
    warmup: int = setting(10, "Warm-up runs before timing on a GPU.", min=0)
    atol: float | None = setting(
        None, "Absolute tolerance for every output (default: the task's TOLERANCE, else 1e-4 fp32, 1e-2 fp16/bf16).",
        min=0.0)
    rtol: float | None = setting(None, "Relative tolerance for every output (default as --atol).", min=0.0)
    timeout_s: float = setting(300.0, "Wall-clock limit per candidate, in seconds (> 0).", how=True, name="--timeout",
                               metavar="SECONDS")
    baselines: bool = setting(True, "Time the eager and torch.compile baselines (GPU).")
    compile_baseline: bool = setting(True, "With baselines, time torch.compile too (GPU); KernelBench's eval does not.")
    # Executor options for comparisons with KernelBench: its input seeding (seed 42, host-generator values).
    kernelbench_seeding: bool = setting(
        False, "Draw inputs as KernelBench's eval does (trial seeds from seed 42, values from the host generator), "
               "to reproduce a published number.", name="--kernelbench-seeding")
    memory_budget_bytes: int | None = setting(
        None, "At most this much device memory for one evaluation (8G, 512M...); a task that needs more is a "
              "task_error.", name="--memory-budget", metavar="SIZE", parse=parse_bytes)
    min_own_share: float = setting(
        0.0, "Under --rules kernelbench: own kernels' least share of GPU time (0: report only).", min=0.0, max=1.0)

    def __post_init__(self) -> None:
        from backends import PRECISIONS, RULE_SETS

        _check([
            (self.rules in RULE_SETS, f"rules must be one of {', '.join(RULE_SETS)}, got {self.rules!r}"),
            (self.size is None or self.size in SIZES, f"size must be {' or '.join(SIZES)}, got {self.size!r}"),
            (self.precision in PRECISIONS, f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}"),
            (self.trials >= 1, f"trials must be at least 1, got {self.trials}"),
            (self.reps >= 1, f"reps must be at least 1, got {self.reps}"),
            (self.warmup >= 0, f"warmup must be at least 0, got {self.warmup}"),
            (self.atol is None or self.atol >= 0, f"atol must be a non-negative number, got {self.atol}"),
            (self.rtol is None or self.rtol >= 0, f"rtol must be a non-negative number, got {self.rtol}"),
            _seconds("timeout", self.timeout_s),
            (self.memory_budget_bytes is None or self.memory_budget_bytes > 0,
             f"memory budget must be a positive number of bytes, got {self.memory_budget_bytes}"),
            (0.0 <= self.min_own_share <= 1.0, f"min_own_share must be in [0, 1], got {self.min_own_share}"),
        ])

    def at(self, device: str) -> "EvaluationOptions":
        """These options with the size decided for `device`: as asked, else "small" on a CPU
        and "full" on a GPU."""
        if self.size is not None:
            return self
        return dataclasses.replace(self, size="full" if device.startswith("cuda") else "small")

    def executor_options(self, **extra: Any) -> "EvalOptions":
        """The executor's options for one evaluation under these settings (the size decided,
        see `at`); `extra` sets the executor's own fields (its input seed, check_only...)."""
        from backends import KERNELBENCH_SEED, EvalOptions

        if self.size is None and "size" not in extra:
            raise RunError("the evaluation's size is not decided yet: call .at(device) first")
        fields: dict[str, Any] = dict(
            trials=self.trials, reps=self.reps, warmup=self.warmup, baselines=self.baselines,
            compile_baseline=self.compile_baseline, rules=self.rules, size=self.size, precision=self.precision,
            atol=self.atol, rtol=self.rtol, kernelbench_seeding=self.kernelbench_seeding,
            min_own_share=self.min_own_share, memory_budget_bytes=self.memory_budget_bytes)
        if self.kernelbench_seeding:
            fields["seed"] = KERNELBENCH_SEED
        return EvalOptions(**{**fields, **extra})


@dataclasses.dataclass(frozen=True, kw_only=True)
class LoopOptions:
    """What each step sees and learns: the budget, the memory's use, skills, the start point."""

    budget: int = setting(30, "Steps per task.", min=1)
    memory_mode: str = setting("value", "off, task-only, similarity or value (ablations).")
    n_memories: int = setting(5, "Memories recalled into each step's prompt.", min=1)
    skills: bool = setting(
        True, "The verified skill library: propose skills from improving steps, verify and select them (--no-skills: off).")
    rerank: bool = setting(True, "With --model, one short LLM call reranks the recalled skills (--no-rerank: by their stage values).")
    seed: int = setting(0, "Seed of the loop's random choices.")
    # With a model: the builtin policy drafts first where it covers the task (no tokens) and the
    # LLM refines past it, or drafts where it stops (evokernel/policies/_hybrid.py). False: the LLM alone.
    builtin_first: bool = setting(
        True, "With --model: the builtin policy drafts first where it covers the task (no tokens) and the LLM refines "
              "past it or drafts where it stops; --llm-only: the LLM writes every step.", name="--builtin-first/--llm-only")
    port_from: tuple[str, ...] = setting(help="Also retrieve memories of this backend (porting); repeatable.",
                                         factory=tuple, repeat=True, metavar="BACKEND")
    epsilon_start_point: float = setting(0.1)  # the start point: any feasible kernel with this probability
    # Independent samples (pass@k): every step drafts afresh, with no memories,
    # no feedback, no start point and a draft reward (the ablation's arm).
    independent_samples: bool = setting(False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "port_from", tuple(self.port_from))
        _check([
            (self.budget >= 1, f"budget must be at least 1 step per task, got {self.budget}"),
            (self.memory_mode in MEMORY_MODES,
             f"memory mode must be one of {', '.join(MEMORY_MODES)}, got {self.memory_mode!r}"),
            (self.n_memories >= 1, f"n_memories must be at least 1, got {self.n_memories}"),
            (0.0 <= self.epsilon_start_point <= 1.0, f"epsilon_start_point must be in [0, 1], got {self.epsilon_start_point}"),
        ])


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExecutionOptions:
    """Where and how the steps run. All but the device are `how`: a run resumed with
    other jobs, GPUs or a time limit computes the same thing."""

    device: str | None = setting(None, "cuda:N or cpu (npu:N for Ascend C); default: the GPUs (see --gpus), else the CPU.")
    gpus: tuple[int, ...] | None = setting(None, "GPUs to evaluate on, e.g. 0,1 (one worker each); default: all.",
                                           how=True, metavar="0,1", parse=parse_gpus)
    jobs: int | None = setting(None, "Steps in flight at once; default: up to 16 with an LLM, the CPU cores (or GPUs) "
                                     "otherwise.", how=True, min=1)
    workers_per_gpu: int = setting(1, "Evaluation workers sharing each GPU: their compiles and checks overlap, and each "
                                      "timing has the GPU to itself; each keeps to 1/N of its memory, and an evaluation that runs "
                                      "out of it runs again with the GPU to itself.", how=True, min=1,
                                   metavar="N")
    engine: str = setting("local", "local (worker processes here) or ray (Ray tasks; pip install 'evokernel[ray]').",
                          how=True)
    max_jobs_per_worker: int = setting(200, how=True)  # a worker is replaced after this many candidates
    # No new step starts after this many seconds of the run; the run stays unfinished, so the
    # same call resumes it (a leased machine's limit, a CI slot). None: no limit.
    time_limit_s: float | None = setting(
        None, "Start no new step after this many seconds; the run stays unfinished and the same command resumes it "
              "(bench: the results say complete: false).", how=True, name="--time-limit", metavar="SECONDS")
    resume: bool = setting(True, "Continue a matching unfinished run (--no-resume starts a new one).", how=True)
    export: str | None = setting(None, "Write each task's best kernel to this directory.", how=True, metavar="DIR")
    replay: bool = setting(False, "Answer repeated LLM requests from the response cache (exact, free rerun).", how=True)

    def __post_init__(self) -> None:
        if self.gpus is not None:
            object.__setattr__(self, "gpus", tuple(int(g) for g in self.gpus))
        if self.export is not None:
            object.__setattr__(self, "export", os.fspath(self.export))
        _check([
            (self.device is None or DEVICE_NAME.fullmatch(self.device) is not None,
             f"device must be cpu, cuda or cuda:N (npu:N for Ascend C), got {self.device!r}"),
            (self.gpus is None or (len(self.gpus) > 0 and min(self.gpus) >= 0),
             f"gpus must be a non-empty list of device indices, got {','.join(map(str, self.gpus or ()))!r}"),
            (self.jobs is None or self.jobs >= 1, f"jobs must be at least 1, got {self.jobs}"),
            (self.workers_per_gpu >= 1, f"workers_per_gpu must be at least 1, got {self.workers_per_gpu}"),
            (self.engine in ENGINES, f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}"),
            (self.max_jobs_per_worker >= 1, f"max_jobs_per_worker must be at least 1, got {self.max_jobs_per_worker}"),
            _seconds("time limit", self.time_limit_s, optional=True),
        ])

    def run_device(self) -> str:
        """The device the run is measured on (its latencies, its hardware facts, the size's
        default): the one asked for, else the first GPU chosen or visible, else the CPU. The
        workers themselves go where `backends.plan_devices` puts them (every visible GPU
        when neither `device` nor `gpus` is given)."""
        if self.device is not None:
            return self.device
        if self.gpus is not None:
            return f"cuda:{self.gpus[0]}"
        from backends import default_device

        return default_device()


RECORDS = ("evaluation", "loop", "execution")  # RunOptions' records whose fields have flat names


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunOptions:
    """Everything that shapes a run; recorded with it so it can be resumed or rebuilt.

    `llm` is the LLM policy's settings (`evokernel.llm.LLMOptions`: its models with
    weights, prompt budget, multi-turn, reasoning); None runs `policy`, the offline one.
    Every record's field also has a flat name, unique across the records: `of` and
    `replace` take them, and `to_dict` (a run's record, a result's "options") is flat.
    """

    backend: str = setting("triton", "Executor backend: triton, cuda or ascendc (see `evokernel backends`).")
    policy: str = setting("builtin", "'builtin': the offline policy (not an LLM), used without --model.")
    evaluation: EvaluationOptions = dataclasses.field(default_factory=EvaluationOptions)
    llm: "LLMOptions | None" = None
    loop: LoopOptions = dataclasses.field(default_factory=LoopOptions)
    execution: ExecutionOptions = dataclasses.field(default_factory=ExecutionOptions)

    def __post_init__(self) -> None:
        if self.llm is not None:
            from evokernel.llm import LLMOptions

            if not isinstance(self.llm, LLMOptions):
                raise RunError(f"llm must be an evokernel.llm.LLMOptions, got {type(self.llm).__name__}")
        for name, kind in (("evaluation", EvaluationOptions), ("loop", LoopOptions), ("execution", ExecutionOptions)):
            if not isinstance(getattr(self, name), kind):
                raise RunError(f"{name} must be an {kind.__name__}, got {type(getattr(self, name)).__name__}")
        if self.backend in self.loop.port_from:
            raise RunError(f"--port-from {self.backend} is the run's own backend")

    # --- flat names -------------------------------------------------------------
    @classmethod
    def of(cls, **settings: Any) -> "RunOptions":
        """Options from flat field names (`budget=4, trials=2, jobs=1`), each routed to its
        record; `model="PROVIDER:MODEL"` is the LLM policy with its default settings."""
        return cls().replace(**settings)

    def replace(self, **changes: Any) -> "RunOptions":
        """A copy with `changes`: RunOptions' own fields, or any record's field by its flat name."""
        own = {f.name for f in dataclasses.fields(self)}
        routed: dict[str, dict[str, Any]] = {name: {} for name in RECORDS}
        top: dict[str, Any] = {}
        for key, value in changes.items():
            if key == "model":
                top["llm"] = _llm_for(value)
            elif key in own:
                top[key] = value
            elif key in _FLAT:
                routed[_FLAT[key]][key] = value
            else:
                raise TypeError(f"RunOptions has no setting {key!r}")
        for name, fields in routed.items():
            if fields and name not in top:
                top[name] = dataclasses.replace(getattr(self, name), **fields)
            elif fields:
                top[name] = dataclasses.replace(top[name], **fields)
        return dataclasses.replace(self, **top)

    # --- derived ------------------------------------------------------------------
    @property
    def model(self) -> str | None:
        """The LLM policy's model (the first of an ensemble); None for an offline policy."""
        if self.llm is None:
            return None
        return self.llm.label if len(self.llm.models) == 1 else self.llm.models[0].spec

    @property
    def policy_label(self) -> str:
        return self.llm.label if self.llm is not None else self.policy

    def resolved(self) -> "RunOptions":
        """The options a run uses: the task size decided from the run's device (small on a
        CPU, full on a GPU, unless asked). With `ExecutionOptions.run_device`, the one place
        either is worked out."""
        return dataclasses.replace(self, evaluation=self.evaluation.at(self.execution.run_device()))

    def to_dict(self) -> dict[str, Any]:
        """The options as a run's record keeps them: flat, the LLM's as its own (no keys,
        retry or prices)."""
        d: dict[str, Any] = {"backend": self.backend, "policy": self.policy, "model": self.model,
                             "llm": None if self.llm is None else self.llm.to_dict()}
        for name in RECORDS:
            record = getattr(self, name)
            d.update({f.name: _plain(getattr(record, f.name)) for f in dataclasses.fields(record)})
        return d

    def identity(self) -> dict[str, Any]:
        """The options that decide what a run computes: a resumed run must match them."""
        return {k: v for k, v in self.to_dict().items() if k not in _HOW}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _llm_for(model: Any) -> "LLMOptions | None":
    if model is None:
        return None
    from evokernel.llm import LLMOptions

    if isinstance(model, LLMOptions):
        return model
    try:
        return LLMOptions.from_specs([model])
    except ValueError as exc:
        raise RunError(str(exc)) from None


def _flat_names() -> tuple[dict[str, str], frozenset[str]]:
    """Each record field's flat name -> its record; and the `how` names."""
    flat: dict[str, str] = {}
    how: set[str] = set()
    records = {"evaluation": EvaluationOptions, "loop": LoopOptions, "execution": ExecutionOptions}
    own = {f.name for f in dataclasses.fields(RunOptions)} | {"model"}
    for name, record in records.items():
        for f in dataclasses.fields(record):
            if f.name in flat or f.name in own:  # a flat name must say one field
                raise TypeError(f"{record.__name__}.{f.name}: the name is taken by {flat.get(f.name, 'RunOptions')}")
            flat[f.name] = name
            if f.metadata.get("how"):
                how.add(f.name)
    return flat, frozenset(how)


_FLAT, _HOW = _flat_names()


__all__ = [
    "DEVICE_NAME", "ENGINES", "MAX_SECONDS", "MEMORY_MODES", "SIZES", "EvaluationOptions", "ExecutionOptions", "Flag",
    "LoopOptions", "RunError", "RunOptions", "flag_of", "parse_bytes", "parse_gpus", "setting",
]
