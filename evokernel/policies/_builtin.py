"""The offline builtin policy: no LLM, no network, and labelled as such.

For the ascendc backend it hands over to evokernel.ascendc's templates. Otherwise
it traces the reference and writes real Triton kernels for the families the
generator covers (elementwise chains, row reductions and normalisations,
matmul with fused epilogues). It uses the memory: a draft starts from the
configuration of the most valuable similar experience retrieved for it, and a
refining step explores the neighbours of its start point's configuration,
trying the remembered configurations the memory values first. Outside its
families it says so and stops.
"""

from __future__ import annotations

import json
import os

from evokernel.loop import Proposal, StepContext

FEASIBLE = ("ok", "compiled")


def _fingerprint(config) -> str:
    return "builtin:" + json.dumps(config.to_dict(), sort_keys=True)


class BuiltinPolicy:
    name = "builtin"
    is_llm = False

    def __init__(self) -> None:
        self._plans: dict[tuple[str, str], object] = {}
        self._ascendc = None  # the Ascend C builtin policy, made on first use

    def _plan(self, ctx: StepContext):
        from evokernel.builtin import analyze

        key = (ctx.task_key, os.environ.get("EVOKERNEL_SIZE", "full"))
        if key not in self._plans:
            self._plans[key] = analyze(ctx.task_path)
        return self._plans[key]

    def propose(self, ctx: StepContext) -> Proposal:
        from evokernel.builtin import Config, Unsupported, default_config, describe, generate, neighbours, search_space

        if ctx.backend == "ascendc":
            # Ascend C has its own templates and configuration search (evokernel.ascendc).
            if self._ascendc is None:
                from evokernel.ascendc import AscendCBuiltinPolicy

                self._ascendc = AscendCBuiltinPolicy()
            return self._ascendc.propose(ctx)
        if ctx.backend != "triton":
            return Proposal(None, stop=True, error=f"the builtin policy writes Triton kernels only, not {ctx.backend}")
        plan = self._plan(ctx)
        if isinstance(plan, Unsupported):
            return Proposal(None, stop=True, error=f"outside the builtin policy's families: {plan.reason}")
        space = search_space(plan)
        in_space = {_fingerprint(c) for c in space}

        # Configurations the memory offers for this family, most valuable first.
        remembered = []
        for note in sorted(ctx.memories, key=lambda m: -m.value):
            cfg = note.extra.get("config")
            if note.kind != "trace" or note.extra.get("policy") != self.name or not cfg or note.status not in FEASIBLE:
                continue
            try:
                config = Config.from_dict(cfg)
            except (ValueError, TypeError):
                continue
            if _fingerprint(config) in in_space:
                remembered.append((note, config))

        if ctx.stage == "draft":
            order = [c for _, c in remembered] + [default_config(plan)] + space
        else:
            start_cfg = None
            if ctx.start_point is not None and ctx.start_point.extra.get("config"):
                try:
                    start_cfg = Config.from_dict(ctx.start_point.extra["config"])
                except (ValueError, TypeError):
                    start_cfg = None
            if start_cfg is None or _fingerprint(start_cfg) not in in_space:
                start_cfg = default_config(plan)
            # A remembered configuration with a positive refine value is worth a try
            # before a blind neighbour; then the start point's neighbourhood; then the rest.
            valued = [c for n, c in remembered if n.value > 0]
            order = valued + neighbours(start_cfg, plan) + space
        for config in order:
            fp = _fingerprint(config)
            if fp not in ctx.tried:
                source = generate(plan, config)
                return Proposal(
                    source,
                    key_text=f"{ctx.task_name} {ctx.category} {ctx.backend}\n{describe(plan)}\nconfig {config.text()}",
                    fingerprint=fp,
                    extra={"config": config.to_dict(), "family": plan.family},
                )
        return Proposal(None, stop=True, error=f"searched all {len(space)} configurations of the {plan.family} family")
