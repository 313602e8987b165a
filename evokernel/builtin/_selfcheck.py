"""Run a generated candidate against its reference on the CPU (a quick local
check, not the executor: no anti-hack rules, no timing).

Kernels run in Triton's interpreter only if ``TRITON_INTERPRET=1`` was set
before the candidate is imported; the caller owns that environment.
"""

from __future__ import annotations

import importlib.util
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from ._trace import load_task

__all__ = ["CheckResult", "check_candidate", "check_in_subprocess", "import_candidate"]


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    max_abs_error: float
    message: str


def import_candidate(source: str, directory: str | Path, name: str = "candidate"):
    """Write the source to a file and import it (``@triton.jit`` needs real files)."""
    path = Path(directory) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"evokernel_candidate_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_candidate(task, source: str, seed: int = 0, tolerance: tuple[float, float] | None = None,
                    inputs: list | None = None, device: str = "cpu") -> CheckResult:
    task = load_task(task)
    with tempfile.TemporaryDirectory() as tmp:
        candidate = import_candidate(source, tmp)
        init = task.get_init_inputs()
        torch.manual_seed(seed)
        inputs = list(inputs) if inputs is not None else list(task.get_inputs())
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
        torch.manual_seed(seed)
        ref_model = task.Model(*init).to(device)
        torch.manual_seed(seed)
        new_model = candidate.ModelNew(*init).to(device)
        with torch.no_grad():
            expected = ref_model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
            got = new_model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
    pairs = _tensor_pairs(got, expected, "output")
    if isinstance(pairs, str):
        return CheckResult(False, float("inf"), pairs)
    worst = 0.0
    for where, got, expected in pairs:
        result = _check_tensor(task, where, got, expected, tolerance)
        if not result.ok:
            return result
        worst = max(worst, result.max_abs_error)
    return CheckResult(True, worst, "ok")


def _tensor_pairs(got, expected, where: str) -> list[tuple[str, torch.Tensor, torch.Tensor]] | str:
    """(where, candidate's, reference's) for each tensor the reference returns, in order, or what
    differs in the structure holding them (a tuple or list, nested, where forward returns several)."""
    if not isinstance(expected, (tuple, list)):
        if not isinstance(got, torch.Tensor):
            return f"{where} is {type(got).__name__}, not a tensor"
        return [(where, got, expected)]
    if type(got) is not type(expected) or len(got) != len(expected):
        size = f" of {len(got)}" if isinstance(got, (tuple, list)) else ""
        return f"{where} is a {type(got).__name__}{size}, expected a {type(expected).__name__} of {len(expected)}"
    pairs: list[tuple[str, torch.Tensor, torch.Tensor]] = []
    for i, (g, e) in enumerate(zip(got, expected)):
        inner = _tensor_pairs(g, e, f"{where}[{i}]")
        if isinstance(inner, str):
            return inner
        pairs.extend(inner)
    return pairs


def _check_tensor(task, where: str, got: torch.Tensor, expected: torch.Tensor,
                  tolerance: tuple[float, float] | None) -> CheckResult:
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return CheckResult(False, float("inf"),
                           f"{where} {tuple(got.shape)} {got.dtype}, expected {tuple(expected.shape)} {expected.dtype}")
    if tolerance is None:
        tolerance = getattr(task, "TOLERANCE", None) or (
            (1e-4, 1e-4) if expected.dtype in (torch.float32, torch.float64) else (1e-2, 1e-2))
    atol, rtol = tolerance
    diff = (got.double() - expected.double()).abs()
    err = float(diff.max()) if diff.numel() else 0.0
    if torch.isnan(got).any() != torch.isnan(expected).any():
        return CheckResult(False, err, "NaN mismatch")
    ok = bool(torch.allclose(got.double(), expected.double(), atol=atol, rtol=rtol, equal_nan=True))
    return CheckResult(ok, err, "ok" if ok else f"max abs error {err:.3g} over atol={atol}, rtol={rtol}")


def _job(job: dict) -> dict:
    """One check: analyze + generate + run; every failure becomes a message."""
    from ._config import Config
    from ._generate import generate
    from ._trace import analyze

    try:
        plan = analyze(job["task"])
        if not plan:
            return {"ok": False, "max_abs_error": None, "message": f"unsupported: {plan.reason}"}
        config = Config.from_dict(job["config"]) if job.get("config") else None
        source = generate(plan, config)
        inputs = None
        if job.get("input_shapes"):
            task = load_task(job["task"])
            torch.manual_seed(1)
            base = list(task.get_inputs())
            shapes = iter(job["input_shapes"])
            inputs = [torch.randn(next(shapes), dtype=x.dtype) if isinstance(x, torch.Tensor) else x for x in base]
        result = check_candidate(job["task"], source, inputs=inputs)
        return {"ok": result.ok, "max_abs_error": result.max_abs_error, "message": result.message}
    except Exception as exc:  # a broken candidate is a verdict, not a crash of the batch
        return {"ok": False, "max_abs_error": None, "message": f"{type(exc).__name__}: {exc}"}


def check_in_subprocess(jobs: list[dict], timeout_s: float = 600.0) -> list[CheckResult]:
    """Run jobs ({"task": path, "config": dict | None, "input_shapes": [...] | None})
    in a fresh Python with TRITON_INTERPRET=1, which must be set before triton is
    first imported; returns one CheckResult per job."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, "-m", "evokernel.builtin._selfcheck"], input=json.dumps(jobs),
                          capture_output=True, text=True, env=env, timeout=timeout_s)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or len(lines) != len(jobs):
        tail = (proc.stderr or proc.stdout)[-2000:]
        return [CheckResult(False, float("inf"), f"self-check process failed (rc {proc.returncode}): {tail}")
                for _ in jobs]
    out = []
    for line in lines:
        data = json.loads(line)
        err = data["max_abs_error"]
        out.append(CheckResult(bool(data["ok"]), float("inf") if err is None else float(err), data["message"]))
    return out


if __name__ == "__main__":  # the worker side of check_in_subprocess
    import json
    import sys
    import warnings

    warnings.filterwarnings("ignore")  # the interpreter warns on masked-off lanes (log(0)...)
    for job in json.loads(sys.stdin.read()):
        print(json.dumps(_job(job)), flush=True)
