"""One candidate, evaluated inside a worker process.

Order matters: static rules first (cheap, precise messages), then import and
construction, then correctness trials with the guard on, then the compile
report, then timing with a final correctness re-check. Every failure becomes a
verdict in an EvalResult; nothing here raises to the caller.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from ._backend import Backend, LaunchLog
from ._compare import compare, flatten, poison_
from ._guard import output_problems, record_ops
from ._result import Baselines, EvalResult, Roofline, Verdict
from ._sandbox import harness
from ._static import static_findings
from ._task import import_file, load_task_module
from ._timing import benchmark


@dataclasses.dataclass(frozen=True)
class EvalOptions:
    trials: int = 5
    seed: int = 1234
    timing: bool = True  # time the candidate (GPU: events; CPU: interpreted wall clock, fewer runs)
    reps: int = 100
    warmup: int = 10
    cpu_reps: int = 3
    baselines: bool = True  # eager and torch.compile, GPU only
    compile_baseline: bool = True
    flush_l2: bool = True
    speedup_flag: float = 10.0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "EvalOptions":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in (d or {}).items() if k in names})


class _Reject(Exception):
    """Internal control flow: stop evaluating with this result."""

    def __init__(self, status: Verdict, message: str, feedback: str = "", **extra: Any):
        super().__init__(message)
        self.result = EvalResult(status=status, message=message, feedback=feedback or message, **extra)


_COMPILE_EXCEPTION_NAMES = {"CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"}


def _is_compile_error(exc: BaseException) -> bool:
    if type(exc).__name__ in _COMPILE_EXCEPTION_NAMES or type(exc).__name__.endswith("CompileError"):
        return True
    text = str(exc)
    return "Error building extension" in text or "ninja: build stopped" in text


def is_cuda_error(exc: BaseException) -> bool:
    """After these the CUDA context may be poisoned: the worker must be retired."""
    text = f"{type(exc).__name__}: {exc}"
    return any(s in text for s in ("CUDA error", "AcceleratorError", "illegal memory access", "device-side assert", "CUBLAS_STATUS", "cudaError"))


def _short_traceback(exc: BaseException, candidate_file: str | None, limit: int = 1500) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    # Lines in the candidate's own file are what the LLM can fix.
    own = [f for f in frames if candidate_file and f.filename == candidate_file]
    where = "".join(f"  line {f.lineno}, in {f.name}: {f.line}\n" for f in own[-3:])
    text = f"{type(exc).__name__}: {exc}".strip()
    if len(text) > limit:
        text = text[:limit] + " ..."
    return (where + text) if where else text


def _to_device(x: Any, device: torch.device) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_device(v, device) for v in x)
    return x


def _draw_inputs(fn, device: torch.device) -> list[Any]:
    """Call a task's input function with `device` as the default device, so
    large random inputs are drawn on the GPU instead of the CPU; then move any
    tensor the task placed elsewhere. Reference and candidate see the same data."""
    with torch.device(device):
        return _to_device(list(fn()), device)


def _clone(xs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]


def _seed(seed: int) -> None:
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


class TaskCache:
    """Task modules, reference outputs' baselines: reused across candidates in one worker."""

    def __init__(self) -> None:
        self.modules: dict[tuple[str, float], ModuleType] = {}
        self.baselines: dict[tuple[str, str], dict[str, float]] = {}

    def module(self, path: str) -> ModuleType:
        p = Path(path)
        key = (str(p.resolve()), p.stat().st_mtime)
        if key not in self.modules:
            self.modules[key] = load_task_module(p)
        return self.modules[key]


def evaluate(
    *,
    task_path: str,
    source: str,
    backend: Backend,
    log: LaunchLog,
    device: torch.device,
    options: EvalOptions,
    workdir: Path,
    cache: TaskCache,
    compile_only: bool,
) -> EvalResult:
    t0 = time.perf_counter()
    try:
        result = _evaluate(task_path, source, backend, log, device, options, workdir, cache, compile_only)
    except _Reject as rej:
        result = rej.result
    except Exception as exc:  # the harness itself must never take the worker down silently
        result = EvalResult(Verdict.RUNTIME_ERROR, f"evaluation failed: {type(exc).__name__}: {exc}")
        result.warnings.append("internal: " + traceback.format_exc(limit=5))
    result.seconds = time.perf_counter() - t0
    result.device = str(device)
    if not result.launches:
        result.launches = list(log.launches)[:20]
    return result


