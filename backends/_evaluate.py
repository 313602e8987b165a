"""One candidate, evaluated inside a worker process.

Order matters: static rules first (cheap, precise messages), then import and
construction, then a memory plan (backends/_memory.py), then correctness
trials with the guard on, then the compile report, then timing with a final
correctness re-check. Every failure becomes a verdict in an EvalResult;
nothing here raises to the caller.

Memory: each input set is drawn on the device when it is checked and freed
after (backends/_inputs.py); the reference's outputs live until they are
compared, and the comparison runs on the device in chunks. A failure of the
task itself (its inputs, its reference, memory it cannot have) is a
`task_error`; an out-of-memory error in the candidate is its `runtime_error`.
The worker hears which side is running (`Progress`), so a worker killed from
outside (the out-of-memory killer) is blamed on the side that was running.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import signal
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from . import _inputs, _memory, _share, _stress
from ._backend import Backend, LaunchLog
from ._compare import compare, flatten, poison_
from ._device_lock import DeviceLock, set_timing_guard
from ._dry import dry_check
from ._gpu_path import OffGpuWatch, off_accelerator_message
from ._guard import (RunRules, SideStreamUsed, fingerprint, inputs_changed, is_constant, no_side_streams, record_ops,
                     same_fingerprint, unwritten_share)
from ._options import COMPILE_BASELINE_STEP, EvalOptions
from ._oracle import Oracle
from ._precision import cast_model, cast_values, precision_note
from ._result import Baselines, EvalResult, LatencySource, Roofline, Verdict
from ._rules import explain
from ._sandbox import harness
from ._static import off_accelerator_lines, static_rejection
from ._task import import_file, load_task_module, task_size
from ._timing import benchmark, l2_flush_bytes

KERNELBENCH_SEED = 42  # the seed KernelBench's evaluation scripts use


@dataclasses.dataclass(frozen=True)
class InputSet:
    """One set of inputs the candidate is checked on, drawn when it is checked and freed after."""

    label: str
    draw: Callable[[], list[Any]]
    # Inputs of the same shapes for checks whose values need not follow the seeding
    # (stress probes, the own-kernel profile): drawn on the device, fast even where
    # `draw` takes KernelBench's host stream. None: use `draw`.
    probe: Callable[[], list[Any]] | None = None

    def draw_probe(self) -> list[Any]:
        return (self.probe or self.draw)()


class Progress:
    """Tells the parent which side runs now ("harness" or "candidate"), on change only, and keeps
    the seconds spent under each step's name (or the side's, between named steps): where an
    evaluation's time goes, which is where a benchmark's device time goes."""

    def __init__(self, send: Callable[[dict[str, Any]], None] | None = None, device: torch.device | None = None):
        self.send = send
        self.device = device or torch.device("cpu")
        self.phase: str | None = None
        self.plan: Any = None  # the MemoryPlan of this evaluation, once made
        self.seconds: dict[str, float] = {}
        self._label, self._since = "", time.perf_counter()

    def __call__(self, phase: str, *, label: str = "", **extra: Any) -> None:
        """`extra` goes to the parent; `label` only names this stretch's seconds (the step's name by default)."""
        if (phase != self.phase or extra) and self.send is not None:
            self.send({"phase": phase, **extra})
        self.phase = phase
        self._mark(label or str(extra.get("step") or phase))

    def _mark(self, label: str) -> None:
        now = time.perf_counter()
        if self._label:
            self.seconds[self._label] = self.seconds.get(self._label, 0.0) + now - self._since
        self._label, self._since = label, now

    def step_seconds(self) -> dict[str, float]:
        """Seconds per step so far (the current one closed), rounded to milliseconds."""
        self._mark("")
        return {k: round(v, 3) for k, v in self.seconds.items()}


_progress = Progress()
# Several workers on this GPU (backends/_device_lock.py): the evaluation holds the device shared, its
# timing exclusively; None with one worker a GPU (and on the CPU), where nothing is waited for.
_device_lock: DeviceLock | None = None
_device_workers = 1


def _settle() -> None:
    """Wait for this worker's GPU work (kernels still running after an error, say) before it gives up
    its hold on a shared GPU, so none of it runs beside another worker's timing."""
    try:
        torch.cuda.synchronize(_progress.device)
    except Exception:  # a broken context: the worker is retired, and its death ends its GPU work
        pass


@contextlib.contextmanager
def _device_shared() -> Iterator[None]:
    """The evaluation's hold on a shared GPU (nothing where the GPU is this worker's alone)."""
    if _device_lock is None:
        yield
        return
    with _device_lock.shared():
        try:
            yield
        finally:
            _settle()
            _release_memory()  # a neighbour running again with all of the memory finds it free


@contextlib.contextmanager
def _autotune_alone() -> Iterator[None]:
    """Triton's autotuner times its configurations inside the candidate's first call: on a shared GPU
    with the GPU alone too, or a neighbour's kernels pick the configuration (on an H100, level1's
    GEMMs and convolutions, the autotuned ones, timed 1.15-1.38x longer with 2 workers a GPU)."""
    if _device_lock is None:
        yield
        return
    phase, label = _progress.phase or "candidate", _progress._label
    _settle()
    _progress(phase, label="waiting for the device to autotune alone")
    with _device_lock.exclusive():
        _progress(phase, label=label)
        yield
        _settle()


