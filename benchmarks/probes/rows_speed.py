"""Probe: the builtin's drafts of KernelBench's row, scan, pool and matmul-corner tasks against eager
and torch.compile, and against an older generator's drafts, timed on one device.

For every chosen task of LEVEL: the builtin's draft (analyze, default_config, generate: what a budget-1
run submits) is evaluated by the executor (correctness on TRIALS input sets, then the timing of
backends/_timing.py, eager and torch.compile timed by the same worker). With --baseline-tree (a
directory holding an older checkout's evokernel, backends and memory_store packages, see --prepare-baseline),
that checkout drafts the task too, in a child process, and the two drafts are re-timed in alternation in
one worker (backends/_retime.py: same inputs, the order flipped each round); the record keeps both.

With --set FIELD=VALUE (repeatable), the draft takes its default configuration with those fields
changed (a convolution's --set gather=nhwc, say), and is re-timed in alternation against this
checkout's own default draft, as against an older checkout's; a task whose family has no such
field keeps its default (its record says so).

A record is written to --out as soon as its task is done, and a rerun skips the tasks the file already
holds (--redo to time them again), so a run cut by a time limit resumes where it stopped; --stop-after
stops starting tasks after that many seconds. Progress goes to stderr.

On a machine without a GPU it is a dry run: each task is shrunk as benchmarks/kernelbench_coverage.py
shrinks it (its draft still configured from the full-size task), checked in Triton's interpreter and
timed by the wall clock (not a speed). Nothing from KernelBench is stored: the checkout is an argument.

    python benchmarks/probes/rows_speed.py --prepare-baseline cc2d664 --baseline-tree build/rows-speed-base
    python benchmarks/probes/rows_speed.py .kb/KernelBench --baseline-tree build/rows-speed-base \\
        --out rows-speed-h200.json --stop-after 480
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernelbench_coverage import shrink_source  # noqa: E402
from probe_common import environment, task_files  # noqa: E402

from backends import EvalOptions, Executor  # noqa: E402
from evokernel.builtin import Config, analyze, default_config, family, generate  # noqa: E402

# issue 30's level1 tasks behind torch.compile, and row tasks beside them that share their kernels
TASKS = (
    "40_LayerNorm", "35_GroupNorm_", "34_InstanceNorm", "33_BatchNorm", "23_Softmax", "24_LogSoftmax",
    "95_CrossEntropyLoss", "94_MSELoss", "96_HuberLoss", "98_KLDivLoss", "99_TripletMarginLoss",
    "92_cumsum_exclusive", "44_Average_Pooling_1D", "41_Max_Pooling_1D", "12_Matmul_with_diagonal_matrices_",
    "6_Matmul_with_large_K_dimension_", "9_Tall_skinny_matrix_multiplication_",
    "36_RMSNorm_", "38_L1Norm_", "100_HingeLoss", "47_Sum_reduction_over_a_dimension", "89_cumsum",
)
SHRINK_BASES = (8, 16, 32)  # as kernelbench_coverage.py's runs
PACKAGES = ("evokernel", "backends", "memory_store")

# The draft of a task by the checkout at argv[1] (a child process, so two generators never share one):
# the small file's plan, configured from the full-size file's as benchmarks do on the CPU.
_DRAFT = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import evokernel
if not Path(evokernel.__file__).resolve().is_relative_to(Path(sys.argv[1]).resolve()):
    raise SystemExit(f"evokernel came from {evokernel.__file__}, not from {sys.argv[1]}")
from evokernel.builtin import analyze, default_config, generate
plan = analyze(Path(sys.argv[2]), sys.argv[4], precision=sys.argv[5])
if not plan:
    raise SystemExit(f"not planned: {plan.reason}")
full = analyze(Path(sys.argv[3]), sys.argv[4], precision=sys.argv[5]) if sys.argv[3] != sys.argv[2] else plan
config = default_config(full) if full and full.main_stage.family == plan.main_stage.family else None
sys.stdout.write(generate(plan, config))
"""


def draft(task: Path, full: Path, rules: str, overrides: dict | None = None, precision: str = "fp32") -> tuple[str, str]:
    """(source, configuration text) of this checkout's draft: the default configuration, with the
    ``overrides`` fields changed where its family reads them all."""
    plan = analyze(task, rules, precision)
    if not plan:
        raise ValueError(f"not planned: {plan.reason}")
    full_plan = analyze(full, rules, precision) if full != task else plan
    config = default_config(full_plan if full_plan and full_plan.main_stage.family == plan.main_stage.family else plan)
    if overrides and set(overrides) <= set(family(config.family).tunable):
        config = dataclasses.replace(config, **overrides)
    return generate(plan, config), config.text()


