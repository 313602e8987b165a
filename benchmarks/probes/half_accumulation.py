"""Probe: how many K slices an fp16/bf16 GEMM needs so that its fp32 accumulator stays accurate, under a
stated model of the tensor cores' accumulation, emulated on the CPU.

Why: in the fp16 level1 run at f755f5b (an H100), 6_Matmul_with_large_K_dimension (256 x 524288 x 256)
was judged wrong on its stress inputs (normal(0, 1): its own inputs overflow fp16): 46 of 65536 elements
past 1e-2 + 1e-2 |x|, all near zero, while its RMS error against float64 was 1.014x cuBLAS's (both
rounding-bound: an output of RMS 724 rounded to fp16). Its draft split K 16 ways, each slice 32768 deep
into one fp32 accumulator.

The model: the tensor cores add each 16-deep block of exact fp16 products to the fp32 accumulator and
round the sum toward zero (truncate), not to nearest (Fasi et al., "Numerical behavior of NVIDIA tensor
cores", 2021, for earlier GPUs; assumed here for the H100). Truncation is biased, so a slice's error grows
with the number of blocks times the accumulator's unit in the last place: about K^1.5 / slices in all.
Slices are summed in IEEE fp32 (the split-K reduction kernel). The reference is the float64 product
rounded once to fp16 (cuBLAS measured as accurate as that on this task). Each candidate is judged by the
executor's own `compare` with the float64 output.

    python benchmarks/probes/half_accumulation.py [--size 128] [--seeds 2] [--splits 4 16 64] --out FILE.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backends._compare import compare  # noqa: E402
from probe_common import environment  # noqa: E402

BLOCK = 16  # products a tensor-core instruction adds to the accumulator at once


def toward_zero_fp32(v: np.ndarray) -> np.ndarray:
    """float64 -> float32, rounded toward zero."""
    f = v.astype(np.float32)
    over = np.abs(f.astype(np.float64)) > np.abs(v)
    f[over] = np.nextafter(f[over], np.float32(0))
    return f


def emulated_gemm(a: np.ndarray, b: np.ndarray, slices: int, truncate: bool) -> np.ndarray:
    """fp32 result of a @ b (fp16 values held in float64) with K in `slices` slices, each accumulated a
    BLOCK at a time (rounded toward zero when `truncate`, else to nearest), slices summed in fp32."""
    k = a.shape[1]
    depth = k // slices
    total = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for s in range(slices):
        acc = np.zeros_like(total)
        for i in range(s * depth, (s + 1) * depth, BLOCK):
            exact = acc.astype(np.float64) + a[:, i:i + BLOCK] @ b[i:i + BLOCK]
            acc = toward_zero_fp32(exact) if truncate else exact.astype(np.float32)
        total = (total.astype(np.float64) + acc).astype(np.float32)
    return total


TOLERANCE = (1e-2, 1e-2)  # (atol, rtol): KernelBench's for fp16, as the executor's verdict takes it


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=128, help="M = N (KernelBench's task: 256; the statistics need fewer)")
    ap.add_argument("--k", type=int, default=524288, help="K (KernelBench's 6_Matmul_with_large_K_dimension)")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--splits", type=int, nargs="+", default=[4, 16, 64])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = []
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((args.size, args.k)).astype(np.float16).astype(np.float64)
        b = rng.standard_normal((args.k, args.size)).astype(np.float16).astype(np.float64)
        x = a @ b
        exact = torch.from_numpy(x)
        reference = exact.half()
        for slices in args.splits:
            for truncate in (True, False):
                start = time.time()
                acc = emulated_gemm(a, b, slices, truncate)
                candidate = torch.from_numpy(acc).half()
                verdict = compare(reference, candidate, TOLERANCE, exact=exact)
                err = np.abs(acc.astype(np.float64) - x)
                atol, rtol = TOLERANCE
                past = np.abs(candidate.double().numpy() - x) > atol + rtol * np.abs(x)
                row = {"seed": seed, "slices": slices, "slice_depth": args.k // slices,
                       "accumulation": "toward zero" if truncate else "to nearest",
                       "accumulator_abs_error_rms": float(np.sqrt(np.mean(err ** 2))),
                       "accumulator_abs_error_max": float(err.max()),
                       "past_tolerance_of_float64": int(past.sum()), "elements": int(x.size),
                       "verdict_ok": verdict.ok, "candidate_error": verdict.candidate_error,
                       "reference_error": verdict.reference_error}
                rows.append(row)
                print(f"seed {seed} slices {slices:3d} {row['accumulation']:11s}: accumulator error RMS "
                      f"{row['accumulator_abs_error_rms']:.4f}, max {row['accumulator_abs_error_max']:.4f}; "
                      f"{row['past_tolerance_of_float64']} past the tolerance of float64; verdict "
                      f"{'ok' if verdict.ok else 'wrong'} ({time.time() - start:.0f} s)", file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump({"command": " ".join(["python", *sys.argv]), "environment": environment("cpu"),
                   "model": __doc__.split("The model: ")[1].split("\n\n")[0].replace("\n", " "),
                   "options": vars(args), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