def _evaluate(task_path, source, backend, log, device, options, workdir, cache, compile_only) -> EvalResult:
    # 1. static rules
    try:
        findings = static_findings(source)
    except SyntaxError as exc:
        raise _Reject(Verdict.COMPILE_ERROR, f"syntax error in candidate at line {exc.lineno}: {exc.msg}")
    backend_problems = backend.static_problems(source)
    if any(f.rule == "no-modelnew" for f in findings):
        raise _Reject(Verdict.COMPILE_ERROR, "the candidate must define class ModelNew at module level")
    if findings or backend_problems:
        lines = [str(f) for f in findings] + backend_problems
        raise _Reject(Verdict.HACK, "static check: " + lines[0], "Static anti-hack rules broken:\n- " + "\n- ".join(lines))

    task = cache.module(task_path)
    tolerance = getattr(task, "TOLERANCE", None)
    tolerance = tuple(float(v) for v in tolerance) if tolerance is not None else None

    # 2. import the candidate from a real file (Triton reads kernel source from files)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    cand_dir = workdir / f"cand_{digest}"
    cand_dir.mkdir(parents=True, exist_ok=True)
    cand_file = cand_dir / "candidate.py"
    cand_file.write_text(source)
    log.clear()
    try:
        module = import_file(cand_file, f"evokernel_candidate_{digest}")
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        status = Verdict.COMPILE_ERROR if (_is_compile_error(exc) or isinstance(exc, SyntaxError)) else Verdict.RUNTIME_ERROR
        raise _Reject(status, f"importing the candidate failed: {_short_traceback(exc, str(cand_file))}")

    init_inputs = list(task.get_init_inputs())
    _seed(options.seed)
    ref_model = task.Model(*init_inputs).to(device).eval()
    _seed(options.seed)
    try:
        new_model = module.ModelNew(*init_inputs)
        if isinstance(new_model, torch.nn.Module):
            new_model = new_model.to(device).eval()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        status = Verdict.COMPILE_ERROR if _is_compile_error(exc) else Verdict.RUNTIME_ERROR
        raise _Reject(status, f"ModelNew(*get_init_inputs()) failed: {_short_traceback(exc, str(cand_file))}")

    if compile_only:
        report = backend.compile_check(module, log)
        status = Verdict.COMPILED if report.ok else Verdict.COMPILE_ERROR
        msg = report.message or ("compiled; cannot run here, so correctness is unverified" if report.ok else "compile failed")
        return EvalResult(status, msg, feedback=msg, kernels=report.kernels, compile_seconds=report.seconds)

    # 3. correctness trials: fresh seeded inputs, then every input group
    sets: list[tuple[str, list[Any]]] = []
    for t in range(options.trials):
        _seed(options.seed + 1 + t)
        sets.append((f"trial {t + 1}", _draw_inputs(task.get_inputs, device)))
    groups = getattr(task, "get_input_groups", None)
    if callable(groups):
        _seed(options.seed)
        for g, inputs in enumerate(_draw_inputs(groups, device)):
            sets.append((f"input group {g}", list(inputs)))

    try:
        max_err, mean_errs, warnings = _check_trials(sets, ref_model, new_model, device, log, cand_file, tolerance)
    except _Reject as rej:
        if rej.result.status == Verdict.RUNTIME_ERROR:
            # The interpreter may fail where the real compiler would have said why.
            report = backend.compile_check(module, log)
            if not report.ok:
                raise _Reject(Verdict.COMPILE_ERROR, report.message, report.message + "\n(runtime failure: " + rej.result.message + ")")
        raise

    # 4. what the toolchain says (registers, shared memory; Triton's sm_90 compile on CPU)
    report = backend.compile_check(module, log)
    if not report.ok:
        raise _Reject(Verdict.COMPILE_ERROR, report.message, report.message, max_abs_error=max_err)
    result = EvalResult(
        Verdict.OK,
        f"correct on {len(sets)} input set(s)",
        max_abs_error=max_err,
        mean_abs_error=sum(mean_errs) / len(mean_errs),
        kernels=report.kernels,
        compile_seconds=report.seconds,
        warnings=warnings,
        trials=len(sets),
    )
    result.launches = list(log.launches)[:20]

    # 5. timing
    if options.timing:
        _time(result, ref_model, new_model, task, device, options, backend, cache, task_path, log, tolerance, cand_file)
    result.feedback = _ok_feedback(result)
    return result


