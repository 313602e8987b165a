"""The worker process: evaluates candidates sent by the parent, one at a time.

Protocol: one JSON job per line on stdin, one JSON reply per line on the
protocol descriptor (the original stdout). Before the reply, progress lines
({"phase": "harness" | "candidate", "plan": ...}) say which side is running,
so a worker killed from outside is blamed on the right side. The candidate's
own prints go to stderr, which the parent keeps for crash reports, so they
cannot forge a reply.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path


def _exit_with_parent(parent: int, poll_s: float = 1.0) -> None:
    """A worker whose parent died (a run killed with SIGKILL) stops at once, with its
    compilers (its own process group), instead of finishing or hanging in a candidate
    whose verdict nobody will read."""
    import signal
    import threading
    import time

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent:
                os.killpg(os.getpgid(0), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True, name="evokernel-parent-watch").start()


def _arguments(argv: list[str]):
    """`--device`, `--dir`, `--cache-dir` and, for a GPU shared by several workers, `--device-lock` and
    `--device-workers`, as the parent (backends/_executor.py) passes them."""
    import argparse

    parser = argparse.ArgumentParser(prog="backends._worker")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--device-lock", default=None)
    parser.add_argument("--device-workers", type=int, default=1)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(sys.argv[1:] if argv is None else argv)
    device_name, workdir_arg, cache_dir = args.device, args.dir, args.cache_dir
    _exit_with_parent(os.getppid())
    # Sandbox (backends/_sandbox.py): rlimits now; the audit hook once the
    # harness's own imports are done, before the first candidate.
    from ._sandbox import WorkerSandbox

    sandbox = WorkerSandbox.from_env()
    sandbox.enter()
    proto_fd = os.dup(1)
    os.dup2(2, 1)  # anything written to stdout now goes to stderr
    sys.stdout = sys.stderr
    proto = os.fdopen(proto_fd, "w", buffering=1)

    def send(obj: dict) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    import torch

    if device_name == "cpu":  # no GPU: Triton's launches compile for sm_90 in a server, forked now with torch
        from ._triton_compile import prefork

        prefork()

    from ._backend import LaunchLog, get_backend, runs_on
    from ._evaluate import EvalOptions, Progress, TaskCache, evaluate

    from ._cache import use_build_cache

    use_build_cache(cache_dir)
    device = torch.device(device_name)
    if device.type == "cpu":
        # CPU workers run side by side, one per core: OpenMP threads on cores
        # that are already busy stall every tensor op (measured: 30 ms instead
        # of 0.4 ms to compare 37k elements on a loaded 2-core machine).
        torch.set_num_threads(1)
    device_lock = None
    if device.type == "cuda" and args.device_lock:  # a GPU shared with other workers (backends/_device_lock.py)
        from ._device_lock import DeviceLock

        # the parent leaves the waits out of the evaluation's timeout
        device_lock = DeviceLock(args.device_lock, on_wait=lambda waiting: send({"phase": "harness", "waiting": waiting}))
        # each worker keeps to its share of the memory: one that needs more fails itself, not a neighbour
        torch.cuda.set_per_process_memory_fraction(1 / max(1, args.device_workers), device)
    workdir = workdir_arg or Path(tempfile.mkdtemp(prefix="evokernel-worker-"))
    cache = TaskCache()
    backends: dict[str, tuple[object, LaunchLog, bool]] = {}
    sandbox.arm()
    send({"ready": True, "pid": os.getpid(), "device": str(device), "torch": torch.__version__, "sandbox": sandbox.info})

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            job = json.loads(line)
            name = job["backend"]
            if name not in backends:
                backend = get_backend(name)
                log = LaunchLog()
                can_run = runs_on(backend, str(device))
                backend.install_hooks(log, compile_only=not can_run)
                backends[name] = (backend, log, not can_run)
            backend, log, compile_only = backends[name]
            sandbox.before_candidate()  # this candidate's CPU-time budget starts now
            if job.get("kind") == "retime":  # two kernels timed in alternation (backends/_retime.py)
                from ._retime import retime

                with device_lock.exclusive() if device_lock else contextlib.nullcontext():  # all of it is timing
                    result, report = retime(job, backend=backend, log=log, device=device, workdir=workdir,
                                            compile_only=compile_only, progress=Progress(send, device))
                result.sandbox = sandbox.info
                send({"result": result.to_dict(), "retime": report, "retire": result.retire_worker})
                continue
            result = evaluate(
                task_path=job["task_path"],
                source=job["source"],
                backend=backend,
                log=log,
                device=device,
                options=EvalOptions.from_dict(job.get("options")),
                workdir=workdir,
                cache=cache,
                compile_only=compile_only,
                progress=Progress(send, device),
                device_lock=device_lock,
                device_workers=args.device_workers,
                restart_clock=sandbox.before_candidate,
            )
            result.sandbox = sandbox.info
            send({"result": result.to_dict(), "retire": result.retire_worker})
        except Exception as exc:  # a broken job must still get an answer
            send({"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=6), "retire": True})
    return 0


if __name__ == "__main__":
    sys.exit(main())
