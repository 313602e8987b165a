"""Probe: the accuracy oracle's verdicts on KernelBench level3 49_Mamba2ReturnFinalState, to check
the README's claims about COND_SLACK and ROOM_OF_VALUE (backends/_compare.py) on that task.

The task is imported from the KernelBench file given (never copied) with its batch set to --batch,
and its reference model and inputs are drawn as the executor's first correctness trial draws them
(the model seeded with --seed, the inputs with that option's first trial seed; one input set per
seed). On them the fp32 reference output, its float64 run and each element's conditioning come from
the executor's `Oracle` (`exact`, then `conditioning`, measured once per input set as the executor
does), and every candidate is judged by the executor's `compare(expected, got, tolerance, exact,
conditioning)` with the tolerance the executor uses for a task without TOLERANCE (fp32: 1e-4, 1e-4).
The candidates:

* runs as accurate as the reference: the fp32 reference model on its inputs scaled by 1 +/- one unit
  of fp32 roundoff (random signs, --runs seeds), once with only the input X perturbed and once with
  its parameters A, B, C perturbed too;
* the reference's own output (or, with base "as-accurate run", the first X-perturbed run) with a
  share of its elements perturbed: zeroed, halved, or scaled by 0.9, 1.01, 1.001 or 1.0005. Which
  elements is recorded: the smallest or largest by magnitude of the float64 output, the last in
  memory order (flat index), or random ones (--random-seeds draws; draw s is the first elements of
  one permutation seeded with s, so a smaller selection of draw s lies inside a larger one).

For each: the verdict with the conditioning, without it (the conditioning call answering None),
by the tolerance alone, and, with --earlier-rule COMMIT, by that commit's backends/_compare.py
(read with `git show`, its `compare(expected, got, tolerance, exact)`; 048ce25 is the last rule
before the conditioning: one absolute room of twice the reference's worst error); `by_accuracy`;
its RMS error against the float64 output over the reference's; and the probe's own counts of
elements past the tolerance of the reference and of the float64 output. The perturbed candidates
are written as a table (`columns`, one row a line), with a summary of passes over input sets and
selection draws.

    python benchmarks/probes/mamba2_oracle_claims.py KERNELBENCH/level3/49_Mamba2ReturnFinalState.py \\
        --batch 64 --out benchmarks/results/mamba2-oracle-claims-cpu.json

Data go to --out (stdout without it), progress and a summary to stderr.
"""
from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import math
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_common import environment  # noqa: E402

from backends import EvalOptions  # noqa: E402
from backends import _inputs  # noqa: E402
from backends._compare import (AS_ACCURATE, COND_SLACK, CONDITIONING_DRAWS, OUTLIER_RMS, ROOM_OF_VALUE,  # noqa: E402
                               ROOM_OF_VALUE_RTOLS, SLACK, compare, tolerance_for)
from backends._oracle import Oracle  # noqa: E402
from backends._task import load_task_module  # noqa: E402

UNIT = float(torch.finfo(torch.float32).eps) / 2.0  # one unit of fp32 roundoff
OPERATIONS = {"zeroed": 0.0, "halved": 0.5, "x0.9": 0.9, "x1.01": 1.01, "x1.001": 1.001, "x1.0005": 1.0005}


