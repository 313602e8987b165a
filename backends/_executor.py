"""The parent side of isolation: worker processes, timeouts, verdicts for
crashes and hangs.

Each worker is a fresh Python process in its own session (so a timeout kills
its whole process group, compilers included), pinned to one device through
CUDA_VISIBLE_DEVICES. A worker is reused across candidates for speed (torch
import, CUDA context, task modules and baselines stay warm) and retired after
a crash, a timeout or a CUDA error, since an illegal access poisons the context.
"""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from ._device_lock import DeviceShare
from ._options import COMPILE_BASELINE_STEP, EvalOptions
from ._result import EvalResult, MemoryPlan, Verdict
from ._retime import RetimeReport, report_from_reply, retime_job
from ._sandbox import ENV_VAR as SANDBOX_ENV_VAR
from ._cache import build_cache
from ._sandbox import (SandboxLimits, limit_in_text, limit_signal_message, mask_obj, namespace_wrapper,
                       worker_build_cache, worker_env)

_PROJECT_ROOT = str(Path(__file__).resolve().parent.parent)


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def physical_gpu(device: str, visible: str | None) -> str:
    """The CUDA_VISIBLE_DEVICES value that pins a worker to `device` ("cuda:N", numbered
    as this process sees GPUs): the N-th entry of this process's own list when it has one."""
    index = int(device.partition(":")[2] or 0)
    listed = [d.strip() for d in (visible or "").split(",") if d.strip()]
    return listed[index] if index < len(listed) else str(index)


# The longest a worker may wait for its shared GPU before it counts as hung: far above any other
# worker's timeout, each of which releases the GPU when it strikes.
_WAIT_CAP_S = 24 * 3600.0


class WorkerError(RuntimeError):
    pass


