"""Probe: where a KernelBench task's time goes, kernel by kernel, for the builtin's draft and for
torch.compile, read from Nsight Compute's hardware counters.

For every chosen task, two child processes run under ``ncu --clock-control none`` (METHOD.md: leave the
clocks alone): one builds the builtin's draft (analyze, default_config, generate: what a budget-1 run
submits), the other ``torch.compile`` of the task's Model. Each calls forward a few times (autotuning and
compilation happen there, unprofiled), then once between cudaProfilerStart and cudaProfilerStop: only
that call's kernels are profiled. Per kernel: duration, DRAM bytes read and written and the share of DRAM
and SM peak, achieved occupancy, instructions, registers, grid and block. The two sides' totals and the
per-kernel rows go to --out as soon as a task is done (a rerun skips tasks the file holds); a table goes
to stderr. Nothing from KernelBench is stored: the checkout is an argument. Needs a CUDA GPU and ncu
(Nsight Compute) that can read the counters (a Firecracker machine; see the device notes).

    python benchmarks/probes/kernel_profile.py KBDIR --level 2 --tasks 21 85 --out profile.json
"""
from __future__ import annotations

import argparse
import csv
import glob
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_common import environment, task_files  # noqa: E402

# metric name -> the record's key
METRICS = {
    "gpu__time_duration.sum": "duration_ns",
    "dram__bytes_read.sum": "dram_read_bytes",
    "dram__bytes_write.sum": "dram_write_bytes",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct_of_peak",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct_of_peak",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "smsp__inst_executed.sum": "instructions",
    "launch__registers_per_thread": "registers",
    "launch__grid_size": "grid",
    "launch__block_size": "block",
}
SIDES = ("ours", "compile")
WARM_CALLS = 3

# The child: one side of one task, forward warmed, then one profiled call
_CHILD = """
import sys, torch
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from backends._task import import_file
side, task, rules, workdir = sys.argv[2], Path(sys.argv[3]), sys.argv[4], Path(sys.argv[5])
ref = import_file(task, "ref")
torch.manual_seed(0)
if side == "ours":
    from evokernel.builtin import analyze, default_config, generate
    plan = analyze(task, rules)
    if not plan:
        raise SystemExit(f"not planned: {plan.reason}")
    (workdir / "cand.py").write_text(generate(plan, default_config(plan)))
    model = import_file(workdir / "cand.py", "cand").ModelNew(*ref.get_init_inputs())
else:
    model = ref.Model(*ref.get_init_inputs())
model = model.cuda().eval()
torch.manual_seed(1)
inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
run = torch.compile(model) if side == "compile" else model
with torch.no_grad():
    for _ in range(int(sys.argv[6])):
        run(*inputs)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    run(*inputs)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
print("profiled")
"""


def find_ncu(given: str | None) -> str:
    if given:
        if not shutil.which(given):
            raise SystemExit(f"kernel_profile.py: {given} is not an executable ncu")
        return given
    found = shutil.which("ncu") or next(iter(sorted(glob.glob("/usr/local/cuda*/bin/ncu"))), None) \
        or next(iter(sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))), None)
    if not found:
        raise SystemExit("kernel_profile.py: no ncu on the PATH, in /usr/local/cuda*/bin or /opt/nvidia/nsight-compute "
                         "(give --ncu PATH)")
    return found


