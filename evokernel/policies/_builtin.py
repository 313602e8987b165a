"""The offline builtin policy: no LLM, no network, and labelled as such.

Each backend's builtin generator is registered under the backend's name
(`evokernel.policies.GENERATORS`, entry-point group `evokernel.generators`);
a backend without one gets an honest stop. The Triton one
(`TritonBuiltinPolicy`) traces the reference and writes real Triton kernels
for the families the generator covers (elementwise chains, row reductions and normalisations,
matmul with fused epilogues). It uses the memory: a draft starts from the
configuration of the most valuable similar experience retrieved for it, and a
refining step explores the neighbours of its start point's configuration,
trying the remembered configurations the memory values first. A step names
the memories whose configuration (or evidence for a change) it followed as
the ones it used, so only their values learn from its reward. Outside its
families it says so and stops.
"""

from __future__ import annotations

from typing import Any

from evokernel._step import Proposal, StepContext

from ._registry import GENERATORS
from ._search import Choice, ConfigSpace, PlanCache


class BuiltinPolicy:
    name = "builtin"
    is_llm = False

    def __init__(self) -> None:
        self._plans = PlanCache()
        self._generators: dict[str, object] = {}  # per backend, made on first use

    def propose(self, ctx: StepContext) -> Proposal:
        generator = self._generator(ctx.backend)
        if generator is None:
            return Proposal(None, stop=True, error=f"the {ctx.backend} backend has no builtin generator; use --model")
        return generator.propose(ctx)

    def _generator(self, backend: str):
        if backend not in self._generators:
            target = GENERATORS.target(backend)
            self._generators[backend] = GENERATORS.get(backend)(self._plans) if target is not None else None
        return self._generators[backend]


class TritonBuiltinPolicy:
    """Triton kernels from the traced reference, configurations searched with the memory."""

    def __init__(self, plans: PlanCache) -> None:
        self._plans = plans

    def propose(self, ctx: StepContext) -> Proposal:
        from evokernel.builtin import (Config, Unsupported, default_config, describe, generate, neighbours, search_space,
                                       speed_limits)

        plan = self._plans.get(ctx)
        if isinstance(plan, Unsupported):
            return Proposal(None, stop=True, error=f"outside the builtin policy's families: {plan.reason}")
        space = ConfigSpace(
            prefix="builtin:", config_key="config", parse=Config.from_dict, space=search_space(plan),
            default=default_config(plan), neighbours=lambda c: neighbours(c, plan),
        )
        # a pipeline is configured by its main stage: memories of that family apply
        family = plan.main_stage.family
        skilled = space.skilled(ctx, family)
        remembered = space.remembered(ctx, family)
        if ctx.stage == "draft":
            remembered = [(note, c) for note, c in remembered if _same_shape_class(note, space.default)]
        order = space.order(ctx, remembered, skills=skilled)
        if ctx.stage == "draft" and family in ("conv", "matmul"):
            order = _other_roundings_first(order, ctx.tried, space)
        choice = space.first_untried(order, ctx.tried)
        if choice is None:
            return Proposal(None, stop=True, error=f"searched all {len(space.space)} configurations of the {family} family")
        config = choice.config
        fingerprint = space.fingerprint(config)
        used = tuple(note.id for note, c in skilled if space.fingerprint(c) == fingerprint)
        extra = {"config": config.to_dict(), "family": family, "plan": plan.family, "rules": plan.rules,
                 "default_config": space.default.to_dict()}
        if ctx.stage == "refine":  # what this step changed, for later tasks' refinements (ConfigSpace.order)
            extra["start_config"] = space.start(ctx).to_dict()
        if used:
            extra["config_from"] = f"skill {used[0]}"
        elif choice.because:
            extra["config_from"] = f"memory {choice.because[0]}"
        if limits := speed_limits(plan, config):
            extra["speed_limits"] = list(limits)
        return Proposal(
            generate(plan, config),
            key_text=f"{ctx.task_name} {ctx.category} {ctx.backend}\n{describe(plan)}\nconfig {config.text()}",
            fingerprint=fingerprint,
            extra=extra,
            used_memory_ids=choice.because,
            used_skill_ids=used,
        )


def _same_shape_class(note: Any, default: Any) -> bool:
    """Whether a remembered configuration was found on a task of the same shape class as this one:
    one whose default configuration (chosen from its shapes) is this task's. A draft takes only
    those: on the H200 a rows configuration remembered from rows of 258,064 elements (one row a
    program, 4096 wide) drafted group norms over rows of 64 at 0.27x of eager, and one from short
    rows drafted a 258,064-wide group norm into a timeout. Refinement still tries the others, timed.
    Traces from before this was recorded carry no class and are taken, as they were."""
    theirs = (note.extra or {}).get("default_config")
    return theirs is None or theirs == default.to_dict()


def _other_roundings_first(order: list[Choice], tried: frozenset[str], space: ConfigSpace) -> list[Choice]:
    """A convolution or matmul drafted again has failed with every rounding it tried: whether
    cuDNN's reference ran TF32 is not visible from the task, and a 3xTF32 matmul, though closer to
    the exact product than cuBLAS's fp32 on the H200, need not be within the tolerance of cuBLAS's
    own rounding; so the roundings not tried yet come first (remembered configurations of other
    tasks would otherwise repeat the failed one)."""
    failed = {config.precision for config in space.space if space.fingerprint(config) in tried}
    if not failed:
        return order
    return [c for c in order if c.config.precision not in failed] + [c for c in order if c.config.precision in failed]