set_timing_guard(_autotune_alone)


@contextlib.contextmanager
def _gpu_to_itself() -> Iterator[None]:
    """An evaluation run again on a shared GPU with no other evaluation in flight and all of the
    memory (backends/_device_lock.py, `alone()`); inside it this worker is as if alone on its GPU."""
    global _device_lock, _device_workers
    lock, workers = _device_lock, _device_workers
    assert lock is not None  # and the first attempt's shared hold has handed its cached memory back
    _progress("harness", step="waiting for the GPU to itself (to run again after failing beside other workers)")
    with lock.alone():
        _device_lock, _device_workers = None, 1
        torch.cuda.set_per_process_memory_fraction(1.0, _progress.device)
        try:
            yield
        finally:
            _settle()
            _release_memory()
            torch.cuda.set_per_process_memory_fraction(1 / workers, _progress.device)
            _device_lock, _device_workers = lock, workers


def _release_memory() -> None:
    """Hand this worker's cached GPU memory back, for a neighbour that needs all of it."""
    gc.collect()
    with contextlib.suppress(Exception):
        torch.cuda.empty_cache()


@contextlib.contextmanager
def _device_alone() -> Iterator[None]:
    """The device to this worker alone while it times: no other worker of its GPU runs anything."""
    if _device_lock is None:
        yield
        return
    _settle()
    _progress("harness", step="waiting for the device to time alone")
    with _device_lock.exclusive():
        yield


_run_rules = RunRules()  # the rule set and the task facts the guard holds this evaluation to
_off_gpu = OffGpuWatch()  # off the GPU: whether the first run reaches compute only reachable off it


class _Reject(Exception):
    """Internal control flow: stop evaluating with this result."""

    def __init__(self, status: Verdict, message: str, feedback: str = "", **extra: Any):
        super().__init__(message)
        self.result = EvalResult(status=status, message=message, feedback=feedback or message, **extra)
        self.out_of_memory = False  # the candidate ran out of memory (a task's own failure is a TASK_ERROR)


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


def _clone(xs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]


_seed = _inputs.seed_all


class TaskCache:
    """Baselines of the references: reused across candidates in one worker
    (task modules are cached by backends._task)."""

    def __init__(self) -> None:
        self.baselines: dict[tuple[str, ...], dict[str, float]] = {}


def _task_failure(what: str, exc: BaseException, device: torch.device) -> _Reject:
    """The task (its inputs, its reference, or the memory it needs) failed: no verdict on the candidate."""
    if _memory.is_out_of_memory(exc):
        msg = (f"the task ran out of memory while {what} ({_memory.free_now(device)} free now): "
               f"{type(exc).__name__}: {str(exc)[:300]}")
    else:
        msg = f"the task failed while {what}: {type(exc).__name__}: {str(exc)[:1000]}"
    rej = _Reject(Verdict.TASK_ERROR, msg)
    rej.result.retire_worker = is_cuda_error(exc)
    return rej


def _task_step(what: str, fn: Callable[[], Any]) -> Any:
    """Run harness or task code (drawing inputs, the reference); its failures are task errors."""
    _progress("harness", step=what)  # the step is named so that a timeout can say where it struck
    try:
        return fn()
    except _Reject:
        raise
    except Exception as exc:
        raise _task_failure(what, exc, _progress.device) from None


def _reference(model: Any, inputs: list[Any], label: str, device: torch.device) -> Any:
    def run() -> Any:
        with torch.no_grad():
            out = model(*_clone(inputs))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return out

    return _task_step(f"running the reference on {label}", run)


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
    progress: Progress | None = None,
    device_lock: DeviceLock | None = None,
    device_workers: int = 1,
    restart_clock: Callable[[], None] | None = None,
) -> EvalResult:
    """`device_lock`: this worker shares its GPU with `device_workers` - 1 others (backends/_device_lock.py).
    `restart_clock`: gives the candidate its CPU-time budget afresh (the sandbox's), for a second attempt."""
    t0 = time.perf_counter()
    global _progress, _device_lock, _device_workers
    _progress = progress or Progress(device=device)
    _progress.device = device
    _device_lock, _device_workers = (device_lock, device_workers) if device.type == "cuda" else (None, 1)

    def attempt() -> tuple[EvalResult, bool]:
        """The evaluation's result, and whether memory or the task failed (which a neighbour on a shared
        GPU may have caused: its memory, or cuDNN choosing other algorithms with less of it), or a result
        judged wrong by the tolerance alone because the float64 reference did not fit beside the neighbour
        (level1's 87_conv_pointwise_2D beside a second worker on an H100: 27 of 2.1 G elements past 1e-4,
        where one worker a GPU passes it)."""
        try:
            return _evaluate(task_path, source, backend, log, device, options, workdir, cache, compile_only), False
        except _Reject as rej:
            result = rej.result
            no_oracle = result.status is Verdict.WRONG_RESULT and Oracle.crowded_out(result.oracle_unavailable)
            return result, rej.out_of_memory or result.status is Verdict.TASK_ERROR or no_oracle
        except Exception as exc:  # the harness itself must never take the worker down silently
            failed = EvalResult(Verdict.RUNTIME_ERROR, f"evaluation failed: {type(exc).__name__}: {exc}")
            failed.warnings.append("internal: " + traceback.format_exc(limit=5))
            return failed, _memory.is_out_of_memory(exc)

    # the exception (its frames hold the evaluation's tensors) is gone before the shared hold is let go
    with task_size(options.size), _device_shared():
        result, crowded = attempt()
    if crowded and _device_lock is not None and _device_workers > 1 and not result.retire_worker:
        beside = f"beside {_device_workers - 1} other worker(s) it failed ({result.message[:300]})"
        log.launches.clear()
        with task_size(options.size), _gpu_to_itself():
            if restart_clock is not None:
                restart_clock()
            result, _ = attempt()
        result.warnings.append(f"run again with the GPU and all of its memory to itself: {beside}")
    if result.memory is None:
        result.memory = getattr(_progress, "plan", None)
    result.rules = options.rules
    result.precision = options.precision
    if options.precision != "fp32" and result.feedback:
        result.feedback += f" ({precision_note(options.precision)})"
    result.seconds = time.perf_counter() - t0
    result.step_seconds = _progress.step_seconds()
    result.device = str(device)
    if not result.launches:
        result.launches = list(log.launches)[:20]
    return result


