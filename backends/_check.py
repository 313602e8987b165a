"""`evokernel check`: the static rules and the compile checks, without running a kernel.

The static rules run in the caller's process (they only parse). When they
find nothing, one worker imports the candidate with the backend in its dry
mode: CUDA sources given to `load_inline` are captured, not built; Triton
launches record their signatures and launch nothing. ModelNew is built on
the meta device and its forward called once on meta inputs, which tells the
Triton compiler which specialisations to compile for sm_90 and lets the
runtime guard see any torch compute the forward issues; nvcc compiles the
CUDA sources for sm_90. Nothing touches real data, so it takes seconds.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable

from ._guard import record_ops
from ._result import EvalResult, Verdict
from ._rules import DEFAULT_RULES, check_rule_set, explain, verdict_for


def dry(backend: Any) -> contextlib.AbstractContextManager:
    """The backend's dry mode (a backend without one runs nothing in a check anyway)."""
    enter = getattr(backend, "dry_launches", None)
    return enter() if callable(enter) else contextlib.nullcontext()


def dry_check(task: Any, import_candidate: Callable[[], tuple[Any, Path]], backend: Any, log: Any, rules: str) -> EvalResult:
    """Inside a worker: import in dry mode, trace forward on meta tensors, compile what was seen."""
    import torch

    warnings: list[str] = []
    with dry(backend):
        module, _ = import_candidate()
        log.clear()
        forbidden: dict[str, int] = {}
        traced = False
        try:
            with torch.device("meta"):
                init = list(task.get_init_inputs())
                model = module.ModelNew(*init)
                inputs = list(task.get_inputs())
            with torch.no_grad(), record_ops(log) as ops:
                model(*inputs)
            forbidden = dict(ops.forbidden)
            traced = True
        except Exception as exc:  # data-dependent Python, or an extension call that returns nothing when dry
            text = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            warnings.append(f"the dry run of ModelNew.forward on meta tensors stopped ({text}); "
                            "kernels launched after that point were not compiled")
    launched = list(log.launches)
    if forbidden and verdict_for("torch-compute", rules) is not None:
        names = ", ".join(f"aten.{n} x{c}" for n, c in sorted(forbidden.items()))
        msg = f"ModelNew.forward computes with PyTorch ops outside its own kernels: {names} ({explain('torch-compute', rules)})"
        return EvalResult(Verdict.DISALLOWED, msg, feedback=msg, rules=rules, warnings=warnings)
    if traced and not launched:
        msg = f"ModelNew.forward launched none of its own kernels ({explain('no-launch', rules)})"
        return EvalResult(Verdict.DISALLOWED, msg, feedback=msg, rules=rules, warnings=warnings)
    report = backend.compile_check(module, log)
    if not report.ok:
        return EvalResult(Verdict.COMPILE_ERROR, report.message, feedback=report.message, rules=rules,
                          kernels=report.kernels, compile_seconds=report.seconds, warnings=warnings)
    msg = "static rules and compile checks passed; nothing was run, so correctness and speed are unverified"
    if report.message:
        msg += f" ({report.message})"
    result = EvalResult(Verdict.COMPILED, msg, feedback=msg, rules=rules, kernels=report.kernels,
                        compile_seconds=report.seconds, warnings=warnings)
    result.launches = launched[:20]
    return result


def check(
    task_path: str | Path,
    source: str,
    *,
    backend: str = "triton",
    rules: str = DEFAULT_RULES,
    device: str | None = None,
    timeout_s: float = 180.0,
    sandbox: Any = None,
    executor: Any = None,
) -> EvalResult:
    """Static rules, then (when they pass) the compile checks in one worker; never runs a kernel.

    The verdict is `compiled` when nothing is found, else `hack`,
    `disallowed` or `compile_error`; the JSON form is `EvalResult.to_dict`,
    the same as `evokernel eval`'s. Pass an `Executor` to reuse its worker
    across checks (a new one is started and closed otherwise).
    """
    from ._backend import get_backend
    from ._evaluate import EvalOptions
    from ._executor import Executor
    from ._static import static_rejection

    check_rule_set(rules)
    rejected = static_rejection(source, get_backend(backend), rules)
    if rejected is not None:
        return rejected
    options = EvalOptions(check_only=True, timing=False, rules=rules)
    if executor is not None:
        return executor.evaluate(task_path, source, backend=backend, options=options, timeout_s=timeout_s)
    with Executor(device=device or "cpu", timeout_s=timeout_s, sandbox=sandbox) as own:
        return own.evaluate(task_path, source, backend=backend, options=options)


__all__ = ["check", "dry", "dry_check"]
