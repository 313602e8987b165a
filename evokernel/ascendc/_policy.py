"""The builtin policy for the ascendc backend: templates and a configuration
search against the cost model, no LLM.

Drafting tries, in order: the configurations of the most valuable feasible
Ascend C experiences the memory retrieved (any task of the same family), then
what a retrieved feasible Triton experience of the same family suggests (its
per-program data size as the tile size; see `config_from_triton`), then the
default. Refining walks the neighbours of the start point's configuration
(tile size, core count, buffer depth), trying remembered configurations with a
positive refine value first. The C++ source depends only on the task, so all
configurations share one build; the modelled latency the executor returns is
what the search optimises.
"""

from __future__ import annotations

import math

from evokernel._step import Proposal, StepContext
from evokernel.policies import FEASIBLE, ConfigSpace, PlanCache

from ._config import AscendCConfig, config_from_triton, default_config, neighbours, search_space

__all__ = ["AscendCBuiltinPolicy"]

CONFIG_KEY = "ascendc_config"  # not "config": a Triton policy reading ported memories must not mistake it


class AscendCBuiltinPolicy:
    name = "builtin"
    is_llm = False

    def __init__(self, plans: PlanCache | None = None) -> None:
        self._plans = plans or PlanCache()

    def _ported(self, ctx: StepContext, plan, family: str):
        """(note, config) suggested by feasible Triton traces of the same family: this task's first."""
        width = 1
        plan = plan.main_stage
        if plan.reduce is not None:
            width = math.prod(plan.reduce.full_shape[plan.reduce.start:plan.reduce.stop])
        notes = [m for m in ctx.memories if m.kind == "trace" and m.backend == "triton" and m.status in FEASIBLE
                 and isinstance(m.extra.get("config"), dict)]
        notes.sort(key=lambda m: (m.task_key != ctx.task_key, -m.value))
        out = []
        for note in notes:
            config = config_from_triton(note.extra["config"], family, width)
            if config is not None:
                out.append((note, config))
        return out

    def propose(self, ctx: StepContext) -> Proposal:
        from evokernel.builtin import Unsupported, describe

        from ._templates import TemplateError, covers, generate

        plan = self._plans.get(ctx)
        if isinstance(plan, Unsupported):
            return Proposal(None, stop=True, error=f"outside the builtin policy's families: {plan.reason}")
        reason = covers(plan)
        if reason:
            return Proposal(None, stop=True, error=f"outside the builtin Ascend C templates: {reason}")
        family = plan.main_stage.family
        space = ConfigSpace(
            prefix="builtin-ascendc:", config_key=CONFIG_KEY, parse=AscendCConfig.from_dict,
            space=search_space(family), default=default_config(family), neighbours=neighbours,
        )
        remembered = space.remembered(ctx, family)
        ported = self._ported(ctx, plan, family)
        choice = space.first_untried(space.order(ctx, remembered, hints=ported), ctx.tried)
        if choice is None:
            return Proposal(None, stop=True,
                            error=f"searched all {len(space.space)} Ascend C configurations of the {family} family")
        config = choice.config
        try:
            source = generate(plan, config)
        except TemplateError as exc:
            return Proposal(None, stop=True, error=f"outside the builtin Ascend C templates: {exc}")
        fp = space.fingerprint(config)
        extra = {CONFIG_KEY: config.to_dict(), "family": family, "template": "ascendc-builtin"}
        if choice.because:
            ported_ids = {note.id for note, _ in ported}
            first = choice.because[0]
            extra["config_from"] = f"{'triton' if first in ported_ids else 'ascendc'} memory {first}"
        return Proposal(
            source,
            key_text=f"{ctx.task_name} {ctx.category} {ctx.backend}\n{describe(plan)}\nconfig {config.text()}",
            fingerprint=fp,
            extra=extra,
            used_memory_ids=choice.because,
        )
