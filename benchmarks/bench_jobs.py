"""Evaluations per minute of `evokernel bench` under different `--jobs` / `--gpus` settings.

Runs `evokernel bench SUITE` once per variant (each in a fresh temporary
memory), times it, counts the evaluations it made (the steps of every task)
and records each variant's per-task median latencies, so timings on one
device can be compared across variants.

    # one H200: the builtin policy on the first 20 level1 tasks, without and with --jobs
    python benchmarks/bench_jobs.py level1 --limit 20 --budget 2 --variant "--jobs 1" --variant "--jobs 8" \\
        --out benchmarks/results/bench-jobs-h200.json
    # two GPUs: each GPU alone (a task's latency on GPU 0 against GPU 1), then one worker per GPU
    python benchmarks/bench_jobs.py KB/level1 --limit 30 --budget 1 --variant "--jobs 8 --gpus 0" \\
        --variant "--jobs 8 --gpus 1" --variant "--jobs 8 --gpus 0,1" --out benchmarks/results/multigpu-h200x2.json
    # one GPU shared by several workers (--workers-per-gpu): the same tasks, verdicts and latencies, sooner?
    python benchmarks/bench_jobs.py KB/level2 --limit 30 --budget 1 --variant "--jobs 8" \
        --variant "--jobs 8 --workers-per-gpu 2" --variant "--jobs 8 --workers-per-gpu 3" --out workers-per-gpu.json

Every variant builds in fresh caches (EVOKERNEL_CACHE, TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR), so
none gains from kernels an earlier one compiled. Each task's latency is compared with the first
variant's (`latency_vs_first`: the median ratio, the share within 3%, the worst),
grouped by the GPU the task ran on in that variant.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite")
    parser.add_argument("--variant", action="append", required=True, help='extra bench options, e.g. "--jobs 8"')
    parser.add_argument("--budget", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--policy", default="builtin")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    runs = []
    for variant in args.variant:
        with tempfile.TemporaryDirectory(prefix="evokernel-bench-jobs-") as tmp:
            result_file = Path(tmp) / "result.json"
            cmd = [sys.executable, "-m", "evokernel.cli", "bench", args.suite, "--policy", args.policy,
                   "--budget", str(args.budget), *(["--limit", str(args.limit)] if args.limit else []),
                   *shlex.split(variant), "--out", str(result_file)]
            print(f"{variant}: {shlex.join(cmd[3:])}", file=sys.stderr, flush=True)
            started = time.monotonic()
            # fresh compile caches too (Triton's, Inductor's): a later variant would otherwise skip the
            # kernel compiles an earlier one paid for, most of an evaluation's time on a GPU
            proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(
                os.environ, EVOKERNEL_CACHE=str(Path(tmp) / "build-cache"),
                TRITON_CACHE_DIR=str(Path(tmp) / "triton-cache"), TORCHINDUCTOR_CACHE_DIR=str(Path(tmp) / "inductor"),
                PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])))
            wall = time.monotonic() - started
            if proc.returncode != 0 or not result_file.exists():
                print(proc.stderr[-3000:], file=sys.stderr)
                runs.append({"variant": variant, "exit_code": proc.returncode, "wall_s": round(wall, 1)})
                continue
            data = json.loads(result_file.read_text())
        evaluations = sum(t["attempts"] for t in data["tasks"])
        runs.append({
            "variant": variant,
            "exit_code": proc.returncode,
            "wall_s": round(wall, 1),
            "evaluations": evaluations,
            "evaluations_per_minute": round(60 * evaluations / wall, 2) if wall else None,
            "jobs": data["environment"].get("jobs"),
            "device": data["environment"].get("device"),
            "correct_rate": data["metrics"]["correct_rate"],
            "statuses": {t["name"]: t.get("last_status") for t in data["tasks"]},  # the verdicts, task by task
            "best_latency_ms": {t["name"]: t["best_latency_ms"] for t in data["tasks"]},
            "gpu_of_task": {t["name"]: _device_of(t) for t in data["tasks"]},
            "command": shlex.join(["evokernel", *cmd[3:-2]]),
            "environment": data["environment"],
        })
        print(f"  {runs[-1]['wall_s']} s, {evaluations} evaluations, {runs[-1]['evaluations_per_minute']}/min",
              file=sys.stderr, flush=True)
    first = runs[0]
    for r in runs[1:]:
        if r.get("evaluations_per_minute") and first.get("evaluations_per_minute"):
            r["throughput_vs_first"] = round(r["evaluations_per_minute"] / first["evaluations_per_minute"], 2)
            common = [n for n, ms in r["best_latency_ms"].items() if ms and first["best_latency_ms"].get(n)]
            r["best_latency_ratio_vs_first"] = {n: round(r["best_latency_ms"][n] / first["best_latency_ms"][n], 3)
                                               for n in common}
            r["latency_vs_first"] = _ratio_summary(r["best_latency_ratio_vs_first"], r["gpu_of_task"])
    out = {
        "kind": "evokernel-bench-jobs",
        "suite": args.suite, "budget": args.budget, "limit": args.limit, "policy": args.policy,
        "runs": runs,
        "host": platform.node(),
        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": shlex.join(["python", "benchmarks/bench_jobs.py", *sys.argv[1:]]),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0 if all(r["exit_code"] == 0 for r in runs) else 1


def _device_of(task: dict) -> str:
    """The device of the attempt that set the task's best latency (its last timed one)."""
    timed = [a for a in task.get("attempt_log") or [] if a.get("latency_ms") == task.get("best_latency_ms")]
    return (timed[-1] if timed else {}).get("device", "")


def _ratio_summary(ratios: dict[str, float], devices: dict[str, str]) -> dict:
    """The per-task latency ratios in a few numbers, over all tasks and by the GPU each ran on."""
    def summary(values: list[float]) -> dict:
        if not values:
            return {"tasks": 0}
        return {"tasks": len(values), "median": round(statistics.median(values), 3),
                "within_3pct": round(sum(abs(v - 1) <= 0.03 for v in values) / len(values), 3),
                "worst": max(values, key=lambda v: abs(v - 1))}

    by_device: dict[str, list[float]] = {}
    for name, ratio in ratios.items():
        by_device.setdefault(devices.get(name) or "unknown", []).append(ratio)
    return {"all": summary(list(ratios.values())), **{d: summary(v) for d, v in sorted(by_device.items())}}


if __name__ == "__main__":
    sys.exit(main())
