"""`--jobs N` against `--jobs 1`: wall time and LLM requests in flight.

Runs the real command, `evokernel run TASKS --model openai:standin`, against
the local stand-in server (benchmarks/llm_standin.py), which answers every
request after a fixed delay with an honest kernel. Each `--jobs` value gets a
fresh memory and the same tasks (copies of the bundled relu_add, each its own
task). The result records the hardware, versions, the commands and what the
server saw.

    python benchmarks/concurrency.py --tasks 16 --budget 3 --delay 10 --jobs 16 1 \\
        --out benchmarks/results/concurrency.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from llm_standin import StandIn  # noqa: E402


def versions() -> dict:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("torch", "triton", "openai", "evokernel"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--budget", type=int, default=3)
    parser.add_argument("--delay", type=float, default=10.0, help="the stand-in's answer delay, seconds")
    parser.add_argument("--jobs", type=int, nargs="+", default=[16, 1])
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "concurrency.json")
    args = parser.parse_args()

    runs = []
    with tempfile.TemporaryDirectory(prefix="evokernel-concurrency-") as tmp, StandIn(delay_s=args.delay) as server:
        tasks = []
        for i in range(args.tasks):
            path = Path(tmp) / f"relu_add_{i:02d}.py"
            shutil.copy(ROOT / "evokernel" / "tasks" / "relu_add.py", path)
            tasks.append(str(path))
        env = dict(os.environ, OPENAI_BASE_URL=server.url + "/v1", OPENAI_API_KEY="sk-standin-not-a-key",
                   NO_PROXY="127.0.0.1,localhost", PYTHONPATH=str(ROOT))
        for jobs in args.jobs:
            server.reset()
            memory = Path(tmp) / f"memory-jobs{jobs}.db"
            cmd = [sys.executable, "-m", "evokernel.cli", "run", *tasks, "--model", "openai:standin", "--llm-only",
                   "--budget", str(args.budget), "--jobs", str(jobs), "--trials", str(args.trials),
                   "--device", args.device, "--memory", str(memory), "--json"]
            print(f"--jobs {jobs}: {args.tasks} tasks x {args.budget} steps, answers after {args.delay:g} s ...",
                  file=sys.stderr, flush=True)
            started = time.monotonic()
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
            wall = time.monotonic() - started
            data = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {}
            seen = server.stats()
            tasks_out = data.get("tasks", [])
            runs.append({
                "jobs": jobs,
                "exit_code": proc.returncode,
                "wall_s": round(wall, 1),
                "requests": seen["requests"],
                "peak_requests_in_flight": seen["peak_in_flight"],
                "steps": sum(t["attempts"] for t in tasks_out),
                "correct_tasks": sum(bool(t["correct"]) for t in tasks_out),
                "statuses": sorted({s for t in tasks_out for s in t["statuses"]}),
                "command": shlex.join(["evokernel", *cmd[3:]]).replace(tmp, "$TMP"),
            })
            print(f"  {runs[-1]['wall_s']} s, peak {seen['peak_in_flight']} in flight, exit {proc.returncode}",
                  file=sys.stderr, flush=True)
            if proc.returncode not in (0, 1):
                print(proc.stderr[-3000:], file=sys.stderr)
    by_jobs = {r["jobs"]: r for r in runs}
    result = {
        "kind": "evokernel-concurrency",
        "what": f"{args.tasks} tasks at budget {args.budget} against a local OpenAI-compatible stand-in that answers "
                f"after {args.delay:g} s; each --jobs value in a fresh memory",
        "runs": runs,
        "speedup": {f"jobs{j}_over_jobs1": round(by_jobs[1]["wall_s"] / by_jobs[j]["wall_s"], 2)
                    for j in by_jobs if j != 1 and 1 in by_jobs and by_jobs[j]["wall_s"]},
        "environment": {"host": platform.node(), "platform": platform.platform(), "cpu_count": os.cpu_count(),
                        "device": args.device, "versions": versions(), "trials": args.trials,
                        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")},
        "command": shlex.join(["python", "benchmarks/concurrency.py", *sys.argv[1:]]),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["speedup"]), file=sys.stderr)
    return 0 if all(r["exit_code"] in (0, 1) for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
