"""The paper's arms with your model and key, beside the paper's numbers.

    export OPENAI_API_KEY=sk-...
    python benchmarks/paper_arms.py --model openai:gpt-5 --kernelbench ~/KernelBench/KernelBench --max-cost 200

Five arms, each at the same budget on the same tasks, each in its own memory
(no arm learns from another), driven through `evokernel.bench.run_bench` with
the memory modes of `RunOptions`; the LLM writes every step
(`builtin_first=False`: these arms measure the method, not our builtin policy):

- `passk`: no memory, independent samples (pass@k; `independent_samples`)
- `refine`: the draft/refine loop with feedback and start points, memory off
- `similarity`: memory retrieved by similarity alone
- `value`: value-driven retrieval, memory shared across tasks (sharing on; EvoKernel)
- `task-only`: value-driven retrieval of the task's own memories (sharing off)

Suites: `npu` (the bundled NPU suite on the Ascend C backend) and `level1`,
`level2` (the folders of that name in the KernelBench directory `--kernelbench`
gives, on the Triton backend). The table puts each arm's correct rate and
median speedup of the best kernel over the first correct one beside what the
paper reports (../shared/DESIGN.md: Ascend 910B, NPU KernelBench L1+L2, GPT-5.2).

Before it starts it prints how many calls, tokens and dollars the plan may
take (stderr). With `--max-cost USD` no LLM call starts once the spend (every
call logged in the arms' memories, this and earlier invocations) plus one more
call at the mean cost per call so far would pass it; calls already in flight
finish and are kept. Everything lives in
`--state DIR` (one memory per suite and arm, one JSON per finished arm): run
the same command again, after a stop, a kill or Ctrl-C, and it continues
where it stopped; an arm's committed steps are neither lost nor redone.
The table goes to stdout (markdown) and, with the results, to `--out` (JSON).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent

# ../shared/DESIGN.md, "Headline results": Ascend 910B, NPU KernelBench L1+L2, GPT-5.2, budget 30.
PAPER = {
    "passk": "11.0% correct (pass@30)",
    "refine": "22% correct",
    "similarity": "67% correct (retrieval comparison)",
    "value": "83.0% correct; 77% in the retrieval comparison; median 3.60x best over first draft",
    "task-only": "L2: 3% correct without cross-task sharing, 76% with it",
}
# A guess for the estimate until calls are logged: a prompt with a few memories and a start
# kernel, an answer with one file. The ceiling uses the prompt budget and max_tokens instead.
ASSUMED_TOKENS_IN = 6_000
ASSUMED_TOKENS_OUT = 2_500


class CostLimitReached(Exception):
    """The next LLM call would take the spend past --max-cost."""

    def __init__(self, spent_usd: float):
        super().__init__(f"${spent_usd:.2f} spent")
        self.spent_usd = spent_usd


class PlanError(ValueError):
    """A plan that cannot start (usage): a missing KernelBench folder, no price for --max-cost."""


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    source: str  # a bundled suite name or a directory, as run_bench takes it
    backend: str


def paper_arm_list() -> list[Any]:
    """The arms as `evokernel.bench.Arm`s (the ablation's record), plus sharing off."""
    from evokernel.bench import Arm

    return [
        Arm("passk", "no memory, independent samples (pass@k)", "off", independent=True),
        Arm("refine", "refinement only, no memory", "off"),
        Arm("similarity", "similarity-only retrieval", "similarity"),
        Arm("value", "value-driven retrieval, shared across tasks", "value"),
        Arm("task-only", "value-driven retrieval, own task only (sharing off)", "task-only"),
    ]


def suites_for(names: Sequence[str], kernelbench: Path | None, *, npu_backend: str, kb_backend: str) -> list[Suite]:
    out = []
    for name in names:
        if name == "npu":
            out.append(Suite("npu", "npu", npu_backend))
            continue
        if kernelbench is None:
            raise PlanError(f"suite {name} needs --kernelbench DIR (a KernelBench checkout's KernelBench/ folder)")
        folder = kernelbench / name
        if not folder.is_dir():
            raise PlanError(f"--kernelbench {kernelbench}: no {name}/ folder in it")
        out.append(Suite(name, str(folder), kb_backend))
    return out


@dataclasses.dataclass(frozen=True)
class Plan:
    """What to run and under which settings; `options` holds what every arm shares."""

    suites: list[Suite]
    arms: list[Any]
    options: Any  # RunOptions without backend, memory mode and independence (set per arm)
    state: Path
    limit: int | None = None
    max_cost_usd: float | None = None

    def memory(self, suite: Suite, arm: Any) -> Path:
        return self.state / f"{suite.name}-{arm.name}.db"

    def result_path(self, suite: Suite, arm: Any) -> Path:
        return self.state / f"{suite.name}-{arm.name}.json"

    def arm_options(self, suite: Suite, arm: Any) -> Any:
        return self.options.replace(backend=suite.backend, memory_mode=arm.memory_mode,
                                    independent_samples=arm.independent, builtin_first=False, resume=True)


# --- the estimate, and what was spent ------------------------------------------


def spent(plan: Plan) -> tuple[int, int, float]:
    """Calls, tokens and dollars logged in the plan's memories so far (every invocation's)."""
    from memory_store import MemoryStore

    calls = tokens = 0
    cost = 0.0
    for path in sorted(plan.state.glob("*.db")):
        with MemoryStore(path) as store:
            for call in store.llm_calls():
                calls += 1
                tokens += (call["tokens_in"] or 0) + (call["tokens_out"] or 0)
                cost += call["cost_usd"] or 0.0
    return calls, tokens, cost


@dataclasses.dataclass(frozen=True)
class Estimate:
    steps: int  # LLM steps the plan holds (each one call; the skill library adds short ones)
    tokens_in_per_call: float
    tokens_out_per_call: float
    measured: bool  # from the calls logged so far, else the assumption
    usd_per_call: float | None
    ceiling_usd_per_call: float | None  # the whole prompt budget in, max_tokens out

    @property
    def usd(self) -> float | None:
        return None if self.usd_per_call is None else self.steps * self.usd_per_call

    def lines(self) -> list[str]:
        source = "measured so far" if self.measured else "assumed"
        money = "no price known for the model" if self.usd is None else (
            f"about ${self.usd:,.2f} (at most ${self.steps * self.ceiling_usd_per_call:,.2f} with full prompts and answers)")
        return [f"plan: {self.steps} LLM steps, about {self.tokens_in_per_call:,.0f} tokens in and "
                f"{self.tokens_out_per_call:,.0f} out per call ({source}): "
                f"{self.steps * (self.tokens_in_per_call + self.tokens_out_per_call):,.0f} tokens, {money}"]


def estimate(plan: Plan, task_counts: dict[str, int]) -> Estimate:
    llm = plan.options.llm
    spec = llm.models[0].spec
    provider, _, model = spec.partition(":")
    steps = sum(task_counts[s.name] for s in plan.suites) * len(plan.arms) * plan.options.loop.budget
    calls, _, _ = spent(plan)
    if calls:
        tin, tout = _logged_means(plan)
    else:
        tin, tout = min(ASSUMED_TOKENS_IN, llm.context_tokens), min(ASSUMED_TOKENS_OUT, llm.max_tokens)
    prices = llm.prices
    if prices is None:
        from evokernel.llm import PriceTable

        prices = PriceTable()
    per_call = prices.cost_usd(provider, model, round(tin), round(tout))
    ceiling = prices.cost_usd(provider, model, llm.context_tokens, llm.max_tokens)
    return Estimate(steps, tin, tout, bool(calls), per_call, ceiling)


def _logged_means(plan: Plan) -> tuple[float, float]:
    from memory_store import MemoryStore

    tin, tout, n = 0, 0, 0
    for path in sorted(plan.state.glob("*.db")):
        with MemoryStore(path) as store:
            for call in store.llm_calls():
                tin, tout, n = tin + (call["tokens_in"] or 0), tout + (call["tokens_out"] or 0), n + 1
    return tin / n, tout / n


# --- running the arms ----------------------------------------------------------


def run_arms(plan: Plan, *, executor: Any = None, say: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Every (suite, arm) not finished yet, in order; the finished ones read from the state.
    Returns the results so far, with `complete` False when --max-cost stopped it."""
    from evokernel.bench import resolve_tasks, run_bench

    plan.state.mkdir(parents=True, exist_ok=True)
    counts = {s.name: len(resolve_tasks(s.source, limit=plan.limit)) for s in plan.suites}
    est = estimate(plan, counts)
    calls, tokens, cost = spent(plan)
    for line in est.lines():
        say(line)
    if calls:
        say(f"already spent: {calls} calls, {tokens:,} tokens, ${cost:,.2f} (state in {plan.state})")
    rows, stopped = [], None
    for suite in plan.suites:
        for arm in plan.arms:
            done = plan.result_path(suite, arm)
            if done.is_file():
                rows.append(json.loads(done.read_text()))
                continue
            if stopped is not None:
                continue
            _check_not_finished_without_result(plan.memory(suite, arm))
            calls_before, _, usd_before = spent(plan)
            guard = _guard(plan.max_cost_usd, (calls_before, usd_before), suite, arm, say)
            say(f"{suite.name} / {arm.name}: {counts[suite.name]} tasks x {plan.options.loop.budget} steps")
            try:
                result = run_bench(suite.source, plan.arm_options(suite, arm), limit=plan.limit,
                                   memory=plan.memory(suite, arm), executor=executor, on_event=guard)
            except CostLimitReached as stop:
                stopped = stop.spent_usd
                say(f"stopped before {suite.name} / {arm.name} could spend past --max-cost ${plan.max_cost_usd:g} "
                    f"(${stop.spent_usd:.2f} spent); the same command with a higher --max-cost continues it")
                continue
            row = arm_row(suite, arm, result)
            _write_atomically(done, json.dumps(row, indent=1))
            rows.append(row)
    calls, tokens, cost = spent(plan)
    return {
        "kind": "evokernel-paper-arms",
        "complete": stopped is None and len(rows) == len(plan.suites) * len(plan.arms),
        "model": plan.options.llm.label,
        "budget": plan.options.loop.budget,
        "limit": plan.limit,
        "max_cost_usd": plan.max_cost_usd,
        "spent": {"llm_calls": calls, "tokens": tokens, "cost_usd": cost},
        "paper": PAPER,
        "paper_source": "../shared/DESIGN.md headline results: Ascend 910B, NPU KernelBench L1+L2, GPT-5.2, 30 steps",
        "rows": rows,
    }


def _guard(max_cost: float | None, base: tuple[int, float], suite: Suite, arm: Any,
           say: Callable[[str], None]) -> Callable[[Any], None]:
    """An event callback that raises at a step's start, before its call, when the spend so far
    plus one more call (the mean cost per call so far) would pass max_cost. `base` is the calls
    and dollars logged before this run; the run's own dollars are in its events' stats, and
    each of its steps makes one call (the LLM writes every step in these arms). Steps already
    in flight finish and commit."""
    base_calls, base_usd = base
    steps_done = 0

    def on_event(event: Any) -> None:
        nonlocal steps_done
        from evokernel.loop import RunStarted, StepDone, StepStarted

        if isinstance(event, StepDone):
            steps_done += 1
            say(f"  {suite.name} / {arm.name}: {event.task} step {event.step} {event.stage}: {event.status}")
        if max_cost is not None and isinstance(event, (RunStarted, StepStarted)):
            now = base_usd + event.stats.cost_usd
            calls = base_calls + steps_done
            if now + (now / calls if calls else 0.0) > max_cost:
                raise CostLimitReached(now)

    return on_event


def _check_not_finished_without_result(memory: Path) -> None:
    """A run that finished but whose result was not written (killed in between) cannot be
    resumed, and running it again would double it: say so rather than run it twice."""
    if not memory.is_file():
        return
    from memory_store import MemoryStore

    with MemoryStore(memory) as store:
        runs = store.runs()
    if runs and runs[-1]["status"] == "done":
        raise PlanError(f"{memory} holds a finished run whose result was not written; remove the file to run "
                        "that arm again")


def arm_row(suite: Suite, arm: Any, result: Any) -> dict[str, Any]:
    m = result.metrics
    llm = m.get("llm") or {}
    return {
        "suite": suite.name, "backend": suite.backend, "arm": arm.name, "label": arm.label,
        "tasks": m["tasks"], "correct": m["correct"], "correct_rate": m["correct_rate"],
        "median_speedup_over_first": m["median_speedup_over_first"],
        "n_speedup_over_first": m["n_speedup_over_first"],
        "speed_comparable": m["speed_comparable"],
        "tokens": (llm.get("tokens_in") or 0) + (llm.get("tokens_out") or 0), "cost_usd": llm.get("cost_usd"),
        "complete": result.complete, "paper": PAPER.get(arm.name),
        "environment": result.environment, "tasks_detail": result.tasks,
    }


def table(report: dict[str, Any]) -> str:
    """The arms as rows, the suites as columns (correct rate, median speedup over the first
    correct kernel), the paper's figure at the end of each row."""
    rows = report["rows"]
    suites = list(dict.fromkeys(r["suite"] for r in rows))
    arms = list(dict.fromkeys(r["arm"] for r in rows))
    cells = {(r["suite"], r["arm"]): r for r in rows}
    head = "| arm | " + " | ".join(f"{s} correct | {s} speedup over first" for s in suites) + " | paper |"
    lines = [head, "|" + "---|" * (1 + 2 * len(suites) + 1)]
    for arm in arms:
        parts = []
        for s in suites:
            r = cells.get((s, arm))
            if r is None:
                parts += ["not run", ""]
                continue
            speed = r["median_speedup_over_first"]
            note = "" if r["speed_comparable"] else " (not GPU speed)"
            parts += [f"{r['correct']}/{r['tasks']} ({100 * r['correct_rate']:.0f}%)",
                      "-" if speed is None else f"{speed:.2f}x{note}"]
        lines.append(f"| {arm} | " + " | ".join(parts) + f" | {PAPER.get(arm, '')} |")
    spent_line = report["spent"]
    lines.append("")
    lines.append(f"model {report['model']}, {report['budget']} steps per task; spent {spent_line['llm_calls']} calls, "
                 f"{spent_line['tokens']:,} tokens, ${spent_line['cost_usd']:.2f}"
                 + ("" if report["complete"] else "; NOT COMPLETE (run the same command again to continue)"))
    return "\n".join(lines)


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text + "\n")
    os.replace(tmp, path)


# --- the command line (the environment is read here, once) ---------------------


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def build_plan(args: argparse.Namespace, environ: dict[str, str]) -> Plan:
    from evokernel.llm import LLMOptions, from_environment
    from evokernel.loop import RunError, RunOptions

    try:
        llm = from_environment(LLMOptions.from_specs([args.model], context_tokens=args.context_tokens), environ)
        options = RunOptions.of(llm=llm, budget=args.budget, device=args.device, size=args.size, trials=args.trials,
                                jobs=args.jobs, seed=args.seed, timeout_s=args.timeout)
    except (ValueError, RunError) as exc:
        raise PlanError(str(exc)) from None
    arms = [a for a in paper_arm_list() if not args.arms or a.name in args.arms]
    unknown = sorted(set(args.arms or ()) - {a.name for a in paper_arm_list()})
    if unknown:
        raise PlanError(f"unknown arm(s) {', '.join(unknown)}; known: {', '.join(a.name for a in paper_arm_list())}")
    suites = suites_for(args.suites, args.kernelbench, npu_backend=args.npu_backend, kb_backend=args.backend)
    plan = Plan(suites=suites, arms=arms, options=options, state=args.state or Path(f"paper-arms-{_slug(args.model)}"),
                limit=args.limit, max_cost_usd=args.max_cost)
    if plan.max_cost_usd is not None:
        provider, _, model = args.model.partition(":")
        prices = llm.prices
        if prices is None or prices.lookup(provider, model) is None:
            raise PlanError(f"--max-cost needs a price for {args.model}: add it to a JSON price file named by "
                            "EVOKERNEL_PRICES (README: Choosing the LLM)")
    return plan


def main(argv: list[str] | None = None, *, executor: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, metavar="PROVIDER:MODEL")
    parser.add_argument("--kernelbench", type=Path, help="KernelBench's task folder, holding level1/ and level2/")
    parser.add_argument("--suites", nargs="+", default=["npu", "level1", "level2"], choices=("npu", "level1", "level2"))
    parser.add_argument("--arms", nargs="+", help="a subset of: passk refine similarity value task-only")
    parser.add_argument("--budget", type=int, default=30, help="steps per task (the paper: 30)")
    parser.add_argument("--limit", type=int, help="the first N tasks of each suite")
    parser.add_argument("--max-cost", type=float, help="USD: no call starts that would take the spend past it")
    parser.add_argument("--state", type=Path, help="memories and finished arms (default ./paper-arms-MODEL)")
    parser.add_argument("--out", type=Path, help="write the results and the table here (JSON)")
    parser.add_argument("--backend", default="triton", help="backend for the KernelBench suites")
    parser.add_argument("--npu-backend", default="ascendc", help="backend for the npu suite")
    parser.add_argument("--device")
    parser.add_argument("--size", choices=("full", "small"))
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per candidate")
    parser.add_argument("--context-tokens", type=int, default=24_000)
    parser.add_argument("--estimate-only", action="store_true", help="print the estimate and stop")
    args = parser.parse_args(argv)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    from evokernel.bench import BenchError

    try:
        plan = build_plan(args, dict(os.environ))
        if args.estimate_only:
            from evokernel.bench import resolve_tasks

            counts = {s.name: len(resolve_tasks(s.source, limit=plan.limit)) for s in plan.suites}
            for line in estimate(plan, counts).lines():
                say(line)
            return 0
        report = run_arms(plan, executor=executor, say=say)
    except (PlanError, BenchError) as exc:
        say(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        say("interrupted: run the same command again to continue")
        return 130
    report["command"] = shlex.join(["python", "benchmarks/paper_arms.py", *(argv if argv is not None else sys.argv[1:])])
    report["table"] = table(report)
    if args.out:
        _write_atomically(args.out, json.dumps(report, indent=1))
    print(report["table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
