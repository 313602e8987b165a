"""Two feasible kernels of one task re-timed in alternation, in one worker.

What a skill's admission rests on: the kernel before a change (the baseline)
and the kernel after it (the candidate) are imported side by side, checked
once against the reference on the timing inputs, and timed round after round
with the one timing function (`_timing.benchmark`), the order flipped each
round (A B, B A, A B, ...) so a slow drift of the machine does not favour
either. Same worker, same inputs, same conditions: the ratio of their medians
is the speedup the change reproduces.

The parent sends `{"kind": "retime", ...}` as an ordinary job
(`retime_job`); the worker answers with an `EvalResult` (its status says
whether both kernels ran) and this module's report beside it, so crashes,
timeouts and sandbox limits come back as verdicts exactly as for `evaluate`.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
import traceback
from pathlib import Path
from typing import Any

from ._result import EvalResult, LatencySource, Verdict

RETIME_KIND = "retime"


@dataclasses.dataclass(frozen=True)
class RetimeReport:
    """The alternating re-timing of a baseline and a candidate kernel.

    `rounds` holds each alternation's medians as (baseline_ms, candidate_ms);
    `speedup` is the median of the per-round ratios baseline/candidate, so one
    disturbed round cannot make or break it. `status` is `ok` when both kernels
    ran, matched the reference and were timed; otherwise the verdict that
    stopped the re-timing and no latencies.
    """

    status: Verdict
    message: str = ""
    baseline_ms: float | None = None
    candidate_ms: float | None = None
    speedup: float | None = None
    rounds: tuple[tuple[float, float], ...] = ()
    latency_source: LatencySource = LatencySource.NONE
    timing_method: str = ""
    seconds: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "latency_source", LatencySource(self.latency_source))

    @property
    def ok(self) -> bool:
        return self.status is Verdict.OK and self.speedup is not None

    @property
    def reruns(self) -> int:
        return len(self.rounds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value, "message": self.message, "baseline_ms": self.baseline_ms,
            "candidate_ms": self.candidate_ms, "speedup": self.speedup, "rounds": [list(r) for r in self.rounds],
            "reruns": self.reruns, "latency_source": self.latency_source.value, "timing_method": self.timing_method,
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RetimeReport":
        return cls(
            status=Verdict(d.get("status", "runtime_error")), message=str(d.get("message", "")),
            baseline_ms=d.get("baseline_ms"), candidate_ms=d.get("candidate_ms"), speedup=d.get("speedup"),
            rounds=tuple((float(a), float(b)) for a, b in d.get("rounds") or ()),
            latency_source=LatencySource(d.get("latency_source") or "none"), timing_method=str(d.get("timing_method", "")),
            seconds=float(d.get("seconds") or 0.0),
        )

    @classmethod
    def failed(cls, result: EvalResult) -> "RetimeReport":
        """A re-timing the worker could not finish (crash, timeout, a kernel that no longer runs)."""
        status = result.status if result.status is not Verdict.OK else Verdict.RUNTIME_ERROR
        return cls(status=status, message=result.message or "the re-timing did not finish", seconds=result.seconds)


def retime_job(task_path: str | Path, baseline: str, candidate: str, *, backend: str, options: Any,
               rounds: int) -> dict[str, Any]:
    """The job line the parent sends; `options` is an `EvalOptions` (size, rules, reps, seeds)."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    return {
        "kind": RETIME_KIND, "task_path": str(Path(task_path).resolve()), "backend": backend,
        "source": candidate, "baseline_source": baseline, "rounds": int(rounds), "options": options.to_dict(),
    }


def report_from_reply(result: EvalResult, reply: dict[str, Any] | None) -> RetimeReport:
    """The parent's reading of a reply: the worker's report when it finished, else a failed one."""
    if result.status is Verdict.OK and reply and isinstance(reply.get("retime"), dict):
        return RetimeReport.from_dict(reply["retime"])
    return RetimeReport.failed(result)


# --- the worker's side ---------------------------------------------------------