def _evaluate(task_path, source, backend, log, device, options, workdir, cache, compile_only) -> EvalResult:
    # 1. static rules, on what ModelNew runs (backends/_static.py), under the chosen rule set
    global _run_rules, _off_gpu
    _run_rules = RunRules(options.rules)
    rejected = static_rejection(source, backend, options.rules)
    if rejected is not None:
        return rejected
    _off_gpu = OffGpuWatch(off_accelerator_lines(source), "meta" if options.check_only else device.type)

    task = _task_step("importing the task", lambda: load_task_module(task_path, size=options.size))
    tolerance = getattr(task, "TOLERANCE", None)
    tolerance = options.tolerance(tuple(float(v) for v in tolerance) if tolerance is not None else None)

    # 2. import the candidate from a real file (Triton reads kernel source from files)
    if options.check_only:  # `evokernel check`: compile what the candidate builds and launches, run nothing
        return dry_check(task, lambda: _import_candidate(source, workdir, log), backend, log, options.rules, _off_gpu,
                         options.precision)
    module, cand_file = _import_candidate(source, workdir, log)

    _seed(options.seed)
    init_inputs = _task_step("calling get_init_inputs()",
                             lambda: cast_values(list(task.get_init_inputs()), options.precision))
    if not compile_only:
        _plan_memory(task, init_inputs, device, options)

    def build_reference() -> Any:
        _seed(options.seed)
        return cast_model(task.Model(*init_inputs).to(device).eval(), options.precision)

    ref_model = _task_step("building the reference model", build_reference)
    oracle = Oracle(ref_model, device)  # its float64 copy, built at first use
    _seed(options.seed)
    _progress("candidate", label="building the candidate model")
    try:
        new_model = module.ModelNew(*init_inputs)
        if isinstance(new_model, torch.nn.Module):
            new_model = cast_model(new_model.to(device).eval(), options.precision)
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
    sets = _input_sets(task, device, options)

    seen = _stress.Observations(tolerance)
    stress = None
    try:
        max_err, mean_errs, warnings = _check_trials(sets, ref_model, new_model, device, log, cand_file, tolerance, seen,
                                                     oracle)
        # Degenerate on its own inputs: the candidate must also match on inputs where the reference is not.
        stress = _task_step("looking for stress inputs", lambda: _stress.plan_stress(
            lambda xs: _reference(ref_model, xs, "stress inputs", device), seen,
            [s.draw_probe for s in sets if s.label.startswith("trial")], seed=options.seed, max_sets=options.stress_trials,
            exact=oracle.exact))
        _progress("harness", label="stress inputs: checking the candidate")
        extra = [InputSet(label, draw) for label, draw in stress.sets]
        if extra:
            e_max, e_means, _ = _check_trials(extra, ref_model, new_model, device, log, cand_file, tolerance, None, oracle)
            max_err, mean_errs, sets = max(max_err, e_max), mean_errs + e_means, sets + extra
    except _Reject as rej:
        if rej.result.status == Verdict.RUNTIME_ERROR:
            # The interpreter may fail where the real compiler would have said why.
            report = backend.compile_check(module, log)
            if not report.ok:
                raise _Reject(Verdict.COMPILE_ERROR, report.message, report.message + "\n(runtime failure: " + rej.result.message + ")")
        raise

    # 4. what the toolchain says (registers, shared memory; Triton's sm_90 compile on CPU)
    _progress("harness", label="the toolchain's compile check")
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
        **oracle.facts(),
    )
    result.launches = list(log.launches)[:20]
    if stress is not None:
        result.stress_trials = [label for label, _ in stress.sets]
        result.degenerate = stress.degenerate
        if stress.degenerate:
            result.warnings.append(f"degenerate task: {stress.degenerate}")
    with _device_alone():  # the kernel profile's durations and the timing: nothing else on the device
        _own_share(result, new_model, sets[0], backend, log, device, options, cand_file)

        # 5. timing
        if options.timing:
            _time(result, ref_model, new_model, task, device, options, backend, cache, task_path, log, tolerance,
                  cand_file, oracle)
    result.feedback = _ok_feedback(result, oracle)
    return result


