"""Fill torch.compile's on-disk caches for a folder of task files, on the CPU
cores, while the GPU is busy with something else.

    TORCHINDUCTOR_CACHE_DIR=/tmp/ind python benchmarks/warm_compile_cache.py DIR [--procs N] [--out LOG]

The bench times torch.compile's baseline in its worker and compiles it there
first; that compile (dynamo, inductor's code generation, Triton's compile of
every generated kernel) is most of a level-2 task's wall time and needs only
the CPU. This script compiles each task's reference once (eval mode, no_grad,
the task's own inputs on the GPU, as the executor does) in N processes, so the
bench's own compile finds inductor's FX-graph cache and Triton's cache filled.
Nothing is timed here and nothing is reused but torch's own caches: the
baseline is still compiled and timed in the bench's worker. Point
TORCHINDUCTOR_CACHE_DIR at the same folder for both (the worker's default
lies in its private temporary directory). One line per task on stdout: name,
seconds, and the error if the compile failed. --precision fp16/bf16 casts the
model and floating inputs as the executor does for a run in that precision
(its compiled graphs are other ones).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _compile_share(files: list[str], device: str, precision: str, queue) -> None:
    import torch

    from backends import cast_model, cast_values
    from backends._task import load_task_module

    for path in files:
        t0 = time.perf_counter()
        error = ""
        try:
            module = load_task_module(path)
            torch.manual_seed(0)
            with torch.device(device):
                init = cast_values(list(module.get_init_inputs()), precision)
                model = cast_model(module.Model(*init).eval(), precision)
                inputs = cast_values([x.to(device) if isinstance(x, torch.Tensor) else x for x in module.get_inputs()],
                                     precision)
            with torch.no_grad():
                torch.compile(model)(*inputs)
            if torch.device(device).type == "cuda":
                torch.cuda.synchronize(device)
                del model, inputs
                torch.cuda.empty_cache()
        except Exception as exc:  # a task torch.compile cannot handle: the bench reports it as well
            error = f"{type(exc).__name__}: {str(exc)[:160]}"
        queue.put((Path(path).stem, time.perf_counter() - t0, error))
    queue.put(None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"])
    args = parser.parse_args(argv)
    files = sorted(str(f) for f in args.folder.glob("*.py"))
    if not files:
        print(f"error: no task files in {args.folder}", file=sys.stderr)
        return 2
    # Inductor's compile workers per process: the processes share the cores with the bench.
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "2")
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_compile_share, args=(files[i::args.procs], args.device, args.precision, queue))
             for i in range(args.procs)]
    for p in procs:
        p.start()
    t0, done, failed = time.perf_counter(), 0, 0
    while done < len(procs):
        item = queue.get()
        if item is None:
            done += 1
            continue
        name, seconds, error = item
        failed += bool(error)
        print(f"{name}\t{seconds:.1f}\t{error}", flush=True)
    for p in procs:
        p.join()
    print(f"compiled {len(files) - failed}/{len(files)} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