class Worker:
    """One child process and the pipes to it."""

    def __init__(
        self,
        device: str,
        *,
        env: dict[str, str] | None = None,
        start_timeout_s: float = 120.0,
        sandbox: SandboxLimits | None = None,
        device_share: DeviceShare | None = None,
    ):
        self.device = device
        self.dir = Path(tempfile.mkdtemp(prefix="evokernel-worker-"))
        self.stderr_path = self.dir / "stderr.log"
        self._stderr = open(self.stderr_path, "wb")
        child_env = dict(os.environ if env is None else env)
        # Sandbox: an allow-listed environment (no keys), a network namespace
        # through `unshare`, and the settings the worker applies to itself.
        sandbox = sandbox if sandbox is not None and sandbox.enabled else None
        self.limits = sandbox.resolved(device) if sandbox else {}
        self.sandbox_info: dict[str, Any] = {}
        prefix: list[str] = []
        # The worker is told its device, directory and build cache as arguments; its
        # environment carries only what the tools it runs read (CUDA, Triton, Python).
        cache = build_cache()
        if sandbox:
            prefix, mode = ([], "none") if sandbox.network else namespace_wrapper()
            cache = worker_build_cache(self.dir, sandbox, cache)
            child_env = worker_env(child_env, self.dir, _PROJECT_ROOT, device, sandbox, mode, build_cache=cache)
        else:
            child_env.pop(SANDBOX_ENV_VAR, None)  # an outer sandbox's settings must not switch this one on
        child_env["PYTHONPATH"] = os.pathsep.join(p for p in (_PROJECT_ROOT, child_env.get("PYTHONPATH", "")) if p)
        child_env["PYTHONUNBUFFERED"] = "1"
        if device.startswith("cuda"):
            child_env["CUDA_VISIBLE_DEVICES"] = physical_gpu(device, child_env.get("CUDA_VISIBLE_DEVICES"))
            worker_device = "cuda:0"
        else:
            worker_device = "cpu"
            child_env["TRITON_INTERPRET"] = "1"  # Triton kernels run on the CPU interpreter
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "backends._worker", "--device", worker_device, "--dir", str(self.dir),
             "--cache-dir", str(cache),
             *(["--device-lock", device_share.path, "--device-workers", str(device_share.workers)]
               if device_share is not None and device.startswith("cuda") else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=child_env,
            cwd=str(self.dir),
            start_new_session=True,  # own process group: a timeout kills compilers too
        )
        self._buffer = b""
        self.jobs_done = 0
        # What the current job's worker said it was doing: "harness" or "candidate", and its memory plan.
        self.phase: str | None = None
        self.step: str | None = None  # the harness's step, while phase is "harness"
        self.candidate_ran = False
        self.plan: dict[str, Any] | None = None
        hello = self._read_line(time.monotonic() + start_timeout_s)
        if hello is None or not hello.get("ready"):
            tail = self.stderr_tail()
            self.kill()
            limit = limit_in_text(tail, self.limits)
            raise WorkerError(f"worker failed to start: {limit + ': ' if limit else ''}{tail or 'no output'}")
        self.sandbox_info = hello.get("sandbox") or {}

    def _read_line(self, deadline: float) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                if not sel.select(remaining):
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None  # EOF: the worker died
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def _read_reply(self, deadline: float) -> dict[str, Any] | None:
        """The job's reply, noting the progress lines that come before it. Time the worker spends
        waiting for its GPU (shared with other workers, backends/_device_lock.py) is not counted: the
        deadline stops while it waits (a worker holding the GPU is under its own timeout)."""
        left_at_wait: float | None = None
        while True:
            msg = self._read_line(deadline)
            if msg is not None and "waiting" in msg:
                now = time.monotonic()
                if msg["waiting"] and left_at_wait is None:
                    left_at_wait, deadline = deadline - now, now + _WAIT_CAP_S
                elif not msg["waiting"] and left_at_wait is not None:
                    deadline, left_at_wait = now + left_at_wait, None
            if msg is None or "phase" not in msg:
                return msg
            self.phase = msg["phase"]
            self.step = msg.get("step") if self.phase == "harness" else None
            self.candidate_ran = self.candidate_ran or self.phase == "candidate"
            if isinstance(msg.get("plan"), dict):
                self.plan = msg["plan"]

    def stderr_tail(self, start: int = 0, limit: int = 2000) -> str:
        try:
            data = self.stderr_path.read_bytes()[start:]
        except OSError:
            return ""
        text = data.decode(errors="replace")
        # Library warnings are noise for the LLM; keep the lines that explain the failure.
        lines = [ln for ln in text.splitlines() if "Warning" not in ln and "warn_once" not in ln]
        return "\n".join(lines)[-limit:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, job: dict[str, Any], timeout_s: float) -> tuple[EvalResult, bool]:
        """Returns the result and whether the worker must be retired."""
        result, retire = self._run(job, timeout_s)
        result.sandbox = result.sandbox or dict(self.sandbox_info)
        limit = limit_in_text(result.message + "\n" + result.feedback, self.limits)
        if limit and result.status in (Verdict.RUNTIME_ERROR, Verdict.COMPILE_ERROR, Verdict.CRASH, Verdict.TASK_ERROR):
            # MemoryError, std::bad_alloc, EFBIG: a sandbox limit was hit. Out of
            # memory in the candidate is its runtime error; in the task, a task error.
            if "address-space" in limit and result.status is not Verdict.TASK_ERROR:
                result.status = Verdict.RUNTIME_ERROR
                limit = f"out of memory: {limit}"
            elif result.status is not Verdict.TASK_ERROR:
                result.status = Verdict.CRASH
            result.message = f"{limit}: {result.message}"
            result.feedback = f"{limit}. {result.feedback}"
            retire = True  # the allocator may be left in a bad state
        return result, retire

    def _run(self, job: dict[str, Any], timeout_s: float) -> tuple[EvalResult, bool]:
        assert self.proc.stdin is not None
        offset = self.stderr_path.stat().st_size if self.stderr_path.exists() else 0
        t0 = time.monotonic()
        self.phase, self.step, self.candidate_ran, self.plan = None, None, False, None
        self.last_reply: dict[str, Any] | None = None  # the whole reply (a retime job's report rides beside its result)
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
            reply = self._read_reply(t0 + timeout_s)
        except TimeoutError:
            self.kill()
            where = f" while the harness was {self.step}" if self.phase == "harness" and self.step else ""
            if not self.candidate_ran and self.phase is not None:
                msg = (f"timed out after {timeout_s:g} s before the candidate's code ran{where} (the task's inputs or "
                       "reference are too slow here for this timeout); the worker was killed")
                return EvalResult(Verdict.TASK_ERROR, msg, feedback=msg, seconds=time.monotonic() - t0), True
            if self.phase == "harness" and self.step:
                # Every candidate call ends with a device synchronisation before the harness
                # takes over, so time spent in a harness step is the task's or the harness's.
                hint = "; try --no-compile-baseline" if self.step == COMPILE_BASELINE_STEP else ""
                msg = (f"timed out after {timeout_s:g} s{where}, not in the candidate's code (the task's reference, "
                       f"inputs or baselines are too slow here for this timeout{hint}); the worker was killed")
                return EvalResult(Verdict.TASK_ERROR, msg, feedback=msg, seconds=time.monotonic() - t0), True
            return EvalResult(
                Verdict.TIMEOUT,
                f"timed out after {timeout_s:g} s: the kernel hung or ran far too long; its process group was killed",
                seconds=time.monotonic() - t0,
            ), True
        except (BrokenPipeError, OSError):
            reply = None
        if reply is None:
            rc = self.proc.wait(timeout=10)
            what = _signal_name(rc) if rc < 0 else f"exit code {rc}"
            if rc == -signal.SIGSEGV:
                what = "segmentation fault (SIGSEGV): an out-of-bounds access or a bad pointer"
            elif rc == -signal.SIGABRT:
                what = "abort (SIGABRT)"
            tail = self.stderr_tail(offset)
            limit = limit_signal_message(rc, self.limits)
            if limit:  # SIGXCPU, SIGXFSZ: a sandbox limit was hit
                status = Verdict.TIMEOUT if rc == -signal.SIGXCPU else Verdict.CRASH
                return EvalResult(status, limit, feedback=limit, seconds=time.monotonic() - t0), True
            blamed = self._blame_task(rc, what)
            if blamed is not None:
                blamed.seconds = time.monotonic() - t0
                return blamed, True
            msg = f"the candidate crashed the worker: {what}"
            if rc == -signal.SIGKILL:
                msg += " (killed from outside while the candidate ran; the likeliest cause is the out-of-memory killer)"
            elif self.phase == "harness":
                msg += " (in the harness, after the candidate's code ran: it may have corrupted the process)"
            return EvalResult(
                Verdict.CRASH, msg, feedback=msg + (f"\nLast output:\n{tail}" if tail else ""), seconds=time.monotonic() - t0
            ), True
        self.jobs_done += 1
        self.last_reply = reply
        if "error" in reply:
            msg = f"internal executor error: {reply['error']}"
            return EvalResult(Verdict.RUNTIME_ERROR, msg, warnings=[reply.get("traceback", "")]), True
        return EvalResult.from_dict(reply["result"]), bool(reply.get("retire"))

    def _blame_task(self, rc: int, what: str) -> EvalResult | None:
        """A worker that died while only the harness and the task had run, or was
        killed (SIGKILL: the out-of-memory killer) while the harness ran, says
        nothing about the candidate: a task error, with the memory plan."""
        if self.candidate_ran and not (rc == -signal.SIGKILL and self.phase == "harness"):
            return None
        where = "before the candidate's code ran" if not self.candidate_ran else "while the harness ran (inputs, reference, comparison)"
        msg = f"the worker died {where}: {what}"
        plan = MemoryPlan(**{k: v for k, v in self.plan.items() if k != "fits"}) if self.plan else None
        if rc == -signal.SIGKILL:
            msg += "; the likeliest cause is the host's out-of-memory killer"
            if plan is not None:
                msg += f" ({plan.describe()})"
        return EvalResult(Verdict.TASK_ERROR, msg, feedback=msg, memory=plan)

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        self._stderr.close()

    def close(self) -> None:
        if self.proc.poll() is None and self.proc.stdin:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def default_device() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            return "cuda:0"
    except Exception:
        pass
    return "cpu"