def _import_candidate(source: str, workdir: Path, log: LaunchLog) -> tuple[Any, Path]:
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    cand_dir = workdir / f"cand_{digest}"
    cand_dir.mkdir(parents=True, exist_ok=True)
    cand_file = cand_dir / "candidate.py"
    cand_file.write_text(source)
    log.clear()
    _progress("candidate", label="importing the candidate")
    try:
        return import_file(cand_file, f"evokernel_candidate_{digest}"), cand_file
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        status = Verdict.COMPILE_ERROR if (_is_compile_error(exc) or isinstance(exc, SyntaxError)) else Verdict.RUNTIME_ERROR
        raise _Reject(status, f"importing the candidate failed: {_short_traceback(exc, str(cand_file))}")


def _input_sets(task: Any, device: torch.device, options: EvalOptions) -> list[InputSet]:
    """The trials (fresh seeded inputs each), then every input group (drawn
    together at the first group, as the task returns them)."""
    host, precision = options.kernelbench_seeding, options.precision
    trial_seeds, _, _ = options.seeds()
    sets = [
        InputSet(f"trial {t + 1}",
                 lambda s=s: _inputs.draw(task.get_inputs, device, s, host_stream=host, precision=precision),
                 probe=lambda s=s: _inputs.draw(task.get_inputs, device, s, precision=precision))
        for t, s in enumerate(trial_seeds)
    ]
    groups = getattr(task, "get_input_groups", None)
    if callable(groups):
        drawn: list[list[Any]] = []

        def group(g: int) -> list[Any]:
            if not drawn:
                drawn.append(_inputs.draw(groups, device, options.seed, host_stream=host, precision=precision))
            return list(drawn[0][g])

        count = len(_task_step("drawing the input groups' shapes", lambda: _inputs.sizes_of(groups)))
        sets += [InputSet(f"input group {g}", lambda g=g: group(g)) for g in range(count)]
    return sets


def _plan_memory(task: Any, init_inputs: list[Any], device: torch.device, options: EvalOptions) -> None:
    """Refuse, with the numbers, a task whose evaluation cannot fit on the device."""
    flush = l2_flush_bytes(device) if device.type == "cuda" and options.timing and options.flush_l2 else 0

    budget, source = options.memory_budget_bytes, "the configured memory budget"
    if _device_workers > 1:  # each worker of a shared GPU keeps to its share (the allocator is held to it)
        share = torch.cuda.get_device_properties(device).total_memory // _device_workers
        if budget is None or share < budget:
            budget, source = share, f"1/{_device_workers} of the GPU's memory: {_device_workers} workers share it"

    def make() -> Any:
        return _memory.plan(task, init_inputs, device, flush_bytes=flush, budget_bytes=budget, budget_source=source)

    plan = _task_step("planning memory on the meta device", make)
    if not plan.fits:  # what an earlier candidate left may still be collectable
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
        plan = _task_step("planning memory on the meta device", make)
    _progress.plan = plan
    _progress("harness", plan=plan.to_dict())
    if not plan.fits:
        raise _Reject(Verdict.TASK_ERROR, plan.refusal(), memory=plan)


def _exact(oracle: Oracle, inputs: list[Any], expected: Any, label: str) -> Any:
    """The reference's outputs on `inputs` computed in float64 (None where it cannot run so: the oracle says why)."""
    _progress("harness", step=f"running the reference in float64 on {label}")
    return oracle.exact(inputs, expected)


