"""Porting benchmark: does a memory warmed on Triton help the builtin Ascend C
policy on the npu suite?

Two arms, each in a fresh memory, both with the offline builtin policy:

- empty:  evokernel run npu/*.py --backend ascendc --policy builtin
- warmed: evokernel run npu/*.py --backend triton --policy builtin   (warm-up)
          evokernel run npu/*.py --backend ascendc --policy builtin --port-from triton

Per task it records the attempts to the first correct Ascend C kernel, the
first and best modelled latencies, and where the first configuration came
from (a retrieved Triton experience, or the default).

    EVOKERNEL_SIZE=small python benchmarks/porting.py --out benchmarks/results/porting-npu.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import evokernel  # noqa: E402
from evokernel.loop import RunEvent, RunOptions, StepDone  # noqa: E402
from evokernel.policies import get_policy  # noqa: E402
from memory_store import MemoryStore  # noqa: E402

NPU = ROOT / "benchmarks" / "npu"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def environment() -> dict:
    import torch

    from backends.ascendc import detect_mode

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {"cpu": cpu, "cpu_count": os.cpu_count(), "gpu": None, "npu": None, "platform": platform.platform(),
            "python": platform.python_version(), "torch": torch.__version__, "triton": triton_version,
            "ascendc_mode": detect_mode()["mode"], "size": os.environ.get("EVOKERNEL_SIZE", "full")}


def _run(paths, store, backend: str, budget: int, port_from: tuple[str, ...], jobs: int = 1) -> dict:
    started = time.perf_counter()
    # Correctness is checked on every input group and 2 seeded trials; 5 timing repetitions suffice
    # since Ascend C latencies are modelled (deterministic) and Triton's are interpreted on the CPU.
    options = RunOptions.of(backend=backend, budget=budget, port_from=port_from, device="cpu", baselines=False,
                            trials=2, reps=5, size=os.environ.get("EVOKERNEL_SIZE") or None, jobs=jobs)

    def show(event: RunEvent) -> None:
        if isinstance(event, StepDone):
            log(f"  {backend} {event.task} step {event.step}: {event.status}")

    result = evokernel.run(paths, options, policy=get_policy(policy="builtin"), store=store, on_event=show)
    tasks = {}
    for t in result.tasks:
        first_config = first_from = None
        for step in store.steps(result.run_id, t.task_key)[:1]:
            item = store.get_item(step["result_item_id"])
            first_config = (item.extra or {}).get("ascendc_config") or (item.extra or {}).get("config")
            first_from = (item.extra or {}).get("config_from")
        tasks[t.name] = {
            "correct": t.correct, "attempts": t.attempts, "first_correct_attempt": t.first_correct_attempt,
            "first_latency_ms": t.first_latency_ms, "best_latency_ms": t.best_latency_ms,
            "latency_source": t.latency_source, "statuses": t.statuses, "stopped": t.stopped,
            "first_config": first_config, "first_config_from": first_from,
            "latencies_ms": [a.latency_ms if a.verdict.feasible else None for a in t.history],
        }
    return {"backend": backend, "budget": budget, "port_from": list(port_from),
            "seconds": round(time.perf_counter() - started, 1), "tasks": tasks}


EXPLANATION = (
    "The builtin Ascend C policy is a deterministic template generator: every task inside its templates "
    "verifies on its first attempt whatever the memory holds, so a Triton-warmed memory cannot reduce the "
    "attempts to the first correct kernel. What porting can change is the first configuration: a retrieved "
    "feasible Triton trace of the same family sets the first tile size (its per-program elements in fp32 "
    "bytes) and, for matmuls, the first cube base block (the nearest to its BLOCK_M x BLOCK_N x BLOCK_K); "
    "core count and buffer depth have no Triton counterpart. At EVOKERNEL_SIZE=small each core's "
    "share is usually smaller than any tile, so the tile size rarely changes the modelled latency; the "
    "attempts to within 5% of the best modelled latency (the best of both arms) show whether the hint "
    "shortens the search."
)


def within(latencies: list, best: float | None, slack: float = 1.05) -> int | None:
    """The attempt (1-based) whose modelled latency first comes within `slack` of `best`."""
    if best is None:
        return None
    for i, latency in enumerate(latencies, start=1):
        if latency is not None and latency <= best * slack:
            return i
    return None


def summarize(per_task: dict) -> dict:
    """Counts over the tasks both arms attempted."""
    both = {k: v for k, v in per_task.items() if v["attempts_to_first_correct"]["empty"] is not None
            or v["attempts_to_first_correct"]["warmed"] is not None}
    fewer = [k for k, v in both.items() if (v["attempts_to_first_correct"]["warmed"] or 99)
             < (v["attempts_to_first_correct"]["empty"] or 99)]
    more = [k for k, v in both.items() if (v["attempts_to_first_correct"]["warmed"] or 99)
            > (v["attempts_to_first_correct"]["empty"] or 99)]
    hinted = [k for k, v in per_task.items() if v["first_config_from_triton"]]
    faster_first = [k for k, v in both.items() if v["first_latency_ms"]["warmed"] and v["first_latency_ms"]["empty"]
                    and v["first_latency_ms"]["warmed"] < v["first_latency_ms"]["empty"] * 0.99]
    slower_first = [k for k, v in both.items() if v["first_latency_ms"]["warmed"] and v["first_latency_ms"]["empty"]
                    and v["first_latency_ms"]["warmed"] > v["first_latency_ms"]["empty"] * 1.01]
    near = {arm: [v["attempts_to_within_5pct_of_best"][arm] for v in per_task.values()
                  if v["attempts_to_within_5pct_of_best"][arm] is not None] for arm in ("empty", "warmed")}
    sooner = [k for k, v in per_task.items() if (v["attempts_to_within_5pct_of_best"]["warmed"] or 99)
              < (v["attempts_to_within_5pct_of_best"]["empty"] or 99)]
    later = [k for k, v in per_task.items() if (v["attempts_to_within_5pct_of_best"]["warmed"] or 99)
             > (v["attempts_to_within_5pct_of_best"]["empty"] or 99)]
    return {
        "tasks": len(per_task), "tasks_solved_by_the_templates": len(both),
        "mean_attempts_to_within_5pct": {arm: round(sum(v) / len(v), 3) if v else None for arm, v in near.items()},
        "within_5pct_sooner_with_triton_memory": sooner, "within_5pct_later_with_triton_memory": later,
        "fewer_attempts_with_triton_memory": fewer, "more_attempts_with_triton_memory": more,
        "first_config_from_a_triton_memory": hinted,
        "first_latency_lower_with_triton_memory": faster_first,
        "first_latency_higher_with_triton_memory": slower_first,
        "explanation": EXPLANATION,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "porting-npu.json")
    parser.add_argument("--budget", type=int, default=3, help="Ascend C steps per task in each arm")
    parser.add_argument("--triton-budget", type=int, default=2, help="Triton warm-up steps per task")
    parser.add_argument("--jobs", type=int, default=1, help="steps in flight at once")
    args = parser.parse_args()
    os.environ.setdefault("EVOKERNEL_SIZE", "small")
    paths = sorted(str(p) for p in NPU.glob("[0-9]*.py"))
    with tempfile.TemporaryDirectory() as tmp:
        log("arm 1: Ascend C with an empty memory")
        with MemoryStore(Path(tmp) / "empty.db") as store:
            empty = _run(paths, store, "ascendc", args.budget, (), args.jobs)
        log("arm 2: Triton warm-up, then Ascend C with --port-from triton")
        with MemoryStore(Path(tmp) / "warmed.db") as store:
            warmup = _run(paths, store, "triton", args.triton_budget, (), args.jobs)
            warmed = _run(paths, store, "ascendc", args.budget, ("triton",), args.jobs)
    per_task = {}
    for name in empty["tasks"]:
        a, b = empty["tasks"][name], warmed["tasks"][name]
        per_task[name] = {
            "attempts_to_first_correct": {"empty": a["first_correct_attempt"], "warmed": b["first_correct_attempt"]},
            "first_latency_ms": {"empty": a["first_latency_ms"], "warmed": b["first_latency_ms"]},
            "best_latency_ms": {"empty": a["best_latency_ms"], "warmed": b["best_latency_ms"]},
            "attempts_to_within_5pct_of_best": {
                arm: within(r["latencies_ms"], best) for arm, r in (("empty", a), ("warmed", b))
                for best in [min([x for x in (a["best_latency_ms"], b["best_latency_ms"]) if x is not None],
                                 default=None)]},
            "first_config_from_triton": b["first_config_from"],
            "triton_warmup_correct": warmup["tasks"][name]["correct"],
            "stopped": a["stopped"],
        }
    report = {
        "what": "attempts to the first correct Ascend C kernel (builtin policy), empty memory vs memory warmed on Triton",
        "command": (f"EVOKERNEL_SIZE={os.environ['EVOKERNEL_SIZE']} python benchmarks/porting.py "
                    f"--budget {args.budget} --triton-budget {args.triton_budget} --jobs {args.jobs}"),
        "memory_note": ("the memory holds experiences (traces with their configurations) and the Ascend C API notes; "
                        "the builtin Ascend C policy takes its hints from traces and does not read skills"),
        "run_config": {"trials": 2, "reps": 5, "baselines": False, "memory_mode": "value", "device": "cpu"},
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hardware": environment(),
        "latency_note": "Ascend C latencies are modelled-910b (analytic cost model on the CPU model), not measured",
        "summary": summarize(per_task),
        "per_task": per_task,
        "arms": {"empty": empty, "triton_warmup": warmup, "warmed": warmed},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
