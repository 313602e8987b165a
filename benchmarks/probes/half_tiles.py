"""Probe: the builtin's GEMM and convolution tiles for tasks run in bf16 or fp16, timed on one device.

The builtin's default tiles were measured for fp32 (BLOCK_K 32, IEEE or 3xTF32 products); half-precision
operands go to the tensor cores as they are, at twice the elements per byte, where Triton's own matmul
tutorial favours BLOCK_K 64. For every chosen task of KernelBench's level1 (and level2 GEMMs) the
builtin's budget-1 draft in --precision (analyze, default_config, generate) and the same plan with each
of a few other tiles is evaluated by the executor: correctness on 2 trials, then the timing of
backends/_timing.py, eager PyTorch in that precision timed by the same worker. One JSON record per task
and tile, written as it finishes; a rerun skips what the file holds, so a leased call cut short resumes;
--stop-after stops starting evaluations after that many seconds. Without a GPU it is a dry run on tasks
shrunk as benchmarks/kernelbench_coverage.py shrinks them (wall-clock times, not speeds).

    python benchmarks/probes/half_tiles.py KERNELBENCH_DIR --precision bf16 --out half-tiles-h200.json --stop-after 500
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402
from kernelbench_coverage import shrink_source  # noqa: E402

from backends import PRECISIONS, EvalOptions, Executor  # noqa: E402
from evokernel.builtin import analyze, default_config, generate  # noqa: E402

TASKS = (
    "level1/1_Square_matrix_multiplication_", "level1/2_Standard_matrix_multiplication_",
    "level1/3_Batched_matrix_multiplication", "level1/6_Matmul_with_large_K_dimension_",
    "level1/7_Matmul_with_small_K_dimension_", "level1/8_Matmul_with_irregular_shapes_",
    "level1/9_Tall_skinny_matrix_multiplication_", "level1/17_Matmul_with_transposed_B",
    "level1/50_conv_standard_2D__square_input__square_kernel", "level1/55_conv_standard_2D__asymmetric_input__square_kernel",
    "level1/63_conv_standard_2D__square_input__square_kernel", "level1/54_conv_standard_3D__square_input__square_kernel",
    "level1/57_conv_transposed_2D__square_input__square_kernel", "level1/67_conv_standard_1D",
    "level2/12_Gemm_Multiply_LeakyReLU", "level2/29_Matmul_Mish_Mish",
)
# (block_m, block_n, block_k, num_warps, num_stages) beside the default: BLOCK_K 64 tiles of Triton's tutorial
OTHER_TILES = ((128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4))
SHRINK_BASE = 8


def tiles(plan) -> list:
    """The default configuration, then the same with each of OTHER_TILES (the family's other fields kept)."""
    first = default_config(plan)
    out = [first]
    for bm, bn, bk, w, s in OTHER_TILES:
        other = dataclasses.replace(first, block_m=bm, block_n=bn, block_k=bk, num_warps=w, num_stages=s)
        if other not in out:
            out.append(other)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernelbench", type=Path, help="the KernelBench problem directory (holding level1, level2)")
    ap.add_argument("--precision", default="bf16", choices=[p for p in PRECISIONS if p != "fp32"])
    ap.add_argument("--rules", default="strict", choices=["strict", "kernelbench"])
    ap.add_argument("--tasks", default="", help="comma-separated level/name stems (default: the module's TASKS)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--stop-after", type=float, default=0.0, help="seconds; 0: no limit")
    ap.add_argument("--work", type=Path, default=Path("/tmp/half_tiles"))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    gpu = torch.cuda.is_available()
    records = json.loads(args.out.read_text())["records"] if args.out.exists() else []
    done = {(r["task"], r["config"]) for r in records}
    command = "python benchmarks/probes/half_tiles.py KERNELBENCH_DIR " + " ".join(sys.argv[2:])
    t0 = time.perf_counter()
    options = EvalOptions(trials=2, reps=args.reps, warmup=3, compile_baseline=False, rules=args.rules,
                          precision=args.precision)

    def save() -> None:
        args.out.write_text(json.dumps({"command": command, "device": torch.cuda.get_device_name(0) if gpu else "cpu",
                                        "precision": args.precision, "rules": args.rules, "records": records}, indent=1))

    with Executor(device="cuda:0" if gpu else "cpu", timeout_s=600) as executor:
        for stem in [t for t in args.tasks.split(",") if t] or TASKS:
            path = args.kernelbench / f"{stem}.py"
            if not path.exists():
                print(f"{stem}: no such task file", file=sys.stderr)
                continue
            plan_path = path
            if not gpu:  # shrunk, so the interpreter gets through it
                plan_path = args.work / f"{path.stem}_b{SHRINK_BASE}.py"
                plan_path.parent.mkdir(parents=True, exist_ok=True)
                plan_path.write_text(shrink_source(path.read_text(), SHRINK_BASE))
            plan = analyze(path, args.rules, args.precision)  # configured from the full-size task
            if not plan:
                records.append({"task": stem, "config": "", "unsupported": plan.reason[:300]})
                save()
                continue
            small = plan if gpu else analyze(plan_path, args.rules, args.precision)
            for k, config in enumerate(tiles(plan)):
                key = json.dumps(config.to_dict(), sort_keys=True)
                if (stem, key) in done:
                    continue
                if args.stop_after and time.perf_counter() - t0 > args.stop_after:
                    print("stopping: --stop-after reached", file=sys.stderr)
                    save()
                    return
                r = executor.evaluate(plan_path, generate(small, config), backend="triton", options=options)
                eager = r.baselines.eager_ms
                rec = {"task": stem, "config": key, "default": k == 0, "status": r.status.value,
                       "latency_ms": r.latency_ms, "eager_ms": eager,
                       "speedup_eager": eager / r.latency_ms if eager and r.latency_ms else None,
                       "candidate_error": r.candidate_error, "reference_error": r.reference_error}
                if r.status.value != "ok":
                    rec["message"] = r.message[:300]
                records.append(rec)
                save()
                print(f"{stem:60s} {config.text():60s} {rec['status']:12s} "
                      f"{rec['latency_ms'] or math.nan:.4f} ms, eager {eager or math.nan:.4f}", file=sys.stderr, flush=True)
    save()


if __name__ == "__main__":
    main()
