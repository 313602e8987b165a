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

import json
import math
import os

from evokernel.loop import Proposal, StepContext

from ._config import AscendCConfig, config_from_triton, default_config, neighbours, search_space

__all__ = ["AscendCBuiltinPolicy"]

FEASIBLE = ("ok", "compiled")
CONFIG_KEY = "ascendc_config"  # not "config": a Triton policy reading ported memories must not mistake it


def _fingerprint(config: AscendCConfig) -> str:
    return "builtin-ascendc:" + json.dumps(config.to_dict(), sort_keys=True)


class AscendCBuiltinPolicy:
    name = "builtin"
    is_llm = False

    def __init__(self) -> None:
        self._plans: dict[tuple[str, str], object] = {}

    def _plan(self, ctx: StepContext):
        from evokernel.builtin import analyze

        key = (ctx.task_key, os.environ.get("EVOKERNEL_SIZE", "full"))
        if key not in self._plans:
            self._plans[key] = analyze(ctx.task_path)
        return self._plans[key]

    def _remembered(self, ctx: StepContext, family: str, in_space: set[str]):
        """(note, config) of feasible Ascend C builtin traces of this family, most valuable first."""
        out = []
        for note in sorted(ctx.memories, key=lambda m: -m.value):
            cfg = note.extra.get(CONFIG_KEY)
            if (note.kind != "trace" or note.backend != "ascendc" or note.status not in FEASIBLE or not cfg
                    or note.extra.get("family") != family):
                continue
            try:
                config = AscendCConfig.from_dict(cfg)
            except (ValueError, TypeError):
                continue
            if _fingerprint(config) in in_space:
                out.append((note, config))
        return out

    def _ported(self, ctx: StepContext, plan, family: str):
        """(note, config) suggested by feasible Triton traces of the same family: this task's first."""
        width = 1
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

        plan = self._plan(ctx)
        if isinstance(plan, Unsupported):
            return Proposal(None, stop=True, error=f"outside the builtin policy's families: {plan.reason}")
        reason = covers(plan)
        if reason:
            return Proposal(None, stop=True, error=f"outside the builtin Ascend C templates: {reason}")
        family = plan.family
        space = search_space(family)
        in_space = {_fingerprint(c) for c in space}
        remembered = self._remembered(ctx, family, in_space)
        ported = self._ported(ctx, plan, family)
        origin: dict[str, str] = {}
        for note, config in remembered:
            origin.setdefault(_fingerprint(config), f"ascendc memory {note.id}")
        for note, config in ported:
            origin.setdefault(_fingerprint(config), f"triton memory {note.id}")

        if ctx.stage == "draft":
            order = [c for _, c in remembered] + [c for _, c in ported] + [default_config(family)] + space
        else:
            start = None
            raw = (ctx.start_point.extra.get(CONFIG_KEY) if ctx.start_point is not None else None)
            if raw:
                try:
                    start = AscendCConfig.from_dict(raw)
                except (ValueError, TypeError):
                    start = None
            if start is None or _fingerprint(start) not in in_space:
                start = default_config(family)
            valued = [c for n, c in remembered if n.value > 0]
            order = valued + neighbours(start) + space
        for config in order:
            fp = _fingerprint(config)
            if fp in ctx.tried:
                continue
            try:
                source = generate(plan, config)
            except TemplateError as exc:
                return Proposal(None, stop=True, error=f"outside the builtin Ascend C templates: {exc}")
            extra = {CONFIG_KEY: config.to_dict(), "family": family, "template": "ascendc-builtin"}
            if fp in origin:
                extra["config_from"] = origin[fp]
            return Proposal(
                source,
                key_text=f"{ctx.task_name} {ctx.category} {ctx.backend}\n{describe(plan)}\nconfig {config.text()}",
                fingerprint=fp,
                extra=extra,
            )
        return Proposal(None, stop=True,
                        error=f"searched all {len(space)} Ascend C configurations of the {family} family")