def _check_trials(sets, ref_model, new_model, device, log, cand_file, tolerance, seen, oracle: Oracle):
    max_err, mean_errs = 0.0, []
    warnings: list[str] = []
    previous = None  # the candidate's last output, sampled: an output reused on new inputs shows up as equal
    for input_set in sets:
        label = input_set.label
        inputs = _task_step(f"drawing the inputs of {label}", input_set.draw)
        expected = _reference(ref_model, inputs, label, device)
        if label == "trial 1":
            _check_reference(ref_model, inputs, expected, device, tolerance)
        if seen is not None and label.startswith("trial"):
            seen.add(expected)
        exact = _exact(oracle, inputs, expected, label)  # once per input set, beside `expected`
        conditioning = oracle.conditioning(inputs, expected, exact)  # measured only if an element is past
        got = _run_guarded(new_model, inputs, log, label, cand_file, expected)
        cmp = compare(expected, got, tolerance, exact, conditioning)
        if not cmp.ok:
            now = fingerprint(got)
            if previous is not None and same_fingerprint(now, previous) and not is_constant(now):
                raise _stale(f"{label} returned the same output as the call before, on different inputs: an output kept "
                             "from an earlier call", cmp)
            del got
            _diagnose_wrong(new_model, inputs, log, label, cand_file, expected, cmp)
            raise _Reject(
                Verdict.WRONG_RESULT,
                f"wrong result on {label}: {cmp.feedback.split(';')[0]}",
                f"Wrong result on {label} (input shapes {_shapes(inputs)}): {cmp.feedback}",
                max_abs_error=cmp.max_abs_error,
                mean_abs_error=cmp.mean_abs_error,
                **oracle.facts(cmp),
            )
        oracle.note(cmp)
        max_err = max(max_err, cmp.max_abs_error)
        mean_errs.append(cmp.mean_abs_error)
        previous = fingerprint(got)
        if label == "trial 1":
            # Poison the output and run again with every fresh allocation filled
            # with a sentinel: unwritten elements, uninitialised memory and an
            # output kept from the first call all show now. The poisoned output
            # stays alive, so a fresh output cannot be handed its memory.
            poison_(got)
            again = _run_guarded(new_model, inputs, log, label + " (re-run after poisoning outputs)", cand_file, expected,
                                 fill_empty=True)
            cmp2 = compare(expected, again, tolerance, exact, conditioning)
            if not cmp2.ok:
                if _shares_storage(again, got):
                    raise _stale("the re-run returned the output of the first call (its memory was poisoned in between): "
                                 "an output kept from an earlier call", cmp2)
                unwritten = unwritten_share(again, expected)
                if unwritten >= 1.0:
                    raise _stale("the output is never written: every element still holds what the allocator handed out "
                                 "(uninitialised memory that passed only by holding stale values)", cmp2)
                raise _Reject(
                    Verdict.WRONG_RESULT,
                    "wrong result when re-run after its previous output was poisoned: the kernel leaves elements unwritten or returns stale memory",
                    "After the output memory of the first run was overwritten with NaN and the candidate was run again "
                    f"on the same inputs, with fresh allocations filled with NaN, it no longer matched ({100 * unwritten:.1f}% "
                    f"of the output never written): {cmp2.feedback}. Every output element must be written on every call.",
                    max_abs_error=cmp2.max_abs_error,
                    **oracle.facts(cmp2),
                )
            oracle.note(cmp2)
            del again
        inputs = expected = exact = got = None  # this set is done: free it before the next is drawn
    return max_err, mean_errs, warnings


def _check_reference(ref_model, inputs, expected, device, tolerance) -> None:
    """Run the reference a second time on trial 1: a reference that differs from itself is a task error;
    one that writes into its inputs lets the candidate do the same."""
    args = _clone(inputs)
    again = _task_step("running the reference twice", lambda: _no_grad_call(ref_model, args, device))
    _run_rules.reference_writes_inputs = bool(inputs_changed(inputs, args))
    problem = _stress.nondeterminism(expected, again, tolerance)
    if problem:
        raise _Reject(Verdict.TASK_ERROR, problem)


def _no_grad_call(model, args, device):
    with torch.no_grad():
        out = model(*args)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return out


def _stale(what: str, cmp) -> "_Reject":
    msg = f"{what} ({explain('stale-output', _run_rules.rules)})"
    return _Reject(Verdict.HACK, msg, f"{msg}. {cmp.feedback}", max_abs_error=cmp.max_abs_error)


def _shares_storage(a: Any, b: Any) -> bool:
    ptrs = {t.untyped_storage().data_ptr() for t in flatten(b) if isinstance(t, torch.Tensor) and t.numel()}
    return any(isinstance(t, torch.Tensor) and t.numel() and t.untyped_storage().data_ptr() in ptrs for t in flatten(a))


def _diagnose_wrong(model, inputs, log, label, cand_file, expected, cmp) -> None:
    """A wrong output that the candidate never wrote at all is cheating, not a bug: run once more with
    fresh allocations filled with a sentinel and count what is left of it."""
    again = _run_guarded(model, inputs, log, label + " (re-run with fresh allocations filled with NaN)", cand_file,
                         expected, fill_empty=True)
    if unwritten_share(again, expected) >= 1.0:
        raise _stale("the output is never written: every element holds whatever the allocator handed out "
                     "(an uninitialised output)", cmp)


