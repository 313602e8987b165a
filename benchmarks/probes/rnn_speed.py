"""Probe: the builtin's recurrent layers (KernelBench level3 34-42: LSTM, GRU, a hand-written RNN
loop) in several launch schedules, against eager and torch.compile, timed in one process.

For every chosen task, each variant of the builtin's candidate is generated (analyze, then
generate with the variant's configuration of the recurrent stage), imported and built as the
executor builds it (same seed, same constructor arguments), checked against the eager model on
the task's inputs (max abs error; close at atol = rtol = 1e-2, as KernelBench checks), and timed
with backends/_timing.py beside eager and torch.compile of the reference: same process, same
inputs, L2 flushed before every run. The variants (the recurrent stage's configuration):

- ``default``: what a budget-1 run submits (default_config);
- ``per_step``: one launch a time step (its hidden tiles spread over programs);
- ``one_pass``: one launch a layer, one program per batch tile and direction walking every step;
- ``coop_s{S}_n{N}``: one launch a layer, S programs sharing a batch tile's hidden units in tiles
  of N, meeting at a barrier after every step (a cooperative launch: all resident at once).

A record is written to --out as soon as a (task, variant) is done, and a rerun skips what the file
holds (--redo: time again), so a run cut by a time limit resumes; --stop-after stops starting new
work after that many seconds. Progress goes to stderr.

Without a GPU it is a dry run: tasks shrunk as benchmarks/kernelbench_coverage.py shrinks them, the
kernels in Triton's interpreter, wall-clock times (not a speed), no torch.compile. Nothing from
KernelBench is stored: the checkout is an argument.

    python benchmarks/probes/rnn_speed.py .kb/KernelBench --out rnn-speed-h200.json --stop-after 540
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

if not torch.cuda.is_available():  # before Triton is imported: the kernels run in its interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernelbench_coverage import shrink_source  # noqa: E402
from probe_common import environment, task_files  # noqa: E402

from backends import load_task_module  # noqa: E402
from backends._task import import_file  # noqa: E402
from backends._timing import benchmark  # noqa: E402
from evokernel.builtin import analyze, default_config, generate  # noqa: E402

TASKS = ("34", "35", "36", "37", "38", "39", "40", "41", "42")
# (split_n, block_n): programs sharing a batch tile's hidden units, and their tile
COOPERATIVE = ((2, 128), (4, 64), (8, 32), (16, 16))
TOLERANCE = 1e-2


def variants(plan) -> dict[str, object]:
    """Configurations of the plan's main stage, by name (only the default where it is not recurrent)."""
    first = default_config(plan)
    out = {"default": first}
    if first.family != "rnn":
        return out
    out["per_step"] = replace(first, one_pass=False, split_n=1, block_n=32, block_k=32, num_warps=4)
    out["one_pass"] = replace(first, one_pass=True, split_n=1, block_n=128, block_k=32, num_warps=8)
    for split, tile in COOPERATIVE:
        out[f"coop_s{split}_n{tile}"] = replace(first, one_pass=True, split_n=split, block_n=tile,
                                                block_k=min(32, tile), num_warps=4)
    return out




def _built(task, make):
    torch.manual_seed(0)
    return make(*task.get_init_inputs())


def _max_error(expected, got) -> float:
    return float((expected.double() - got.double()).abs().max().item())


def _time(fn, inputs, device: str, args) -> float:
    with torch.no_grad():
        timing = benchmark(fn, lambda: tuple(inputs), device=device, reps=args.reps, warmup=args.warmup)
    return timing.median_ms


