"""The builtin policy's kernel generator: no LLM, just tracing and templates.

    plan = analyze(task)                 # Plan, or Unsupported(reason)
    source = generate(plan, default_config(plan))
    for config in neighbours(config, plan): ...

Families (one kernel each): elementwise chains (broadcasting by strides), row
reductions and normalisations over one contiguous group of dims (with fused
prologue/epilogue; argmax/argmin; split into parallel chunks for few long
rows), matmul/linear/bmm (split-K), convolutions as implicit GEMM (1-3d,
transposed, grouped, strided, dilated, padded), pooling and scans, each with a
fused pointwise epilogue. A graph no single kernel covers becomes a pipeline of
such kernels with buffers between them (see _schedule).
"""

from ._config import Config, default_config, neighbours, search_space, speed_limits
from ._describe import describe
from ._emit import scalar_sources
from ._families import Family, family, family_names, register_family, unregister_family
from ._generate import generate
from ._ir import Plan, Unsupported
from ._selfcheck import CheckResult, check_candidate, check_in_subprocess
from ._trace import analyze

__all__ = [
    "scalar_sources",
    "CheckResult",
    "Config",
    "Family",
    "Plan",
    "Unsupported",
    "analyze",
    "check_candidate",
    "check_in_subprocess",
    "default_config",
    "describe",
    "family",
    "family_names",
    "generate",
    "neighbours",
    "register_family",
    "search_space",
    "speed_limits",
    "unregister_family",
]