def _own_share(result, model, input_set, backend, log, device, options, cand_file) -> None:
    """On a GPU: own kernels' share of the device time (backends/_share.py), side streams, the lazy rule."""
    if device.type != "cuda":
        return
    inputs = _task_step(f"drawing the inputs of {input_set.label}", input_set.draw_probe)
    own = getattr(backend, "own_kernel_names", None)
    # Cloned before the profiled call: the harness's copies are not the candidate's library time
    # (inside, they halved an elementwise kernel's share on the H200).
    args = _clone(inputs)

    def call() -> None:  # profiled once (backends/_share.py)
        log.clear()
        with torch.no_grad():
            model(*args)

    def names() -> set[str]:
        return set(own(log)) if callable(own) else {e["name"] for e in log.launches}

    _progress("candidate", label="profiling the candidate's kernels")
    try:
        report = _share.measure(call, names, device)
    except Exception as exc:  # the profiler itself failing says nothing about the candidate
        result.warnings.append(f"own-kernel share not measured: {type(exc).__name__}: {str(exc)[:200]}")
        return
    finally:
        _progress("harness")
    if report is None:
        return
    result.own_kernel_share = report.share
    result.slowest_kernel, result.slowest_kernel_share = report.slowest, report.slowest_share
    if report.side_streams:
        msg = (f"{report.side_streams} GPU activities ran on a stream other than the harness's "
               f"({explain('stream', options.rules)})")
        raise _Reject(Verdict.HACK, msg, msg + ". Launch every kernel on the current stream.")
    share = report.share
    if report.own_us == 0 and report.library_us > 0:
        # A call into the extension is not a kernel: one that only calls libraries is a decoy.
        msg = (f"none of the candidate's own kernels ran on the GPU ({report.describe()}) "
               f"({explain('no-launch', options.rules)})")
        raise _Reject(Verdict.DISALLOWED, msg, msg, own_kernel_share=0.0)
    # Under strict every computation is already the candidate's; the share is a kernelbench rule.
    if share is not None and options.rules == "kernelbench" and share < options.min_own_share:
        msg = (f"lazy: own kernels did {100 * share:.1f}% of the GPU time, below --min-own-share "
               f"{100 * options.min_own_share:.0f}% ({explain('lazy', options.rules)})")
        raise _Reject(Verdict.DISALLOWED, msg, f"{msg}; {report.describe()}", own_kernel_share=share)
    if share is not None:
        result.warnings.append(report.describe())


def _shapes(inputs: list[Any]) -> str:
    return ", ".join(f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}" if isinstance(x, torch.Tensor) else repr(x) for x in inputs)


def _run_guarded(model, inputs, log: LaunchLog, label: str, cand_file: Path, expected: Any, *, fill_empty: bool = False) -> Any:
    log.clear()
    # Fill the allocator's free blocks with garbage so a kernel that skips
    # elements cannot pick up correct values left behind by the reference.
    _poison_free_memory(expected)
    _progress("candidate", label=f"running the candidate on {label}")
    trace = _off_gpu.trace(str(cand_file))
    try:
        args = _clone(inputs)
        with torch.no_grad(), no_side_streams(log), record_ops(log, fill_empty=fill_empty) as ops, trace:
            out = model(*args)
        if inputs and isinstance(inputs[0], torch.Tensor) and inputs[0].is_cuda:
            torch.cuda.synchronize()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        _unverified_if_off_gpu(trace)
        if isinstance(exc, SideStreamUsed):
            msg = f"ModelNew.forward used a side stream: {exc} ({explain('stream', _run_rules.rules)})"
            raise _Reject(Verdict.HACK, msg, msg + ". Launch every kernel on the current stream.") from None
        if _memory.is_out_of_memory(exc):
            rej = _Reject(Verdict.RUNTIME_ERROR, f"out of memory on {label}: the candidate's forward ran out of memory "
                          f"({_memory.free_now(_progress.device)} free after it failed): {_short_traceback(exc, str(cand_file))}")
            rej.out_of_memory = True
            rej.result.retire_worker = _progress.device.type != "cuda"  # a host allocator may be left broken
            raise rej from None
        status = Verdict.COMPILE_ERROR if _is_compile_error(exc) else Verdict.RUNTIME_ERROR
        rej = _Reject(status, f"forward failed on {label}: {_short_traceback(exc, str(cand_file))}")
        rej.result.retire_worker = is_cuda_error(exc)
        raise rej
    finally:
        _progress("harness")
    _unverified_if_off_gpu(trace)
    changed = inputs_changed(inputs, args)
    del args
    if expected is not None:
        _run_rules.note_task(inputs, expected)
    breaches = _run_rules.breaches(ops, bool(log.launches), out, _progress.device, changed)
    if breaches:
        status, message, feedback = _run_rules.verdict(breaches[0])
        raise _Reject(status, message, feedback)
    return out


def _unverified_if_off_gpu(trace: Any) -> None:
    """A run that reached compute only reachable off the GPU verified nothing about the GPU path."""
    reached = _off_gpu.reached(trace)
    if reached:
        msg = off_accelerator_message(reached, str(_progress.device))
        raise _Reject(Verdict.UNVERIFIED, msg, msg + ". Off the GPU the candidate's own fallback ran instead of its kernels.")


def _poison_free_memory(expected: Any) -> None:
    if expected is None:
        return
    for leaf in flatten(expected):
        if isinstance(leaf, torch.Tensor) and leaf.is_cuda:
            try:
                junk = torch.empty_like(leaf)
            except torch.OutOfMemoryError:
                return  # best effort: no room for the junk is no reason to fail anyone
            if junk.is_floating_point():
                junk.fill_(float("nan"))
            else:
                junk.fill_(-1 if junk.dtype != torch.bool else True)
            del junk


