"""KernelBench's own problem files through `evokernel bench`, and EvoKernel's
evaluation timed beside KernelBench's `eval_kernel_against_ref` on the same
candidates.

    python benchmarks/kernelbench_eval.py KBDIR OUT [--gpus 0,1,2,3] [--kb-src DIR]

KBDIR is KernelBench's problem folder, unchanged (a checkout's `KernelBench/`,
with `level1/` and `level2/`); OUT is the JSON to write (for the H200 run:
benchmarks/results/kernelbench-eval-h200.json).

Part 1, bench: each level through
`evokernel bench KBDIR/levelN --policy builtin --budget 1 --json --memory ...`.
Recorded per task: the verdict, its message, and the attempt list; overall:
the verdict counts, every `crash` with its message (a crash is always the
candidate's: the executor turns a worker that dies while only the harness ran
into `task_error`), every `task_error` with its message.

Part 2, compare: the bench's candidates for 19_ReLU and a few more (one per
kernel family, as time allows) evaluated three ways, each in a warm process
and with the same trial counts (5 correctness trials, 100 timed runs, 3
warm-ups): EvoKernel's executor with its own seeding, EvoKernel's executor
with --kernelbench-seeding, and KernelBench's eval_kernel_against_ref
(measure_performance and check_for_excessive_speedup on, so it times the
reference as our eager baseline does). The wall time of each call is recorded
and the ratio ours / KernelBench's.

KernelBench's code is imported from --kb-src (default KBDIR/../src) at run
time; nothing of it is copied here. Its package __init__ imports LLM clients,
so the script loads `kernelbench.eval` and `kernelbench.timing` directly and
gives them a stand-in `kernelbench.utils` (the GPU vendor check is all eval
uses from it) and, where they are not installed, stand-ins for `requests`
(unused by eval) and pydantic's BaseModel (a plain record).

Budget (one device call of about 8 minutes): the bench uses 5 correctness
trials (real verdicts) but 20 timed runs after 3 warm-ups, and no
torch.compile baseline (KernelBench's eval does not time one; the eager
baseline stays, as KernelBench times the reference); with several GPUs
(--gpus) one worker per GPU evaluates in parallel, and Triton compiles in
each worker. The compare part stops starting new candidates once
--compare-budget-s is spent (19_ReLU always runs).

CPU path (to check the script without a GPU): --shrink F writes copies of
the problem files with every module-level integer constant of 256 or more
divided by F (at least 8), runs the bench on them at size "full", and in the
compare part runs only EvoKernel's executor (KernelBench's eval needs CUDA).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COMPARE_TRIALS, COMPARE_REPS, COMPARE_WARMUP = 5, 100, 3
ALWAYS_COMPARE = "19_ReLU"


# --- part 1: the bench -----------------------------------------------------------------------


def shrink_copy(src: Path, dst: Path, factor: int) -> int:
    """Copy the problem files of `src` to `dst` with large module-level integers divided by `factor`."""
    dst.mkdir(parents=True, exist_ok=True)
    pattern = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\d+)\s*(#.*)?$")
    count = 0
    for f in sorted(src.glob("*.py")):
        lines = []
        for line in f.read_text().splitlines():
            m = pattern.match(line)
            if m and int(m.group(2)) >= 256:
                line = f"{m.group(1)} = {max(8, int(m.group(2)) // factor)}"
            lines.append(line)
        (dst / f.name).write_text("\n".join(lines) + "\n")
        count += 1
    return count


def run_bench(level_dir: Path, memory: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, "-m", "evokernel.cli", "bench", str(level_dir), "--policy", "builtin", "--budget", "1",
               "--json", "--memory", str(memory), "--trials", str(args.trials), "--reps", str(args.reps),
               "--warmup", "3", "--no-compile-baseline", "--timeout", str(args.timeout)]
    if args.gpus:
        command += ["--gpus", args.gpus]
    if args.device:
        command += ["--device", args.device]
    if args.size:
        command += ["--size", args.size]
    if args.limit:
        command += ["--limit", str(args.limit)]
    t0 = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    shown = " ".join(command[1:]).replace(str(level_dir), level_dir.name)
    if proc.returncode not in (0, 1):
        return {"command": shown, "wall_s": wall, "error": proc.stderr[-4000:], "exit_code": proc.returncode}
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"command": shown, "wall_s": wall, "exit_code": proc.returncode, "result": data}


def reused_bench(folder: Path, level: str) -> tuple[dict[str, Any], Path]:
    """An earlier bench's results file and memory, in run_bench's shape."""
    # named by the card that ran it (kernelbench_builtin.sh): h200, h100, gpu or cpu
    found = sorted(folder.glob(f"kernelbench-level{level}-*-builtin.json"))
    if len(found) > 1:
        raise SystemExit(f"error: --reuse: {len(found)} level{level} results in {folder}: "
                         f"{', '.join(p.name for p in found)}; keep one")
    results = found[0] if found else folder / f"kernelbench-level{level}-CARD-builtin.json"
    memory = folder / f"level{level}.db"
    for needed in (results, memory):
        if not needed.is_file():
            raise SystemExit(f"error: --reuse: {needed} is missing")
    data = json.loads(results.read_text())
    return {"command": (data.get("environment") or {}).get("command", str(results)), "wall_s": data.get("seconds") or 0.0,
            "exit_code": None, "reused": str(results.name), "result": data}, memory


def summarise(bench: dict[str, Any]) -> dict[str, Any]:
    """Verdict counts, crashes and task errors with their messages, per-task last verdicts."""
    tasks = bench.get("result", {}).get("tasks", [])
    counts: dict[str, int] = {}
    crashes, task_errors, rows = [], [], []
    for t in tasks:
        for a in t.get("attempt_log", []):
            counts[a["status"]] = counts.get(a["status"], 0) + 1
            entry = {"task": t["name"], "message": a["message"]}
            if a["status"] == "crash":
                crashes.append(entry)
            elif a["status"] == "task_error":
                task_errors.append(entry)
        rows.append({"task": t["name"], "last_status": t.get("last_status"), "last_message": t.get("last_message"),
                     "stopped": t.get("stopped"), "best_latency_ms": t.get("best_latency_ms"),
                     "eager_ms": t.get("eager_ms"), "speedup_eager": t.get("speedup_eager")})
    return {"tasks": len(tasks), "attempt_statuses": counts, "stopped": sum(bool(t.get("stopped")) for t in tasks),
            "crashes": crashes, "task_errors": task_errors, "per_task": rows,
            "metrics": bench.get("result", {}).get("metrics")}


# --- part 2: our evaluation beside KernelBench's ------------------------------------------


def candidates_from(bench: dict[str, Any], memory: Path) -> list[dict[str, Any]]:
    """The bench's feasible candidates: task file, source, family."""
    from memory_store import MemoryStore

    store = MemoryStore(memory)
    out = []
    try:
        for t in bench.get("result", {}).get("tasks", []):
            for a in t.get("attempt_log", []):
                if a["status"] in ("ok", "compiled") and a.get("item_id"):
                    item = store.get_item(a["item_id"])
                    out.append({"task": t["name"], "path": t["path"], "source": item.content,
                                "family": (item.extra or {}).get("family", "")})
                    break
    finally:
        store.close()
    return out


