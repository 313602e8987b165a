"""A bench's results rebuilt from its memory, for a run whose results file was never written.

A leased machine taken back mid-run (or a bench killed with SIGKILL) leaves no results file,
but every finished step is in the run's memory (`--memory`): its verdict, latency, baselines
and device, as the executor reported them. This reads those steps back the way a resumed run
does (`TaskOutcome.restore`) and computes the bench's metrics from them
(`compute_metrics`, `task_row`), so the figures are the ones the run measured, no more:
`complete` is false, tasks without a finished step count as not attempted, and the
environment holds only what the memory recorded (the run's settings and the device).

    python benchmarks/results_from_memory.py OUT/level3-strict.db --out results.json [--run N]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evokernel.bench import compute_metrics, task_row
from evokernel.loop import TaskOutcome
from memory_store import MemoryStore


def rebuild(memory: Path, run_id: int | None = None) -> dict:
    store = MemoryStore(memory)
    try:
        runs = store.runs()
        if not runs:
            raise SystemExit(f"results_from_memory: {memory} holds no run")
        run = next((r for r in runs if r["id"] == run_id), None) if run_id is not None else runs[-1]
        if run is None:
            raise SystemExit(f"results_from_memory: {memory} has no run {run_id}")
        signature = run["config"].get("signature", {})
        outcomes, devices = [], set()
        for key in signature.get("tasks", []):
            outcome = TaskOutcome(name=key.rsplit("-", 1)[0], task_key=key, path="")
            outcome.restore(store, run["id"])
            devices.update(a.device for a in outcome.history if a.device)
            outcomes.append(outcome)
    finally:
        store.close()
    device = next(iter(devices)) if len(devices) == 1 else None
    attempted = [o for o in outcomes if o.attempts]
    return {
        "kind": "evokernel-bench",
        "version": 1,
        "suite": f"the {len(outcomes)} tasks of run {run['id']} in {memory.name}",
        "complete": False,
        "rebuilt_from_memory": {"memory": memory.name, "run_id": run["id"], "run_status": run["status"],
                                "started_utc": run["started_utc"], "tasks_attempted": len(attempted),
                                "tasks_in_run": len(outcomes)},
        "policy": run["config"].get("policy"),
        "policy_is_llm": bool(run["config"].get("policy_is_llm")),
        "metrics": compute_metrics(outcomes, device=device, is_llm=bool(run["config"].get("policy_is_llm"))),
        "metrics_attempted": compute_metrics(attempted, device=device,
                                             is_llm=bool(run["config"].get("policy_is_llm"))),
        "tasks": [task_row(o) for o in outcomes],
        "environment": {"device": device, "devices_seen": sorted(devices)},
        "options": signature.get("config", {}),
        "run_id": run["id"],
        "memory": memory.name,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("memory", type=Path)
    ap.add_argument("--run", type=int, default=None, help="the run's id (default: the newest)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if not args.memory.is_file():
        print(f"results_from_memory: no memory at {args.memory}", file=sys.stderr)
        return 2
    data = rebuild(args.memory, args.run)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    m, a = data["metrics"], data["rebuilt_from_memory"]
    print(f"results_from_memory: {a['tasks_attempted']}/{a['tasks_in_run']} tasks attempted, {m['correct']} correct; "
          f"geomean over torch.compile {m.get('geomean_speedup_compile')} (n={m.get('n_speedup_compile')}); "
          f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
