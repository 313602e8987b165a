"""Probe: how long the builtin policy's draft of each task is, in characters, lines and tokens.

An LLM refining a builtin kernel (the hybrid policy) must answer within its `max_tokens`; these sizes
say when the whole file cannot fit and the prompt asks for edits instead (evokernel/llm/_edits.py).
Each task is planned at its full size under --rules and its default candidate generated, on the CPU;
tokens are counted with the prompt's counter (o200k_base, offline).

    python benchmarks/probes/builtin_sizes.py benchmarks/level1/01_relu.py ... [--rules strict] --out FILE.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_common import environment  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tasks", nargs="+", type=Path, help="task files (KernelBench format)")
    ap.add_argument("--rules", choices=("strict", "kernelbench"), default="strict")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    from evokernel.builtin import analyze, generate
    from evokernel.llm import get_token_counter

    counter = get_token_counter()
    rows = []
    for path in args.tasks:
        plan = analyze(path, args.rules)
        if not plan:
            rows.append({"task": path.stem, "planned": False, "reason": plan.reason})
        else:
            source = generate(plan)
            rows.append({"task": path.stem, "planned": True, "chars": len(source), "lines": source.count("\n"),
                         "tokens": counter.count(source)})
        row = rows[-1]
        print(f"{path.stem}: " + (f"{row['chars']:,} chars, {row['lines']:,} lines, {row['tokens']:,} tokens"
                                  if row["planned"] else f"not planned ({row['reason']})"), file=sys.stderr)
    sized = [r for r in rows if r["planned"]]
    summary = {key: {"min": min(r[key] for r in sized), "median": statistics.median(r[key] for r in sized),
                     "max": max(r[key] for r in sized)} for key in ("chars", "lines", "tokens")} if sized else {}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"command": " ".join(["python", *sys.argv]), "environment": environment("cpu"),
                                    "rules": args.rules, "counter": counter.name, "summary": summary,
                                    "planned": len(sized), "tasks": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
