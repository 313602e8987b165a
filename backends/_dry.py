"""The worker side of `evokernel check` (backends/_check.py): the backend's dry
mode, and the import and meta-tensor trace of a candidate inside it.

`_evaluate` runs `dry_check` when its options say `check_only`.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable

from ._gpu_path import OffGpuWatch, off_accelerator_message
from ._guard import record_ops
from ._precision import cast_model, cast_values
from ._result import EvalResult, Verdict
from ._rules import explain, verdict_for


def dry(backend: Any) -> contextlib.AbstractContextManager:
    """The backend's dry mode (a backend without one runs nothing in a check anyway)."""
    enter = getattr(backend, "dry_launches", None)
    return enter() if callable(enter) else contextlib.nullcontext()


def dry_check(task: Any, import_candidate: Callable[[], tuple[Any, Path]], backend: Any, log: Any, rules: str,
              off_gpu: OffGpuWatch | None = None, precision: str = "fp32") -> EvalResult:
    """Inside a worker: import in dry mode, trace forward on meta tensors, compile what was seen.
    Meta tensors are not on the GPU: a forward that reaches compute only reachable off it (`off_gpu`)
    is `unverified`, its kernels unseen. Models and inputs are cast to `precision` as a run casts them,
    so the kernels compiled are the ones that run would launch."""
    import torch

    warnings: list[str] = []
    with dry(backend):
        module, cand_file = import_candidate()
        trace = (off_gpu or OffGpuWatch()).trace(str(cand_file))
        log.clear()
        forbidden: dict[str, int] = {}
        traced = False
        try:
            with torch.device("meta"):
                init = cast_values(list(task.get_init_inputs()), precision)
                model = cast_model(module.ModelNew(*init), precision)
                inputs = cast_values(list(task.get_inputs()), precision)
            with torch.no_grad(), record_ops(log) as ops, trace:
                model(*inputs)
            forbidden = dict(ops.forbidden)
            traced = True
        except Exception as exc:  # data-dependent Python, or an extension call that returns nothing when dry
            text = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            warnings.append(f"the dry run of ModelNew.forward on meta tensors stopped ({text}); "
                            "kernels launched after that point were not compiled")
    launched = list(log.launches)
    reached = (off_gpu or OffGpuWatch()).reached(trace)
    if reached:
        msg = off_accelerator_message(reached, "meta tensors") + "; its kernels were not compiled"
        return EvalResult(Verdict.UNVERIFIED, msg, feedback=msg, rules=rules, warnings=warnings)
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


__all__ = ["dry", "dry_check"]