def measure_task(path: Path, small: Path, args, device: str, records: dict, save) -> None:
    """Eager, torch.compile and each variant of one task, a record each as it is done."""
    gpu = device.startswith("cuda")
    task = load_task_module(small)
    plan = analyze(small, args.rules)
    full = analyze(path, args.rules) if small != path else plan
    name = path.stem
    if not plan or not full:
        records[f"{name}/default"] = {"task": name, "variant": "default", "status": "not_planned",
                                      "message": (plan or full).reason[:300]}
        save()
        return
    with torch.device(device):
        torch.manual_seed(1)
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
    reference = _built(task, task.Model).to(device).eval()
    with torch.no_grad():
        torch.manual_seed(2)
        expected = reference(*inputs)
    key = f"{name}/eager"
    if key not in records:
        records[key] = {"task": name, "variant": "eager", "status": "ok", "ms": _time(reference, inputs, device, args)}
        save()
    key = f"{name}/compile"
    if gpu and args.compile and key not in records:
        compiled = torch.compile(reference)
        with torch.no_grad():
            compiled(*inputs)  # compiled before the timing's warm-up
        records[key] = {"task": name, "variant": "compile", "status": "ok", "ms": _time(compiled, inputs, device, args)}
        save()
    work = args.work / name
    work.mkdir(parents=True, exist_ok=True)
    for variant, config in variants(full).items():
        key = f"{name}/{variant}"
        if key in records:
            continue
        if args.stop_after and time.perf_counter() - args.started > args.stop_after:
            return
        record = {"task": name, "variant": variant, "config": config.text(), "stages": len(plan.stages) or 1}
        t0 = time.perf_counter()
        try:
            source = generate(plan, config if config.family == plan.main_stage.family else None)
            file = work / f"{variant}.py"
            file.write_text(source)
            model = _built(task, import_file(file, "rnn_speed").ModelNew).to(device).eval()
            with torch.no_grad():
                torch.manual_seed(2)
                got = model(*inputs)
            error = _max_error(expected, got)
            close = bool(torch.allclose(got.double(), expected.double(), atol=TOLERANCE, rtol=TOLERANCE))
            record.update(status="ok" if close else "wrong", max_abs_error=error, ms=_time(model, inputs, device, args))
        except Exception as exc:  # a variant that fails to build, compile or launch is a result too
            record.update(status="error", message=f"{type(exc).__name__}: {exc}"[:400])
        record["seconds"] = round(time.perf_counter() - t0, 1)
        records[key] = record
        save()
        print(f"{name:28s} {variant:14s} {record['status']:6s} {record.get('ms') or float('nan'):10.3f} ms  "
              f"err {record.get('max_abs_error', float('nan')):.2e}", file=sys.stderr, flush=True)


def summary(records: dict) -> dict:
    """Per task: eager, compile, the fastest correct variant and its speedups."""
    out = {}
    for key, record in records.items():
        task = out.setdefault(record["task"], {})
        if record["variant"] in ("eager", "compile"):
            task[f"{record['variant']}_ms"] = record.get("ms")
        elif record.get("status") == "ok" and record.get("ms"):
            best = task.get("best")
            if best is None or record["ms"] < best["ms"]:
                task["best"] = {"variant": record["variant"], "ms": record["ms"]}
            if record["variant"] == "default":
                task["default_ms"] = record["ms"]
    for task in out.values():
        best = (task.get("best") or {}).get("ms")
        for base in ("eager", "compile"):
            if best and task.get(f"{base}_ms"):
                task[f"best_speedup_{base}"] = task[f"{base}_ms"] / best
            if task.get("default_ms") and task.get(f"{base}_ms"):
                task[f"default_speedup_{base}"] = task[f"{base}_ms"] / task["default_ms"]
    geo = [t["best_speedup_compile"] for t in out.values() if t.get("best_speedup_compile")]
    return {"tasks": out, "geomean_best_speedup_compile": math.exp(sum(map(math.log, geo)) / len(geo)) if geo else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernelbench", type=Path, help="the KernelBench problem directory (holding level3)")
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), help="level3 task names or their numbers")
    ap.add_argument("--out", type=Path, default=Path("rnn-speed.json"))
    ap.add_argument("--device", help="cuda or cpu (default: cuda where there is one)")
    ap.add_argument("--rules", default="strict", choices=["strict", "kernelbench"])
    ap.add_argument("--no-compile", dest="compile", action="store_false", help="leave torch.compile out")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--stop-after", type=float, help="start no new variant after this many seconds")
    ap.add_argument("--redo", action="store_true", help="time again what the output file already holds")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "rnn_speed")
    args = ap.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    gpu = device.startswith("cuda")
    if not gpu:
        args.reps, args.warmup = min(args.reps, 2), min(args.warmup, 1)
    files = [f.resolve() for f in task_files(args.kernelbench / "level3", args.tasks)]
    doc = json.loads(args.out.read_text()) if args.out.exists() else {}
    records = {} if args.redo else dict(doc.get("records", {}))
    args.work.mkdir(parents=True, exist_ok=True)
    args.started = time.perf_counter()
    command = "python benchmarks/probes/rnn_speed.py " + " ".join(argv if argv is not None else sys.argv[1:])

    def save() -> None:
        options = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "started"}
        args.out.write_text(json.dumps({"command": command, "environment": environment(device), "options": options,
                                        "tolerance": TOLERANCE, "summary": summary(records), "records": records},
                                       indent=1) + "\n")

    for path in files:
        if args.stop_after and time.perf_counter() - args.started > args.stop_after:
            print(f"stopping after {args.stop_after:g} s; rerun to go on", file=sys.stderr)
            break
        small = path
        if not gpu:  # the interpreter: the task shrunk (its drafts configured from the full-size task)
            small = args.work / f"{path.stem}_small.py"
            small.write_text(shrink_source(path.read_text(), 8))
        measure_task(path, small, args, device, records, save)
    save()
    print(json.dumps(summary(records)["geomean_best_speedup_compile"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
