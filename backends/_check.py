"""`evokernel check`: the static rules and the compile checks, without running a kernel.

The static rules run in the caller's process (they only parse). When they
find nothing, one worker imports the candidate with the backend in its dry
mode: CUDA sources given to `load_inline` are captured, not built; Triton
launches record their signatures and launch nothing. ModelNew is built on
the meta device and its forward called once on meta inputs, which tells the
Triton compiler which specialisations to compile for sm_90 and lets the
runtime guard see any torch compute the forward issues; nvcc compiles the
CUDA sources for sm_90. Nothing touches real data, so it takes seconds.

This module is the caller's side; the worker's side (the dry mode and
`dry_check`) is backends/_dry.py, which `_evaluate` runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._result import EvalResult
from ._rules import DEFAULT_RULES, check_rule_set


def check(
    task_path: str | Path,
    source: str,
    *,
    backend: str = "triton",
    rules: str = DEFAULT_RULES,
    precision: str = "fp32",
    device: str | None = None,
    timeout_s: float = 180.0,
    sandbox: Any = None,
    executor: Any = None,
) -> EvalResult:
    """Static rules, then (when they pass) the compile checks in one worker; never runs a kernel.

    The verdict is `compiled` when nothing is found, else `hack`,
    `disallowed` or `compile_error`; the JSON form is `EvalResult.to_dict`,
    the same as `evokernel eval`'s. `precision` is the one the candidate will run in
    (its kernels are compiled for it). Pass an `Executor` to reuse its worker
    across checks (a new one is started and closed otherwise).
    """
    from ._backend import get_backend
    from ._executor import Executor
    from ._options import EvalOptions
    from ._static import static_rejection

    check_rule_set(rules)
    rejected = static_rejection(source, get_backend(backend), rules)
    if rejected is not None:
        return rejected
    options = EvalOptions(check_only=True, timing=False, rules=rules, precision=precision)
    if executor is not None:
        return executor.evaluate(task_path, source, backend=backend, options=options, timeout_s=timeout_s)
    with Executor(device=device or "cpu", timeout_s=timeout_s, sandbox=sandbox) as own:
        return own.evaluate(task_path, source, backend=backend, options=options)


__all__ = ["check"]