def choose(cands: list[dict[str, Any]], n_more: int) -> list[dict[str, Any]]:
    first = [c for c in cands if c["task"] == ALWAYS_COMPARE]
    seen = {c["family"] for c in first}
    more = []
    for c in cands:
        if c["task"] != ALWAYS_COMPARE and c["family"] not in seen and len(more) < n_more:
            seen.add(c["family"])
            more.append(c)
    return first + more


_KB_DRIVER = r'''
import json, os, sys, time, types, importlib, copy
src = sys.argv[1]
def stand_in(name, **attrs):
    mod = types.ModuleType(name); mod.__dict__.update(attrs); sys.modules[name] = mod; return mod
try:
    import requests  # noqa: F401  (eval imports it; the evaluation path never calls it)
except ImportError:
    stand_in("requests")
try:
    import pydantic  # noqa: F401
except ImportError:
    class BaseModel:  # a plain record: class defaults copied, keyword arguments set
        def __init__(self, **kw):
            for k, v in type(self).__dict__.items():
                if not k.startswith("_") and not callable(v):
                    setattr(self, k, copy.deepcopy(v))
            for k, v in kw.items():
                setattr(self, k, v)
    stand_in("pydantic", BaseModel=BaseModel)
# KernelBench's eval prints its progress on stdout: that goes to stderr, stdout carries only our JSON lines.
reply = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr
import torch
pkg = stand_in("kernelbench"); pkg.__path__ = [os.path.join(src, "kernelbench")]
stand_in("kernelbench.utils", get_gpu_vendor=lambda device=None: "nvidia")
kb_eval = importlib.import_module("kernelbench.eval")
torch.zeros(1, device="cuda")  # a warm CUDA context, as our warm worker has
print(json.dumps({"ready": True}), file=reply, flush=True)
for line in sys.stdin:
    job = json.loads(line)
    t0 = time.perf_counter()
    try:
        r = kb_eval.eval_kernel_against_ref(job["ref"], job["cand"], seed_num=42, num_correct_trials=job["trials"],
                                            num_perf_trials=job["reps"], measure_performance=True, backend="triton",
                                            device=torch.device("cuda:0"), check_for_excessive_speedup=True)
        wall = time.perf_counter() - t0
        out = {"wall_s": wall, "compiled": getattr(r, "compiled", None), "correctness": getattr(r, "correctness", None),
               "runtime_ms": getattr(r, "runtime", None), "ref_runtime_ms": getattr(r, "ref_runtime", None),
               "metadata": {k: str(v)[:300] for k, v in (getattr(r, "metadata", {}) or {}).items()}}
    except Exception as exc:
        out = {"wall_s": time.perf_counter() - t0, "error": f"{type(exc).__name__}: {str(exc)[:500]}"}
    print(json.dumps(out), file=reply, flush=True)
'''


