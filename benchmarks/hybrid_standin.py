"""LLM calls and tokens per correct task, with and without the builtin drafting first.

Runs `evokernel.bench.run_bench` twice over the same tasks, once with
`RunOptions.of(builtin_first=True)` (the default with a model: the builtin policy
drafts where it covers the task, the LLM refines past its tries or drafts where
it stops) and once with `builtin_first=False` (the LLM writes every step), each
in its own fresh memory. The LLM is the local stand-in server
(benchmarks/llm_standin.py): it answers every request with one Triton kernel for
`relu(x + bias) * scale`, correct for the bundled `relu_add` task and wrong for
the others, at 1,000 tokens in and 400 out. So this measures what each setting
spends and what it solves with a model that solves one kind of task; it says
nothing about a real model's kernels.

    python benchmarks/hybrid_standin.py --out benchmarks/results/hybrid-standin-cpu.json

Progress goes to stderr, the result (JSON) to stdout and `--out`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from llm_standin import StandIn  # noqa: E402

# The stand-in's kernel is right for relu_add only; the others are tasks of our level1 and
# level2 suites the builtin covers (elementwise, row reductions and norms, matmul epilogues),
# and one of level3 it does not.
DEFAULT_TASKS = (
    "evokernel/tasks/relu_add.py",
    "benchmarks/level1/01_relu.py",
    "benchmarks/level1/21_rms_norm.py",
    "benchmarks/level1/26_softmax.py",
    "benchmarks/level2/01_linear_gelu.py",
    "benchmarks/level2/04_linear_softmax.py",
    "benchmarks/level3/05_gru_unrolled.py",  # outside the builtin's families (torch.stack): the LLM drafts
)


def measure(tasks: list[Path], *, budget: int, trials: int, size: str, jobs: int | None, builtin_first: bool,
            server: StandIn, memory: Path) -> dict[str, Any]:
    """One setting over the tasks: what the bench reports, and the requests the stand-in answered."""
    from evokernel.bench import run_bench
    from evokernel.llm import LLMOptions, ProviderAccess
    from evokernel.loop import RunOptions

    llm = LLMOptions.from_specs(["openai:standin"], access={
        "openai": ProviderAccess(base_url=server.url + "/v1", api_key="sk-standin-not-a-key")})
    options = RunOptions.of(llm=llm, builtin_first=builtin_first, budget=budget, trials=trials, size=size, device="cpu",
                            jobs=jobs)
    suite = memory.parent / ("suite-" + memory.stem)
    suite.mkdir()
    for task in tasks:
        shutil.copy(task, suite / task.name)
    server.reset()
    result = run_bench(suite, options, memory=memory, on_event=_progress)
    calls = server.stats()["requests"]
    metrics = result.metrics
    tokens = metrics["llm"]["tokens_in"] + metrics["llm"]["tokens_out"]
    correct = metrics["correct"]
    return {
        "builtin_first": builtin_first,
        "policy": result.policy,
        "tasks": metrics["tasks"],
        "correct": correct,
        "llm_calls": calls,
        "tokens": tokens,
        "llm_calls_per_correct": calls / correct if correct else None,
        "tokens_per_correct": tokens / correct if correct else None,
        "environment": result.environment,
        "per_task": [{k: row[k] for k in ("name", "correct", "attempts", "first_correct_attempt", "tokens_in",
                                          "tokens_out", "statuses")} for row in result.tasks],
    }


def _progress(event: Any) -> None:
    from evokernel.loop import StepDone

    if isinstance(event, StepDone):
        print(f"  {event.task} step {event.step} ({event.stage}): {event.status}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(DEFAULT_TASKS), help="task files (paths from the checkout)")
    parser.add_argument("--budget", type=int, default=6, help="steps per task")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--size", default="small", choices=("small", "full"))
    parser.add_argument("--jobs", type=int, help="steps at once (default: the run's choice)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    tasks = [p if p.is_absolute() else ROOT / p for p in map(Path, args.tasks)]
    missing = [str(p) for p in tasks if not p.is_file()]
    if missing:
        parser.error(f"no task file at {', '.join(missing)}")
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")  # the stand-in is local: no proxy in between
    settings = []
    with tempfile.TemporaryDirectory(prefix="evokernel-hybrid-") as tmp, StandIn(delay_s=0.0) as server:
        for builtin_first in (True, False):
            print(f"builtin_first={builtin_first}: {len(tasks)} tasks x {args.budget} steps", file=sys.stderr, flush=True)
            settings.append(measure(tasks, budget=args.budget, trials=args.trials, size=args.size, jobs=args.jobs,
                                    builtin_first=builtin_first, server=server,
                                    memory=Path(tmp) / f"builtin-first-{builtin_first}.db"))
    result = {
        "kind": "evokernel-hybrid-standin",
        "command": shlex.join(["python", "benchmarks/hybrid_standin.py", *(argv if argv is not None else sys.argv[1:])]),
        "llm": "benchmarks/llm_standin.py: one relu_add kernel for every request, 1000 tokens in and 400 out",
        "budget": args.budget,
        "settings": settings,
        "environment": settings[0].pop("environment"),
    }
    for setting in settings[1:]:
        setting.pop("environment")
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
