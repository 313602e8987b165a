"""The records of the skill library: a skill, where it applies, its evidence,
its verification, and what learning from one step did.

A skill is a memory item of kind `best_practice`. Its `extra` holds the
structured record (`extra.skill`), every piece of evidence merged into it
(`extra.evidence`) and the verification that admitted or rejected it
(`extra.verification`, with at least baseline_ms, skill_ms, speedup, reruns
and latency_source); its `content` is the same record in words, as a prompt
shows it; its `key_text` is what BM25 recall matches a task against.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import re
from typing import Any, Sequence

from backends import LatencySource
from evokernel._step import latency_source_of

KIND = "best_practice"


class SkillStatus(str, enum.Enum):
    ADMITTED = "admitted"  # its speedup reproduced when re-timed: retrieved for later tasks
    REJECTED = "rejected"  # kept so the same proposal is not made again; never retrieved

    def __str__(self) -> str:
        return self.value


class Action(str, enum.Enum):
    """What learning from one improving step did to the library."""

    ADMITTED = "admitted"  # a new skill
    MERGED = "merged"  # new evidence for a near-duplicate already admitted
    REJECTED = "rejected"  # verification did not reproduce the speedup
    SKIPPED = "skipped"  # the same proposal was rejected before on this task: not verified again

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class SkillOptions:
    """How skills are admitted and selected.

    `min_speedup`: the speedup a step must show over its start point to be
    summarised, and that re-timing must reproduce for admission. `reruns`:
    alternations of the re-timing (at least 3). `k`: skills per prompt;
    `pool`: skills recalled by BM25 for the rerank to choose from.
    `merge_similarity`: word overlap (Jaccard) at which two skills' titles and
    techniques count as near-duplicates. `admit_sources`: the latency sources
    whose re-timings may admit a skill; a skill is only ever selected for runs
    with its own latency source.
    """

    min_speedup: float = 1.2
    reruns: int = 3
    k: int = 3
    pool: int = 12
    merge_similarity: float = 0.6
    admit_sources: tuple[LatencySource, ...] = (LatencySource.MEASURED_GPU, LatencySource.INTERPRETED_CPU,
                                                LatencySource.MODELLED_910B)

    def __post_init__(self) -> None:
        checks = [
            (self.min_speedup > 1.0, f"min_speedup must be above 1, got {self.min_speedup}"),
            (self.reruns >= 3, f"reruns must be at least 3 alternations, got {self.reruns}"),
            (self.k >= 1, f"k must be at least 1, got {self.k}"),
            (self.pool >= self.k, f"pool must be at least k ({self.k}), got {self.pool}"),
            (0.0 < self.merge_similarity <= 1.0, f"merge_similarity must be in (0, 1], got {self.merge_similarity}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"SkillOptions: {message}")


@dataclasses.dataclass(frozen=True)
class Usage:
    """LLM tokens and cost of the skill calls of one step (summary, rerank)."""

    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    calls: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        cost = None if self.cost_usd is None and other.cost_usd is None else (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(self.tokens_in + other.tokens_in, self.tokens_out + other.tokens_out, cost, self.calls + other.calls)

    @classmethod
    def of(cls, completion: Any) -> "Usage":
        return cls(completion.tokens_in or 0, completion.tokens_out or 0, completion.cost_usd, 1)


@dataclasses.dataclass(frozen=True)
class Scope:
    """When a skill applies: the operator patterns, the shapes, the backend, and the
    builtin generator's family when the skill came from it."""

    operators: tuple[str, ...]
    shapes: str
    backend: str
    family: str = ""

    def text(self) -> str:
        parts = [", ".join(self.operators) or "any operator"]
        if self.shapes:
            parts.append(self.shapes)
        parts.append(self.backend)
        if self.family:
            parts.append(f"builtin family {self.family}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"operators": list(self.operators), "shapes": self.shapes, "backend": self.backend, "family": self.family}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Scope":
        return cls(tuple(str(o) for o in d.get("operators") or ()), str(d.get("shapes") or ""),
                   str(d.get("backend") or ""), str(d.get("family") or ""))


@dataclasses.dataclass(frozen=True)
class Evidence:
    """The step a skill was distilled from: the task, the kernel before (the start
    point) and after (the step's trace), and their latencies as the run measured them."""

    task_key: str
    task_name: str
    before_item_id: int | None
    after_item_id: int | None
    before_ms: float
    after_ms: float
    latency_source: LatencySource
    verification: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "latency_source", LatencySource(self.latency_source))  # read back as its label

    @property
    def speedup(self) -> float:
        return self.before_ms / self.after_ms if self.after_ms else 0.0

    def text(self) -> str:
        line = (f"{self.task_name}: {self.before_ms:.4g} ms -> {self.after_ms:.4g} ms ({self.speedup:.2f}x, "
                f"{self.latency_source})")
        if self.verification.get("speedup"):
            line += f"; re-timed {self.verification.get('reruns')} times: {self.verification['speedup']:.2f}x"
        return line

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "latency_source": self.latency_source.value}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Evidence":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclasses.dataclass(frozen=True)
class Verification:
    """The re-timing that decided admission (`extra.verification` of the skill)."""

    baseline_ms: float | None
    skill_ms: float | None
    speedup: float | None
    reruns: int
    latency_source: LatencySource
    admitted: bool
    reason: str
    min_speedup: float
    rounds: tuple[tuple[float, float], ...] = ()
    timing_method: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "latency_source", LatencySource(self.latency_source))  # read back as its label

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline_ms": self.baseline_ms, "skill_ms": self.skill_ms, "speedup": self.speedup,
            "reruns": self.reruns, "latency_source": self.latency_source.value, "admitted": self.admitted,
            "reason": self.reason, "min_speedup": self.min_speedup, "rounds": [list(r) for r in self.rounds],
            "timing_method": self.timing_method,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Verification":
        return cls(
            baseline_ms=d.get("baseline_ms"), skill_ms=d.get("skill_ms"), speedup=d.get("speedup"),
            reruns=int(d.get("reruns") or 0), latency_source=LatencySource(d.get("latency_source") or "none"),
            admitted=bool(d.get("admitted")), reason=str(d.get("reason") or ""),
            min_speedup=float(d.get("min_speedup") or 0.0),
            rounds=tuple((float(a), float(b)) for a, b in d.get("rounds") or ()),
            timing_method=str(d.get("timing_method") or ""),
        )