class Executor:
    """Evaluate candidates in isolated, reusable worker processes.

    >>> with Executor() as ex:                                   # doctest: +SKIP
    ...     result = ex.evaluate("task.py", open("cand.py").read(), backend="triton")
    """

    def __init__(
        self,
        *,
        device: str | None = None,
        timeout_s: float = 300.0,
        reuse_workers: bool = True,
        max_jobs_per_worker: int = 200,
        env: dict[str, str] | None = None,
        sandbox: SandboxLimits | None = None,
        device_share: DeviceShare | None = None,
    ):
        self.device = device or default_device()
        self.device_share = device_share  # its GPU shared with other executors' workers
        # Candidates are untrusted (README: "The sandbox"): sandboxed unless
        # SandboxLimits(enabled=False) is passed explicitly.
        self.sandbox = sandbox or SandboxLimits()
        self.timeout_s = timeout_s
        self.reuse_workers = reuse_workers
        self.max_jobs_per_worker = max_jobs_per_worker
        self.env = env
        self._worker: Worker | None = None
        self.workers_started = 0

    def __enter__(self) -> "Executor":
        return self

    @property
    def waiting(self) -> int:
        """Nothing queues here: one caller at a time uses this executor's one worker."""
        return 0

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def _get_worker(self) -> tuple[Worker, bool]:
        w = self._worker
        if w is not None and w.alive() and w.jobs_done < self.max_jobs_per_worker:
            return w, True
        if w is not None:
            w.close()
        env = dict(os.environ if self.env is None else self.env)
        self._worker = Worker(self.device, env=env, sandbox=self.sandbox, device_share=self.device_share)
        self.workers_started += 1
        return self._worker, False

    def evaluate(
        self,
        task_path: str | Path,
        source: str,
        *,
        backend: str = "triton",
        options: EvalOptions | None = None,
        timeout_s: float | None = None,
    ) -> EvalResult:
        job = {
            "task_path": str(Path(task_path).resolve()),
            "source": source,
            "backend": backend,
            "options": (options or EvalOptions()).to_dict(),
        }
        try:
            worker, reused = self._get_worker()
        except WorkerError as exc:
            return self._masked(EvalResult(Verdict.CRASH, str(exc)))
        result, retire = worker.run(job, timeout_s or self.timeout_s)
        result.worker_reused = reused
        result.device = self.device  # the worker sees its GPU as cuda:0; which one it is, is known here
        result.rules = (options or EvalOptions()).rules  # crashes and timeouts are judged under the same rules
        if retire or not self.reuse_workers:
            worker.close()
            self._worker = None
        return self._masked(result)

    def retime(self, task_path: str | Path, baseline_source: str, candidate_source: str, *, backend: str = "triton",
               options: EvalOptions | None = None, rounds: int = 3, timeout_s: float | None = None) -> RetimeReport:
        """Time two feasible kernels of one task in alternation in this executor's worker
        (`rounds` alternations, backends/_retime.py); failures come back as the report's verdict."""
        job = retime_job(task_path, baseline_source, candidate_source, backend=backend,
                         options=options or EvalOptions(), rounds=rounds)
        try:
            worker, _ = self._get_worker()
        except WorkerError as exc:
            return RetimeReport.failed(EvalResult(Verdict.CRASH, str(exc)))
        result, retire = worker.run(job, timeout_s or self.timeout_s)
        reply = worker.last_reply
        if retire or not self.reuse_workers:
            worker.close()
            self._worker = None
        result = self._masked(result)
        return report_from_reply(result, mask_obj(reply, {**os.environ, **(self.env or {})}) if reply else None)

    def evaluate_many(self, jobs: Iterable["EvalJob"]) -> Iterator[EvalResult]:
        """Evaluate `jobs` in order, one result each, as they finish. Workers are
        reused across jobs (and retired after a crash, a timeout or a CUDA
        error, as for single calls), so the verdicts are those of single calls."""
        for job in jobs:
            yield self.evaluate(job.task_path, job.source, backend=job.backend, options=job.options, timeout_s=job.timeout_s)

    def _masked(self, result: EvalResult) -> EvalResult:
        """Keys never leave the executor, even if a candidate found one."""
        environ = {**os.environ, **(self.env or {})}
        return EvalResult.from_dict(mask_obj(result.to_dict(), environ))


@dataclasses.dataclass(frozen=True)
class EvalJob:
    """One evaluation for `Executor.evaluate_many`."""

    task_path: str | Path
    source: str
    backend: str = "triton"
    options: EvalOptions | None = None
    timeout_s: float | None = None