def parse_overrides(items: list[str]) -> dict:
    """FIELD=VALUE pairs as Config fields: integers, true/false, else the text."""
    out = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--set takes FIELD=VALUE, got {item!r}")
        if name not in {f.name for f in dataclasses.fields(Config)} or name == "family":
            raise ValueError(f"--set: {name!r} is not a configuration field")
        out[name] = int(text) if text.lstrip("-").isdigit() else {"true": True, "false": False}.get(text.lower(), text)
    return out


def baseline_draft(tree: Path, task: Path, full: Path, rules: str, precision: str = "fp32") -> str:
    proc = subprocess.run([sys.executable, "-c", _DRAFT, str(tree), str(task), str(full), rules, precision],
                          capture_output=True, text=True, timeout=600, cwd=tree)
    if proc.returncode != 0:
        raise ValueError(f"the baseline checkout drafted nothing: {proc.stderr.strip()[-400:]}")
    return proc.stdout


def prepare_baseline(rev: str, tree: Path) -> None:
    """Unpack the packages of git revision ``rev`` into ``tree`` (replacing what is there)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "base.tar"
        subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev, *PACKAGES], check=True)
        tree.mkdir(parents=True, exist_ok=True)
        for package in PACKAGES:
            subprocess.run(["rm", "-rf", str(tree / package)], check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")
    (tree / "REVISION").write_text(subprocess.run(["git", "-C", str(ROOT), "rev-parse", rev], capture_output=True,
                                                  text=True, check=True).stdout)


def shrunk(path: Path, work: Path, rules: str) -> Path:
    """The task shrunk for the interpreter, at the first base its shapes still allow (a dilated
    window needs room), as kernelbench_coverage.py shrinks it."""
    for base in SHRINK_BASES:
        small = work / f"{path.stem}_b{base}.py"  # a file per size: the task loader caches by path
        small.write_text(shrink_source(path.read_text(), base))
        plan = analyze(small, rules)
        if plan or not plan.reason.startswith("analysis failed"):
            break
    return small


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def measure(executor: Executor, path: Path, small: Path, args: argparse.Namespace, gpu: bool) -> dict:
    record: dict = {"task": path.stem}
    t0 = time.perf_counter()
    try:
        source, config = draft(small, path, args.rules, args.overrides, args.precision)
        default_source = draft(small, path, args.rules, precision=args.precision)[0] if args.overrides else None
    except ValueError as exc:
        return {**record, "status": "not_planned", "message": str(exc)[:300]}
    record["config"] = config
    options = EvalOptions(trials=args.trials, reps=args.reps, warmup=args.warmup, cpu_reps=1, rules=args.rules,
                          precision=args.precision,
                          compile_baseline=args.compile and gpu, baselines=gpu)
    result = executor.evaluate(small, source, backend="triton", options=options, timeout_s=args.timeout)
    record.update(status=result.status.value, message=(result.message or "")[:300], new_ms=result.latency_ms,
                  timing_method=result.timing_method, eager_ms=result.baselines.eager_ms,
                  compile_ms=result.baselines.compile_ms,
                  kernels=[{"name": k.name, "registers": k.registers, "spills": k.spills, "num_warps": k.num_warps}
                           for k in result.kernels])
    record["speedup_eager"] = _ratio(record["eager_ms"], record["new_ms"])
    record["speedup_compile"] = _ratio(record["compile_ms"], record["new_ms"])
    if args.baseline_tree or args.overrides:
        try:
            old = baseline_draft(args.baseline_tree, small, path, args.rules, args.precision) if args.baseline_tree else default_source
        except (ValueError, subprocess.TimeoutExpired) as exc:
            record["baseline"] = {"status": "not_drafted", "message": str(exc)[:300]}
        else:
            if old == source:
                record["baseline"] = {"status": "same_source"}
            else:
                report = executor.retime(small, old, source, backend="triton", rounds=args.rounds,
                                         options=EvalOptions(trials=1, reps=args.reps, warmup=args.warmup, cpu_reps=1,
                                                             rules=args.rules, precision=args.precision, baselines=False),
                                         timeout_s=args.timeout)
                record["baseline"] = {"status": report.status.value, "message": report.message[:300],
                                      "old_ms": report.baseline_ms, "new_ms": report.candidate_ms,
                                      "new_vs_old": report.speedup, "rounds": [list(r) for r in report.rounds]}
                old_ms = report.baseline_ms
                record["baseline"]["old_speedup_compile"] = _ratio(record["compile_ms"], old_ms)
    record["seconds"] = round(time.perf_counter() - t0, 1)
    return record


def summary(records: dict) -> dict:
    def geomean(values):
        values = [v for v in values if v]
        return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None

    done = list(records.values())
    base = [r["baseline"] for r in done if isinstance(r.get("baseline"), dict)]
    return {"tasks": len(done), "ok": sum(r.get("status") == "ok" for r in done),
            "geomean_speedup_compile": geomean(r.get("speedup_compile") for r in done),
            "geomean_speedup_eager": geomean(r.get("speedup_eager") for r in done),
            "geomean_new_vs_old": geomean(b.get("new_vs_old") for b in base),
            "slower_than_old": sorted(r["task"] for r in done
                                      if (r.get("baseline") or {}).get("new_vs_old") and r["baseline"]["new_vs_old"] < 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernelbench", type=Path, nargs="?", help="the KernelBench problem directory (holding level1)")
    ap.add_argument("--level", default="1")
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), help="task names or their numbers")
    ap.add_argument("--out", type=Path, default=Path("rows-speed.json"))
    ap.add_argument("--baseline-tree", type=Path, help="an older checkout's packages (see --prepare-baseline)")
    ap.add_argument("--prepare-baseline", metavar="REV", help="unpack REV's packages into --baseline-tree and stop")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                    help="draft with this configuration field changed, against the default draft (repeatable)")
    ap.add_argument("--device", help="cuda or cpu (default: cuda where there is one)")
    ap.add_argument("--rules", default="strict", choices=["strict", "kernelbench"])
    ap.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"],
                    help="the tasks' precision (models and floating inputs cast, as bench --precision)")
    ap.add_argument("--no-compile", dest="compile", action="store_false", help="leave the torch.compile baseline out")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the old and new drafts")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds for one evaluation")
    ap.add_argument("--stop-after", type=float, help="start no task after this many seconds")
    ap.add_argument("--redo", action="store_true", help="time tasks the output file already holds again")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "rows_speed")
    args = ap.parse_args(argv)
    if args.prepare_baseline:
        if not args.baseline_tree:
            ap.error("--prepare-baseline needs --baseline-tree")
        prepare_baseline(args.prepare_baseline, args.baseline_tree)
        print(f"{args.prepare_baseline} unpacked into {args.baseline_tree}", file=sys.stderr)
        return 0
    if args.kernelbench is None:
        ap.error("the KernelBench directory is required")
    try:
        args.overrides = parse_overrides(args.overrides)
    except ValueError as exc:
        ap.error(str(exc))
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    gpu = device.startswith("cuda")
    if args.baseline_tree:
        args.baseline_tree = args.baseline_tree.resolve()
    level_dir = args.kernelbench / f"level{args.level}"
    files = [f.resolve() for f in task_files(level_dir, args.tasks)]
    doc = json.loads(args.out.read_text()) if args.out.exists() else {}
    records = {} if args.redo else dict(doc.get("tasks", {}))
    work = args.work / f"level{args.level}"
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    command = "python benchmarks/probes/rows_speed.py " + " ".join(argv if argv is not None else sys.argv[1:])
    with Executor(device=device, timeout_s=args.timeout) as executor:
        for path in files:
            if path.stem in records:
                continue
            if args.stop_after and time.perf_counter() - start > args.stop_after:
                print(f"stopping after {args.stop_after:g} s; rerun to go on", file=sys.stderr)
                break
            small = path if gpu else shrunk(path, work, args.rules)  # the interpreter: shrunk sizes
            record = measure(executor, path, small, args, gpu)
            records[path.stem] = record
            base = record.get("baseline") or {}
            print(f"{path.stem:45s} {record['status']:12s} new {record.get('new_ms') or float('nan'):9.4f} ms  "
                  f"eager {record.get('eager_ms') or float('nan'):9.4f}  compile {record.get('compile_ms') or float('nan'):9.4f}"
                  f"  old/new {base.get('new_vs_old') or float('nan'):6.3f} {base.get('status', '')}",
                  file=sys.stderr, flush=True)
            doc = {"command": command, "environment": environment(device), "options": {
                       k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                   "summary": summary(records), "tasks": records}
            args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(summary(records)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
