"""An agent's session with the memory and the executor: what each MCP tool does.

Nothing here knows MCP: the server (`_server.py`) calls these methods from
worker threads and turns their records into tool results. A task the agent
works on gets a `Runner` of the loop, with one run in the memory, opened on
the task's first retrieval or submission, so a step the agent takes is planned
(stage, start point, memories) and committed (trace, experience, reward,
value updates) by the same code as a step of `evokernel run`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from backends import EvalOptions, EvalResult, ExecutorProtocol, LatencySource, RetimeReport, Verdict
from evokernel._step import latency_source_of, stored_result
from evokernel.loop import (
    FEASIBLE_STATUSES,
    MemoryNote,
    Proposal,
    RunError,
    Runner,
    RunOptions,
    StepContext,
    load_tasks,
    make_executor,
)

from ._describe import describe_io, tolerances
from ._errors import ToolInputError
from ._records import (
    BestKernel,
    MemoryRecord,
    MemoryStats,
    Retrieval,
    StartPointRecord,
    Submission,
    SuiteEntry,
    TaskEntry,
    TaskList,
    TaskView,
    ValueChange,
)
from ._tasks import recorded_tasks, task_path

STAGES = ("draft", "refine")
# The agent names every item it used (skills too) in used_memory_ids: a skill is not credited
# for having been shown (a loop that selects skills credits them all when a policy does not say).
_CREDIT_ONLY_NAMED = {"used_skill_ids": ()} if "used_skill_ids" in {f.name for f in dataclasses.fields(Proposal)} else {}
HOW_TO_CREDIT = (
    "Pass the ids of the memories and skills you used as used_memory_ids to submit_candidate, and start_point.id as "
    "start_point_id if you refined that kernel: their value for the step's stage moves toward its reward "
    "(+1/-1 for a draft, tanh(log best - log latency) or -1 for a refinement). API notes are reference "
    "material and are never value-updated."
)


class AgentPolicy:
    """The coding agent as the loop's policy: it proposes through `submit_candidate`, never
    when asked by the loop, so a run of its own is never driven by `Runner.run`."""

    is_llm = True

    def __init__(self, name: str):
        self.name = name

    def propose(self, ctx: StepContext) -> Proposal:
        return Proposal(None, stop=True, error="an MCP agent proposes through submit_candidate")


class _LazyExecutor:
    """The executor the session's runners share, started on the first evaluation (a worker
    costs seconds to start; an agent may only browse)."""

    def __init__(self, make: Callable[[], ExecutorProtocol]):
        self._make = make
        self._executor: ExecutorProtocol | None = None
        self._lock = threading.Lock()

    @property
    def waiting(self) -> int:
        return self._executor.waiting if self._executor is not None else 0

    def evaluate(self, task_path: str | os.PathLike[str], source: str, *, backend: str = "triton",
                 options: EvalOptions | None = None, timeout_s: float | None = None) -> EvalResult:
        return self._started().evaluate(task_path, source, backend=backend, options=options, timeout_s=timeout_s)

    def retime(self, task_path: str | os.PathLike[str], baseline_source: str, candidate_source: str, *,
               backend: str = "triton", options: EvalOptions | None = None, rounds: int = 3,
               timeout_s: float | None = None) -> RetimeReport:
        return self._started().retime(task_path, baseline_source, candidate_source, backend=backend, options=options,
                                      rounds=rounds, timeout_s=timeout_s)

    def _started(self) -> ExecutorProtocol:
        with self._lock:
            if self._executor is None:
                self._executor = self._make()
            return self._executor

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.close()
                self._executor = None


@dataclasses.dataclass(frozen=True)
class _Loaded:
    task: Any  # backends.Task
    key: str
    ref: str


class AgentSession:
    """The memory and the executor, as an agent's tools use them.

    `options` are the loop's own (`RunOptions`: backend, the evaluation's rules, size,
    precision, trials and timeout, the loop's seed and retrieval settings, the device);
    the session's runs are recorded with them like any run. Pass `store` or `memory`
    (a path; default the user's bank) and optionally an `executor` (anything with
    `evaluate(task_path, source, backend=, options=)`); `agent` names the policy in the runs.
    Raises `RunError` when the session cannot start.
    """

    def __init__(self, options: RunOptions = RunOptions(), *, memory: str | os.PathLike[str] | None = None,
                 store: Any = None, executor: Any = None, agent: str = "agent"):
        from backends import backend_names, get_backend
        from memory_store import MemoryStore, MemoryStoreError, default_memory_path

        known = backend_names()
        for name in (options.backend, *options.loop.port_from):
            if name not in known:
                raise RunError(f"unknown backend {name!r}; known: {', '.join(known)}")
        # Every session is runs of its own: an agent's state does not survive its server, so
        # there is nothing to resume (and two agents on one bank must not share a run).
        self.options = options.resolved().replace(resume=False)
        self.device = self.options.execution.run_device()
        self.size = self.options.evaluation.size
        self.precision = self.options.evaluation.precision
        self.backend = get_backend(options.backend)
        self.latency_source = LatencySource(self.backend.latency_source(self.device))
        self.agent = agent
        self._own_store = store is None
        if store is None:
            path = Path(memory).expanduser() if memory is not None else default_memory_path()
            try:
                store = MemoryStore(path)
            except MemoryStoreError as exc:
                raise RunError(str(exc)) from None
        self.store = store
        self._own_executor = executor is None
        self.executor = executor if executor is not None else _LazyExecutor(self._make_executor)
        self._runners: dict[str, Runner] = {}
        self._loaded: dict[tuple[str, str], _Loaded] = {}
        self._task_locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._closed = False

    def _make_executor(self) -> Any:
        from backends import DevicePlanError, plan_devices

        try:
            devices = plan_devices(device=self.options.execution.device, gpus=self.options.execution.gpus, cpu_workers=1)
        except DevicePlanError as exc:
            raise ToolInputError(str(exc)) from None
        return make_executor(self.options, devices, 1)

    def close(self) -> None:
        """Finish the session's runs and stop its workers."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            runners = list(self._runners.values())
        try:
            for runner in runners:
                self.store.finish_run(runner.run_id, "done")
        finally:
            if self._own_executor:
                self.executor.close()
            if self._own_store:
                self.store.close()

    def __enter__(self) -> "AgentSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def run_ids(self) -> list[int]:
        with self._lock:
            return [r.run_id for r in self._runners.values()]

    # --- tasks ----------------------------------------------------------------
    def _load(self, ref: str) -> _Loaded:
        path = task_path(ref, self.store).resolve()
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            raise ToolInputError(f"{path}: cannot read the task: {exc.strerror}") from None
        with self._lock:
            cached = self._loaded.get((str(path), digest))
        if cached is not None:
            return cached
        try:
            [(task, key)], _ = load_tasks([path], self.size, precision=self.precision)
        except RunError as exc:
            raise ToolInputError(str(exc)) from None
        loaded = _Loaded(task, key, str(path))
        with self._lock:
            self._loaded[(str(path), digest)] = loaded
        return loaded

    def _runner(self, loaded: _Loaded, client: str | None) -> Runner:
        """The task's runner in this session: one run in the memory, opened on first use."""
        with self._lock:
            if self._closed:
                raise ToolInputError("the session is closed")
            runner = self._runners.get(loaded.key)
            if runner is None:
                policy = AgentPolicy(f"mcp:{client or self.agent}")
                runner = Runner([loaded.task], [loaded.key], policy, self.store, self.options, device=self.device,
                                size=self.size, executor=self.executor, jobs=1)
                runner.start()
                self._runners[loaded.key] = runner
                self._task_locks[loaded.key] = threading.Lock()
            return runner

    def _feasible(self, key: str) -> list[Any]:
        return self.store.feasible_items(key, self.options.backend, statuses=FEASIBLE_STATUSES)

    def _best_item(self, key: str) -> tuple[Any, bool]:
        """The fastest feasible kernel measured the way this server measures, else the fastest
        of any; and whether it is comparable here."""
        feasible = self._feasible(key)
        here = [i for i in feasible if latency_source_of(i) is self.latency_source]
        if here:
            return here[0], True
        return (feasible[0] if feasible else None), False

    # --- the tools ------------------------------------------------------------
    def list_tasks(self, source: str | None = None) -> TaskList:
        """Bundled tasks and suites, the tasks of `source` (a suite, directory or file), and the
        tasks in the memory with their best kernel and stage on this backend."""
        from evokernel.bench import BUNDLED_SUITES, SuiteError, benchmarks_root, resolve_tasks
        from evokernel.tasks import bundled_task_names, bundled_task_path

        bundled = [self._file_entry(bundled_task_path(n), ref=n) for n in bundled_task_names()]
        suites = []
        for name in BUNDLED_SUITES:
            folder = benchmarks_root() / name
            count = len([f for f in folder.glob("*.py") if not f.name.startswith("_")]) if folder.is_dir() else 0
            suites.append(SuiteEntry(name=name, path=str(folder), tasks=count))
        listed = []
        if source:
            try:
                files = resolve_tasks(source)
            except SuiteError as exc:
                raise ToolInputError(str(exc)) from None
            listed = [self._file_entry(f, ref=str(f)) for f in files]
        steps: dict[str, int] = {}
        for step in self.store.steps():
            steps[step["task_key"]] = steps.get(step["task_key"], 0) + 1
        memory = []
        for key, record in recorded_tasks(self.store).items():
            path = record.get("path") or ""
            note = "" if Path(path).is_file() else "its file is gone: rebuilt from the recorded source when used"
            memory.append(self._entry(record.get("name") or key, key, path, key, steps=steps.get(key, 0), note=note))
        return TaskList(backend=self.options.backend, size=self.size, precision=self.precision, bundled=bundled, suites=suites, listed=listed,
                        memory=memory)

    def _file_entry(self, path: Path, *, ref: str) -> TaskEntry:
        """A task file as listed: its key at this session's size and precision (the loader's own key, from
        the source alone: listing does not import the file) and its best kernel."""
        from backends import Task

        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError):
            return TaskEntry(name=path.stem, ref=ref, path=str(path), note="cannot read the file")
        key = Task(path=path, name=path.stem, source=text, tolerance=None, has_input_groups=False, category="",
                   size=self.size, precision=self.precision).key
        return self._entry(path.stem, ref, str(path), key)

    def _entry(self, name: str, ref: str, path: str, key: str, *, steps: int | None = None, note: str = "") -> TaskEntry:
        best, comparable = self._best_item(key)
        return TaskEntry(
            name=name, ref=ref, path=path, key=key, stage="refine" if best is not None else "draft",
            best_latency_ms=best.latency_ms if best is not None else None,
            latency_source=best.latency_source if best is not None else None,
            steps=steps, note=note,
        )

    def show_task(self, task: str) -> TaskView:
        from backends import task_cost

        loaded = self._load(task)
        t = loaded.task
        notes: list[str] = []
        init, inputs, outputs = describe_io(t.path, self.size, notes)
        cost = task_cost(t.path, size=self.size)
        if cost.note:
            notes.append(cost.note)
        if self.precision != "fp32":
            notes.append(f"the shapes and dtypes above are the task as written; a candidate runs in {self.precision}: "
                         "the models and floating inputs are cast to it first")
        try:
            from backends import describe_rules

            rules_text = describe_rules(self.options.evaluation.rules)
        except ImportError:  # an executor that does not describe its rule sets
            rules_text = ""
        steps = len(self.store.steps(task_key=loaded.key))
        best = self.best_kernel(task)
        return TaskView(
            name=t.name, ref=loaded.ref, path=str(t.path), key=loaded.key, size=self.size, precision=self.precision,
            category=t.category,
            backend=self.options.backend, backend_title=getattr(self.backend, "title", None) or self.options.backend,
            rules=self.options.evaluation.rules, rules_text=rules_text,
            backend_rules=(getattr(self.backend, "prompt_rules", None) or "").strip(),
            reference_source=t.source, init_inputs=init, inputs=inputs, outputs=outputs,
            tolerances=tolerances(t.tolerance, [s for group in inputs[:1] for s in group] + outputs),
            min_bytes=cost.min_bytes, flops=cost.flops, latency_source=self.latency_source,
            next_stage="refine" if best.found else "draft", steps=steps, best=best, notes=notes,
        )

    def retrieve_memories(self, task: str, stage: str | None = None, *, client: str | None = None) -> Retrieval:
        """What the loop's next step of `task` would see: its memories (by `stage`'s value),
        API notes and, when refining, the start point chosen by Q_refine."""
        if stage is not None and stage not in STAGES:
            raise ToolInputError(f"stage must be draft or refine (or left out for the loop's choice), got {stage!r}")
        loaded = self._load(task)
        runner = self._runner(loaded, client)
        st = runner.states[0]
        with self._task_locks[loaded.key]:
            plan = runner.plan_step(st, st.outcome.attempts + 1, stage=stage)
        next_stage = "refine" if self._feasible(loaded.key) else "draft"
        ctx = plan.context
        start = ctx.start_point
        return Retrieval(
            task=loaded.task.name, key=loaded.key, stage=ctx.stage, step=ctx.step, next_stage=next_stage,
            memories=[_memory(m) for m in ctx.memories], skills=[_memory(m) for m in getattr(ctx, "skills", ())],
            api_notes=[_memory(m) for m in ctx.api_notes],
            start_point=None if start is None else StartPointRecord(
                id=start.id, source=start.code, latency_ms=start.latency_ms,
                latency_source=_label(start.latency_source), speedup_eager=start.speedup_eager,
                speedup_compile=start.speedup_compile, facts=list(start.facts)),
            best_latency_ms=plan.best_ms, feedback=ctx.feedback, how_to_credit=HOW_TO_CREDIT,
        )

    def submit_candidate(self, task: str, source: str, used_memory_ids: Sequence[int] = (),
                         start_point_id: int | None = None, *, client: str | None = None,
                         progress: Callable[[str], None] | None = None) -> Submission:
        """Evaluate a candidate as the loop's executor does and commit it as the task's next step."""
        say = progress or (lambda message: None)
        if not isinstance(source, str) or not source.strip():
            raise ToolInputError("source is empty: send the whole candidate file (imports, kernels and class ModelNew)")
        say("loading the task")
        loaded = self._load(task)
        runner = self._runner(loaded, client)
        st = runner.states[0]
        with self._task_locks[loaded.key]:
            used, not_credited = self._credited(used_memory_ids)
            plan = runner.plan_step(st, st.outcome.attempts + 1)
            stage = plan.context.stage
            start = self._start_point(start_point_id, loaded, stage)
            plan = dataclasses.replace(plan, start=start)
            # The value update moves each of these once (a start point that is also a used memory too).
            watched = list(dict.fromkeys([*used, *([start.id] if start is not None else [])]))
            before = {i.id: i for i in self.store.get_items(watched)}
            proposal = Proposal(
                source,
                key_text=f"{loaded.task.name} {loaded.task.category} {self.options.backend}\n{stage} by {runner.policy.name}",
                fingerprint=hashlib.sha256(source.encode()).hexdigest()[:16],
                extra={"via": "mcp", "agent": runner.policy.name},
                used_memory_ids=tuple(used),
                **_CREDIT_ONLY_NAMED,
            )
            say(f"evaluating on {self.device} under the {self.options.evaluation.rules} rules (compile, verify, time)")
            started = time.monotonic()
            result = runner.evaluate(st, proposal)
            seconds = time.monotonic() - started
            say("committing the step")
            attempt = runner.commit_step(st, plan, proposal, result)
            after = {i.id: i for i in self.store.get_items(watched)}
        best, comparable = self._best_item(loaded.key)
        column = f"q_{stage}"
        credited = [
            ValueChange(id=i, kind=after[i].kind, stage=stage, value_before=getattr(before[i], column),
                        value_after=getattr(after[i], column), visits=getattr(after[i], f"visits_{stage}"))
            for i in watched
        ]
        return Submission(
            task=loaded.task.name, key=loaded.key, run_id=runner.run_id, step=attempt.step, stage=stage,
            item_id=attempt.item_id, verdict=result.status.value, feasible=result.feasible, message=result.message,
            feedback=result.feedback or result.message, latency_ms=attempt.latency_ms,
            latency_iqr_ms=result.latency_iqr_ms if result.feasible else None, latency_source=result.latency_source,
            max_abs_error=_finite(result.max_abs_error), baselines=result.baselines.present(),
            speedup_eager=result.speedup_eager if result.feasible else None,
            speedup_compile=result.speedup_compile if result.feasible else None, reward=attempt.reward,
            best_latency_ms=best.latency_ms if best is not None and comparable else None, credited=credited, not_credited=not_credited, warnings=list(result.warnings),
            seconds=round(seconds, 3),
        )

    def _credited(self, ids: Sequence[int]) -> tuple[list[int], list[str]]:
        """The used ids whose values the step moves (unknown ids are an error, before anything runs)."""
        from memory_store import MemoryStoreError

        wanted: list[int] = []
        for i in ids or ():
            if isinstance(i, bool) or not isinstance(i, int) or i < 1:
                raise ToolInputError(f"used_memory_ids must be positive integer ids, got {i!r}")
            if i not in wanted:
                wanted.append(i)
        try:
            items = self.store.get_items(wanted)
        except MemoryStoreError as exc:
            raise ToolInputError(f"{exc} (ids come from retrieve_memories or best_kernel)") from None
        used, skipped = [], []
        for item in items:
            if item.kind == "api_note":
                skipped.append(f"{item.id}: an API note is reference material, never value-updated")
            else:
                used.append(item.id)
        return used, skipped

    def _start_point(self, item_id: int | None, loaded: _Loaded, stage: str) -> Any:
        if item_id is None:
            return None
        if isinstance(item_id, bool) or not isinstance(item_id, int):
            raise ToolInputError(f"start_point_id must be an item id, got {item_id!r}")
        feasible = {i.id: i for i in self._feasible(loaded.key)}
        if item_id not in feasible:
            raise ToolInputError(
                f"start_point_id {item_id} is not a feasible {self.options.backend} kernel of {loaded.task.name} "
                f"({loaded.key}); " + ("this task has none yet, so this step is a draft" if stage == "draft"
                                       else f"its feasible kernels are {', '.join(map(str, sorted(feasible)))}"))
        return feasible[item_id]

    def best_kernel(self, task: str) -> BestKernel:
        loaded = self._load(task)
        item, comparable = self._best_item(loaded.key)
        if item is None:
            return BestKernel(task=loaded.task.name, key=loaded.key, found=False,
                              message=f"no feasible {self.options.backend} kernel of {loaded.task.name} in the memory yet")
        extra = item.extra or {}
        return BestKernel(
            task=loaded.task.name, key=loaded.key, found=True, item_id=item.id, source=item.content,
            status=item.status, latency_ms=item.latency_ms, latency_source=item.latency_source,
            comparable_here=comparable, stage=item.stage, run_id=item.run_id, policy=extra.get("policy"),
            device=extra.get("device"), size=extra.get("size"), precision=extra.get("precision", "fp32"),
            rules=extra.get("rules"), parent_id=item.parent_id,
            created_utc=item.created_utc, baselines=(stored_result(item) or EvalResult(Verdict.OK)).baselines.present(),
            message="" if comparable else f"measured as {item.latency_source}, not {self.latency_source} as here",
        )

    def memory_stats(self) -> MemoryStats:
        return MemoryStats(path=str(self.store.path), counts=self.store.stats(), values=self.store.value_summary(),
                           runs_here=self.run_ids)


def _memory(note: MemoryNote) -> MemoryRecord:
    extra = note.extra or {}
    return MemoryRecord(
        id=note.id, kind=note.kind, task_key=note.task_key, task_name=extra.get("task_name") or note.task_key,
        backend=note.backend, status=note.status, latency_ms=note.latency_ms,
        latency_source=_label(note.latency_source), value=note.value, key_text=note.key_text, content=note.content,
    )


def _label(source: LatencySource) -> str | None:
    """A latency source as the tools report it: its label, None where nothing was timed."""
    return None if source is LatencySource.NONE else source.value


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None
