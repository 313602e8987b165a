"""The EvoKernel loop: draft until feasible, then refine, with the memory
deciding what each step sees and learning from every verdict.

Tasks run in outer iterations over the batch, one step per task per
iteration. With one job the steps of an iteration run one after the other,
so each task retrieves what the tasks before it wrote; with several they run
at once, and each step retrieves what was committed before its iteration
began plus what its own task wrote, so the outcome does not depend on which
step finished first. Each step is committed in one transaction (its trace,
its experience summary and its value updates) through the run's one store
connection, so a run killed at any moment resumes from its last completed
step and loses none.
"""

from __future__ import annotations

import importlib
import json
import random
import re
import threading
import time
import zlib
from pathlib import Path
from typing import Any, Callable, Sequence

from backends import EvalOptions, EvalResult, ExecutorProtocol, LatencySource, Task, Verdict, get_backend
from memory_store import Item, MemoryStore

from evokernel._step import (FEASIBLE_STATUSES, MemoryNote, Policy, Proposal, StartPointView, StepContext, StepPlan,
                             latency_source_of, stored_result)

from ._concurrent import RunMonitor, StepsInterrupted, run_all
from ._events import (OnEvent, RunFinished, RunStarted, SkillLearned, StepDone, StepStarted, TaskStopped,
                      TimeLimitReached)
from ._options import RunOptions
from ._rewards import draft_reward, refine_reward
from ._types import Attempt, RunInterrupted, RunResult, TaskOutcome

# Skills (kind best_practice) are selected apart, into their own section (evokernel/skills).
KINDS_FOR_CONTEXT = ["trace", "experience"]
API_NOTES_PER_STEP = 8
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _query(task: Task, backend: str) -> str:
    return f"{task.name} {task.category} {backend}\n{task.source[:3000]}"


def _note(item: Item, value: float) -> MemoryNote:
    return MemoryNote(
        id=item.id, kind=item.kind, task_key=item.task_key, backend=item.backend, key_text=item.key_text,
        content=item.content, status=item.status, latency_ms=item.latency_ms, value=float(value),
        extra=dict(item.extra or {}), parent_id=item.parent_id, latency_source=latency_source_of(item),
        result=stored_result(item), stage=item.stage or "", reward=item.reward,
    )