_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset("a an the of to in on for and or with by is are be from at as it its this that".split())


def words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1)


@dataclasses.dataclass(frozen=True)
class SkillDraft:
    """A proposed skill, before verification.

    `hint` is what the builtin policy can try first: `{"config_key": ..., "family": ...,
    "set": {parameter: value}, "from": {parameter: value before}}`, the
    configuration change that made the difference; None for an LLM's skill.
    """

    title: str
    scope: Scope
    technique: str
    sketch: str
    evidence: Evidence
    source: str  # "llm" or "builtin": who wrote the summary
    hint: dict[str, Any] | None = None
    model: str | None = None  # the summarising model, for an LLM's skill
    call_id: int | None = None

    @property
    def fingerprint(self) -> str:
        """Identity of the technique, independent of the task it was seen on."""
        if self.hint:
            change = json.dumps(self.hint.get("set") or {}, sort_keys=True)
            return f"{self.scope.backend}:{self.hint.get('config_key')}:{self.hint.get('family')}:{change}"
        digest = hashlib.sha1(" ".join(sorted(words(self.title))).encode()).hexdigest()[:12]
        return f"{self.scope.backend}:{self.source}:{digest}"

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "scope": self.scope.to_dict(), "technique": self.technique, "sketch": self.sketch,
                "source": self.source, "hint": self.hint, "model": self.model, "fingerprint": self.fingerprint}


