"""Executor benchmark on a GPU: verdicts of the test catalogue with real timing,
the spread of repeated timings, and evaluations per minute with reused workers
against one fresh process per candidate.

    python benchmarks/executor_bench.py --out benchmarks/results/executor-h200.json

Needs only torch and triton (the GPU image has no other EvoKernel dependency).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from backends import EvalOptions, Executor  # noqa: E402
from executor_candidates import DISALLOWED, FAILURES, HACKS, HONEST  # noqa: E402

CASES = ROOT / "tests" / "executor_cases"
LARGE = ROOT / "benchmarks" / "executor_tasks"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def environment() -> dict:
    import torch
    import triton

    env = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda_available": torch.cuda.is_available(),
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env.update(device=torch.cuda.get_device_name(0), sm_count=props.multi_processor_count,
                   l2_bytes=getattr(props, "L2_cache_size", None), cuda=torch.version.cuda)
        try:
            env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=30).stdout.strip()
        except OSError:
            env["driver"] = None
    return env


def suite(device: str, options: EvalOptions) -> dict:
    """Every catalogued candidate, with the verdict it must get."""
    expected = {f"honest/{k}": ("ok", v[0], v[1]) for k, v in HONEST.items()}
    expected.update({f"hack/{k}": ("hack", v[0], v[1]) for k, v in HACKS.items()})
    expected.update({f"disallowed/{k}": ("disallowed", v[0], v[1]) for k, v in DISALLOWED.items()})
    expected.update({f"failure/{k}": (v[2], v[0], v[1]) for k, v in FAILURES.items()})
    rows = {}
    with Executor(device=device, timeout_s=300) as ex:
        for name, (want, task, source) in expected.items():
            r = ex.evaluate(CASES / task, source, options=options)
            rows[name] = {"expected": want, "got": r.status.value, "latency_ms": r.latency_ms,
                          "latency_source": r.latency_source, "baselines": r.baselines.present(), "message": r.message[:300]}
            log(f"  {name:40s} want {want:14s} got {r.status.value:14s} {r.latency_ms or ''}")
    matched = sum(r["expected"] == r["got"] for r in rows.values())
    return {"cases": rows, "matched": matched, "total": len(rows)}


def spread(device: str, repeats: int, options: EvalOptions) -> dict:
    kernels = {
        "add_relu_8192x8192": (LARGE / "add_relu_large.py", HONEST["add_relu"][1]),
        "softmax_8192x4096": (LARGE / "softmax_large.py", HONEST["row_softmax"][1]),
        "linear_relu_2048": (LARGE / "linear_relu_large.py", HONEST["linear_relu"][1]),
    }
    out = {}
    with Executor(device=device, timeout_s=600) as ex:
        for name, (task, source) in kernels.items():
            medians, first = [], None
            for i in range(repeats):
                r = ex.evaluate(task, source, options=options)
                if r.status.value != "ok":
                    out[name] = {"error": f"{r.status.value}: {r.message[:300]}"}
                    break
                medians.append(r.latency_ms)
                first = first or r
            else:
                out[name] = {
                    "medians_ms": medians,
                    "max_over_min": max(medians) / min(medians),
                    "eager_ms": first.baselines.eager_ms,
                    "compile_ms": first.baselines.compile_ms,
                    "iqr_ms_first": first.latency_iqr_ms,
                    "timing_method": first.timing_method,
                    "warnings": first.warnings,
                }
                log(f"  {name}: medians {['%.4f' % m for m in medians]} max/min {out[name]['max_over_min']:.4f}")
    return out


def throughput(device: str, count: int, options: EvalOptions) -> dict:
    pool = [(CASES / t, s) for t, s in HONEST.values()]
    pool += [(CASES / t, s) for t, s, _ in HACKS.values()]
    pool += [(CASES / t, s) for t, s, status, _ in FAILURES.values() if status != "crash"]
    batch = [pool[i % len(pool)] for i in range(count)]
    result = {"candidates": count, "options": options.to_dict()}
    for mode, reuse in (("reused_workers", True), ("fresh_process_per_candidate", False)):
        t0 = time.perf_counter()
        statuses = []
        with Executor(device=device, timeout_s=300, reuse_workers=reuse) as ex:
            for task, source in batch:
                statuses.append(ex.evaluate(task, source, options=options).status.value)
            started = ex.workers_started
        seconds = time.perf_counter() - t0
        result[mode] = {"seconds": seconds, "evals_per_minute": count * 60 / seconds, "workers_started": started,
                        "statuses": {s: statuses.count(s) for s in sorted(set(statuses))}}
        log(f"  {mode}: {seconds:.1f} s, {count * 60 / seconds:.1f} evals/min, {started} workers")
    result["speedup"] = result["reused_workers"]["evals_per_minute"] / result["fresh_process_per_candidate"]["evals_per_minute"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "executor-h200.json")
    parser.add_argument("--device", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--parts", default="suite,spread,throughput")
    args = parser.parse_args()
    from backends import default_device

    device = args.device or default_device()
    report = {"command": "python " + " ".join(sys.argv), "environment": environment(), "device": device}
    parts = args.parts.split(",")
    full = EvalOptions()  # 5 trials, 10 warm-up + 100 timed runs, L2 flush, eager + torch.compile baselines
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after every part, so a run cut short keeps what it measured
        args.out.write_text(json.dumps(report, indent=1, default=str) + "\n")

    if "suite" in parts:
        log("suite:")
        report["suite"] = suite(device, full)
        save()
    if "spread" in parts:
        log("spread:")
        report["spread"] = spread(device, args.repeats, full)
        save()
    if "throughput" in parts:
        log("throughput:")
        # torch.compile baselines are left out here: a fresh process would pay for
        # compiling them again on every candidate, which says nothing about isolation.
        report["throughput"] = throughput(device, args.candidates, EvalOptions(compile_baseline=False))
        save()
    summary = {k: report[k] for k in ("device",)}
    if "suite" in report:
        summary["suite_matched"] = f"{report['suite']['matched']}/{report['suite']['total']}"
    if "spread" in report:
        summary["spread_max_over_min"] = {k: v.get("max_over_min") for k, v in report["spread"].items()}
    if "throughput" in report:
        summary["throughput_speedup"] = report["throughput"]["speedup"]
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