def _time(result, ref_model, new_model, task, device, options, backend, cache, task_path, log, tolerance, cand_file,
          oracle: Oracle) -> None:
    _, timing_seed, recheck_seed = options.seeds()
    host = options.kernelbench_seeding
    if device.type == "cuda":
        _copy_bandwidth(device)  # its 2 GiB of buffers come and go before the inputs are drawn
    inputs = _task_step("drawing the timing inputs", lambda: _inputs.draw(
        task.get_inputs, device, timing_seed, host_stream=host, precision=options.precision))

    def make_args():
        return tuple(_clone(inputs))

    if device.type != "cuda":
        # A backend that models latency (Ascend C's CPU model) answers from the
        # launches of one forward call on the timing inputs.
        _run_guarded(new_model, inputs, log, "timing inputs", cand_file, None)
        modelled = backend.modelled_latency_ms(log, str(device))
        if modelled is not None:
            result.latency_ms, result.latency_iqr_ms, result.latency_samples_ms = modelled, 0.0, [modelled]
            result.latency_source = LatencySource(backend.latency_source(str(device)))
            result.timing_method = "modelled from the kernel's counted traffic and vector instructions"
            return
        t = _timed_candidate(new_model, make_args, device, options, cand_file, reps=options.cpu_reps, warmup=1)
        result.latency_ms, result.latency_iqr_ms, result.latency_samples_ms = t.median_ms, t.iqr_ms, t.samples_ms
        result.latency_source = LatencySource(backend.latency_source(str(device)))
        result.timing_method = t.method
        return

    with log.quieted():
        t = _timed_candidate(new_model, make_args, device, options, cand_file)
    result.latency_ms, result.latency_iqr_ms, result.latency_samples_ms = t.median_ms, t.iqr_ms, t.samples_ms
    result.latency_source = LatencySource.MEASURED_GPU
    result.timing_method = t.method
    compiled = None  # the reference under torch.compile, while its output is still to be checked
    if options.baselines:
        key = (str(Path(task_path).resolve()), options.size, str(options.kernelbench_seeding), str(device),
               options.precision)
        if key not in cache.baselines:
            base = {}
            tb = _task_step("timing the eager baseline", lambda: benchmark(
                ref_model, make_args, device=device, reps=options.reps, warmup=options.warmup, flush_l2=options.flush_l2))
            base["eager_ms"] = tb.median_ms
            if options.compile_baseline:
                _progress("harness", step=COMPILE_BASELINE_STEP)
                try:
                    # Only the reference runs here, so inductor may start its compile workers.
                    # the baseline's Triton launches go through the same hooks: quiet, as the candidate's were
                    with harness(), _time_limit(options.compile_baseline_timeout_s), log.quieted():
                        compiled = torch.compile(ref_model)
                        tc = benchmark(compiled, make_args, device=device, reps=options.reps, warmup=options.warmup, flush_l2=options.flush_l2)
                    base["compile_ms"] = tc.median_ms
                except Exception as exc:  # no compiler toolchain is not the candidate's failure
                    compiled = None
                    if _caused_by(exc, _OutOfTime):  # dynamo wraps what its backend raised
                        result.warnings.append("torch.compile baseline left out: not compiled and timed within "
                                               f"{options.compile_baseline_timeout_s:g} s")
                        result.retire_worker = True  # inductor was stopped mid-way: its state is not trusted further
                    else:
                        result.warnings.append(f"torch.compile baseline failed: {type(exc).__name__}: {str(exc)[:200]}")
            cache.baselines[key] = base
        result.baselines = Baselines(**cache.baselines[key])
        eager = result.baselines.eager_ms
        if eager and result.latency_ms and eager / result.latency_ms > options.speedup_flag:
            result.warnings.append(
                f"speedup over eager is {eager / result.latency_ms:.1f}x (> {options.speedup_flag:g}x): check by hand before trusting it"
            )
    # Re-check correctness after timing: state kept across calls must not change the answer.
    del inputs, make_args
    fresh = _task_step("drawing the re-check inputs", lambda: _inputs.draw(
        task.get_inputs, device, recheck_seed, host_stream=host, precision=options.precision))
    expected = _reference(ref_model, fresh, "the re-check after timing", device)
    exact = _exact(oracle, fresh, expected, "the re-check after timing")
    conditioning = oracle.conditioning(fresh, expected, exact)
    if compiled is not None:
        # checked before the candidate's re-check, which may reject it: the baseline is the task's, cached
        with harness(), log.quieted():
            check = compiled_output_check(compiled, fresh, expected, tolerance, exact, conditioning,
                                          time_limit_s=options.compile_baseline_timeout_s)
        cache.baselines[key].update(check.baseline_fields())
        result.baselines = Baselines(**cache.baselines[key])
        result.retire_worker = result.retire_worker or check.out_of_time
        del compiled
    got = _run_guarded(new_model, fresh, log, "re-check after timing", cand_file, expected)
    _roofline_flag(result, fresh, got, device)
    cmp = compare(expected, got, tolerance, exact, conditioning)
    if not cmp.ok:
        raise _Reject(Verdict.WRONG_RESULT, "wrong result on the re-check after timing", cmp.feedback, **oracle.facts(cmp))
    for name, value in oracle.facts(cmp).items():
        setattr(result, name, value)


