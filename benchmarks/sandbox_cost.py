"""What the sandbox costs per evaluation: honest kernels, sandbox on vs off.

Two executors on the same device, each reusing one warm worker; every round
evaluates every honest kernel of tests/executor_candidates.py once in each,
alternating which goes first (ABBA) so that drift and a noisy machine hit
both alike. Reports per-kernel medians of the parent's wall time per
`evaluate` and their ratio, plus the audit hook's cost per event measured
apart, and writes benchmarks/results/sandbox-cost-<device>.json.

    python benchmarks/sandbox_cost.py --rounds 12
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from backends import EvalOptions, Executor  # noqa: E402
from backends._sandbox import SandboxLimits  # noqa: E402
from executor_candidates import HONEST  # noqa: E402

CASES = ROOT / "tests" / "executor_cases"

# Cost of one audited event: 20,000 opens of a small file, hook on vs off.
_EVENT_PROBE = r"""
import json, os, sys, tempfile, time
path = os.path.join(tempfile.gettempdir(), "sandbox_cost_probe.txt")
open(path, "w").write("x")
if sys.argv[1] == "on":
    from backends._audit import install
    install({"write_roots": [tempfile.gettempdir()], "real_home": os.path.expanduser("~"), "project_root": os.getcwd(), "limits": {}})
def run(fn, n=20000):
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6
print(json.dumps({"open_us": min(run(lambda: open(path).close()) for _ in range(5)),
                  "unhandled_event_us": min(run(lambda: sys._getframe(0)) for _ in range(5))}))
"""

# Audited events one evaluation of each honest kernel raises, counted in-process
# (the worker's own code path, without the worker process around it).
_COUNT_PROBE = r"""
import collections, json, os, sys, tempfile
os.environ["TRITON_INTERPRET"] = "1"
import torch
from pathlib import Path
from backends._backend import LaunchLog, get_backend
from backends._evaluate import EvalOptions, TaskCache, evaluate
from executor_candidates import HONEST
backend, log, cache, wd = get_backend("triton"), LaunchLog(), TaskCache(), Path(tempfile.mkdtemp())
backend.install_hooks(log, compile_only=False)
def run_all():
    for task, src in HONEST.values():
        evaluate(task_path=str(Path("tests/executor_cases") / task), source=src, backend=backend, log=log,
                 device=torch.device("cpu"), options=EvalOptions(), workdir=wd, cache=cache, compile_only=False)
run_all()
counts = collections.Counter()
sys.addaudithook(lambda event, args: counts.__setitem__(event, counts[event] + 1))
run_all()
print(json.dumps({k: v / len(HONEST) for k, v in counts.items()}))
"""


def _hardware() -> dict:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    hw = {"cpu": cpu, "cores": os.cpu_count(), "machine": platform.machine(), "os": platform.platform()}
    try:
        hw["load_avg_at_start"] = os.getloadavg()
    except OSError:
        pass
    return hw


def _versions() -> dict:
    import torch

    v = {"python": platform.python_version(), "torch": torch.__version__}
    try:
        import triton

        v["triton"] = triton.__version__
    except ImportError:
        pass
    return v


def _probe(code: str, *args: str) -> dict | None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    return json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else None


def _event_cost() -> dict:
    """The hook's own cost: per event, times the events one evaluation raises."""
    off, on = _probe(_EVENT_PROBE, "off"), _probe(_EVENT_PROBE, "on")
    events = _probe(_COUNT_PROBE) or {}
    out: dict = {"off_us": off, "on_us": on, "events_per_evaluation": events}
    if off and on:
        open_us = on["open_us"] - off["open_us"]
        other_us = on["unhandled_event_us"] - off["unhandled_event_us"]
        opens = sum(v for k, v in events.items() if k == "open")
        others = sum(v for k, v in events.items() if k != "open")
        out.update(hook_us_per_open=open_us, hook_us_per_other_event=other_us,
                   estimated_hook_ms_per_evaluation=(opens * open_us + others * max(other_us, 0.0)) / 1e3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or ROOT / "benchmarks" / "results" / f"sandbox-cost-{args.device.split(':')[0]}.json"
    options = EvalOptions()  # the defaults a real run uses
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    executors = {
        "on": Executor(device=args.device, timeout_s=300, sandbox=SandboxLimits()),
        "off": Executor(device=args.device, timeout_s=300, sandbox=SandboxLimits(enabled=False)),
    }
    wall: dict[str, dict[str, list[float]]] = {"on": {}, "off": {}}
    inner: dict[str, dict[str, list[float]]] = {"on": {}, "off": {}}
    sandbox_info = {}
    try:
        for rnd in range(-1, args.rounds):  # round -1 warms workers and caches; not recorded
            order = ("on", "off") if rnd % 2 == 0 else ("off", "on")
            for name, (task, source) in sorted(HONEST.items()):
                for mode in order:
                    t0 = time.perf_counter()
                    result = executors[mode].evaluate(CASES / task, source, backend="triton", options=options)
                    elapsed = time.perf_counter() - t0
                    if result.status.value != "ok":
                        print(f"{mode} {name}: {result.status} {result.message}", file=sys.stderr)
                        return 1
                    if mode == "on":
                        sandbox_info = result.sandbox
                    if rnd >= 0:
                        wall[mode].setdefault(name, []).append(elapsed)
                        inner[mode].setdefault(name, []).append(result.seconds)
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        for ex in executors.values():
            ex.close()

    kernels = {}
    for name in sorted(HONEST):
        on, off = statistics.median(wall["on"][name]), statistics.median(wall["off"][name])
        kernels[name] = {
            "median_s_on": on, "median_s_off": off, "ratio": on / off,
            "median_worker_s_on": statistics.median(inner["on"][name]),
            "median_worker_s_off": statistics.median(inner["off"][name]),
            "samples_s_on": wall["on"][name], "samples_s_off": wall["off"][name],
        }
    ratios = [k["ratio"] for k in kernels.values()]
    total_on = sum(k["median_s_on"] for k in kernels.values())
    total_off = sum(k["median_s_off"] for k in kernels.values())
    report = {
        "what": "wall time of Executor.evaluate per honest kernel, sandbox on vs off, one warm worker each",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date_utc": started,
        "hardware": _hardware(),
        "versions": _versions(),
        "device": args.device,
        "rounds": args.rounds,
        "options": options.to_dict(),
        "sandbox": sandbox_info,
        "kernels": kernels,
        "summary": {
            "median_ratio": statistics.median(ratios),
            "sum_of_medians_ratio": total_on / total_off,
            "overhead_percent": (total_on / total_off - 1) * 100,
            "goal_percent": 5.0,
        },
        "audit_event_cost": _event_cost(),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    s = report["summary"]
    cost = report["audit_event_cost"]
    print(f"sandbox overhead: {s['overhead_percent']:+.1f}% (sum of medians), median per-kernel ratio {s['median_ratio']:.3f}; "
          f"audit hook alone: {cost.get('estimated_hook_ms_per_evaluation', float('nan')):.3f} ms per evaluation; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