def flip(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """`t` scaled by 1 +/- one unit of fp32 roundoff, random signs (as the oracle's conditioning draws)."""
    signs = torch.randint(0, 2, t.shape, generator=generator).to(t.dtype)
    return t * (signs * (2.0 * UNIT) + (1.0 - UNIT))


def as_accurate_run(model: torch.nn.Module, inputs: list[Any], seed: int, parameters: bool) -> torch.Tensor:
    """The fp32 reference on its inputs one unit of roundoff away (and its parameters, with `parameters`)."""
    generator = torch.Generator().manual_seed(seed)
    run = copy.deepcopy(model) if parameters else model
    with torch.no_grad():
        if parameters:
            for p in run.parameters():
                p.copy_(flip(p, generator))
        return run(*[flip(x, generator) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                     for x in inputs])


def select(exact: torch.Tensor, count: int, which: str, seed: int) -> torch.Tensor:
    """Flat indices of `count` elements: by magnitude of the float64 output, last in memory order, or random."""
    n = exact.numel()
    if which == "smallest":
        return exact.abs().flatten().argsort()[:count]
    if which == "largest":
        return exact.abs().flatten().argsort(descending=True)[:count]
    if which == "last":
        return torch.arange(n - count, n)
    if which == "random":
        return torch.randperm(n, generator=torch.Generator().manual_seed(seed))[:count]
    raise ValueError(which)


def perturbed(base: torch.Tensor, index: torch.Tensor, factor: float) -> torch.Tensor:
    out = base.clone()
    flat = out.view(-1)
    flat[index] = flat[index] * factor
    return out


def earlier_compare(commit: str) -> Callable:
    """`compare` of backends/_compare.py at `commit` (self-contained there: it imports only torch)."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:backends/_compare.py"],
                            capture_output=True, text=True, check=True).stdout
    name = f"earlier_compare_{commit}"
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(source, f"{commit}:backends/_compare.py", "exec"), module.__dict__)  # noqa: S102 - our own history
    return module.compare


EARLIER: list[Callable] = []  # the earlier rule's compare, when asked for


def judge(expected: torch.Tensor, got: torch.Tensor, exact: torch.Tensor, conditioning: Callable,
          tolerance: Any, atol: float, rtol: float) -> dict:
    """The executor's verdict on `got`, with and without the conditioning and by the tolerance alone."""
    cmp = compare(expected, got, tolerance, exact, conditioning)
    earlier = {"passes_earlier_rule": EARLIER[0](expected, got, tolerance, exact).ok} if EARLIER else {}
    bare = compare(expected, got, tolerance, exact, lambda: None)
    plain = compare(expected, got, tolerance)
    e64, g64 = expected.double(), got.double()
    ratio = (cmp.candidate_error / cmp.reference_error
             if cmp.candidate_error is not None and cmp.reference_error else None)
    return {"passes": cmp.ok, "by_accuracy": cmp.by_accuracy, "passes_without_conditioning": bare.ok,
            "passes_tolerance_only": plain.ok, "candidate_error": cmp.candidate_error,
            "reference_error": cmp.reference_error, "times_reference": ratio,
            "past_tolerance_of_reference": int((~((g64 - e64).abs() <= atol + rtol * e64.abs())).sum()),
            "past_tolerance_of_float64": int((~((g64 - exact).abs() <= atol + rtol * exact.abs())).sum()),
            **earlier, "feedback": cmp.feedback.split(";")[0][:200]}


def one_input_set(module: Any, seed: int, args: argparse.Namespace) -> dict:
    options = EvalOptions(seed=seed)
    device = torch.device("cpu")
    _inputs.seed_all(options.seed)  # as the executor builds the reference model
    model = module.Model(*module.get_init_inputs()).to(device).eval()
    trial_seed = options.seeds()[0][0]
    inputs = _inputs.draw(module.get_inputs, device, trial_seed)  # the executor's trial 1
    task_tolerance = getattr(module, "TOLERANCE", None)
    tolerance = options.tolerance(tuple(float(v) for v in task_tolerance) if task_tolerance is not None else None)
    t0 = time.perf_counter()
    with torch.no_grad():
        expected = model(*[x.clone() for x in inputs])
    oracle = Oracle(model, device)
    exact = oracle.exact(inputs, expected)
    if exact is None:
        raise SystemExit(f"no float64 reference: {oracle.unavailable}")
    conditioning = oracle.conditioning(inputs, expected, exact)  # measured once for this input set
    measured = conditioning()
    atol, rtol = tolerance_for(expected.dtype, tolerance)
    x = exact.abs().flatten()
    ref_err = (expected.double() - exact).abs()
    row: dict = {"seed": seed, "trial_seed": trial_seed, "output_shape": list(expected.shape),
                 "elements": expected.numel(), "tolerance": [atol, rtol],
                 "float64_output_abs": {"min": float(x.min()), "median": float(x.median()), "max": float(x.max())},
                 "reference_past_tolerance_of_float64": int((ref_err > atol + rtol * exact.abs()).sum()),
                 "reference_worst_abs_error": float(ref_err.max()),
                 "conditioning_measured": measured is not None,
                 "seconds_reference_float64_conditioning": round(time.perf_counter() - t0, 2)}
    print(f"seed {seed}: output {tuple(expected.shape)}, |float64| {row['float64_output_abs']}, reference past "
          f"{row['reference_past_tolerance_of_float64']} elements", file=sys.stderr)

    def note(group: list, name: str, got: torch.Tensor, **what: Any) -> dict:
        v = {"candidate": name, **what, **judge(expected, got, exact, conditioning, tolerance, atol, rtol)}
        group.append(v)
        print(f"  {name:48s} {'pass' if v['passes'] else 'FAIL'}  (w/o conditioning "
              f"{'pass' if v['passes_without_conditioning'] else 'fail'}, earlier rule "
              f"{'-' if 'passes_earlier_rule' not in v else 'pass' if v['passes_earlier_rule'] else 'fail'}, "
              f"past ref {v['past_tolerance_of_reference']}, "
              f"{v['times_reference'] if v['times_reference'] is None else round(v['times_reference'], 2)}x)",
              file=sys.stderr)
        return v

    row["reference_itself"] = judge(expected, expected, exact, conditioning, tolerance, atol, rtol)
    runs: list = []
    for parameters in (False, True):
        for r in range(args.runs):
            got = as_accurate_run(model, inputs, 1000 * int(parameters) + r, parameters)
            note(runs, f"as-accurate run {r} ({'X, A, B, C' if parameters else 'X'} perturbed)", got,
                 perturbed_inputs="X, A, B, C" if parameters else "X", run_seed=r)
    row["as_accurate_runs"] = runs
    bases = {"reference output": expected, "as-accurate run": as_accurate_run(model, inputs, 0, False)}
    n = expected.numel()
    plans = []  # (share label, element count, operations, selections)
    for share in args.shares:
        count = math.ceil(share / 100.0 * n)
        plans.append((f"{share:g}% ({count} elements)", count))
    plans.append((f"{args.random_count} elements", args.random_count))
    perturbations: list = []
    for base_name, base in bases.items():
        for label, count in plans:
            for which in ("smallest", "largest", "last", "random"):
                seeds = range(args.random_seeds) if which == "random" else range(1)
                for op, factor in OPERATIONS.items():
                    for s in seeds:
                        index = select(exact, count, which, s)
                        name = f"{base_name}: {label} {which}{f' seed {s}' if which == 'random' else ''} {op}"
                        note(perturbations, name, perturbed(base, index, factor), base=base_name, share=label,
                             elements=count, which=which, operation=op, factor=factor,
                             selection_seed=s if which == "random" else None,
                             selected_float64_abs=[float(x[index].min()), float(x[index].max())])
    row["perturbations"] = perturbations
    return row


def summarise(sets: list[dict]) -> dict:
    """Passes with the conditioning (and without it) of each kind of candidate, over input sets and selection seeds."""
    groups: dict = {}
    for row in sets:
        for v in row["as_accurate_runs"]:
            groups.setdefault(f"as-accurate runs, {v['perturbed_inputs']} perturbed", []).append(v)
        for v in row["perturbations"]:
            groups.setdefault(f"{v['base']}: {v['share']} {v['which']} {v['operation']}", []).append(v)
    summary = {name: {"passed": sum(v["passes"] for v in vs), "of": len(vs),
                      "passed_without_conditioning": sum(v["passes_without_conditioning"] for v in vs),
                      **({"passed_earlier_rule": sum(v["passes_earlier_rule"] for v in vs)}
                         if "passes_earlier_rule" in vs[0] else {})}
               for name, vs in groups.items()}
    print("summary (passed of candidates; without the conditioning; by the earlier rule):", file=sys.stderr)
    for name, s in summary.items():
        print(f"  {name:64s} {s['passed']:3d} of {s['of']:3d}  ({s['passed_without_conditioning']}; "
              f"{s.get('passed_earlier_rule', '-')})", file=sys.stderr)
    return summary


COLUMNS = ["base", "share", "which", "operation", "selection_seed", "selected_float64_abs", "passes",
           "passes_without_conditioning", "passes_tolerance_only", "passes_earlier_rule", "by_accuracy",
           "times_reference", "past_tolerance_of_reference", "past_tolerance_of_float64"]


def _round(x: Any) -> Any:
    if isinstance(x, float):
        return float(f"{x:.4g}")
    if isinstance(x, list):
        return [_round(v) for v in x]
    return x


def dumps(result: dict) -> str:
    """JSON with each input set's perturbed candidates as a table, one row a line (floats to 4 digits)."""
    rows: dict[str, str] = {}
    for row in result["input_sets"]:
        table = [json.dumps([_round(v.get(c)) for c in COLUMNS]) for v in row["perturbations"]]
        key = f"@rows{len(rows)}@"
        rows[key] = "[\n   " + ",\n   ".join(table) + "\n  ]"
        row["perturbations"] = {"columns": COLUMNS, "rows": key}
    text = json.dumps(result, indent=1)
    for key, table in rows.items():
        text = text.replace(json.dumps(key), table)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", type=Path, help="KernelBench's level3/49_Mamba2ReturnFinalState.py (read, not copied)")
    ap.add_argument("--batch", type=int, default=64, help="the task's batch_size (2048 in the file)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[EvalOptions().seed],
                    help="executor seeds: one input set each (the model and trial 1's inputs)")
    ap.add_argument("--runs", type=int, default=6, help="as-accurate runs per kind")
    ap.add_argument("--shares", type=float, nargs="+", default=[0.05, 0.005], help="percent of the output perturbed")
    ap.add_argument("--random-count", type=int, default=50, help="a fixed count of elements perturbed too")
    ap.add_argument("--random-seeds", type=int, default=10, help="draws of the random selections")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (the machine is shared)")
    ap.add_argument("--earlier-rule", metavar="COMMIT", help="judge by this commit's compare too (e.g. 048ce25)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.earlier_rule:
        EARLIER.append(earlier_compare(args.earlier_rule))
    module = load_task_module(args.task)
    module.batch_size = args.batch  # get_inputs and get_init_inputs read it when called
    t0 = time.perf_counter()
    sets = [one_input_set(module, seed, args) for seed in args.seeds]
    summary = summarise(sets)
    command = "python benchmarks/probes/mamba2_oracle_claims.py " + " ".join(argv if argv is not None else sys.argv[1:])
    env = environment("cpu")
    env.update({"cpu": platform.processor() or platform.machine(), "python": platform.python_version(),
                "threads": torch.get_num_threads()})
    result = {"command": command, "environment": env, "task": args.task.name, "batch": args.batch,
              "earlier_rule": args.earlier_rule,
              "rule": {"AS_ACCURATE": AS_ACCURATE, "SLACK": SLACK, "OUTLIER_RMS": OUTLIER_RMS, "COND_SLACK": COND_SLACK,
                       "CONDITIONING_DRAWS": CONDITIONING_DRAWS, "ROOM_OF_VALUE": ROOM_OF_VALUE,
                       "ROOM_OF_VALUE_RTOLS": ROOM_OF_VALUE_RTOLS},
              "errors": "RMS of (output - float64 output) over RMS of the float64 output",
              "seconds": round(time.perf_counter() - t0, 1), "summary": summary, "input_sets": sets}
    text = dumps(result)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)
    print(f"done in {result['seconds']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
