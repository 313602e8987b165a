"""Skill selection: BM25 recall of admitted skills for the task, then a rerank.

Recall is the memory's own BM25 over the skills' key text (title, scope,
technique), restricted to admitted skills of the run's backend whose latency
source is the run's. The rerank picks and orders the top k: with an LLM, one
short call that answers with skill numbers; without one (or `--no-rerank`,
or when the call fails), the skills' stage values, ties to the more similar.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from backends import LatencySource
from evokernel._step import latency_source_of

from ._types import KIND, Skill, SkillStatus, Usage

RERANK_SYSTEM = (
    "You pick optimisation skills for a GPU/NPU kernel task from a library of techniques that worked on "
    "other tasks. Choose only skills that apply to this task's operator and shapes. Answer with the numbers "
    "of the chosen skills, most useful first, separated by commas (for example: 3, 1), or the word none. "
    "Nothing else."
)


def recall(store: Any, query: str, *, backend: str, stage: str, latency_source: LatencySource, pool: int,
           only_task_key: str | None = None, as_of: int | None = None,
           as_of_task_key: str | None = None) -> list[tuple[Any, float]]:
    """Admitted skills closest to `query` by BM25, as (item, similarity), best first."""
    hits = store.retrieve(query, stage=stage, n=pool, pool_size=pool, mode="similarity", kinds=[KIND],
                          statuses=[SkillStatus.ADMITTED.value], backends=[backend], epsilon=0.0,
                          only_task_key=only_task_key, as_of=as_of, as_of_task_key=as_of_task_key)
    return [(r.item, r.similarity) for r in hits if latency_source_of(r.item) is latency_source]


def by_value(pool: Sequence[tuple[Any, float]], stage: str, k: int) -> list[Any]:
    """The top k by the stage's value (Q_draft or Q_refine); ties go to the more similar, then the older."""
    ranked = sorted(pool, key=lambda p: (-p[0].value(stage), -p[1], p[0].id))
    return [item for item, _ in ranked[:k]]


def rerank_request(task_name: str, task_source: str, backend: str, skills: Sequence[Skill], k: int) -> str:
    source = task_source.strip()
    if len(source) > 2500:
        source = source[:2500] + "\n# [...]"
    lines = [f"Task: {task_name} on {backend}.", "Reference (`Model`):", "```python", source, "```", "",
             f"Skills (choose at most {k}):"]
    for n, skill in enumerate(skills, 1):
        technique = " ".join(skill.technique.split())
        if len(technique) > 300:
            technique = technique[:300] + " ..."
        lines.append(f"{n}. {skill.title} (applies to: {skill.scope.text()}). {technique}")
    return "\n".join(lines)


_NUMBER = re.compile(r"\b\d+\b")


def parse_rerank(text: str, n: int, k: int) -> list[int] | None:
    """0-based indices of the chosen skills in the answer's order; [] for "none"; None when unreadable."""
    from evokernel.llm import split_reasoning

    answer = split_reasoning(text).answer.strip()
    picks: list[int] = []
    for match in _NUMBER.finditer(answer):
        index = int(match.group(0)) - 1
        if 0 <= index < n and index not in picks:
            picks.append(index)
    if picks:
        return picks[:k]
    if re.search(r"\bnone\b", answer, re.IGNORECASE):
        return []
    return None


def llm_rerank(client: Any, *, task_name: str, task_source: str, backend: str, skills: Sequence[Skill], k: int,
               run_id: int | None) -> tuple[list[int] | None, Usage, str]:
    """One short call; the chosen indices (None when the call failed or was unreadable), its usage, a note."""
    from evokernel.llm import LLMError

    try:
        completion = client.complete(
            [{"role": "user", "content": rerank_request(task_name, task_source, backend, skills, k)}],
            system=RERANK_SYSTEM, max_tokens=400, temperature=0.0, run_id=run_id,
            log_extra={"purpose": "skill-rerank", "task": task_name, "skills": [s.id for s in skills]})
    except LLMError as exc:
        return None, Usage(), f"the rerank call failed: {exc}"
    picks = parse_rerank(completion.text, len(skills), k)
    note = "reranked by the model" if picks is not None else "the rerank answer named no skill number"
    return picks, Usage.of(completion), note
