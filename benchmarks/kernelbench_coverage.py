"""How much of a KernelBench checkout the builtin policy covers, measured on the CPU.

For every problem file of the chosen levels:
1. the full-size file is analysed (traced on meta tensors: this must be cheap,
   the GPU run analyses 200 tasks);
2. a shrunk copy (module-level integer sizes made small, kernel sizes, strides
   and other small integers kept) is written under --work, analysed, and the
   default candidate is evaluated by the executor on the CPU (Triton's
   interpreter plus the sm_90 compile check).

Nothing from KernelBench is stored in this repository: the checkout is an
argument and the shrunk copies go to a scratch directory.

    python benchmarks/kernelbench_coverage.py /work/kb/KernelBench --levels 1 2 --rules strict [--precision bf16]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KEEP_AT_MOST = 16  # integers up to this are kernel sizes, strides, dims, groups: kept (batch aside)


def shrink_value(name: str, value: int, shared: bool = False, base: int = 16, wide: bool = False) -> int:
    """Equal sizes stay equal (a batch that is also a feature size must still broadcast):
    only a batch size no other constant shares becomes 2."""
    if "batch" in name.lower() and value > 2 and (value <= KEEP_AT_MOST or not shared):
        return 2  # the interpreter's time grows with the batch; nothing else depends on it
    if value <= KEEP_AT_MOST:
        return value
    if wide:
        # a gemm's width is also what a group norm splits: keep groups of a few channels, where
        # torch's own CPU group norm is accurate (on one or two channels it is off by ~1e-3)
        base *= 4
    if value % 16 == 0:
        return base
    if value % 8 == 0:  # channels split into groups of 8
        return base + 8
    return base + 1 + value % 7  # sizes that are no multiple of 16 stay so: masks on every edge get exercised


class _Shrinker(ast.NodeTransformer):
    """Rewrites module-level integer constants (and tuples of them) to small values."""

    def __init__(self, base: int) -> None:
        self.base = base
        self.env: dict[str, object] = {}
        self.values: dict[str, set[int]] = {}  # original integer values per name

    def _wide(self, value: int) -> bool:
        """The value of a gemm width (any constant equal to it shrinks the same way)."""
        return any(value in vals for other, vals in self.values.items()
                   if any(word in other.lower() for word in ("features", "hidden")))

    def _shared(self, name: str, value: int) -> bool:
        return any(value in vals for other, vals in self.values.items() if "batch" not in other.lower())

    def _eval(self, node):
        try:
            return eval(compile(ast.Expression(node), "<size>", "eval"), {"__builtins__": {}}, dict(self.env))
        except Exception:
            return None

    def _shrunk(self, name: str, node):
        value = self._eval(node)
        if isinstance(value, bool):
            return node, value
        if any(isinstance(sub, ast.Name) for sub in ast.walk(node)):
            return node, value  # built from constants already shrunk (bias_shape = (out_features,))
        if isinstance(value, int):
            small = shrink_value(name, value, self._shared(name, value), self.base, self._wide(value))
            return ast.Constant(small), small
        if isinstance(value, tuple) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            small = tuple(shrink_value(name, v, self._shared(name, v), self.base, self._wide(v)) for v in value)
            return ast.Tuple([ast.Constant(v) for v in small], ast.Load()), small
        return node, value

    def _collect(self, node: ast.Module) -> None:
        """Every module-level integer by name, before anything is rewritten."""
        env: dict[str, object] = {}
        for stmt in node.body:
            if not isinstance(stmt, ast.Assign):
                continue
            pairs = []
            target = stmt.targets[0]
            if len(stmt.targets) > 1:
                pairs = [(t.id, stmt.value) for t in stmt.targets if isinstance(t, ast.Name)]
            elif isinstance(target, ast.Name):
                pairs = [(target.id, stmt.value)]
            elif isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple):
                pairs = [(t.id, v) for t, v in zip(target.elts, stmt.value.elts) if isinstance(t, ast.Name)]
            for name, expr in pairs:
                try:
                    value = eval(compile(ast.Expression(expr), "<size>", "eval"), {"__builtins__": {}}, dict(env))
                except Exception:
                    continue
                env[name] = value
                vals = value if isinstance(value, tuple) else (value,)
                self.values.setdefault(name, set()).update(v for v in vals if isinstance(v, int))

    def visit_FunctionDef(self, node: ast.FunctionDef):
        """Literal sizes written straight into get_inputs (torch.rand(n, 3, 224, 224))."""
        if node.name == "get_inputs":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Constant) and type(sub.value) is int:
                    sub.value = shrink_value("", sub.value, True, self.base, self._wide(sub.value))
        return node

    def visit_Module(self, node: ast.Module):
        self._collect(node)
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef):
                self.visit_FunctionDef(stmt)
        for stmt in node.body:
            if not isinstance(stmt, ast.Assign):
                continue
            if len(stmt.targets) > 1 and all(isinstance(t, ast.Name) for t in stmt.targets):  # h = w = 128
                stmt.value, value = self._shrunk(stmt.targets[0].id, stmt.value)
                for t in stmt.targets:
                    self.env[t.id] = value
                continue
            if len(stmt.targets) != 1:
                continue
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                stmt.value, value = self._shrunk(target.id, stmt.value)
                if value is not None:
                    self.env[target.id] = value
            elif isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple) \
                    and len(target.elts) == len(stmt.value.elts):
                for k, (t, v) in enumerate(zip(target.elts, stmt.value.elts)):
                    if isinstance(t, ast.Name):
                        stmt.value.elts[k], value = self._shrunk(t.id, v)
                        if value is not None:
                            self.env[t.id] = value
        return node


def shrink_source(text: str, base: int = 16) -> str:
    """The task with its sizes made small; ``base`` is what multiples of 16 become
    (the caller retries with a larger base when a dilated kernel finds no room)."""
    tree = _Shrinker(base).visit(ast.parse(text))
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def evaluate_level(level_dir: Path, work: Path, rules: str, limit: int | None, only: list[str] | None,
                   timeout_s: float, trials: int = 1, precision: str = "fp32") -> list[dict]:
    from backends import EvalOptions, Executor
    from evokernel.builtin import analyze, generate

    files = sorted(level_dir.glob("*.py"), key=lambda p: (int(p.name.split("_")[0]) if p.name[0].isdigit() else 0, p.name))
    if only:
        files = [f for f in files if any(o in f.name for o in only)]
    if limit:
        files = files[:limit]
    work.mkdir(parents=True, exist_ok=True)
    # one seeded trial (plus the executor's re-run with poisoned outputs): the interpreter
    # runs a shrunk 3-d convolution for minutes, and the GPU run checks all five
    options = EvalOptions.from_dict({"rules": rules, "timing": False, "baselines": False, "trials": trials,
                                     "precision": precision})
    rows = []
    with Executor(device="cpu", timeout_s=timeout_s) as executor:
        for path in files:
            row = {"task": path.stem}
            t0 = time.perf_counter()
            full = analyze(path, rules, precision)
            row["full_analysis_s"] = round(time.perf_counter() - t0, 3)
            row["full_plan"] = full.family if full else None
            if not full:
                row["reason"] = full.reason
            for base in (8, 16, 32):
                # one file per size: the task loader caches modules by path and modification time
                small_path = work / f"{path.stem}_b{base}.py"
                small_path.write_text(shrink_source(path.read_text(), base))
                small = analyze(small_path, rules, precision)
                if small or not small.reason.startswith("analysis failed"):
                    break
            row["small_plan"] = small.family if small else None
            if small:
                row["stages"] = [s.family for s in small.stages] or [small.family]
                source = generate(small)
                t1 = time.perf_counter()
                result = executor.evaluate(small_path, source, backend="triton", options=options)
                row["eval_s"] = round(time.perf_counter() - t1, 1)
                row["status"] = result.status.value if hasattr(result.status, "value") else str(result.status)
                row["message"] = (result.message or "")[:300]
                row["max_abs_error"] = result.max_abs_error
            else:
                row.setdefault("reason", small.reason)
                row["status"] = "unsupported"
            rows.append(row)
            print(f"{path.stem:70s} {row['status']:14s} {row.get('message', row.get('reason', ''))[:150]}",
                  file=sys.stderr, flush=True)
    return rows


def summary(rows: list[dict]) -> dict:
    n = len(rows)
    return {
        "tasks": n,
        "full_size_planned": sum(1 for r in rows if r["full_plan"]),
        "small_planned": sum(1 for r in rows if r["small_plan"]),
        "small_correct": sum(1 for r in rows if r["status"] in ("ok", "compiled")),
        "max_full_analysis_s": max((r["full_analysis_s"] for r in rows), default=0.0),
    }


def _environment(argv: list[str] | None) -> dict[str, str | None]:
    """What the figures were measured with: the CPU interpreter, so the machine and the versions."""
    import datetime
    import platform
    import shlex

    import torch

    from evokernel.bench._runner import _git_commit, _version

    return {"device": "cpu (Triton interpreter; sm_90 compile check)", "platform": platform.platform(),
            "python": platform.python_version(), "torch": torch.__version__, "triton": _version("triton"),
            "git_commit": _git_commit(), "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": shlex.join(["python", "benchmarks/kernelbench_coverage.py", *(sys.argv[1:] if argv is None else argv)])}


def main(argv: list[str] | None = None) -> int:
    import signal

    # a terminated run still closes its executor (and so its worker processes)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernelbench", type=Path, help="the KernelBench problem directory (holding level1, level2)")
    parser.add_argument("--levels", nargs="+", default=["1", "2"])
    parser.add_argument("--rules", default="strict", choices=["strict", "kernelbench"])
    parser.add_argument("--work", type=Path, default=Path("/tmp/kb_coverage"))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--only", nargs="*", default=None, help="substrings of file names to keep")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--trials", type=int, default=1, help="correctness trials per candidate")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"],
                        help="run the tasks in this precision (the model and floating inputs cast, as a bench's --precision)")
    parser.add_argument("--out", type=Path, default=None, help="write the rows and the summary as JSON here")
    args = parser.parse_args(argv)
    report = {"rules": args.rules, "precision": args.precision, "environment": _environment(argv), "levels": {}}
    for level in args.levels:
        rows = evaluate_level(args.kernelbench / f"level{level}", args.work / f"level{level}", args.rules,
                              args.limit, args.only, args.timeout, args.trials, args.precision)
        report["levels"][f"level{level}"] = {"summary": summary(rows), "tasks": rows}
        print(f"level{level} ({args.rules}, {args.precision}): {json.dumps(summary(rows))}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
