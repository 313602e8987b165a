"""generate(plan, config) -> candidate source, dispatched by family."""

from __future__ import annotations

from ._config import Config, default_config
from ._ir import Plan, Unsupported

__all__ = ["generate"]


def generate(plan: Plan, config: Config | None = None) -> str:
    """A complete candidate file (imports, @triton.jit kernels, launcher, ModelNew)."""
    if isinstance(plan, Unsupported):
        raise ValueError(f"cannot generate code for an unsupported task: {plan.reason}")
    config = config or default_config(plan)
    if config.family != plan.family:
        raise ValueError(f"config is for the {config.family} family, the plan is {plan.family}")
    if plan.family == "elementwise":
        from ._gen_elementwise import generate_elementwise

        return generate_elementwise(plan, config)
    if plan.family == "rows":
        from ._gen_rows import generate_rows

        return generate_rows(plan, config)
    if plan.family == "matmul":
        from ._gen_matmul import generate_matmul

        return generate_matmul(plan, config)
    raise ValueError(f"unknown family {plan.family!r}")