def _load_attr(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _feedback_of(result: EvalResult) -> str:
    """What the next step of the task is told about this one."""
    return result.feedback or result.message


class _TaskState:
    def __init__(self, task: Task, key: str):
        self.task = task
        self.key = key
        self.outcome = TaskOutcome(name=task.name, task_key=key, path=str(task.path))
        self.feedback: str | None = None


def choose_start(feasible: list[Item], rng: random.Random, epsilon: float,
                 comparable: Callable[[Item], bool]) -> Item:
    """The refinement's start point: the task's fastest comparable kernel, epsilon-greedy (any
    feasible one with probability ``epsilon``); untimed or incomparable kernels come after, by Q_refine.

    Not the highest Q_refine: a refinement that succeeds raises its start point's value while
    the faster kernel it made starts at zero, so that rule went back to the slower parent
    (73% of refine steps in benchmarks/learning_sim.py) and the step was judged against a best
    it did not start from."""
    if len(feasible) > 1 and rng.random() < epsilon:
        return rng.choice(feasible)
    return min(feasible, key=lambda i: (0, i.latency_ms, -i.q_refine, i.id) if i.latency_ms and comparable(i)
               else (1, 0.0, -i.q_refine, i.id))


class Runner:
    """One run over a batch of loaded tasks. The library entry point is `evokernel.run`,
    which resolves the device, size and job count and builds the policy and executor."""

    def __init__(
        self,
        tasks: Sequence[Task],
        keys: Sequence[str],
        policy: Policy,
        store: MemoryStore,
        options: RunOptions,
        *,
        device: str,
        size: str,
        executor: ExecutorProtocol,
        jobs: int = 1,
        on_event: OnEvent | None = None,
    ):
        self.policy = policy
        self.store = store
        self.options = options
        self.device = device
        self.size = size
        self.jobs = jobs
        self.executor = executor
        self.monitor = RunMonitor(on_event, executor)
        self.states = [_TaskState(t, k) for t, k in zip(tasks, keys)]
        self.eval_options = options.evaluation.executor_options(size=size)
        backend = get_backend(options.backend)
        # Which latencies this run can compare with (the backend's label on this device), asked once.
        self.latency_source = LatencySource(backend.latency_source(device))
        self._api_note_seeder: str | None = getattr(backend, "api_notes", None)
        self._seed_lock = threading.Lock()
        self._seeded = False
        self._stopping = False  # set when the run is interrupted: steps still in flight commit nothing
        self._started = False
        self.skills = _skill_library(store, options, policy, self.latency_source, executor, self.eval_options)
        self.signature = {
            "tasks": [s.key for s in self.states],
            "policy": policy.name,
            "config": options.identity(),
            "size": size,
        }
        self.run_id, self.resumed = self._open_run(options.execution.resume)

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

    def _seed_from_memory(self) -> None:
        """Continual refinement: a task whose memory (from before this run) holds a
        comparable feasible kernel starts from the best of them."""
        if self.options.loop.independent_samples:
            return
        for st in self.states:
            earlier = [i for i in self._feasible(st) if i.run_id != self.run_id and self._comparable(i)]
            timed = [i for i in earlier if i.latency_ms]
            if timed:
                st.outcome.start_from(min(timed, key=lambda i: (i.latency_ms, i.id)))

    def _restore(self) -> None:
        """On resume, account for the steps this run committed, as a straight run did."""
        for st in self.states:
            last = st.outcome.restore(self.store, self.run_id)
            report = stored_result(last) if last is not None else None
            if report is not None:
                st.feedback = _feedback_of(report)

    # --- state from the memory --------------------------------------------
    def _comparable(self, item: Item) -> bool:
        return latency_source_of(item) is self.latency_source

    def _feasible(self, st: _TaskState) -> list[Item]:
        return self.store.feasible_items(st.key, self.options.backend, statuses=FEASIBLE_STATUSES)

    def _best_ms(self, feasible: list[Item]) -> float | None:
        times = [i.latency_ms for i in feasible if i.latency_ms and self._comparable(i)]
        return min(times) if times else None

    def _choose_start(self, feasible: list[Item], rng: random.Random) -> Item:
        return choose_start(feasible, rng, self.options.loop.epsilon_start_point, self._comparable)

    def _retrieve(self, st: _TaskState, stage: str, rng: random.Random, as_of: int | None) -> list[MemoryNote]:
        mode = self.options.loop.memory_mode
        if mode == "off" or self.options.loop.independent_samples:
            return []
        backends = [self.options.backend, *self.options.loop.port_from]
        kwargs: dict[str, Any] = dict(stage=stage, n=self.options.loop.n_memories, kinds=KINDS_FOR_CONTEXT, rng=rng,
                                      as_of=as_of, as_of_task_key=st.key if as_of is not None else None)
        if mode == "task-only":
            kwargs.update(mode="value", only_task_key=st.key, backends=[self.options.backend])
        else:
            kwargs.update(mode=mode, backends=backends)
        return [_note(r.item, r.value) for r in self.store.retrieve(_query(st.task, self.options.backend), **kwargs)]

    def _seed_api_notes(self) -> None:
        """The backend's API notes go into the bank once, before a step looks for them."""
        with self._seed_lock:
            if not self._seeded and self._api_note_seeder:
                _load_attr(self._api_note_seeder)(self.store)
            self._seeded = True

    def _api_notes(self, st: _TaskState, stage: str, memories: list[MemoryNote], start: Item | None,
                   rng: random.Random) -> list[MemoryNote]:
        """API notes for this step: exact names from the last feedback first, then from the
        start point's and the retrieved kernels' code; then concept notes by category search.
        Reference material, not value-selected; none without memory or for independent samples."""
        backend = self.options.backend
        if self.options.loop.memory_mode == "off" or self.options.loop.independent_samples or not self._api_note_seeder:
            return []
        self._seed_api_notes()
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
        return [_note(item, 0.0) for item in found] + [_note(r.item, r.value) for r in extra]

    def _tried(self, st: _TaskState) -> frozenset[str]:
        items = self.store.list_items(kinds=["trace"], backends=[self.options.backend], task_key=st.key, limit=None)
        return frozenset(fp for i in items if (fp := (i.extra or {}).get("fingerprint")))

    # --- one step ---------------------------------------------------------
    def plan_step(self, st: _TaskState, iteration: int, as_of: int | None = None, *,
                  stage: str | None = None) -> StepPlan:
        """What the task's next step sees, chosen as the loop chooses it: the stage (refine
        once the task has a feasible kernel, unless `stage` names one), the start point by
        Q_refine, the memories and API notes. Seeded by (seed, task, step), so asking twice
        before the step is committed gives the same plan. Writes nothing but the backend's
        API notes (seeded into the bank once)."""
        out, opts = st.outcome, self.options
        step_no = out.attempts + 1
        rng = random.Random(zlib.crc32(f"{opts.loop.seed}:{st.key}:{step_no}".encode()))
        feasible = [] if opts.loop.independent_samples else self._feasible(st)
        stage = stage or ("refine" if feasible else "draft")
        start = self._choose_start(feasible, rng) if feasible and stage == "refine" else None
        best_ms = self._best_ms(feasible)
        memories = self._retrieve(st, stage, rng, as_of)
        api_notes = self._api_notes(st, stage, memories, start, rng)
        skills, skill_usage = self._select_skills(st, stage, as_of)
        fresh = opts.loop.independent_samples
        ctx = StepContext(
            task_name=st.task.name, task_key=st.key, task_path=str(st.task.path), task_source=st.task.source,
            category=st.task.category, backend=opts.backend, stage=stage, step=step_no, memories=memories,
            feedback=None if fresh else st.feedback, start_point=self._start_view(start),
            tried=frozenset() if fresh else self._tried(st), run_id=self.run_id, api_notes=api_notes,
            rules=opts.evaluation.rules, size=self.size, precision=opts.evaluation.precision, skills=skills,
            latency_source=self.latency_source,
            best=self._start_view(self._fastest(feasible, start)),
        )
        return StepPlan(context=ctx, start=start, best_ms=best_ms, iteration=iteration, skill_usage=skill_usage)

    def step(self, st: _TaskState, iteration: int, as_of: int | None = None) -> None:
        plan = self.plan_step(st, iteration, as_of)
        ctx = plan.context
        self.monitor.emit(StepStarted(task=st.task.name, stage=ctx.stage, step=ctx.step, iteration=iteration))
        with self.monitor.proposing():
            proposal = self.policy.propose(ctx)
        self.monitor.add_usage(proposal.tokens_in, proposal.tokens_out, proposal.cost_usd)
        if proposal.stop:
            st.outcome.stopped = proposal.error or "the policy stopped"
            self.monitor.emit(TaskStopped(task=st.task.name, reason=st.outcome.stopped))
            return
        with self.monitor.evaluating():
            result = self.evaluate(st, proposal)
        if self._stopping:
            raise StepsInterrupted(st.task.name)
        self.commit_step(st, plan, proposal, result)

    def commit_step(self, st: _TaskState, plan: StepPlan, proposal: Proposal, result: EvalResult) -> Attempt:
        """Reward an evaluated candidate and commit its step in one transaction (trace,
        experience, value updates of the memories it used and of the plan's start point);
        the attempt as the run accounts for it."""
        out, stage = st.outcome, plan.context.stage
        reward = draft_reward(result.feasible) if stage == "draft" else refine_reward(result.feasible, result.latency_ms, plan.best_ms)
        shown = [m.id for m in plan.context.memories]
        context_ids = list(shown if proposal.used_memory_ids is None else proposal.used_memory_ids)
        # The skills the step used learn from its reward like every other item in its context.
        skill_ids = [m.id for m in plan.context.skills] if proposal.used_skill_ids is None else list(proposal.used_skill_ids)
        context_ids += [i for i in skill_ids if i not in context_ids]
        learned = self._learn_skill(st, plan, proposal, result)
        tokens_in, tokens_out, cost = _step_usage(proposal, plan.skill_usage, learned.usage if learned else None)
        item_id = self._commit(st, stage, proposal, result, reward, context_ids, plan.start, plan.iteration,
                               learned=learned, usage=(tokens_in, tokens_out, cost), shown=shown)
        attempt = Attempt.from_result(result, step=plan.context.step, stage=stage, item_id=item_id, reward=reward,
                                      tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost,
                                      speed_limits=proposal.extra.get("speed_limits"))
        out.record(attempt)
        st.feedback = _feedback_of(result)
        self.monitor.emit(StepDone(
            task=st.task.name, stage=stage, step=plan.context.step, iteration=plan.iteration, status=result.status,
            latency_ms=result.latency_ms, reward=reward, best_latency_ms=out.best_latency_ms,
            speedup_over_first=out.speedup_over_first, message=result.message[:300],
        ))
        return attempt

    def _fastest(self, feasible: list[Item], start: Item | None) -> Item | None:
        """The task's fastest comparable kernel, unless it is the start point itself."""
        timed = [i for i in feasible if i.latency_ms and self._comparable(i)]
        best = min(timed, key=lambda i: i.latency_ms, default=None)
        return None if best is None or (start is not None and best.id == start.id) else best

    def _start_view(self, start: Item | None) -> StartPointView | None:
        if start is None:
            return None
        report = stored_result(start) or EvalResult(Verdict(start.status or Verdict.OK))
        lat = start.latency_ms
        facts = [f"kernel {k.name}: {k.summary()}" for k in report.kernels[:4] if k.summary()]
        return StartPointView(
            id=start.id, code=start.content, latency_ms=lat,
            speedup_eager=report.baselines.speedup("eager", lat),
            speedup_compile=report.baselines.speedup("compile", lat),
            extra=dict(start.extra or {}), facts=tuple(facts), latency_source=latency_source_of(start), result=report,
        )

    def evaluate(self, st: _TaskState, proposal: Proposal) -> EvalResult:
        """The executor's verdict on a proposal, under the run's evaluation options."""
        if proposal.source is None:
            msg = proposal.error or "the policy produced no candidate"
            return EvalResult(Verdict.COMPILE_ERROR, msg, feedback=msg)
        return self.executor.evaluate(st.task.path, proposal.source, backend=self.options.backend,
                                      options=self.eval_options)

    def _select_skills(self, st: _TaskState, stage: str, as_of: int | None) -> tuple[list[MemoryNote], Any]:
        """The skills for this step's prompt (evokernel/skills: BM25 recall, then the rerank)."""
        if self.skills is None:
            return [], None
        chosen = self.skills.select(task_name=st.task.name, task_source=st.task.source, task_key=st.key, stage=stage,
                                    query=_query(st.task, self.options.backend), as_of=as_of, run_id=self.run_id)
        if chosen.usage.calls:
            self.monitor.add_usage(chosen.usage.tokens_in, chosen.usage.tokens_out, chosen.usage.cost_usd)
        return [_note(i, i.value(stage)) for i in chosen.items], chosen.usage

    def _learn_skill(self, st: _TaskState, plan: StepPlan, proposal: Proposal, result: EvalResult) -> Any:
        """A step that made the task's best kernel at least 1.2x faster than its start point:
        its skill summarised and verified (re-timed) before the step's transaction."""
        if self.skills is None:
            return None
        improvement = self.skills.improvement(task=st.task, task_key=st.key, stage=plan.context.stage, start=plan.start,
                                              best_ms=plan.best_ms, proposal=proposal, result=result)
        if improvement is None:
            return None
        with self.monitor.evaluating():
            learned = self.skills.learn(improvement, task_path=str(st.task.path), run_id=self.run_id)
        if self._stopping:
            raise StepsInterrupted(st.task.name)
        if learned is not None:
            self.monitor.add_usage(learned.usage.tokens_in, learned.usage.tokens_out, learned.usage.cost_usd)
            v = learned.verification
            self.monitor.emit(SkillLearned(
                task=st.task.name, action=learned.action.value, title=learned.draft.title, source=learned.draft.source,
                step_speedup=learned.improvement.speedup, verified_speedup=v.speedup if v else None,
                reason=v.reason if v else learned.note,
            ))
        return learned

    def _commit(self, st, stage, proposal, result, reward, context_ids, start, iteration, *, learned=None,
                usage=None, shown=()) -> int:
        """The step's trace (the EvalResult as it is), its experience, its skill (when it
        taught one) and its value updates, in one transaction. `shown`: the memories retrieved
        for the step, kept in the trace beside the ones it credits (the steps table holds only
        those), so a run can be read for what a step saw and did not follow."""
        backend = self.options.backend
        extra = {
            **proposal.extra,
            "fingerprint": proposal.fingerprint,
            "policy": self.policy.name,
            "device": result.device,
            "iteration": iteration,
            "task_name": st.task.name,
            "size": self.size,
            "precision": self.options.evaluation.precision,
            "rules": self.options.evaluation.rules,
            "tokens_in": proposal.tokens_in,
            "tokens_out": proposal.tokens_out,
            "cost_usd": proposal.cost_usd,
            "memories_shown": list(shown),
        }
        if usage is not None:  # with the skill calls (rerank, summary), so a resumed run counts the same
            extra.update(tokens_in=usage[0], tokens_out=usage[1], cost_usd=usage[2])
        summary = _summary(st.task.name, backend, stage, result)
        key_text = proposal.key_text or f"{st.task.name} {st.task.category} {backend}"
        latency = result.latency_ms if result.feasible else None
        with self.store.transaction():
            trace_id = self.store.add_item(
                kind="trace", task_key=st.key, backend=backend, key_text=key_text, content=proposal.source or "",
                stage=stage, category=st.task.category, feedback=result.to_dict(), reward=reward, latency_ms=latency,
                latency_source=result.latency_source.value, status=result.status.value,
                parent_id=start.id if start else None, run_id=self.run_id, extra=extra,
            )
            self.store.add_item(
                kind="experience", task_key=st.key, backend=backend,
                key_text=f"{key_text}\n{result.status.value}: {result.message[:300]}", content=summary, stage=stage,
                category=st.task.category, feedback={"status": result.status.value, "message": result.message[:2000]},
                reward=reward, latency_ms=latency, latency_source=result.latency_source.value,
                status=result.status.value, parent_id=trace_id, run_id=self.run_id, extra={"policy": self.policy.name},
            )
            step_id = self.store.record_step(
                run_id=self.run_id, task_key=st.key, backend=backend, stage=stage, reward=reward,
                context_item_ids=context_ids, start_point_id=start.id if start else None, result_item_id=trace_id,
            )
            calls = [proposal.extra.get("call_id"), learned.draft.call_id if learned is not None else None]
            if any(calls):
                self.store.link_llm_calls([c for c in calls if c], step_id=step_id)
            if learned is not None:
                self.skills.record(learned, trace_id=trace_id, run_id=self.run_id)
        return trace_id

    # --- the whole run ------------------------------------------------------
    def start(self) -> None:
        """Before the first step: the memory's best kernel as the starting best, and on
        resume the steps this run already committed. Once per runner."""
        if self._started:
            return
        self._started = True
        self._seed_from_memory()
        if self.resumed:
            self._restore()

    def run(self) -> RunResult:
        self.start()
        result = RunResult(self.run_id, self.policy.name, self.policy.is_llm, self.options, [s.outcome for s in self.states],
                           resumed=self.resumed, memory_path=str(self.store.path), size=self.size, device=self.device,
                           jobs=self.jobs)
        # `done`: each task's steps already committed (a resumed run), so a progress count ends at the budget.
        self.monitor.emit(RunStarted(run_id=self.run_id, resumed=self.resumed, jobs=self.jobs,
                                     tasks=tuple(s.task.name for s in self.states),
                                     done=tuple(s.outcome.attempts for s in self.states)))
        iteration = max((s.outcome.attempts for s in self.states), default=0)
        limit = self.options.execution.time_limit_s
        deadline = None if limit is None else time.monotonic() + limit

        def in_time() -> bool:
            return deadline is None or time.monotonic() < deadline

        try:
            while True:
                active = [s for s in self.states if s.outcome.attempts < self.options.loop.budget and not s.outcome.stopped]
                if not active:
                    break
                if not in_time():
                    result.complete = False
                    break
                iteration += 1
                behind = [s for s in active if s.outcome.attempts < iteration]  # tasks behind catch up after a resume
                if self.jobs > 1:
                    as_of = self.store.last_item_id()
                    run_all([lambda s=s: in_time() and self.step(s, iteration, as_of) for s in behind], jobs=self.jobs)
                else:
                    for st in behind:
                        if not in_time():
                            break
                        self.step(st, iteration)
                result.accuracy_by_iteration.append(sum(s.outcome.correct for s in self.states) / len(self.states))
        except KeyboardInterrupt:
            self._stopping = True
            result.complete = False
            raise RunInterrupted(result) from None
        except BaseException:
            self._stopping = True
            raise
        if not result.complete:  # left unfinished, so the same call resumes it
            self.monitor.emit(TimeLimitReached(run_id=self.run_id, seconds=limit))
            return result
        self.store.finish_run(self.run_id, "done")
        self.monitor.emit(RunFinished(run_id=self.run_id))
        return result


def _skill_library(store: MemoryStore, options: RunOptions, policy: Policy, latency_source: LatencySource,
                   executor: ExecutorProtocol, evaluation: EvalOptions) -> Any:
    """The run's skill library, or None: skills off, memory off, or independent samples."""
    if not options.loop.skills or options.loop.memory_mode == "off" or options.loop.independent_samples:
        return None
    from evokernel.skills import SkillLibrary

    client = getattr(policy, "client", None) if policy.is_llm else None
    return SkillLibrary(store, backend=options.backend, latency_source=latency_source, executor=executor,
                        eval_options=evaluation, client=client, rerank=options.loop.rerank,
                        memory_mode=options.loop.memory_mode)


def _step_usage(proposal: Proposal, *usages: Any) -> tuple[int, int, float | None]:
    """The step's LLM tokens and cost: the proposal's plus the skill calls' (rerank, summary)."""
    tokens_in, tokens_out, cost = proposal.tokens_in, proposal.tokens_out, proposal.cost_usd
    for usage in usages:
        if usage is None:
            continue
        tokens_in += usage.tokens_in
        tokens_out += usage.tokens_out
        if usage.cost_usd is not None:
            cost = (cost or 0.0) + usage.cost_usd
    return tokens_in, tokens_out, cost


def _summary(task_name: str, backend: str, stage: str, result: EvalResult) -> str:
    """A structured experience summary from the verifier's facts (no LLM needed)."""
    from evokernel.llm import StepFacts, facts_summary

    return facts_summary(StepFacts.from_result(task_name, backend, stage, result))


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
            "latency_source": item.latency_source, "item_id": item.id,
            "from_run": item.run_id,
        }, indent=1))
        written.append(path)
    return written
