"""The EvoKernel loop: draft until feasible, then refine, with the memory
deciding what each step sees and learning from every verdict.

Tasks run in outer iterations over the batch, one step per task per
iteration, so each task can retrieve what the others wrote earlier. Each step
is committed in one transaction (its trace, its experience summary and its
value updates), so a run killed at any moment resumes from its last completed
step and loses none.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import random
import re
import zlib
from pathlib import Path
from typing import Any, Callable, Sequence

from backends import EvalOptions, EvalResult, Executor, Task, Verdict, load_task
from memory_store import Item, MemoryStore

from ._rewards import draft_reward, refine_reward
from ._types import MemoryNote, Policy, Proposal, RunConfig, RunResult, StartPointView, StepContext, TaskOutcome

Event = dict[str, Any]
KINDS_FOR_CONTEXT = ["trace", "experience", "best_practice"]
# Backends whose API notes are seeded into a bank on first use ("module:function(store) -> int").
API_NOTE_SEEDERS = {"ascendc": "evokernel.ascendc:seed_api_notes"}
API_NOTES_PER_STEP = 8
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def task_key_for(task: Task) -> str:
    """The task's identity in the memory: its source hash, plus its size when not full
    (latencies at two sizes are not comparable)."""
    size = os.environ.get("EVOKERNEL_SIZE", "full")
    return task.key if size == "full" else f"{task.key}@{size}"


def _query(task: Task, backend: str) -> str:
    return f"{task.name} {task.category} {backend}\n{task.source[:3000]}"


def _note(r: Any) -> MemoryNote:
    item: Item = r.item
    return MemoryNote(
        id=item.id, kind=item.kind, task_key=item.task_key, backend=item.backend, key_text=item.key_text,
        content=item.content, status=item.status, latency_ms=item.latency_ms, value=float(r.value),
        extra=dict(item.extra or {}),
    )


class _Plain:
    """An item found by exact name, shaped like a retrieval result (value: not value-selected)."""

    def __init__(self, item: Item):
        self.item = item
        self.value = 0.0


class _TaskState:
    def __init__(self, task: Task, key: str):
        self.task = task
        self.key = key
        self.outcome = TaskOutcome(name=task.name, task_key=key, path=str(task.path))
        self.feedback: str | None = None


class Runner:
    """One run over a batch of tasks. Library entry point: `run_tasks`."""

    def __init__(
        self,
        tasks: Sequence[Task],
        policy: Policy,
        store: MemoryStore,
        config: RunConfig,
        *,
        executor: Executor | None = None,
        on_event: Callable[[Event], None] | None = None,
        resume: bool = True,
    ):
        self.policy = policy
        self.store = store
        self.config = config
        self.executor = executor
        self.on_event = on_event or (lambda e: None)
        self.states = [_TaskState(t, task_key_for(t)) for t in tasks]
        self.options = EvalOptions(trials=config.trials, reps=config.reps, baselines=config.baselines)
        # Which latencies this run can compare with (the backend's label on this device), asked once.
        from backends import default_device, get_backend

        self.latency_source = get_backend(config.backend).latency_source(config.device or default_device())
        self.signature = {
            "tasks": [s.key for s in self.states],
            "policy": policy.name,
            "config": config.to_dict(),
            "size": os.environ.get("EVOKERNEL_SIZE", "full"),
        }
        self.run_id, self.resumed = self._open_run(resume)
        self._seeded: set[str] = set()  # backends whose API notes this run has seeded

    # --- run bookkeeping ---------------------------------------------------
    def _open_run(self, resume: bool) -> tuple[int, bool]:
        if resume:
            for run in reversed(self.store.runs()):
                if run["status"] == "running" and run["config"].get("signature") == self.signature:
                    return run["id"], True
        record = {
            "signature": self.signature,
            "policy": self.policy.name,
            "policy_is_llm": self.policy.is_llm,
            "tasks": [{"key": s.key, "name": s.task.name, "path": str(s.task.path), "source": s.task.source} for s in self.states],
        }
        return self.store.start_run(record), False

    def _restore(self) -> None:
        """On resume, rebuild each task's outcome from the steps this run committed."""
        for st in self.states:
            for step in self.store.steps(self.run_id, st.key):
                item = self.store.get_item(step["result_item_id"]) if step["result_item_id"] else None
                if item is not None:
                    report = EvalResult.from_dict({"status": item.status or "runtime_error", **(item.feedback or {})})
                    info = {**(item.extra or {}), **_measured(report)}
                    self._account(st, step["stage"], item.status or "", item.latency_ms, info, item.id)
                    st.feedback = (item.feedback or {}).get("feedback")

    # --- state from the memory --------------------------------------------
    def _comparable(self, item: Item, source: str) -> bool:
        return (item.extra or {}).get("latency_source", "none") == source

    def _feasible(self, st: _TaskState) -> list[Item]:
        return self.store.feasible_items(st.key, self.config.backend)

    def _best_ms(self, feasible: list[Item], source: str) -> float | None:
        times = [i.latency_ms for i in feasible if i.latency_ms and self._comparable(i, source)]
        return min(times) if times else None

    def _choose_start(self, feasible: list[Item], rng: random.Random) -> Item:
        """Epsilon-greedy over Q_refine among the task's feasible kernels; ties go to the faster."""
        if len(feasible) > 1 and rng.random() < self.config.epsilon_start_point:
            return rng.choice(feasible)
        return max(feasible, key=lambda i: (i.q_refine, -(i.latency_ms or math.inf), -i.id))

    def _retrieve(self, st: _TaskState, stage: str, rng: random.Random) -> list[MemoryNote]:
        mode = self.config.memory_mode
        if mode == "off" or self.config.independent_samples:
            return []
        backends = [self.config.backend, *self.config.port_from]
        kwargs: dict[str, Any] = dict(stage=stage, n=self.config.n_memories, kinds=KINDS_FOR_CONTEXT, rng=rng)
        if mode == "task-only":
            kwargs.update(mode="value", only_task_key=st.key, backends=[self.config.backend])
        else:
            kwargs.update(mode=mode, backends=backends)
        return [_note(r) for r in self.store.retrieve(_query(st.task, self.config.backend), **kwargs)]

    def _api_notes(self, st: _TaskState, stage: str, memories: list[MemoryNote], start: Item | None,
                   rng: random.Random) -> list[MemoryNote]:
        """API notes for this step: exact names from the last feedback first, then from the
        start point's and the retrieved kernels' code; then concept notes by category search.
        Not value-selected (DESIGN section 4); none with memory mode "off"."""
        backend = self.config.backend
        if self.config.memory_mode == "off" or getattr(self.config, "independent_samples", False):
            return []  # no memory at all, or pass@k samples that must not see earlier feedback
        if backend in API_NOTE_SEEDERS and backend not in self._seeded:
            module, func = API_NOTE_SEEDERS[backend].split(":")
            getattr(importlib.import_module(module), func)(self.store)
            self._seeded.add(backend)
        texts = [st.feedback or ""] + ([start.content] if start is not None else [])
        texts += [m.content for m in memories if m.kind == "trace"]
        names: dict[str, None] = {}
        for text in texts:
            for word in _IDENTIFIER.findall(text):
                if len(names) < 400:
                    names.setdefault(word, None)
        found = self.store.api_notes_by_name(list(names), backend)[:API_NOTES_PER_STEP] if names else []
        query = (st.feedback or "")[:2000] or _query(st.task, backend)
        seen = {i.id for i in found}
        extra = [r for r in self.store.retrieve(query, stage=stage, n=2, mode="similarity", kinds=["api_note"],
                                                backends=[backend], categories=["concept"], rng=rng, epsilon=0.0)
                 if r.item.id not in seen]
        return [_note(_Plain(item)) for item in found] + [_note(r) for r in extra]

    def _tried(self, st: _TaskState) -> frozenset[str]:
        items = self.store.list_items(kinds=["trace"], backends=[self.config.backend], task_key=st.key, limit=None)
        return frozenset(fp for i in items if (fp := (i.extra or {}).get("fingerprint")))

    # --- one step ---------------------------------------------------------
    def step(self, st: _TaskState, iteration: int) -> None:
        out = st.outcome
        step_no = out.attempts + 1
        rng = random.Random(zlib.crc32(f"{self.config.seed}:{st.key}:{step_no}".encode()))
        source_label = self.latency_source
        feasible = [] if self.config.independent_samples else self._feasible(st)
        stage = "refine" if feasible else "draft"
        start = self._choose_start(feasible, rng) if feasible else None
        best_ms = self._best_ms(feasible, source_label)
        if stage == "refine" and out.first_latency_ms is None and best_ms is not None and out.first_correct_attempt is None:
            # Continual refinement: the best kernel already in the memory is both
            # where this run starts and the one to beat.
            best_item = min((i for i in feasible if i.latency_ms and self._comparable(i, source_label)),
                            key=lambda i: i.latency_ms)
            out.first_latency_ms = out.best_latency_ms = best_ms
            out.best_item_id = best_item.id
            out.latency_source = source_label
            out.correct = True
        memories = self._retrieve(st, stage, rng)
        api_notes = self._api_notes(st, stage, memories, start, rng)
        ctx = StepContext(
            task_name=st.task.name, task_key=st.key, task_path=str(st.task.path), task_source=st.task.source,
            category=st.task.category, backend=self.config.backend, stage=stage, step=step_no, memories=memories,
            feedback=None if self.config.independent_samples else st.feedback, start_point=self._start_view(start),
            tried=frozenset() if self.config.independent_samples else self._tried(st), run_id=self.run_id,
            api_notes=api_notes,
        )
        self.on_event({"type": "step_start", "task": st.task.name, "stage": stage, "step": step_no, "iteration": iteration})
        proposal = self.policy.propose(ctx)
        if proposal.stop:
            out.stopped = proposal.error or "the policy stopped"
            self.on_event({"type": "stopped", "task": st.task.name, "reason": out.stopped})
            return
        result = self._evaluate(st, proposal)
        feasible_now = result.feasible
        reward = draft_reward(feasible_now) if stage == "draft" else refine_reward(feasible_now, result.latency_ms, best_ms)
        context_ids = [m.id for m in memories] if proposal.used_memory_ids is None else list(proposal.used_memory_ids)
        item_id = self._commit(st, stage, proposal, result, reward, context_ids, start, iteration)
        self._account(st, stage, result.status.value, result.latency_ms,
                      {"latency_source": result.latency_source, **_measured(result)}, item_id)
        out.tokens_in += proposal.tokens_in
        out.tokens_out += proposal.tokens_out
        out.cost_usd += proposal.cost_usd or 0.0
        st.feedback = result.feedback or result.message
        self.on_event({
            "type": "step_done", "task": st.task.name, "stage": stage, "step": step_no, "status": result.status.value,
            "latency_ms": result.latency_ms, "reward": reward, "best_latency_ms": out.best_latency_ms,
            "speedup_over_first": out.speedup_over_first, "iteration": iteration,
        })

    def _start_view(self, start: Item | None) -> StartPointView | None:
        if start is None:
            return None
        report = EvalResult.from_dict({"status": start.status or "ok", **(start.feedback or {})})
        lat = start.latency_ms
        facts = [f"kernel {k.name}: {k.summary()}" for k in report.kernels[:4] if k.summary()]
        return StartPointView(
            id=start.id, code=start.content, latency_ms=lat,
            speedup_eager=report.baselines.speedup("eager", lat),
            speedup_compile=report.baselines.speedup("compile", lat),
            extra=dict(start.extra or {}), facts=tuple(facts),
        )

    def _evaluate(self, st: _TaskState, proposal: Proposal) -> EvalResult:
        if proposal.source is None:
            msg = proposal.error or "the policy produced no candidate"
            return EvalResult(Verdict.COMPILE_ERROR, msg, feedback=msg)
        if self.executor is None:
            self.executor = Executor(device=self.config.device, timeout_s=self.config.timeout_s)
        return self.executor.evaluate(st.task.path, proposal.source, backend=self.config.backend, options=self.options)

    def _commit(self, st, stage, proposal, result, reward, context_ids, start, iteration) -> int:
        report = result.to_dict()
        report.pop("latency_samples_ms", None)
        extra = {
            **proposal.extra,
            "fingerprint": proposal.fingerprint,
            "policy": self.policy.name,
            "latency_source": result.latency_source,
            "device": result.device,
            "iteration": iteration,
            "task_name": st.task.name,
        }
        summary = _summary(st.task.name, self.config.backend, stage, result)
        key_text = proposal.key_text or f"{st.task.name} {st.task.category} {self.config.backend}"
        latency = result.latency_ms if result.feasible else None
        with self.store.transaction():
            trace_id = self.store.add_item(
                kind="trace", task_key=st.key, backend=self.config.backend, key_text=key_text, content=proposal.source or "",
                stage=stage, category=st.task.category, feedback=report, reward=reward, latency_ms=latency,
                status=result.status.value, parent_id=start.id if start else None, run_id=self.run_id, extra=extra,
            )
            self.store.add_item(
                kind="experience", task_key=st.key, backend=self.config.backend,
                key_text=f"{key_text}\n{result.status.value}: {result.message[:300]}", content=summary, stage=stage,
                category=st.task.category, feedback={"status": result.status.value, "message": result.message[:2000]},
                reward=reward, latency_ms=latency, status=result.status.value, parent_id=trace_id, run_id=self.run_id,
                extra={"policy": self.policy.name, "latency_source": result.latency_source},
            )
            self.store.record_step(
                run_id=self.run_id, task_key=st.key, backend=self.config.backend, stage=stage, reward=reward,
                context_item_ids=context_ids, start_point_id=start.id if start else None, result_item_id=trace_id,
            )
        return trace_id

    def _account(self, st: _TaskState, stage: str, status: str, latency_ms: float | None, info: dict, item_id: int) -> None:
        out = st.outcome
        out.attempts += 1
        out.statuses.append(status)
        out.stage = stage
        if status not in ("compile_error",):
            out.compile_ok_attempts += 1
        feasible = status in ("ok", "compiled")
        if not feasible:
            return
        out.correct = True
        out.stage = "refine"
        if out.first_correct_attempt is None and stage == "draft":
            out.first_correct_attempt = out.attempts
        out.latency_source = info.get("latency_source", out.latency_source)
        out.eager_ms = info.get("eager_ms", out.eager_ms)
        out.compile_ms = info.get("compile_ms", out.compile_ms)
        if latency_ms is not None and math.isfinite(latency_ms):
            if out.first_latency_ms is None:
                out.first_latency_ms = latency_ms
            if out.best_latency_ms is None or latency_ms < out.best_latency_ms:
                out.best_latency_ms = latency_ms
                out.best_item_id = item_id
                out.achieved_gbps = info.get("achieved_gbps")
                out.copy_gbps = info.get("copy_bandwidth_gbps")
        elif out.best_item_id is None:
            out.best_item_id = item_id

    # --- the whole run ------------------------------------------------------
    def run(self) -> RunResult:
        if self.resumed:
            self._restore()
        result = RunResult(self.run_id, self.policy.name, self.policy.is_llm, self.config, [s.outcome for s in self.states],
                           resumed=self.resumed, memory_path=str(self.store.path))
        self.on_event({"type": "run_start", "run_id": self.run_id, "resumed": self.resumed, "tasks": [s.task.name for s in self.states]})
        iteration = max((s.outcome.attempts for s in self.states), default=0)
        try:
            while True:
                active = [s for s in self.states if s.outcome.attempts < self.config.budget and not s.outcome.stopped]
                if not active:
                    break
                iteration += 1
                for st in active:
                    if st.outcome.attempts < iteration:  # tasks behind catch up after a resume
                        self.step(st, iteration)
                result.accuracy_by_iteration.append(sum(s.outcome.correct for s in self.states) / len(self.states))
            self.store.finish_run(self.run_id, "done")
        finally:
            if self.executor is not None:
                self.executor.close()
        self.on_event({"type": "run_done", "run_id": self.run_id})
        return result


