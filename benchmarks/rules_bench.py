"""KernelBench problems with kernels of our own, through both rule sets.

    python benchmarks/rules_bench.py KERNELBENCH_DIR [--out benchmarks/results/rules-h200.json]
    python benchmarks/rules_bench.py KERNELBENCH_DIR --device cpu --shrink --only triton   # CPU smoke run

KERNELBENCH_DIR is KernelBench's problem folder (the one holding level1/,
level2/); its files are copied to a temporary directory and never into this
repository. The candidates are ours (benchmarks/rules_candidates/): clean
kernels (all computation in own kernels), partial ones (cuBLAS or cuDNN
through torch, plus an own epilogue kernel), a wrong kernel that only a
stress trial catches, and adversarial ones (a side stream the static rules
cannot see; a decoy extension that holds a kernel but only calls libraries). Each runs under `strict`, under `kernelbench`, and, for the
partial ones, under `kernelbench` with `--min-own-share 0.3`. The results
file records every verdict, the own-kernel share, latencies, the hardware,
the versions and this command.

`--shrink` rewrites the problems' top-level integer constants (batch sizes,
dimensions) down to at most 16, so the CPU interpreter finishes in minutes;
on a CPU CUDA candidates are compile-only (`compiled` stands for `ok`), and
nothing has a GPU share.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backends import EvalOptions, Executor  # noqa: E402

CANDIDATES = ROOT / "benchmarks" / "rules_candidates"


@dataclasses.dataclass(frozen=True)
class Case:
    problem: str  # path under KERNELBENCH_DIR
    candidate: str  # file under benchmarks/rules_candidates
    kind: str  # clean | partial | wrong | adversarial
    expect: dict  # rule-set label -> verdict on a GPU
    cpu: dict = dataclasses.field(default_factory=dict)  # where a CPU run must differ beyond the general rules

    @property
    def backend(self) -> str:
        return "cuda" if "_cuda" in self.candidate else "triton"


CLEAN = {"strict": "ok", "kernelbench": "ok"}
PARTIAL = {"strict": "disallowed", "kernelbench": "ok", "kernelbench@0.3": "disallowed"}
CASES = [
    Case("level1/19_ReLU.py", "relu_triton.py", "clean", CLEAN),
    Case("level1/23_Softmax.py", "softmax_triton.py", "clean", CLEAN),
    Case("level1/1_Square_matrix_multiplication_.py", "matmul_triton.py", "clean", CLEAN),
    Case("level2/9_Matmul_Subtract_Multiply_ReLU.py", "linear_fused_triton.py", "clean", CLEAN),
    Case("level2/9_Matmul_Subtract_Multiply_ReLU.py", "linear_wrong_triton.py", "wrong",
         {"strict": "wrong_result", "kernelbench": "wrong_result"}),
    Case("level2/9_Matmul_Subtract_Multiply_ReLU.py", "linear_epilogue_triton_partial.py", "partial", PARTIAL),
    Case("level2/1_Conv2D_ReLU_BiasAdd.py", "conv_epilogue_triton_partial.py", "partial", PARTIAL),
    Case("level1/19_ReLU.py", "relu_cuda.py", "clean", CLEAN),
    Case("level2/9_Matmul_Subtract_Multiply_ReLU.py", "linear_epilogue_cuda_partial.py", "partial", PARTIAL),
    Case("level1/19_ReLU.py", "relu_cuda_side_stream.py", "adversarial", {"strict": "hack", "kernelbench": "hack"}),
    Case("level2/9_Matmul_Subtract_Multiply_ReLU.py", "linear_decoy_cuda.py", "adversarial",
         {"strict": "disallowed", "kernelbench": "disallowed"}, cpu={"kernelbench": "compiled"}),
]


def rule_options(label: str) -> tuple[str, float]:
    rules, _, share = label.partition("@")
    return rules, float(share or 0.0)


def expected_here(case: Case, label: str, gpu: bool) -> str:
    """What the verdict must be on this machine: without a GPU, CUDA is compile-only and has no profile."""
    want = case.expect[label]
    if gpu:
        return want
    if label in case.cpu:  # a verdict only the GPU profile can give
        return case.cpu[label]
    rules, share = rule_options(label)
    if want == "disallowed" and share > 0:
        want = "ok"  # the lazy rule needs a GPU profile
    if case.backend == "cuda" and want in ("ok", "hack"):  # compile-only; a static rejection stays what it is
        want = "compiled"
    return want


def shrink(source: str, limit: int = 16) -> str:
    """Top-level integer constants (and constant integer expressions such as 2048 * 2) capped at `limit`."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):  # height = width = 128
            try:
                value = eval(compile(ast.Expression(node.value), "<const>", "eval"), {"__builtins__": {}})  # constants only
            except Exception:
                continue
            if isinstance(value, int) and not isinstance(value, bool) and value > limit:
                node.value = ast.Constant(limit)
    return ast.unparse(tree)


