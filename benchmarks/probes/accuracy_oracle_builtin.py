"""Probe: where the builtin policy's own kernels land under the accuracy oracle, on KernelBench tasks
shrunk for the CPU (the shrinking of benchmarks/kernelbench_coverage.py), so the oracle's rule
(backends/_compare.py) can be checked against honest kernels that were not written for it.

For every task of LEVEL whose file name matches PATTERN: the builtin's default candidate is evaluated
by the executor on the CPU (Triton's interpreter), and the verdict, both errors against the
reference's float64 run, and the candidate's error over max(reference's, the floor) are recorded.
Nothing from KernelBench is stored: the checkout is an argument, the shrunk copies go to --work.

    python benchmarks/probes/accuracy_oracle_builtin.py KERNELBENCH_DIR --level 1 --pattern 'loss|norm' --out FILE.json

With --precision fp16 or bf16 the task runs in that precision (models and floating inputs cast, as
`evokernel run --precision`), the builtin writes its kernels for it, and the floor is that dtype's.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from kernelbench_coverage import shrink_source  # noqa: E402

import torch  # noqa: E402

from backends import PRECISIONS, EvalOptions, Executor  # noqa: E402
from backends._precision import DTYPES  # noqa: E402
from backends._compare import FLOOR_ROUNDOFF, HALF_FLOOR_ROUNDOFF, LESS_ACCURATE  # noqa: E402
from evokernel.builtin import analyze, generate  # noqa: E402

SHRINK_BASE = 8  # as kernelbench_coverage.py's runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernelbench", type=Path, help="the KernelBench problem directory (holding level1, level2)")
    ap.add_argument("--level", default="1")
    ap.add_argument("--pattern", default=".", help="a regular expression the task file's name must match")
    ap.add_argument("--rules", default="kernelbench", choices=["strict", "kernelbench"])
    ap.add_argument("--precision", default="fp32", choices=list(PRECISIONS))
    ap.add_argument("--limit", type=int, default=0, help="at most this many tasks (0: all that match)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/accuracy_oracle_builtin"))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    work = args.work / f"level{args.level}"
    work.mkdir(parents=True, exist_ok=True)
    pattern = re.compile(args.pattern, re.I)
    units = FLOOR_ROUNDOFF if args.precision == "fp32" else HALF_FLOOR_ROUNDOFF  # as backends/_compare.py
    floor = units * float(torch.finfo(DTYPES[args.precision]).eps) / 2  # the output dtype's rounding
    rows = []
    with Executor(device="cpu", timeout_s=900) as executor:
        for path in sorted((args.kernelbench / f"level{args.level}").glob("*.py")):
            if not pattern.search(path.stem) or (args.limit and len(rows) >= args.limit):
                continue
            small = work / f"{path.stem}_b{SHRINK_BASE}.py"
            small.write_text(shrink_source(path.read_text(), SHRINK_BASE))
            row = {"task": path.stem}
            try:
                source = generate(analyze(small, args.rules, args.precision))
            except Exception as exc:  # noqa: BLE001 - a task the builtin does not cover is a row, not a stop
                row["not_generated"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                rows.append(row)
                continue
            r = executor.evaluate(small, source, backend="triton", options=EvalOptions(trials=2, timing=False, rules=args.rules,
                                                                                 precision=args.precision))
            row.update(status=r.status.value, reference_error=r.reference_error, candidate_error=r.candidate_error,
                       by_accuracy=r.by_accuracy, oracle_unavailable=r.oracle_unavailable)
            if r.candidate_error is not None:
                row["times_reference"] = r.candidate_error / max(r.reference_error, floor)
            if r.status.value != "ok":
                row["message"] = r.message[:300]
            rows.append(row)
            print(f"{path.stem:55s} {row.get('status', 'not generated'):12s} x{row.get('times_reference', float('nan')):.2f}",
                  file=sys.stderr, flush=True)
    ratios = [r["times_reference"] for r in rows if "times_reference" in r]
    summary = {"tasks": len(rows), "evaluated": sum("status" in r for r in rows),
               "ok": sum(r.get("status") == "ok" for r in rows), "max_times_reference": max(ratios, default=None),
               "less_accurate_limit": LESS_ACCURATE, "precision": args.precision}
    args.out.write_text(json.dumps({"command": "python benchmarks/probes/accuracy_oracle_builtin.py KERNELBENCH_DIR "
                                               + " ".join(sys.argv[2:]), "summary": summary, "rows": rows}, indent=1))
    print(json.dumps(summary), file=sys.stderr)


if __name__ == "__main__":
    main()