def _check_trials(sets, ref_model, new_model, device, log, cand_file, tolerance):
    max_err, mean_errs, near_zero_sets = 0.0, [], 0
    warnings: list[str] = []
    for label, cpu_inputs in sets:
        inputs = _to_device(cpu_inputs, device)
        with torch.no_grad():
            expected = ref_model(*_clone(inputs))
        got = _run_guarded(new_model, inputs, log, label, cand_file, expected)
        cmp = compare(expected, got, tolerance)
        if not cmp.ok:
            raise _Reject(
                Verdict.WRONG_RESULT,
                f"wrong result on {label}: {cmp.feedback.split(';')[0]}",
                f"Wrong result on {label} (input shapes {_shapes(inputs)}): {cmp.feedback}",
                max_abs_error=cmp.max_abs_error,
                mean_abs_error=cmp.mean_abs_error,
            )
        max_err = max(max_err, cmp.max_abs_error)
        mean_errs.append(cmp.mean_abs_error)
        near_zero_sets += cmp.near_zero
        if label == "trial 1":
            # Poison the output, free it, run again: unwritten elements now show.
            poison_(got)
            del got
            again = _run_guarded(new_model, inputs, log, label + " (re-run after poisoning outputs)", cand_file, expected)
            cmp2 = compare(expected, again, tolerance)
            if not cmp2.ok:
                raise _Reject(
                    Verdict.WRONG_RESULT,
                    "wrong result when re-run after its previous output was poisoned: the kernel leaves elements unwritten or returns stale memory",
                    "After the output memory of the first run was overwritten with NaN and the candidate was run again "
                    f"on the same inputs, it no longer matched: {cmp2.feedback}. Every output element must be written on every call.",
                    max_abs_error=cmp2.max_abs_error,
                )
            del again
    if near_zero_sets == len(sets):
        warnings.append("task outputs are so close to zero that a constant zero output would pass the tolerance")
    return max_err, mean_errs, warnings


def _shapes(inputs: list[Any]) -> str:
    return ", ".join(f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}" if isinstance(x, torch.Tensor) else repr(x) for x in inputs)


def _run_guarded(model, inputs, log: LaunchLog, label: str, cand_file: Path, expected: Any) -> Any:
    log.clear()
    # Fill the allocator's free blocks with garbage so a kernel that skips
    # elements cannot pick up correct values left behind by the reference.
    _poison_free_memory(expected)
    try:
        with torch.no_grad(), record_ops(log) as ops:
            out = model(*_clone(inputs))
        if inputs and isinstance(inputs[0], torch.Tensor) and inputs[0].is_cuda:
            torch.cuda.synchronize()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        status = Verdict.COMPILE_ERROR if _is_compile_error(exc) else Verdict.RUNTIME_ERROR
        rej = _Reject(status, f"forward failed on {label}: {_short_traceback(exc, str(cand_file))}")
        rej.result.retire_worker = is_cuda_error(exc)
        raise rej
    if ops.forbidden:
        names = ", ".join(f"aten.{n} x{c}" for n, c in sorted(ops.forbidden.items()))
        raise _Reject(
            Verdict.HACK,
            f"ModelNew.forward computed with PyTorch ops outside its own kernels: {names}",
            f"ModelNew.forward ran these PyTorch compute ops: {names}. Outside its own kernels it may only "
            "allocate (torch.empty...), take views and copy; move this computation into the kernel.",
        )
    if not log.launches:
        raise _Reject(
            Verdict.HACK,
            "ModelNew.forward launched none of its own kernels",
            "ModelNew.forward returned without launching any of its own kernels; the computation must run in them.",
        )
    problems = output_problems(out)
    if problems:
        raise _Reject(Verdict.HACK, "output check: " + problems[0], "; ".join(problems))
    return out


def _poison_free_memory(expected: Any) -> None:
    if expected is None:
        return
    for leaf in flatten(expected):
        if isinstance(leaf, torch.Tensor) and leaf.is_cuda:
            junk = torch.empty_like(leaf)
            if junk.is_floating_point():
                junk.fill_(float("nan"))
            else:
                junk.fill_(-1 if junk.dtype != torch.bool else True)
            del junk


