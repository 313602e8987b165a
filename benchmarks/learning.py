"""The learning measured: does a memory warmed on other tasks make held-out tasks easier?

The suites are split by family (each task file's FAMILY, else its CATEGORY): the warm-up runs
the loop on the warm families; the held-out families are never run before the
arms, so no held-out task (nor any task of its family) was ever seen. Each
held-out task then runs alone, from its own copy of a memory, in four arms,
all with the offline builtin policy at the same budget:

- empty:            a fresh memory (skills on; the task can only learn from itself)
- warm:             the warmed memory, value-driven retrieval, skills on
- warm-similarity:  the warmed memory, memories and skills selected by similarity alone
- warm-no-skills:   the warmed memory, value-driven retrieval, the skill library off

With `--held-out-memory shared` an arm's held-out tasks run one after another in one memory (the
warmed one copied once; for the empty arm, one fresh memory): what a held-out task's steps teach the
values (a remembered configuration that failed there) reaches the tasks after it, as in a user's
continual runs. By default each runs from its own copy, which measures what memory gives one task alone.

Reported per arm and task: attempts to the first correct kernel, attempts to
within 5% of the best latency any arm found for the task, the final best
latency, where the first configuration came from, and which skills the steps
used; over all held-out steps of the warmed arms, the correlation between the
stage values of the items a step used (the items it credits: with the builtin
policy, the memories whose configuration or evidence placed the one it proposed;
replayed to what they were before the step) and the step's success (reward > 0). Tasks where memory made
no difference are named with the reason the run shows, and so are tasks where no
refinement in any arm beat its first draft by more than the timing tie (their refine
steps hold no success for a value to predict).

    python benchmarks/learning.py --out benchmarks/results/learning-cpu.json     # no GPU: small sizes
    python benchmarks/learning.py --out benchmarks/results/learning-h200.json    # on a GPU: full sizes

KernelBench's files (a fetched checkout, never stored here) split by the families read from their names,
on a GPU (the files have one size, their full one, far too large for the CPU interpreter):

    python benchmarks/learning.py --suite KB/level1 --warm conv_standard --held-out conv_transposed,conv_depthwise --out FILE

On a CPU every latency is the Triton interpreter's wall clock
(`interpreted-cpu`): it follows the number of program instances, not GPU
speed, so "faster" there means fewer, larger programs.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import math
import re
import shlex
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import evokernel  # noqa: E402
from evokernel.bench._runner import _copy_sqlite, environment  # noqa: E402
from backends import plan_devices  # noqa: E402
from evokernel.loop import (TIMING_TIE, RunEvent, RunOptions, SkillLearned, StepDone, TaskStopped,  # noqa: E402
                            make_executor, refine_reward)
from evokernel.policies import get_policy  # noqa: E402
from memory_store import MemoryStore, ValueState  # noqa: E402

KIND = "evokernel-learning"
# Which suites and families each device splits by default. On a GPU: KernelBench-style level1 and
# level2, by CATEGORY. On a CPU: benchmarks/learning_cpu, tasks sized for the interpreter, by their
# finer FAMILY (activations apart from other pointwise chains, which share the builtin's elementwise kernels).
# The GPU's held-out families are compute-bound ones, where a configuration can beat the first draft: on
# the H100 (learning-h100.json) the norm and softmax tasks ran at memory bandwidth and no refinement of
# the earlier held-out set beat its first draft by more than the timing tie, so there was nothing to learn.
DEFAULTS = {
    "gpu": (("level1", "level2"), ("elementwise", "reduction", "normalization", "fusion"), ("matmul", "conv", "attention")),
    "cpu": (("learning_cpu",), ("activation", "reduction", "matmul"), ("pointwise", "normalization", "softmax", "fusion")),
}
_FAMILY = re.compile(r"""^(FAMILY|CATEGORY)\s*=\s*["']([\w-]+)["']""", re.M)


@dataclasses.dataclass(frozen=True)
class Arm:
    name: str
    label: str
    warm: bool
    memory_mode: str
    skills: bool


ARMS = (
    Arm("empty", "empty memory", False, "value", True),
    Arm("warm", "warmed memory, value-driven, skills", True, "value", True),
    Arm("warm-similarity", "warmed memory, similarity-only", True, "similarity", True),
    Arm("warm-no-skills", "warmed memory, without skills", True, "value", False),
)


HELD_OUT_MEMORY = {
    "copy": "each held-out task runs alone from its own copy of the arm's memory",
    "shared": "an arm's held-out tasks run one after another in one memory (the warmed one copied once, or one "
              "empty memory), so the values learned on a held-out task reach the tasks after it",
}


@dataclasses.dataclass(frozen=True)
class HeldOutRun:
    arm: Arm
    path: Path
    memory: str  # the memory's file name: one a lane


def held_out_lanes(arms: list[Arm], paths: list[Path], mode: str) -> list[list[HeldOutRun]]:
    """The held-out runs as lanes, each lane's runs one after another in one memory, the lanes side by side.
    copy: a lane a run, task by task with every arm in turn (a machine whose speed drifts moves all arms of
    a task alike); shared: a lane an arm, its tasks in order in the arm's one memory."""
    if mode == "copy":
        return [[HeldOutRun(arm, path, f"{arm.name}-{path.stem}.db")] for path in paths for arm in arms]
    if mode == "shared":
        return [[HeldOutRun(arm, path, f"{arm.name}.db") for path in paths] for arm in arms]
    raise ValueError(f"unknown held-out memory mode {mode!r}: {' or '.join(HELD_OUT_MEMORY)}")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# KernelBench's files name no family: one is read from the file name, most specific first. The
# convolution families share the builtin's convolution kernels (and their configurations), so a
# split of one from another asks whether experience moves between operators of one kernel family.
KERNELBENCH_FAMILIES = (
    ("conv_transposed", r"conv_?transpose"), ("conv_depthwise", r"depthwise"),
    ("conv_pointwise", r"conv_pointwise"), ("conv_standard", r"conv"),
    ("pooling", r"pool"), ("loss", r"loss"), ("scan", r"cum(sum|prod)"),
    ("attention", r"attention"), ("softmax", r"softmax"), ("normalization", r"norm"),
    ("matmul", r"matmul|matrix|gemm|bmm"),
    ("reduction", r"reduction|argmax|argmin|_over_a_dimension"),
)


def kernelbench_family(stem: str) -> str:
    """A KernelBench problem's family from its file name ("54_conv_standard_3D__square_input..."
    is conv_standard; whatever matches no family is elementwise)."""
    name = re.sub(r"^\d+_", "", stem).lower()
    return next((fam for fam, pattern in KERNELBENCH_FAMILIES if re.search(pattern, name)), "elementwise")


def family_of(path: Path) -> str:
    """The task file's FAMILY, else its CATEGORY, else (KernelBench's files) one read from its name."""
    found = dict(m.groups() for m in _FAMILY.finditer(path.read_text()))
    return found.get("FAMILY") or found.get("CATEGORY") or kernelbench_family(path.stem)


def suite_dir(suite: str) -> Path:
    """A suite: a folder of benchmarks/ by name, or any folder of task files (a KernelBench level)."""
    own = ROOT / "benchmarks" / suite
    path = own if own.is_dir() else Path(suite).expanduser()
    if not path.is_dir():
        raise SystemExit(f"error: no suite {suite!r}: neither a folder of benchmarks/ nor a directory")
    return path


def split(suites: list[str], warm: tuple[str, ...], held: tuple[str, ...], per_family: int,
          held_per_family: int) -> tuple[list[Path], list[Path], dict[str, str]]:
    """Warm-up and held-out task files: whole families on each side, the first N of each family."""
    overlap = set(warm) & set(held)
    if overlap:
        raise SystemExit(f"error: families on both sides of the split: {', '.join(sorted(overlap))}")
    families: dict[str, str] = {}
    picked: dict[str, list[Path]] = {}
    for suite in suites:
        folder = suite_dir(suite)
        for path in sorted(folder.glob("*.py")):
            fam = family_of(path)
            families[f"{folder.name}/{path.stem}"] = fam
            picked.setdefault(fam, []).append(path)
    unknown = [f for f in (*warm, *held) if f not in picked]
    if unknown:
        raise SystemExit(f"error: no task of family {', '.join(unknown)} in {', '.join(suites)} "
                         f"(its families: {', '.join(sorted(picked))})")
    warm_paths = [p for f in warm for p in picked[f][:per_family]]
    held_paths = [p for f in held for p in picked[f][:held_per_family]]
    return warm_paths, held_paths, families


def _progress(prefix: str):
    def on_event(event: RunEvent) -> None:
        if isinstance(event, StepDone):
            lat = event.latency_ms
            log(f"{prefix} {event.task} step {event.step} ({event.stage}): {event.status}"
                + (f", {lat:.4g} ms" if lat else ""))
        elif isinstance(event, SkillLearned):
            v = event.verified_speedup
            log(f"{prefix} skill {event.action}: {event.title}" + (f" (re-timed {v:.2f}x)" if v else ""))
        elif isinstance(event, TaskStopped):
            log(f"{prefix} {event.task} stopped: {event.reason[:160]}")
    return on_event


def _task_row(outcome: Any, store: MemoryStore, run_id: int) -> dict[str, Any]:
    """What one arm did on one task: the attempts with their latencies, configurations and skills."""
    attempts = []
    for a in outcome.history:
        item = store.get_item(a.item_id) if a.item_id else None
        extra = item.extra if item else {}
        step = next((s for s in store.steps(run_id) if s["result_item_id"] == a.item_id), None)
        skill_ids = []
        if step:
            kinds = {i.id: i.kind for i in store.get_items(step["context_item_ids"])}
            skill_ids = [i for i in step["context_item_ids"] if kinds.get(i) == "best_practice"]
        attempts.append({"step": a.step, "stage": a.stage, "status": a.status, "latency_ms": a.latency_ms,
                         "reward": a.reward, "config": extra.get("config"), "config_from": extra.get("config_from"),
                         "skills_used": skill_ids, "memories_shown": extra.get("memories_shown")})
    return {"task": outcome.name, "task_key": outcome.task_key, "correct": outcome.correct,
            "stopped": outcome.stopped, "attempts": outcome.attempts,
            "first_correct_attempt": outcome.first_correct_attempt, "best_latency_ms": outcome.best_latency_ms,
            "first_latency_ms": outcome.first_latency_ms, "latency_source": outcome.latency_source,
            "attempt_log": attempts}


def _value_pairs(store: MemoryStore, run_id: int) -> list[dict[str, Any]]:
    """(value before the step, success) for each item a step of `run_id` used (its logged context: the items it credits),
    the values replayed from the items' start values through every step of the bank in order."""
    items = {i.id: i for i in store.list_items(limit=None, newest_first=False)}
    state = {i.id: ValueState(i.q_draft_init, i.q_refine_init, i.visits_draft_init, i.visits_refine_init)
             for i in items.values()}
    pairs = []
    for step in store.steps():
        stage, target, alpha = step["stage"], step["value_target"], step["alpha"]
        context = step["context_item_ids"]
        if step["run_id"] == run_id:
            for i in context:
                s = state[i]
                pairs.append({"stage": stage, "kind": items[i].kind, "value": s.q_draft if stage == "draft" else s.q_refine,
                              "visits": s.visits_draft if stage == "draft" else s.visits_refine,
                              "success": step["reward"] > 0})
        touched = list(dict.fromkeys([*context, *([step["start_point_id"]] if step["start_point_id"] else [])]))
        for i in touched:
            state[i] = state[i].stepped(stage, target, alpha)
    return pairs


def _pearson(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    return sxy / (sx * sy) if sx and sy else None


def correlation(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """Point-biserial correlation of value-before and success, overall, per stage and per kind, with
    the success rate of steps by the sign of the item's value."""
    def block(sel: list[dict[str, Any]]) -> dict[str, Any]:
        by_sign = {}
        for name, test in (("negative", lambda v: v < 0), ("zero", lambda v: v == 0), ("positive", lambda v: v > 0)):
            chosen = [p for p in sel if test(p["value"])]
            by_sign[name] = {"n": len(chosen),
                             "success_rate": sum(p["success"] for p in chosen) / len(chosen) if chosen else None}
        return {"n": len(sel), "r": _pearson([p["value"] for p in sel], [float(p["success"]) for p in sel]),
                "success_rate_by_value_sign": by_sign}

    out = {"all": block(pairs)}
    for stage in ("draft", "refine"):
        out[stage] = block([p for p in pairs if p["stage"] == stage])
    for kind in sorted({p["kind"] for p in pairs}):
        out[f"kind:{kind}"] = block([p for p in pairs if p["kind"] == kind])
    return out


def _config_change(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    """'block_n=4096 (empty arm: 1024)': the parameters of `after` that differ from `before`."""
    before, after = before or {}, after or {}
    changed = [f"{k}={after[k]} (empty arm: {before.get(k)})" for k in sorted(after) if k != "family" and before.get(k) != after[k]]
    return ", ".join(changed) or "the same configuration"


def _refined_past_draft(row: dict[str, Any]) -> bool:
    """Whether a refinement of the row's task ran faster than its first draft by more than the
    timing tie: the loop's refine reward against the first draft's latency."""
    log = row["attempt_log"]
    first = next((a["latency_ms"] for a in log if a["latency_ms"]), None)
    return any(a["stage"] == "refine" and refine_reward(True, a["latency_ms"], first) > 0 for a in log)


def _within(row: dict[str, Any], best: float | None, share: float = 0.05) -> int | None:
    if best is None:
        return None
    for n, a in enumerate(row["attempt_log"], 1):
        if a["latency_ms"] is not None and a["latency_ms"] <= best * (1 + share):
            return n
    return None


def _geomean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v]
    return math.exp(statistics.fmean(math.log(v) for v in kept)) if kept else None


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarise(rows: dict[str, dict[str, dict[str, Any]]]) -> tuple[dict[str, Any], list[str]]:
    """Per-arm metrics over the held-out tasks, and where memory made no difference."""
    tasks = sorted({t for arm in rows.values() for t in arm})
    best = {}
    for t in tasks:
        found = [rows[a][t]["best_latency_ms"] for a in rows if t in rows[a] and rows[a][t]["best_latency_ms"]]
        best[t] = min(found) if found else None
    for arm in rows.values():
        for t, row in arm.items():
            row["best_latency_any_arm_ms"] = best[t]
            row["attempts_to_within_5pct"] = _within(row, best[t])
    metrics = {}
    base = rows.get("empty", {})
    for name, arm in rows.items():
        solved = [r for r in arm.values() if r["correct"]]
        ratios = [r["best_latency_ms"] / base[t]["best_latency_ms"] for t, r in arm.items()
                  if r["best_latency_ms"] and t in base and base[t]["best_latency_ms"]]
        metrics[name] = {
            "tasks": len(arm), "correct": len(solved),
            "mean_attempts_to_first_correct": _mean([r["first_correct_attempt"] for r in solved if r["first_correct_attempt"]]),
            "mean_attempts_to_within_5pct": _mean([r["attempts_to_within_5pct"] for r in arm.values()
                                                    if r["attempts_to_within_5pct"]]),
            "reached_within_5pct": sum(1 for r in arm.values() if r["attempts_to_within_5pct"]),
            "geomean_best_latency_vs_empty": math.exp(statistics.fmean(math.log(x) for x in ratios)) if ratios else None,
            "geomean_best_latency_vs_empty_retimed": _geomean([r.get("best_vs_empty_retimed") for r in arm.values()]),
            "steps_using_skills": sum(1 for r in arm.values() for a in r["attempt_log"] if a["skills_used"]),
            "first_config_from_memory": sum(1 for r in arm.values() if r["attempt_log"]
                                            and r["attempt_log"][0]["config_from"]),
        }
    notes = []
    if base and all(r["first_correct_attempt"] == 1 for arm in rows.values() for r in arm.values() if r["correct"]):
        notes.append("attempts to the first correct kernel: 1 for every solved task in every arm; the builtin "
                     "policy's first draft is correct without memory, so memory cannot lower this number")
    for t in tasks:
        if not any(_refined_past_draft(arm[t]) for arm in rows.values() if t in arm):
            notes.append(f"{t}: in no arm did a refinement beat its first draft by more than the timing tie "
                         f"({TIMING_TIE:.0%}): the task leaves refinement no headroom here, so its refine steps hold "
                         "no success a value could predict")
    for t in tasks:
        if t not in base:
            continue
        e = base[t]
        if e["stopped"] and not e["attempts"]:
            notes.append(f"{t}: the builtin policy stops on it (outside its families) in every arm: memory cannot help")
            continue
        for name, arm in rows.items():
            if name == "empty" or t not in arm:
                continue
            r = arm[t]
            first = r["attempt_log"][0] if r["attempt_log"] else {}
            if [x["config"] for x in r["attempt_log"]] == [x["config"] for x in e["attempt_log"]]:
                why = ("no retrieved experience or skill changed a configuration" if not any(
                    a["config_from"] or a["skills_used"] for a in r["attempt_log"])
                    else "what memory suggested was what the policy tries anyway")
                notes.append(f"{t} [{name}]: memory made no difference: the same configurations in the same order as "
                             f"on an empty memory ({why}); latency differences are timing noise")
                continue
            ratio = (r["best_latency_ms"] / e["best_latency_ms"]) if r["best_latency_ms"] and e["best_latency_ms"] else None
            again = r.get("best_vs_empty_retimed")
            outcome = (f"best latency {ratio:.2f}x of the empty arm's as each run measured it"
                       + (f", {again:.2f}x re-timed side by side" if again else "")
                       + f"; within 5% of the best any arm found at attempt {r['attempts_to_within_5pct']} "
                       f"(empty arm: {e['attempts_to_within_5pct']})" if ratio else "")
            if first.get("config_from"):
                change = _config_change(e["attempt_log"][0].get("config") if e["attempt_log"] else None, first.get("config"))
                notes.append(f"{t} [{name}]: the first draft took {change} from {first['config_from']}; {outcome}")
            else:
                notes.append(f"{t} [{name}]: the same first draft; memory changed the later configurations (start "
                             f"points and remembered configurations chosen by value); {outcome}")
    return metrics, notes


def retime_bests(rows: dict[str, dict[str, dict[str, Any]]], sources: dict[tuple[str, str], str | None],
                 paths: dict[str, Path], executor: Any, evaluation: Any, rounds: int = 3) -> None:
    """Each arm's best kernel against the empty arm's, re-timed in alternation in one worker
    (`Executor.retime`): the arms ran one after the other, and a machine whose load changes in
    between (a shared CPU above all) makes their own latencies incomparable. Adds
    `best_vs_empty_retimed` (arm best latency / empty best latency) to each row."""
    for task, path in paths.items():
        base = sources.get(("empty", task))
        for name, arm in rows.items():
            row = arm.get(task)
            if row is None:
                continue
            mine = sources.get((name, task))
            if name == "empty" or base is None or mine is None:
                row["best_vs_empty_retimed"] = 1.0 if name == "empty" and base is not None else None
                continue
            if mine == base:
                row["best_vs_empty_retimed"] = 1.0
                continue
            report = executor.retime(path, base, mine, options=evaluation, rounds=rounds)
            row["best_vs_empty_retimed"] = (1.0 / report.speedup) if report.ok else None
            row["best_vs_empty_retimed_rounds"] = [list(r) for r in report.rounds]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", action="append",
                        help="suites to split: folders of benchmarks/ by name, or directories of task files such as "
                             "a KernelBench level (default: level1 and level2 on a GPU, learning_cpu on a CPU)")
    parser.add_argument("--warm", default=None, help="warm-up families, comma-separated (FAMILY or CATEGORY values; "
                                                      "for KernelBench's files, those of KERNELBENCH_FAMILIES)")
    parser.add_argument("--held-out", default=None, help="held-out families, comma-separated")
    parser.add_argument("--per-family", type=int, default=None, help="warm-up tasks per family (default: 2)")
    parser.add_argument("--held-per-family", type=int, default=None, help="held-out tasks per family (default: 2)")
    parser.add_argument("--budget", type=int, default=None, help="steps per held-out task (default: 4)")
    parser.add_argument("--warm-budget", type=int, default=None, help="steps per warm-up task (default: 8 CPU, 5 GPU)")
    parser.add_argument("--device", default=None)
    parser.add_argument("--size", default=None)
    parser.add_argument("--trials", type=int, default=None, help="correctness trials (default: 2 CPU, 5 GPU)")
    parser.add_argument("--arm", action="append", choices=[a.name for a in ARMS], help="only these arms")
    parser.add_argument("--workers-per-gpu", type=int, default=1,
                        help="evaluation workers sharing each GPU (evokernel's --workers-per-gpu): more runs at once")
    parser.add_argument("--held-out-memory", choices=tuple(HELD_OUT_MEMORY), default="copy",
                        help="; ".join(f"{mode}: {what}" for mode, what in HELD_OUT_MEMORY.items()))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--keep", type=Path, default=None,
                        help="copy the memories here (warm.db and one per arm and held-out task) to inspect the skill library")
    args = parser.parse_args(argv)

    placed = RunOptions.of(device=args.device, size=args.size).resolved()
    device, size = placed.execution.run_device(), placed.evaluation.size
    gpu = device.startswith("cuda")
    suites, warm_default, held_default = DEFAULTS["gpu" if gpu else "cpu"]
    budget = args.budget or 4
    # On a CPU the builtin refinement's first neighbours are smaller blocks (slower in the
    # interpreter): the warm-up needs more steps to find the changes worth a skill.
    warm_budget = args.warm_budget or (5 if gpu else 8)
    per_family = args.per_family or 2
    held_per_family = args.held_per_family or 2
    trials = args.trials or (5 if gpu else 2)
    warm_fams = tuple(f for f in (args.warm or ",".join(warm_default)).split(",") if f)
    held_fams = tuple(f for f in (args.held_out or ",".join(held_default)).split(",") if f)
    warm_paths, held_paths, families = split(args.suite or list(suites), warm_fams, held_fams, per_family,
                                             held_per_family)
    arms = [a for a in ARMS if not args.arm or a.name in args.arm]
    # The learning metrics need the kernels' latencies only: no torch.compile baseline (its compile
    # dominates a step's time on a GPU); eager is kept for a sense of scale.
    options = RunOptions.of(budget=warm_budget, policy="builtin", device=args.device, size=size, trials=trials, jobs=1,
                            resume=False, compile_baseline=False, workers_per_gpu=args.workers_per_gpu)
    # One worker per GPU (every visible one, unless --device names one), or --workers-per-gpu: the
    # warm-up's steps and the held-out runs go out that many at once, and no two timings ever share a device.
    devices = plan_devices(device=args.device, gpus=None, cpu_workers=1, workers_per_gpu=args.workers_per_gpu)
    jobs = len(devices)
    options = options.replace(jobs=jobs)
    executor = make_executor(options, devices, jobs)
    # One builtin policy for every run: its plan cache (and the lock its torch.fx tracing needs)
    # is shared by the runs that go out at once; it holds no other state between steps.
    policy = get_policy()
    t0 = time.time()
    log(f"device {device} ({jobs} worker(s)), size {size}; warm-up {len(warm_paths)} tasks x {warm_budget}, "
        f"held-out {len(held_paths)} tasks x {budget} x {len(arms)} arms")
    rows: dict[str, dict[str, dict[str, Any]]] = {a.name: {} for a in arms}
    pairs_by_arm: dict[str, list[dict[str, Any]]] = {a.name: [] for a in arms}
    warm_summary: dict[str, Any] = {}
    best_sources: dict[tuple[str, str], str | None] = {}
    task_paths: dict[str, Path] = {}
    command = shlex.join(["python", "benchmarks/learning.py", *(argv if argv is not None else sys.argv[1:])])
    env = environment(device, options, [*warm_paths, *held_paths], size=size, jobs=jobs, command=command)

    def write(*, complete: bool) -> dict[str, Any]:
        """The result so far, written after every held-out run: a run cut short still leaves its numbers."""
        metrics, notes = summarise(rows)
        if not gpu:
            notes.insert(0, "no GPU: every latency is the Triton interpreter's wall clock (interpreted-cpu), which "
                            "follows the number of program instances, not GPU speed; skills admitted here are used "
                            "only by runs with the same latency source")
            notes.insert(1, "the arms ran one after the other on a CPU shared with other work, whose load moved each "
                            "run's latencies by up to 2-3x: compare arms by best_vs_empty_retimed (each arm's best "
                            "kernel re-timed against the empty arm's, in alternation in one worker), not by the runs' "
                            "own numbers")
        data = {
            "kind": KIND, "version": 1, "policy": "builtin", "complete": complete,
            "split": {"warm_families": list(warm_fams), "held_out_families": list(held_fams),
                      "warm_tasks": [p.stem for p in warm_paths], "held_out_tasks": [p.stem for p in held_paths],
                      "rule": "whole families on each side (each task file's FAMILY, else its CATEGORY): no held-out "
                              "task, nor any task of its family, ran before the arms; " + HELD_OUT_MEMORY[args.held_out_memory],
                      "held_out_memory": args.held_out_memory},
            "arms": [dataclasses.asdict(a) for a in arms],
            "budget": budget, "warm_budget": warm_budget,
            "warm_up": warm_summary,
            "metrics": metrics,
            "value_success_correlation": {name: correlation(pairs) for name, pairs in pairs_by_arm.items()},
            "notes": notes,
            "tasks": rows,
            "environment": env,
            "seconds": round(time.time() - t0, 1),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(data, indent=1, default=str) + "\n")
        return data

    try:
        with tempfile.TemporaryDirectory(prefix="evokernel-learning-") as tmp:
            warm_db = Path(tmp) / "warm.db"
            if any(a.warm for a in arms):
                result = evokernel.run(warm_paths, options, memory=warm_db, executor=executor, policy=policy,
                                       on_event=_progress("[warm-up]"))
                with MemoryStore(warm_db) as store:
                    stats = store.stats()
                    skills = store.list_items(kinds=["best_practice"], limit=None)
                warm_summary = {
                    "tasks": [t.name for t in result.tasks], "correct": sum(t.correct for t in result.tasks),
                    "items": stats["items"], "by_kind": stats["by_kind"],
                    "skills": [{"id": s.id, "status": s.status, "title": s.key_text.splitlines()[0],
                                "verification": s.extra.get("verification")} for s in skills],
                    "seconds": round(time.time() - t0, 1),
                }
                write(complete=False)

            lanes = held_out_lanes(arms, held_paths, args.held_out_memory)
            for lane in lanes:  # a memory a lane: the warmed one copied for it, or empty
                first = lane[0]
                if first.arm.warm:
                    _copy_sqlite(warm_db, Path(tmp) / first.memory)

            def held_out(run: HeldOutRun) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
                """One held-out task in its lane's memory."""
                arm, path, db = run.arm, run.path, Path(tmp) / run.memory
                arm_options = options.replace(budget=budget, memory_mode=arm.memory_mode, skills=arm.skills, jobs=1)
                result = evokernel.run([path], arm_options, memory=db, executor=executor, policy=policy,
                                       on_event=_progress(f"[{arm.name}]"), skip_broken=True)
                outcome = result.tasks[0]
                with MemoryStore(db) as store:
                    row = {**_task_row(outcome, store, result.run_id), "family": family_of(path)}
                    pairs = _value_pairs(store, result.run_id) if result.run_id else []
                    best_sources[(arm.name, outcome.name)] = (
                        store.get_item(outcome.best_item_id).content if outcome.best_item_id else None)
                task_paths[outcome.name] = path
                return outcome.name, row, pairs

            lock = threading.Lock()
            position = {path.stem: i for i, path in enumerate(held_paths)}  # a task's name is its file's stem

            def lane_in_turn(lane: list[HeldOutRun]) -> None:
                """A lane's runs one after another, each result written as it ends (one thread at a time)."""
                for run in lane:
                    name, row, pairs = held_out(run)
                    with lock:
                        rows[run.arm.name][name] = row
                        # in the held-out order whichever run ended first, so a file reads the same every time
                        rows[run.arm.name] = dict(sorted(rows[run.arm.name].items(),
                                                         key=lambda kv: position.get(kv[0], len(position))))
                        pairs_by_arm[run.arm.name] += pairs
                        write(complete=False)

            with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
                for future in [pool.submit(lane_in_turn, lane) for lane in lanes]:
                    future.result()
            retime_bests(rows, best_sources, task_paths, executor, options.evaluation.executor_options(size=size))
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                for db in Path(tmp).glob("*.db"):
                    _copy_sqlite(db, args.keep / db.name)
    finally:
        executor.close()
    data = write(complete=True)
    log(f"wrote {args.out} in {data['seconds']:.0f} s")
    for name, m in data["metrics"].items():
        log(f"{name}: {json.dumps(m)}")
    for note in data["notes"]:
        log(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