class KernelBenchEval:
    """KernelBench's eval in a warm child process (a candidate that crashes it costs a restart)."""

    def __init__(self, kb_src: Path, workdir: Path):
        # Absolute: the driver runs in the work directory, where a relative --kb-src means nothing.
        self.kb_src, self.script = kb_src.resolve(), workdir / "kb_driver.py"
        self.log = workdir / "kb_driver.log"
        self.script.write_text(_KB_DRIVER)
        self.proc: subprocess.Popen | None = None

    def _start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(self.script), str(self.kb_src)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log.open("a"), text=True, cwd=self.script.parent)
        ready = self.proc.stdout.readline()
        if not ready:
            self.proc.wait(timeout=30)
            tail = self.log.read_text()[-1500:]
            raise RuntimeError(f"KernelBench's eval did not start (is --kb-src {self.kb_src} its src/ folder?): {tail}")

    def evaluate(self, ref_src: str, cand_src: str) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc and self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"ref": ref_src, "cand": cand_src, "trials": COMPARE_TRIALS,
                                          "reps": COMPARE_REPS}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc = None
            return {"error": "KernelBench's eval process died on this candidate: " + self.log.read_text()[-800:]}
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            return {"error": f"KernelBench's driver answered something that is not JSON: {line[:300]!r}"}

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def compare(cands: list[dict[str, Any]], args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    from backends import KERNELBENCH_SEED, EvalOptions, Executor, default_device

    device = args.device or default_device()
    on_gpu = device.startswith("cuda")
    ours = EvalOptions(trials=COMPARE_TRIALS, reps=COMPARE_REPS, warmup=COMPARE_WARMUP, compile_baseline=False,
                       size=args.size or "full")
    kb_seeded = EvalOptions(trials=COMPARE_TRIALS, reps=COMPARE_REPS, warmup=COMPARE_WARMUP, compile_baseline=False,
                            size=args.size or "full", kernelbench_seeding=True, seed=KERNELBENCH_SEED)
    kb = KernelBenchEval(args.kb_src, workdir) if on_gpu and args.kb_src else None
    rows, t_start = [], time.perf_counter()
    with Executor(device=device, timeout_s=args.timeout) as ex:
        ex.evaluate(cands[0]["path"], cands[0]["source"], options=EvalOptions(trials=1, reps=1, warmup=0, timing=False,
                                                                               size=ours.size))  # warm the worker
        for i, c in enumerate(cands):
            if i and time.perf_counter() - t_start > args.compare_budget_s:
                rows.append({"task": c["task"], "skipped": "compare budget spent"})
                continue
            row: dict[str, Any] = {"task": c["task"], "family": c["family"]}
            try:
                _compare_one(c, row, ex, ours, kb_seeded, kb, on_gpu)
            except Exception as exc:  # the rows measured so far stay in the record
                row["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
            rows.append(row)
            print(f"compare {c['task']}: " + json.dumps({k: v for k, v in row.items() if k.startswith(("ratio", "error"))}),
                  file=sys.stderr, flush=True)
    if kb is not None:
        kb.close()
    return {"trials": COMPARE_TRIALS, "reps": COMPARE_REPS, "warmup": COMPARE_WARMUP, "device": device, "rows": rows}


def _compare_one(c: dict[str, Any], row: dict[str, Any], ex: Any, ours: Any, kb_seeded: Any,
                 kb: KernelBenchEval | None, on_gpu: bool) -> None:
    """One candidate three ways: our executor with each seeding, then KernelBench's eval."""
    for name, opts in (("evokernel", ours), ("evokernel_kernelbench_seeding", kb_seeded)):
        t0 = time.perf_counter()
        r = ex.evaluate(c["path"], c["source"], options=opts)
        row[name] = {"wall_s": time.perf_counter() - t0, "status": r.status.value, "message": r.message[:300],
                     "latency_ms": r.latency_ms, "eager_ms": r.baselines.eager_ms, "worker_reused": r.worker_reused}
    if kb is None:
        row["kernelbench"] = {"skipped": "KernelBench's eval needs CUDA" if not on_gpu else "no --kb-src"}
        return
    row["kernelbench"] = kb.evaluate(Path(c["path"]).read_text(), c["source"])
    kb_wall = row["kernelbench"].get("wall_s")
    if kb_wall and "error" not in row["kernelbench"]:
        row["ratio_wall"] = row["evokernel"]["wall_s"] / kb_wall
        row["ratio_wall_kernelbench_seeding"] = row["evokernel_kernelbench_seeding"]["wall_s"] / kb_wall


# --- the record -----------------------------------------------------------------------------


def environment(device: str | None) -> dict[str, Any]:
    import torch

    env: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__, "host": platform.node(),
                           "cpu_count": os.cpu_count()}
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        pass
    if torch.cuda.is_available():
        env["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kbdir", type=Path, help="KernelBench's problem folder (with level1/, level2/)")
    parser.add_argument("out", type=Path, help="results JSON to write")
    parser.add_argument("--levels", default="1,2")
    parser.add_argument("--kb-src", type=Path, default=None, help="KernelBench's src/ folder (default KBDIR/../src)")
    parser.add_argument("--gpus", default=None, help="GPUs for the bench, e.g. 0,1,2,3 (one worker each)")
    parser.add_argument("--device", default=None)
    parser.add_argument("--size", default=None, help="task size passed to bench (KernelBench files have no size switch)")
    parser.add_argument("--limit", type=int, default=None, help="first K problems of each level")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--compare-more", type=int, default=4, help="candidates to compare besides 19_ReLU")
    parser.add_argument("--compare-budget-s", type=float, default=150.0)
    parser.add_argument("--shrink", type=int, default=None, help="CPU path: divide large size constants by this")
    parser.add_argument("--parts", default="bench,compare")
    parser.add_argument("--reuse", type=Path, default=None,
                        help="summarise an earlier bench instead of running one: a folder with "
                             "kernelbench-levelN-CARD-builtin.json and the run's memory levelN.db "
                             "(benchmarks/kernelbench_builtin.sh writes both)")
    args = parser.parse_args(argv)
    if args.kb_src is None and (args.kbdir.parent / "src" / "kernelbench").is_dir():
        args.kb_src = args.kbdir.parent / "src"
    if args.shrink and not args.size:
        args.size = "full"
    parts = set(args.parts.split(","))
    work = Path(tempfile.mkdtemp(prefix="kb-eval-"))
    record: dict[str, Any] = {"command": "python benchmarks/kernelbench_eval.py " + " ".join(
        a if not a.startswith(str(args.kbdir)) else a.replace(str(args.kbdir), "KBDIR") for a in (argv or sys.argv[1:])),
        "environment": environment(args.device), "shrink": args.shrink, "levels": {}}
    t0 = time.perf_counter()
    cands: list[dict[str, Any]] = []
    try:
        for level in args.levels.split(","):
            src = args.kbdir / f"level{level}"
            level_dir = src
            if args.shrink:
                level_dir = work / f"level{level}"
                shrink_copy(src, level_dir, args.shrink)
            memory = work / f"level{level}.db"
            entry: dict[str, Any] = {}
            if "bench" in parts:
                print(f"bench level{level} ...", file=sys.stderr, flush=True)
                if args.reuse:
                    bench, memory = reused_bench(args.reuse, level)
                else:
                    bench = run_bench(level_dir, memory, args)
                entry = {"command": bench["command"], "wall_s": bench["wall_s"], "exit_code": bench.get("exit_code")}
                if "error" in bench:
                    entry["error"] = bench["error"]
                else:
                    entry.update(summarise(bench))
                    cands += candidates_from(bench, memory)
                record["levels"][f"level{level}"] = entry
                print(f"bench level{level}: {entry.get('attempt_statuses')} in {bench['wall_s']:.0f} s", file=sys.stderr)
        if "compare" in parts and cands:
            record["compare"] = compare(choose(cands, args.compare_more), args, work)
        record["wall_s"] = time.perf_counter() - t0
    finally:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1, default=str) + "\n")
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {args.out} ({record.get('wall_s', 0):.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
