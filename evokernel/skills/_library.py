"""`SkillLibrary`: what the loop asks of the skill library in one step.

Before a step: `select` the skills for its prompt (BM25 recall, then the
rerank). After a step that made the task's best kernel at least
`min_speedup` times faster than its start point: `improvement` says so,
`learn` summarises it into a proposed skill and verifies it (both slow, done
before the step's transaction), and `record` writes the outcome inside the
step's transaction: a new admitted skill, new evidence merged into a
near-duplicate, or a rejected proposal kept so it is not proposed again.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from typing import Any, Sequence

from backends import EvalOptions, ExecutorProtocol, LatencySource
from evokernel._step import latency_source_of

from ._select import by_value, llm_rerank, recall
from ._summary import Improvement, builtin_draft, llm_draft
from ._types import (
    KIND,
    Action,
    Skill,
    SkillDraft,
    SkillOptions,
    SkillStatus,
    Usage,
    Verification,
    item_fields,
    render_content,
)
from ._verify import verify


@dataclasses.dataclass(frozen=True)
class Selection:
    """The skills chosen for one step, best first, and how they were chosen."""

    items: tuple[Any, ...]  # memory_store.Item
    recalled: int  # how many admitted skills recall offered the rerank
    ranked_by: str  # "llm", "value", "similarity" or "none"
    usage: Usage = Usage()
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Learned:
    """What learning from one improving step came to, before (and after) it is written."""

    action: Action
    draft: SkillDraft
    improvement: Improvement
    verification: Verification | None
    usage: Usage
    duplicate_of: int | None = None
    note: str = ""


class SkillLibrary:
    """The skill library of one run: its store, the run's backend and latency source, the
    executor that re-times, and the LLM client that summarises and reranks (None: builtin)."""

    def __init__(self, store: Any, *, backend: str, latency_source: LatencySource, executor: ExecutorProtocol,
                 options: SkillOptions | None = None, eval_options: EvalOptions | None = None, client: Any = None,
                 rerank: bool = True, memory_mode: str = "value"):
        self.store = store
        self.backend = backend
        self.latency_source = LatencySource(latency_source)
        self.options = options or SkillOptions()
        self.executor = executor
        self.eval_options = eval_options
        self.client = client
        self.rerank = rerank
        self.memory_mode = memory_mode
        self._ranked: dict[tuple[str, str, tuple[int, ...]], list[int]] = {}
        self._lock = threading.Lock()

    # --- selection --------------------------------------------------------------
    def select(self, *, task_name: str, task_source: str, query: str, task_key: str, stage: str,
               as_of: int | None = None, run_id: int | None = None) -> Selection:
        opts = self.options
        pool = recall(self.store, query, backend=self.backend, stage=stage, latency_source=self.latency_source,
                      pool=opts.pool, only_task_key=task_key if self.memory_mode == "task-only" else None,
                      as_of=as_of, as_of_task_key=task_key if as_of is not None else None)
        if not pool:
            return Selection((), 0, "none")
        if self.memory_mode == "similarity":
            return Selection(tuple(item for item, _ in pool[: opts.k]), len(pool), "similarity")
        if self.client is None or not self.rerank:
            return Selection(tuple(by_value(pool, stage, opts.k)), len(pool), "value")
        items = [item for item, _ in pool]
        key = (task_key, stage, tuple(i.id for i in items))
        with self._lock:
            cached = self._ranked.get(key)
        if cached is not None:  # the same pool for the same task and stage: the same choice, no new call
            return Selection(tuple(items[i] for i in cached), len(pool), "llm", note="rerank reused for the same pool")
        picks, usage, note = llm_rerank(self.client, task_name=task_name, task_source=task_source,
                                        backend=self.backend, skills=[Skill.from_item(i) for i in items],
                                        k=opts.k, run_id=run_id)
        if picks is None:
            return Selection(tuple(by_value(pool, stage, opts.k)), len(pool), "value", usage, note + "; ranked by value")
        with self._lock:
            self._ranked[key] = picks
        return Selection(tuple(items[i] for i in picks), len(pool), "llm", usage, note)

    # --- learning ---------------------------------------------------------------
    def improvement(self, *, task: Any, task_key: str, stage: str, start: Any, best_ms: float | None,
                    proposal: Any, result: Any) -> Improvement | None:
        """The step as an improvement worth a skill, or None: feasible, timed on the run's
        latency source, a new best for the task, `min_speedup` times faster than its start point,
        and a different kernel from it."""
        after_ms = result.latency_ms
        if start is None or not result.feasible or not after_ms or not math.isfinite(after_ms):
            return None
        before_ms = start.latency_ms
        if result.latency_source is not self.latency_source or latency_source_of(start) is not self.latency_source:
            return None
        if not before_ms:
            return None
        if best_ms is not None and after_ms >= best_ms:
            return None
        if before_ms / after_ms < self.options.min_speedup:
            return None
        from evokernel.llm import source_key

        if source_key(start.content) == source_key(proposal.source or ""):
            return None  # the same kernel timed faster is noise, not a technique
        return Improvement(
            task_key=task_key, task_name=task.name, task_source=task.source, category=task.category,
            backend=self.backend, stage=stage, before_item_id=start.id, before_code=start.content,
            before_extra=dict(start.extra or {}), before_ms=before_ms, after_code=proposal.source or "",
            after_extra=dict(proposal.extra or {}), after_key_text=proposal.key_text or "", after_ms=after_ms,
            latency_source=result.latency_source,
        )

    def learn(self, imp: Improvement, *, task_path: str, run_id: int | None = None) -> Learned | None:
        """Summarise the improvement into a proposed skill and verify it; nothing is written here.
        None when nothing can be proposed (no summary)."""
        usage, note = Usage(), ""
        draft = None
        if self.client is not None:
            draft, usage, note = llm_draft(imp, self.client, run_id=run_id)
        if draft is None:
            draft = builtin_draft(imp)
        if draft is None:
            return None
        skills = [Skill.from_item(i) for i in self.store.list_items(kinds=[KIND], backends=[self.backend], limit=None)]
        for s in skills:
            if (s.status is SkillStatus.REJECTED and s.fingerprint == draft.fingerprint
                    and any(e.task_key == imp.task_key for e in s.evidence)):
                return Learned(Action.SKIPPED, draft, imp, None, usage, s.id,
                               note=f"the same proposal was rejected before on this task (skill {s.id})")
        verification = verify(self.executor, task_path, imp.before_code, imp.after_code, backend=self.backend,
                              eval_options=self.eval_options, options=self.options)
        if not verification.admitted:
            return Learned(Action.REJECTED, draft, imp, verification, usage, note=note)
        duplicate = self._near_duplicate(draft, skills)
        if duplicate is not None:
            return Learned(Action.MERGED, draft, imp, verification, usage, duplicate.id, note=note)
        return Learned(Action.ADMITTED, draft, imp, verification, usage, note=note)

    def _near_duplicate(self, draft: SkillDraft, skills: Sequence[Skill]) -> Skill | None:
        """An admitted skill of the same latency source that says the same: the same configuration
        change, or (where either has none) titles and techniques that overlap enough."""
        best, best_sim = None, 0.0
        for s in skills:
            if not s.admitted or s.latency_source != draft.evidence.latency_source:
                continue
            if s.fingerprint == draft.fingerprint:
                return s
            if s.hint and draft.hint:
                continue  # two different configuration changes are two skills
            if s.scope.family and draft.scope.family and s.scope.family != draft.scope.family:
                continue
            sim = s.similarity(draft)
            if sim >= self.options.merge_similarity and sim > best_sim:
                best, best_sim = s, sim
        return best

    def record(self, learned: Learned, *, trace_id: int, run_id: int | None) -> int | None:
        """Write what `learn` decided (inside the step's transaction); the skill's id, or None when skipped."""
        if learned.action is Action.SKIPPED:
            return None
        v = learned.verification
        evidence = learned.improvement.evidence(after_item_id=trace_id, verification=v.to_dict() if v else None)
        duplicate_of = learned.duplicate_of if learned.action is Action.MERGED else None
        if learned.action is Action.ADMITTED:
            # Steps in flight at once may have admitted the same skill since `learn` looked.
            current = [Skill.from_item(i) for i in self.store.list_items(kinds=[KIND], backends=[self.backend], limit=None)]
            found = self._near_duplicate(learned.draft, current)
            duplicate_of = found.id if found is not None else None
        if duplicate_of is not None:
            item = self.store.get_item(duplicate_of)
            skill = Skill.from_item(item)
            merged = (*skill.evidence, evidence)
            extra = {**(item.extra or {}), "evidence": [e.to_dict() for e in merged],
                     "merged": int((item.extra or {}).get("merged") or 0) + 1}
            self.store.update_item(item.id, extra=extra, content=render_content(
                skill.title, skill.scope, skill.technique, skill.sketch, merged))
            return item.id
        status = SkillStatus.ADMITTED if learned.action is Action.ADMITTED else SkillStatus.REJECTED
        fields = item_fields(learned.draft, v, status=status, category=learned.improvement.category,
                             evidence=evidence, run_id=run_id, stage=learned.improvement.stage)
        fields["extra"].update(tokens_in=learned.usage.tokens_in, tokens_out=learned.usage.tokens_out,
                               cost_usd=learned.usage.cost_usd)
        return self.store.add_item(**fields)


def skills_in(store: Any, *, backend: str | None = None, status: SkillStatus | None = None,
              limit: int | None = None) -> list[Skill]:
    """The library's skills (and rejected proposals), newest first."""
    items = store.list_items(kinds=[KIND], backends=[backend] if backend else None, limit=None)
    skills = [Skill.from_item(i) for i in items]
    if status is not None:
        skills = [s for s in skills if s.status is status]
    return skills[:limit] if limit else skills
