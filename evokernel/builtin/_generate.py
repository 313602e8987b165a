"""generate(plan, config) -> candidate source, by the plan's family's registered generator
(`_families`); a pipeline is its stages' code in launch order, each stage's result a buffer
in forward."""

from __future__ import annotations

import re

from ._config import Config, default_config
from ._emit import StageCode, assemble, stage_args
from ._families import family
from ._ir import Plan, Unsupported

__all__ = ["generate", "stage_code"]


def stage_code(plan: Plan, config: Config | None, tag: str = "") -> StageCode:
    """One stage's kernels and launcher, by its family's generator (``config`` None: the stage's default)."""
    kind = family(plan.family)
    if kind.search_space is None:  # not configured (host)
        return kind.generate(plan, None, tag)
    config = config or default_config(plan)
    if config.family != plan.family:
        raise ValueError(f"config is for the {config.family} family, the plan is {plan.family}")
    return kind.generate(plan, config, tag)


def generate(plan: Plan, config: Config | None = None) -> str:
    """A complete candidate file (imports, @triton.jit kernels, launchers, ModelNew)."""
    if isinstance(plan, Unsupported):
        raise ValueError(f"cannot generate code for an unsupported task: {plan.reason}")
    config = config or default_config(plan)
    if plan.family != "pipeline":
        return assemble(plan, config.text(), [stage_code(plan, config)])
    if config.family != plan.main_stage.family:
        raise ValueError(f"config is for the {config.family} family, the main stage is {plan.main_stage.family}")
    codes, calls = [], []
    last = len(plan.stages) - 1
    reads = [", ".join(stage_args(stage)) for stage in plan.stages]
    # the last stage that names each buffer in its arguments (whole names: buf1 is not buf12)
    buffers = [s.buffer for s in plan.stages[:last]]
    known = set(buffers)
    last_reader = {name: k for k, args in enumerate(reads) for name in set(re.findall(r"\w+", args)) & known}
    for k, stage in enumerate(plan.stages):
        code = stage_code(stage, config if k == plan.main else None, f"_s{k}")
        codes.append(code)
        call = f"{code.entry}({reads[k]})"
        calls.append(call if k == last else f"{stage.buffer} = {call}")
        if k < last:
            # A buffer no later stage reads is dropped here, as eager drops its temporaries: forward as
            # written (its first calls) then peaks near eager's memory, not at the sum of its buffers.
            done = [name for name in buffers if last_reader.get(name) == k]
            if done:
                calls.append(f"del {', '.join(done)}")
    text = f"pipeline of {len(plan.stages)} stages ({', '.join(s.family for s in plan.stages)}); " \
           f"stage {plan.main}: {config.text()}"
    return assemble(plan, text, codes, calls)