def parse_ncu_csv(text: str) -> list[dict]:
    """ncu --csv --page raw: a header row, a units row, then one row per profiled kernel."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if not lines:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header, body = rows[0], [r for r in rows[1:] if r and r[0].isdigit()]
    kernels = []
    for row in body:
        cells = dict(zip(header, row))
        record = {"name": cells.get("Kernel Name", "?")}
        for metric, key in METRICS.items():
            raw = cells.get(metric, "").replace(",", "")
            try:
                value = float(raw)
            except ValueError:
                value = None
            record[key] = int(value) if value is not None and value.is_integer() else value
        kernels.append(record)
    return kernels


def totals(kernels: list[dict]) -> dict:
    def total(key):
        values = [k[key] for k in kernels if isinstance(k.get(key), (int, float))]
        return sum(values) if values else None

    ns = total("duration_ns")
    moved = (total("dram_read_bytes") or 0) + (total("dram_write_bytes") or 0)
    return {"kernels": len(kernels), "duration_ms": ns / 1e6 if ns else None, "dram_bytes": moved,
            "dram_tb_per_s": moved / ns / 1e3 if ns else None, "instructions": total("instructions")}


def profile_side(ncu: str, side: str, task: Path, rules: str, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        (work / "child.py").write_text(_CHILD)
        log = work / "ncu.csv"
        cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--csv", "--page", "raw",
               "--print-units", "base",
               "--metrics", ",".join(METRICS), "--log-file", str(log),
               sys.executable, str(work / "child.py"), str(ROOT), side, str(task), rules, str(work), str(WARM_CALLS)]
        start = time.monotonic()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "seconds": round(time.monotonic() - start, 1)}
        text = log.read_text() if log.exists() else ""
        kernels = parse_ncu_csv(text)
        if proc.returncode != 0 or "profiled" not in proc.stdout or not kernels:
            why = (proc.stderr or proc.stdout or text).strip().splitlines()[-3:]
            return {"status": "failed", "returncode": proc.returncode, "message": " | ".join(why),
                    "kernels": kernels}
        return {"status": "ok", "seconds": round(time.monotonic() - start, 1), "totals": totals(kernels),
                "kernels": kernels}


def _row(side: str, k: dict) -> str:
    def num(key, scale=1.0, fmt="{:.0f}"):
        v = k.get(key)
        return fmt.format(v * scale) if isinstance(v, (int, float)) else "-"

    return (f"  {side:8s} {num('duration_ns', 1e-3, '{:9.1f}')} us  dram {num('dram_pct_of_peak'):>3s}%  "
            f"sm {num('sm_pct_of_peak'):>3s}%  occ {num('occupancy_pct'):>3s}%  regs {num('registers'):>3s}  "
            f"{k['name'][:70]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernelbench", type=Path, help="KernelBench's problem folder (with level1/, level2/, level3/)")
    ap.add_argument("--level", default="2")
    ap.add_argument("--tasks", nargs="+", required=True, help="task numbers or file stems")
    ap.add_argument("--rules", default=None, help="strict or kernelbench (default: strict for level1, else kernelbench)")
    ap.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES))
    ap.add_argument("--ncu", default=None, help="Nsight Compute's ncu (default: found on the PATH or under CUDA)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds for one side of one task")
    ap.add_argument("--stop-after", type=float, default=None, help="start no task after this many seconds")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)

    level_dir = args.kernelbench / f"level{args.level}"
    if not level_dir.is_dir():
        raise SystemExit(f"kernel_profile.py: no folder {level_dir}")
    rules = args.rules or ("strict" if args.level == "1" else "kernelbench")
    ncu = find_ncu(args.ncu)
    files = task_files(level_dir, args.tasks)
    record = json.loads(args.out.read_text()) if args.out.exists() else {}
    record.update({"command": "python " + " ".join([str(Path(sys.argv[0]))] + sys.argv[1:]),
                   "rules": rules, "ncu": ncu, "metrics": METRICS, "warm_calls": WARM_CALLS})
    try:
        record["environment"] = environment("cuda:0")
    except Exception as exc:  # the record still says what ran; the counters are the point
        record["environment"] = {"error": f"{type(exc).__name__}: {exc}"}
    tasks = record.setdefault("tasks", {})
    start = time.monotonic()
    for path in files:
        if path.stem in tasks:
            print(f"{path.stem}: already in {args.out}", file=sys.stderr)
            continue
        if args.stop_after is not None and time.monotonic() - start > args.stop_after:
            print(f"stopping: {args.stop_after:.0f} s passed", file=sys.stderr)
            break
        result = {side: profile_side(ncu, side, path, rules, args.timeout) for side in args.sides}
        tasks[path.stem] = result
        args.out.write_text(json.dumps(record, indent=1) + "\n")
        print(path.stem, file=sys.stderr)
        for side, r in result.items():
            if r["status"] != "ok":
                print(f"  {side:8s} {r['status']}: {r.get('message', '')[:200]}", file=sys.stderr)
                continue
            t = r["totals"]
            print(f"  {side:8s} total {t['duration_ms']:.3f} ms in {t['kernels']} kernels, "
                  f"{t['dram_bytes'] / 1e9:.2f} GB at {t['dram_tb_per_s']:.2f} TB/s", file=sys.stderr)
            for k in sorted(r["kernels"], key=lambda k: -(k.get("duration_ns") or 0))[:6]:
                print(_row(side, k), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
