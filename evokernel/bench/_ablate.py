"""The paper's comparison at equal budget: what memory and refinement each add.

Five arms, each on the same tasks with the same budget, each in its own fresh
temporary memory (or its own copy of a given one, so no arm learns from
another):

- `independent`: independent samples (pass@k). No memory, no feedback, no
  start point: every step is a fresh draft (`RunOptions.independent_samples`),
  and the task counts as solved if any sample is correct. The builtin policy is deterministic: with a fresh context it writes the same
  kernel at every step, so for it this arm is pass@1 repeated.
- `refine`: the draft/refine loop with feedback and start points, memory off.
- `similarity`: the loop with memory recalled and selected by similarity alone.
- `value`: the loop with value-driven selection (EvoKernel), verified skills included.
- `no-skills`: the `value` arm without the skill library (evokernel/skills): no
  skill is proposed, verified or selected.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any, Callable, Sequence

from evokernel.options import RunOptions

from ._metrics import compute_metrics, task_row
from ._runner import (
    BenchError,
    bench_options,
    check_options,
    environment,
    resolve_tasks,
    run_suite,
    temporary_memory,
)

if TYPE_CHECKING:  # the loop (and torch with it) loads when an ablation runs, not when this module does
    from evokernel.loop import OnEvent, RunEvent

ABLATION_KIND = "evokernel-ablation"


@dataclasses.dataclass(frozen=True)
class Arm:
    name: str
    label: str
    memory_mode: str
    independent: bool = False
    skills: bool = True


ARMS: tuple[Arm, ...] = (
    Arm("independent", "independent samples (pass@k)", "off", independent=True),
    Arm("refine", "refinement, no memory", "off"),
    Arm("similarity", "similarity-only retrieval", "similarity"),
    Arm("value", "value-driven retrieval", "value"),
    Arm("no-skills", "value-driven retrieval without skills", "value", skills=False),
)
ARM_NAMES = tuple(a.name for a in ARMS)
# The settings each arm sets itself (below, in run_ablation); the rest of the options apply to every arm.
ARM_SETTINGS = ("memory_mode", "independent_samples", "resume")


def arms_named(names: Sequence[str] | None) -> list[Arm]:
    if not names:
        return list(ARMS)
    unknown = [n for n in names if n not in ARM_NAMES]
    if unknown:
        raise BenchError(f"unknown arm(s) {', '.join(unknown)}; known: {', '.join(ARM_NAMES)}")
    return [a for a in ARMS if a.name in names]


@dataclasses.dataclass
class ArmResult:
    arm: Arm
    metrics: dict[str, Any]
    tasks: list[dict[str, Any]]
    accuracy_by_iteration: list[float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.arm.name,
            "label": self.arm.label,
            "memory_mode": self.arm.memory_mode,
            "independent": self.arm.independent,
            "skills": self.arm.skills,
            "metrics": self.metrics,
            "accuracy_by_iteration": self.accuracy_by_iteration,
            "tasks": self.tasks,
        }


@dataclasses.dataclass
class AblationResult:
    suite: str
    policy: str
    policy_is_llm: bool
    arms: list[ArmResult]
    environment: dict[str, Any]
    options: dict[str, Any]
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": ABLATION_KIND,
            "version": 1,
            "suite": self.suite,
            "policy": self.policy,
            "policy_is_llm": self.policy_is_llm,
            "arms": [a.to_dict() for a in self.arms],
            "environment": self.environment,
            "options": self.options,
            "notes": self.notes,
        }


def run_ablation(
    source: str | os.PathLike[str],
    options: RunOptions | None = None,
    *,
    limit: int | None = None,
    memory: str | os.PathLike[str] | None = None,
    arms: Sequence[str] | None = None,
    policy_factory: Callable[[Any], Any] | None = None,
    on_event: OnEvent | None = None,
    command: str | None = None,
) -> AblationResult:
    """Run each arm over the suite at `options.loop.budget` steps per task.

    `memory`, when set, is copied into each arm and never written;
    `policy_factory(store)` overrides the policy `options` names (a fresh one per arm).
    """
    options = options or RunOptions()
    check_options(options)
    chosen = arms_named(arms)
    paths = resolve_tasks(source, limit=limit)
    if memory is not None and not os.path.isfile(memory):
        raise BenchError(f"no memory at {memory}")
    results: list[ArmResult] = []
    policy_name, is_llm, device, size, jobs = "", False, "", "", 1
    for arm in chosen:
        arm_options = options.replace(memory_mode=arm.memory_mode, independent_samples=arm.independent, resume=False,
                                      skills=arm.skills and options.loop.skills)

        def tagged(event: RunEvent, arm_name: str = arm.name) -> None:
            if on_event is not None:
                on_event(event.with_arm(arm_name))

        with temporary_memory(copy_from=memory) as store:
            policy = policy_factory(store) if policy_factory else None
            run = run_suite(paths, arm_options, store=store, policy=policy, on_event=tagged)
        policy_name, is_llm, device, size, jobs = run.policy, run.policy_is_llm, run.device, run.size, run.jobs
        results.append(ArmResult(
            arm=arm,
            metrics=compute_metrics(run.tasks, device=device, is_llm=is_llm),
            tasks=[task_row(o) for o in run.tasks],
            accuracy_by_iteration=list(run.accuracy_by_iteration),
        ))
    notes = []
    if not is_llm and any(a.independent for a in chosen):
        notes.append(
            f"the {policy_name} policy is deterministic: its independent samples are one kernel written "
            f"{options.loop.budget} times, so the independent arm is pass@1, not pass@{options.loop.budget}"
        )
    if memory:
        notes.append(f"each arm started from its own copy of {memory}")
    return AblationResult(
        suite=os.fspath(source), policy=policy_name, policy_is_llm=is_llm, arms=results,
        environment=environment(device, options, paths, size=size, jobs=jobs, command=command),
        options=bench_options(options, limit=limit, memory=os.fspath(memory) if memory else None), notes=notes,
    )