@dataclasses.dataclass(frozen=True)
class CompiledCheck:
    """torch.compile's output on the re-check inputs, judged as a candidate's is (Baselines' fields)."""

    compile_correct: bool | None
    compile_check: str
    out_of_time: bool = False  # stopped by the time limit: inductor's state is not trusted further

    def baseline_fields(self) -> dict[str, Any]:
        return {"compile_correct": self.compile_correct, "compile_check": self.compile_check}


def compiled_output_check(compiled: Callable[..., Any], inputs: list[Any], expected: Any,
                          tolerance: tuple[float, float] | None, exact: Any,
                          conditioning: Callable[[], Any] | None, *, time_limit_s: float = 0.0) -> CompiledCheck:
    """Run `compiled` (the reference under torch.compile) on `inputs`, within `time_limit_s` (0: no
    limit), and compare its output with the reference's by the candidate's rules. Never raises: a
    failure to run is recorded as not checked."""
    try:
        with torch.no_grad(), _time_limit(time_limit_s):
            got = compiled(*_clone(inputs))
    except Exception as exc:  # the check is a note on the baseline, never the candidate's verdict
        if _caused_by(exc, _OutOfTime):
            return CompiledCheck(None, f"not checked: torch.compile's run took more than {time_limit_s:g} s", True)
        first = str(exc).splitlines()[0][:160] if str(exc) else ""
        return CompiledCheck(None, f"not checked: {type(exc).__name__}: {first}")
    try:
        cmp = compare(expected, got, tolerance, exact, conditioning)
    except Exception as exc:
        return CompiledCheck(None, f"not checked: comparing its output failed: {type(exc).__name__}: {str(exc)[:160]}")
    if cmp.ok:
        return CompiledCheck(True, f"within the check (max abs error {cmp.max_abs_error:.2g})")
    return CompiledCheck(False, " ".join(cmp.feedback.split())[:240])


class _OutOfTime(Exception):
    """Raised by _time_limit's alarm."""


def _caused_by(exc: BaseException | None, kind: type[BaseException]) -> bool:
    """Whether `exc` or an exception it was raised from (its cause or context chain) is a `kind`."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise _OutOfTime in this block after `seconds` (SIGALRM: the worker's main thread only; elsewhere no limit)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(signum: int, frame: Any) -> None:
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _timed_candidate(model, make_args, device, options, cand_file, *, reps=None, warmup=None):
    """The candidate's timed runs; a failure there is the candidate's (out of memory included)."""
    _progress("candidate", label="timing the candidate")
    try:
        return benchmark(model, make_args, device=device, reps=options.reps if reps is None else reps,
                         warmup=options.warmup if warmup is None else warmup, flush_l2=options.flush_l2)
    except Exception as exc:
        if _memory.is_out_of_memory(exc):
            msg = f"out of memory while timing: the candidate ran out of memory ({_memory.free_now(device)} free after it failed)"
        else:
            msg = f"forward failed while timing: {_short_traceback(exc, str(cand_file))}"
        rej = _Reject(Verdict.RUNTIME_ERROR, msg)
        rej.result.retire_worker = is_cuda_error(exc)
        rej.out_of_memory = _memory.is_out_of_memory(exc)
        raise rej from None
    finally:
        _progress("harness")


_copy_bw: dict[str, float] = {}


def _copy_bandwidth(device: torch.device) -> float:
    from ._timing import copy_bandwidth_gbps

    key = str(device)
    if key not in _copy_bw:
        _copy_bw[key] = _task_step("measuring the device's copy bandwidth", lambda: copy_bandwidth_gbps(device))
    return _copy_bw[key]


def _roofline_flag(result: EvalResult, inputs: list[Any], outputs: Any, device: torch.device) -> None:
    """Achieved bandwidth (inputs read once + outputs written once, over the
    latency) against a device copy measured in this worker; flag a latency
    below the time to read the inputs once."""
    in_bytes = sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))
    out_bytes = sum(x.numel() * x.element_size() for x in flatten(outputs) if isinstance(x, torch.Tensor))
    if not result.latency_ms:
        return
    key = str(device)
    _copy_bandwidth(device)
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


def _ok_feedback(result: EvalResult, oracle: Oracle) -> str:
    parts = [f"Correct on {result.trials} input sets (max abs error {result.max_abs_error:.3g}).", oracle.describe()]
    if result.latency_ms is not None:
        parts.append(f"Latency {result.latency_ms:.4f} ms ({result.latency_source}).")
    if result.speedup_eager is not None:
        parts.append(f"Eager {result.baselines.eager_ms:.4f} ms: speedup {result.speedup_eager:.2f}x.")
    if result.speedup_compile is not None:
        parts.append(f"torch.compile {result.baselines.compile_ms:.4f} ms: speedup {result.speedup_compile:.2f}x"
                     + (" (torch.compile's own output fails this check)." if result.baselines.compile_correct is False else "."))
    for k in result.kernels[:4]:
        if k.summary():
            parts.append(f"Kernel {k.name}: {k.summary()}.")
    parts.extend(result.warnings)
    return " ".join(p for p in parts if p)


__all__ = ["EvalOptions", "InputSet", "KERNELBENCH_SEED", "Progress", "TaskCache", "evaluate", "is_cuda_error"]