def _summary(task_name: str, backend: str, stage: str, result: EvalResult) -> str:
    """A structured experience summary from the verifier's facts (no LLM needed)."""
    from evokernel.llm import StepFacts, facts_summary

    return facts_summary(StepFacts(
        task_name=task_name, backend=backend, stage=stage, status=result.status.value, message=result.message,
        max_abs_error=result.max_abs_error, latency_ms=result.latency_ms, speedup_eager=result.speedup_eager,
        speedup_compile=result.speedup_compile,
    ))


def _measured(result: EvalResult) -> dict[str, Any]:
    """The baselines and bandwidth facts of a result, as `_account` takes them."""
    info: dict[str, Any] = dict(result.baselines.present())
    if result.roofline is not None:
        info.update(achieved_gbps=result.roofline.achieved_gbps, copy_bandwidth_gbps=result.roofline.copy_bandwidth_gbps)
    return info


def run_tasks(
    task_paths: Sequence[str | Path],
    policy: Policy,
    store: MemoryStore,
    config: RunConfig,
    *,
    executor: Executor | None = None,
    on_event: Callable[[Event], None] | None = None,
    resume: bool = True,
) -> RunResult:
    """Run the loop over task files; a matching unfinished run is resumed."""
    tasks = [load_task(p) for p in task_paths]
    return Runner(tasks, policy, store, config, executor=executor, on_event=on_event, resume=resume).run()


def export_best(store: MemoryStore, result: RunResult, out_dir: str | Path) -> list[Path]:
    """Write the best kernel of each task to OUT_DIR/<task>.py (with its facts in a sidecar)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for t in result.tasks:
        if t.best_item_id is None:
            continue
        item = store.get_item(t.best_item_id)
        path = out / f"{t.name}.py"
        path.write_text(item.content)
        (out / f"{t.name}.json").write_text(json.dumps({
            "task": t.name, "task_key": t.task_key, "status": item.status, "latency_ms": item.latency_ms,
            "latency_source": (item.extra or {}).get("latency_source"), "item_id": item.id,
        }, indent=1))
        written.append(path)
    return written
