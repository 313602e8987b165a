"""generate(plan, config) -> candidate source, dispatched by family; a pipeline
is its stages' code in launch order, each stage's result a buffer in forward."""

from __future__ import annotations

from ._config import Config, default_config
from ._emit import StageCode, assemble, stage_args
from ._ir import Plan, Unsupported

__all__ = ["generate", "stage_code"]


def stage_code(plan: Plan, config: Config | None, tag: str = "") -> StageCode:
    """One stage's kernels and launcher (``config`` None: the stage's default)."""
    if plan.family == "host":
        from ._gen_host import generate_host

        return generate_host(plan, tag)
    config = config or default_config(plan)
    if config.family != plan.family:
        raise ValueError(f"config is for the {config.family} family, the plan is {plan.family}")
    if plan.family == "elementwise":
        from ._gen_elementwise import generate_elementwise

        return generate_elementwise(plan, config, tag)
    if plan.family == "rows":
        from ._gen_rows import generate_rows

        return generate_rows(plan, config, tag)
    if plan.family == "matmul":
        from ._gen_matmul import generate_matmul

        return generate_matmul(plan, config, tag)
    if plan.family == "conv":
        from ._gen_conv import generate_conv

        return generate_conv(plan, config, tag)
    if plan.family == "pool":
        from ._gen_pool import generate_pool

        return generate_pool(plan, config, tag)
    if plan.family == "scan":
        from ._gen_scan import generate_scan

        return generate_scan(plan, config, tag)
    if plan.family == "rnn":
        from ._gen_rnn import generate_rnn

        return generate_rnn(plan, config, tag)
    if plan.family == "attention":
        from ._gen_attention import generate_attention

        return generate_attention(plan, config, tag)
    raise ValueError(f"unknown family {plan.family!r}")


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
    for k, stage in enumerate(plan.stages):
        code = stage_code(stage, config if k == plan.main else None, f"_s{k}")
        codes.append(code)
        call = f"{code.entry}({', '.join(stage_args(stage))})"
        calls.append(call if k == last else f"{stage.buffer} = {call}")
    text = f"pipeline of {len(plan.stages)} stages ({', '.join(s.family for s in plan.stages)}); " \
           f"stage {plan.main}: {config.text()}"
    return assemble(plan, text, codes, calls)