class _Stop(Exception):
    def __init__(self, status: Verdict, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def retime(job: dict[str, Any], *, backend: Any, log: Any, device: Any, workdir: Path, compile_only: bool,
           progress: Any) -> tuple[EvalResult, dict[str, Any] | None]:
    """Run one retime job inside the worker; never raises (failures are the result's verdict)."""
    from ._options import EvalOptions
    from ._task import task_size

    t0 = time.perf_counter()
    options = EvalOptions.from_dict(job.get("options"))
    try:
        if compile_only:
            raise _Stop(Verdict.COMPILED, "kernels cannot run on this device: nothing to time")
        with task_size(options.size):
            report = _retime(job, options, backend, log, device, workdir, progress)
    except _Stop as stop:
        return EvalResult(stop.status, stop.message, feedback=stop.message, seconds=time.perf_counter() - t0), None
    except Exception as exc:  # the harness must answer, whatever happened
        msg = f"re-timing failed: {type(exc).__name__}: {str(exc)[:500]}"
        result = EvalResult(Verdict.RUNTIME_ERROR, msg, feedback=msg, seconds=time.perf_counter() - t0)
        result.warnings.append("internal: " + traceback.format_exc(limit=4))
        return result, None
    report = dataclasses.replace(report, seconds=time.perf_counter() - t0)
    result = EvalResult(Verdict.OK, report.message, latency_ms=report.candidate_ms, latency_source=report.latency_source,
                        timing_method=report.timing_method, device=str(device), seconds=report.seconds)
    return result, report.to_dict()


def _retime(job, options, backend, log, device, workdir, progress) -> RetimeReport:
    import torch

    from . import _inputs
    from ._compare import compare
    from ._evaluate import _Reject, _import_candidate
    from ._oracle import Oracle
    from ._precision import cast_model, cast_values
    from ._static import static_rejection
    from ._task import load_task_module
    from ._timing import benchmark

    sources = {"baseline": job["baseline_source"], "candidate": job["source"]}
    for side, source in sources.items():
        rejected = static_rejection(source, backend, options.rules)
        if rejected is not None:  # a source that no longer passes is not re-timed
            raise _Stop(rejected.status, f"the {side} kernel is refused: {rejected.message}")
    progress("harness")

    def make_args() -> tuple[Any, ...]:
        return tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in inputs)

    try:  # the task's side: its failures say nothing about either kernel
        task = load_task_module(job["task_path"], size=options.size)
        tolerance = getattr(task, "TOLERANCE", None)
        tolerance = options.tolerance(tuple(float(v) for v in tolerance) if tolerance is not None else None)
        _inputs.seed_all(options.seed)
        init_inputs = cast_values(list(task.get_init_inputs()), options.precision)
        _inputs.seed_all(options.seed)
        reference = cast_model(task.Model(*init_inputs).to(device).eval(), options.precision)
        _, timing_seed, _ = options.seeds()
        inputs = _inputs.draw(task.get_inputs, device, timing_seed, host_stream=options.kernelbench_seeding,
                              precision=options.precision)
        with torch.no_grad():
            expected = reference(*make_args())
    except Exception as exc:
        raise _Stop(Verdict.TASK_ERROR, f"the task failed: {type(exc).__name__}: {str(exc)[:300]}") from None

    # judged as the evaluation judges: past the tolerance against the reference, against its float64
    # run too, so a kernel the evaluation accepted by accuracy (another TF32 algorithm, a reordered sum)
    # is not refused here. The float64 run and its conditioning (a cached call) are made once, on the
    # pristine inputs (the kernels run on clones), and only when a side needs them.
    oracle = Oracle(reference, device)
    judge: list[tuple[Any, Any]] = []

    def judged(got: Any) -> Any:
        cmp = compare(expected, got, tolerance)
        if cmp.ok:
            return cmp
        if not judge:
            exact = oracle.exact(list(inputs), expected)
            judge.append((exact, oracle.conditioning(list(inputs), expected, exact)))
        return compare(expected, got, tolerance, *judge[0])

    models = {}
    for side, source in sources.items():
        progress("candidate")
        try:
            module, _ = _import_candidate(source, workdir, log)
            _inputs.seed_all(options.seed)
            model = module.ModelNew(*init_inputs)
            if isinstance(model, torch.nn.Module):
                model = cast_model(model.to(device).eval(), options.precision)
            log.clear()
            with torch.no_grad():
                got = model(*make_args())
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        except _Reject as rej:
            raise _Stop(rej.result.status, f"the {side} kernel: {rej.result.message}") from None
        except Exception as exc:
            raise _Stop(Verdict.RUNTIME_ERROR, f"the {side} kernel failed: {type(exc).__name__}: {str(exc)[:300]}") from None
        finally:
            progress("harness")
        cmp = judged(got)
        if not cmp.ok:
            raise _Stop(Verdict.WRONG_RESULT, f"the {side} kernel no longer matches the reference: {cmp.feedback[:300]}")
        modelled = backend.modelled_latency_ms(log, str(device)) if device.type != "cuda" else None
        models[side] = (model, modelled)
        del got

    on_gpu = device.type == "cuda"
    reps = options.reps if on_gpu else options.cpu_reps
    warmup = options.warmup if on_gpu else 1
    rounds: list[tuple[float, float]] = []
    method = ""
    for r in range(int(job["rounds"])):
        order = ("baseline", "candidate") if r % 2 == 0 else ("candidate", "baseline")
        medians: dict[str, float] = {}
        for side in order:
            model, modelled = models[side]
            if modelled is not None:  # a backend that models latency answers the same every round
                medians[side], method = modelled, "modelled from the kernel's counted traffic and vector instructions"
                continue
            progress("candidate")
            try:
                timing = benchmark(model, make_args, device=device, reps=reps, warmup=warmup, flush_l2=options.flush_l2)
            except Exception as exc:
                raise _Stop(Verdict.RUNTIME_ERROR,
                            f"the {side} kernel failed while timing: {type(exc).__name__}: {str(exc)[:300]}") from None
            finally:
                progress("harness")
            medians[side], method = timing.median_ms, timing.method
        rounds.append((medians["baseline"], medians["candidate"]))
    ratios = [b / c for b, c in rounds if c > 0]
    baseline_ms = statistics.median(b for b, _ in rounds)
    candidate_ms = statistics.median(c for _, c in rounds)
    speedup = statistics.median(ratios) if ratios else None
    n = len(rounds)
    return RetimeReport(
        status=Verdict.OK,
        message=f"re-timed in {n} alternations: baseline {baseline_ms:.4g} ms, candidate {candidate_ms:.4g} ms"
                + (f", speedup {speedup:.3g}x" if speedup else ""),
        baseline_ms=baseline_ms, candidate_ms=candidate_ms, speedup=speedup, rounds=tuple(rounds),
        latency_source=backend.latency_source(str(device)),
        timing_method=f"{n} alternations (order flipped each round), each: {method}",
    )