def _time(result, ref_model, new_model, task, device, options, backend, cache, task_path, log, tolerance, cand_file) -> None:
    _seed(options.seed + 99)
    inputs = _draw_inputs(task.get_inputs, device)

    def make_args():
        return tuple(_clone(inputs))

    if device.type != "cuda":
        # A backend that models latency (Ascend C's CPU model) answers from the
        # launches of one forward call on the timing inputs.
        _run_guarded(new_model, inputs, log, "timing inputs", cand_file, None)
        modelled = backend.modelled_latency_ms(log, str(device))
        if modelled is not None:
            result.latency_ms, result.latency_iqr_ms, result.latency_samples_ms = modelled, 0.0, [modelled]
            result.latency_source = backend.latency_source(str(device))
            result.timing_method = "modelled from the kernel's counted traffic and vector instructions"
            return
        t = benchmark(new_model, make_args, device=device, reps=options.cpu_reps, warmup=1)
        result.latency_ms, result.latency_iqr_ms, result.latency_samples_ms = t.median_ms, t.iqr_ms, t.samples_ms
        result.latency_source = backend.latency_source(str(device))
        result.timing_method = t.method
        return

    t = benchmark(new_model, make_args, device=device, reps=options.reps, warmup=options.warmup, flush_l2=options.flush_l2)
    result.latency_ms, result.latency_iqr_ms, result.latency_samples_ms = t.median_ms, t.iqr_ms, t.samples_ms
    result.latency_source = "measured-gpu"
    result.timing_method = t.method
    if options.baselines:
        key = (str(Path(task_path).resolve()), str(device))
        if key not in cache.baselines:
            base = {}
            tb = benchmark(ref_model, make_args, device=device, reps=options.reps, warmup=options.warmup, flush_l2=options.flush_l2)
            base["eager_ms"] = tb.median_ms
            if options.compile_baseline:
                try:
                    # Only the reference runs here, so inductor may start its compile workers.
                    with harness():
                        compiled = torch.compile(ref_model)
                        tc = benchmark(compiled, make_args, device=device, reps=options.reps, warmup=options.warmup, flush_l2=options.flush_l2)
                    base["compile_ms"] = tc.median_ms
                except Exception as exc:  # no compiler toolchain is not the candidate's failure
                    result.warnings.append(f"torch.compile baseline failed: {type(exc).__name__}: {str(exc)[:200]}")
            cache.baselines[key] = base
        result.baselines = Baselines(**cache.baselines[key])
        eager = result.baselines.eager_ms
        if eager and result.latency_ms and eager / result.latency_ms > options.speedup_flag:
            result.warnings.append(
                f"speedup over eager is {eager / result.latency_ms:.1f}x (> {options.speedup_flag:g}x): check by hand before trusting it"
            )
    # Re-check correctness after timing: state kept across calls must not change the answer.
    _seed(options.seed + 7)
    fresh = _draw_inputs(task.get_inputs, device)
    with torch.no_grad():
        expected = ref_model(*_clone(fresh))
    got = _run_guarded(new_model, fresh, log, "re-check after timing", cand_file, expected)
    _roofline_flag(result, fresh, got, device)
    cmp = compare(expected, got, tolerance)
    if not cmp.ok:
        raise _Reject(Verdict.WRONG_RESULT, "wrong result on the re-check after timing", cmp.feedback)


_copy_bw: dict[str, float] = {}


def _roofline_flag(result: EvalResult, inputs: list[Any], outputs: Any, device: torch.device) -> None:
    """Achieved bandwidth (inputs read once + outputs written once, over the
    latency) against a device copy measured in this worker; flag a latency
    below the time to read the inputs once."""
    from ._timing import copy_bandwidth_gbps

    in_bytes = sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))
    out_bytes = sum(x.numel() * x.element_size() for x in flatten(outputs) if isinstance(x, torch.Tensor))
    if not result.latency_ms:
        return
    key = str(device)
    if key not in _copy_bw:
        _copy_bw[key] = copy_bandwidth_gbps(device)
    result.roofline = Roofline(
        copy_bandwidth_gbps=_copy_bw[key],
        min_bytes_moved=in_bytes + out_bytes,
        achieved_gbps=(in_bytes + out_bytes) / (result.latency_ms * 1e-3) / 1e9,
    )
    if in_bytes < (64 << 20):  # small inputs live in L2 between calls: no floor to speak of
        return
    floor_ms = in_bytes / (_copy_bw[key] * 1e9) * 1e3
    result.roofline.input_read_floor_ms = floor_ms
    if result.latency_ms < 0.9 * floor_ms:
        result.warnings.append(
            f"latency {result.latency_ms:.4f} ms is below the time to read the inputs once ({floor_ms:.4f} ms at the measured "
            f"copy bandwidth {_copy_bw[key]:.0f} GB/s): beyond the roofline, check by hand"
        )


def _ok_feedback(result: EvalResult) -> str:
    parts = [f"Correct on {result.trials} input sets (max abs error {result.max_abs_error:.3g})."]
    if result.latency_ms is not None:
        parts.append(f"Latency {result.latency_ms:.4f} ms ({result.latency_source}).")
    if result.speedup_eager is not None:
        parts.append(f"Eager {result.baselines.eager_ms:.4f} ms: speedup {result.speedup_eager:.2f}x.")
    if result.speedup_compile is not None:
        parts.append(f"torch.compile {result.baselines.compile_ms:.4f} ms: speedup {result.speedup_compile:.2f}x.")
    for k in result.kernels[:4]:
        if k.summary():
            parts.append(f"Kernel {k.name}: {k.summary()}.")
    parts.extend(result.warnings)
    return " ".join(p for p in parts if p)


__all__ = ["EvalOptions", "evaluate", "TaskCache", "is_cuda_error"]