@dataclasses.dataclass(frozen=True)
class Skill:
    """A skill as the library holds it (one `best_practice` item)."""

    id: int
    status: SkillStatus
    title: str
    scope: Scope
    technique: str
    sketch: str
    source: str
    fingerprint: str
    hint: dict[str, Any] | None
    evidence: tuple[Evidence, ...]
    verification: Verification | None
    latency_source: LatencySource
    q_draft: float = 0.0
    q_refine: float = 0.0
    visits_draft: int = 0
    visits_refine: int = 0

    @property
    def admitted(self) -> bool:
        return self.status is SkillStatus.ADMITTED

    @classmethod
    def from_item(cls, item: Any) -> "Skill":
        extra = item.extra or {}
        record = extra.get("skill") or {}
        verification = extra.get("verification")
        try:
            status = SkillStatus(item.status)
        except ValueError:
            status = SkillStatus.REJECTED  # a best practice written some other way is never retrieved as a skill
        return cls(
            id=item.id, status=status, title=str(record.get("title") or item.key_text.splitlines()[0]),
            scope=Scope.from_dict(record.get("scope") or {"backend": item.backend}),
            technique=str(record.get("technique") or ""), sketch=str(record.get("sketch") or ""),
            source=str(record.get("source") or ""), fingerprint=str(record.get("fingerprint") or item.name),
            hint=record.get("hint"), evidence=tuple(Evidence.from_dict(e) for e in extra.get("evidence") or ()),
            verification=Verification.from_dict(verification) if isinstance(verification, dict) else None,
            latency_source=latency_source_of(item),
            q_draft=item.q_draft, q_refine=item.q_refine, visits_draft=item.visits_draft,
            visits_refine=item.visits_refine,
        )

    def similarity(self, draft: SkillDraft) -> float:
        """Word overlap (Jaccard) of title and technique: how near a duplicate `draft` is."""
        a = words(f"{self.title} {self.technique}")
        b = words(f"{draft.title} {draft.technique}")
        return len(a & b) / len(a | b) if a | b else 0.0


# --- a skill as a memory item ------------------------------------------------------

_MAX_EVIDENCE_SHOWN = 3


def render_content(title: str, scope: Scope, technique: str, sketch: str, evidence: Sequence[Evidence]) -> str:
    """The skill in words, as a prompt shows it under its title."""
    lines = [f"When it applies: {scope.text()}.", f"Technique: {technique.strip()}"]
    if sketch.strip():
        lang = "diff" if sketch.lstrip().startswith(("---", "@@", "-", "+")) else "python"
        lines += ["Sketch:", f"```{lang}", sketch.strip("\n"), "```"]
    shown = list(evidence)[-_MAX_EVIDENCE_SHOWN:]
    more = len(evidence) - len(shown)
    lines.append("Evidence: " + "; ".join(e.text() for e in shown) + (f" (and {more} earlier)" if more > 0 else "") + ".")
    if any(e.latency_source.interpreted for e in shown):
        lines.append("(Measured in the CPU interpreter, where time follows the number of program instances: "
                     "not GPU speed.)")
    return "\n".join(lines)


def key_text(title: str, scope: Scope, technique: str) -> str:
    """What BM25 recall matches a task against: title, scope and technique."""
    return f"{title}\n{' '.join(scope.operators)} {scope.shapes} {scope.backend} {scope.family}\n{technique}"


def item_fields(draft: SkillDraft, verification: Verification, *, status: SkillStatus, category: str,
                evidence: Evidence, run_id: int | None, stage: str) -> dict[str, Any]:
    """The `add_item` fields of a new skill (admitted) or of a rejected proposal."""
    return dict(
        kind=KIND, task_key=evidence.task_key, backend=draft.scope.backend, category=category, stage=stage,
        name=draft.fingerprint, key_text=key_text(draft.title, draft.scope, draft.technique),
        content=render_content(draft.title, draft.scope, draft.technique, draft.sketch, [evidence]),
        status=status.value, latency_ms=evidence.after_ms, latency_source=evidence.latency_source.value,
        parent_id=evidence.after_item_id, run_id=run_id,
        extra={
            "skill": draft.to_dict(), "evidence": [evidence.to_dict()], "verification": verification.to_dict(),
            "task_name": evidence.task_name,
            "call_id": draft.call_id,
        },
    )