def environment(device: str) -> dict:
    import torch

    env = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": device,
    }
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if device.startswith("cuda"):
        env["gpu"] = torch.cuda.get_device_name(0)
    nvcc = shutil.which("nvcc")
    if nvcc:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
        env["nvcc"] = out[-1] if out else None
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernelbench", type=Path, help="KernelBench's problem folder (holding level1/, level2/)")
    parser.add_argument("--out", type=Path, default=None, help="results JSON (default: print only)")
    parser.add_argument("--device", default=None, help="cuda:0 or cpu (default: the first GPU, else cpu)")
    parser.add_argument("--shrink", action="store_true", help="cap the problems' sizes at 16 (for a CPU run)")
    parser.add_argument("--only", choices=("triton", "cuda"), default=None, help="one backend's candidates only")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--reps", type=int, default=20, help="timed runs per candidate on a GPU")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)

    from backends import default_device

    device = args.device or default_device()
    gpu = device.startswith("cuda")
    cases = [c for c in CASES if args.only in (None, c.backend)]
    missing = [c.problem for c in cases if not (args.kernelbench / c.problem).is_file()]
    if missing:
        print(f"error: not in {args.kernelbench}: {', '.join(sorted(set(missing)))}", file=sys.stderr)
        return 2
    rows = []
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rules-bench-") as tmp:
        tasks = {}
        for problem in sorted({c.problem for c in cases}):
            src = (args.kernelbench / problem).read_text()
            dest = Path(tmp) / problem.replace("/", "__")
            dest.write_text(shrink(src) if args.shrink else src)
            tasks[problem] = dest
        with Executor(device=device, timeout_s=args.timeout) as executor:
            for case in cases:
                source = (CANDIDATES / case.candidate).read_text()
                for label in case.expect:
                    rules, min_share = rule_options(label)
                    options = EvalOptions(trials=args.trials, reps=args.reps, warmup=5, cpu_reps=1,
                                          compile_baseline=False, rules=rules, min_own_share=min_share)
                    t0 = time.perf_counter()
                    r = executor.evaluate(tasks[case.problem], source, backend=case.backend, options=options)
                    want = expected_here(case, label, gpu)
                    rows.append({
                        "problem": case.problem, "candidate": case.candidate, "kind": case.kind,
                        "backend": case.backend, "rules": rules, "min_own_share": min_share,
                        "expected": want, "status": r.status.value, "matched": r.status.value == want,
                        "own_kernel_share": r.own_kernel_share, "latency_ms": r.latency_ms,
                        "latency_source": r.latency_source, "eager_ms": r.baselines.eager_ms,
                        "speedup_eager": r.speedup_eager, "stress_trials": len(r.stress_trials),
                        "degenerate": r.degenerate, "message": r.message[:400],
                        "seconds": round(time.perf_counter() - t0, 2),
                    })
                    share = "-" if r.own_kernel_share is None else f"{100 * r.own_kernel_share:.1f}%"
                    print(f"{case.problem:45s} {case.candidate:36s} {label:16s} want {want:13s} got "
                          f"{r.status.value:13s} share {share:>6s} {rows[-1]['seconds']:6.1f}s", file=sys.stderr, flush=True)
    matched = sum(r["matched"] for r in rows)
    result = {
        "command": " ".join(["python", "benchmarks/rules_bench.py", *(argv if argv is not None else sys.argv[1:])]),
        "environment": environment(device),
        "options": {"trials": args.trials, "reps": args.reps, "warmup": 5, "compile_baseline": False,
                    "shrink": args.shrink, "tolerance": "executor defaults (fp32 1e-4)"},
        "seconds": round(time.perf_counter() - t_start, 1),
        "matched": matched,
        "total": len(rows),
        "cases": rows,
    }
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(f"{matched} of {len(rows)} verdicts as expected", file=sys.stderr)
    return 0 if matched == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
