"""Probe: the default candidate a plan keeps (the one analyze() wrote) against one written afresh.

    python benchmarks/probes/default_candidate.py tests/tasks benchmarks/level3 [--rules strict kernelbench]

For every task file given (or every *.py in a folder given) and rule set: analyze it, then write the
candidate at its default configuration twice, from the plan (which returns the source analyze() kept)
and from a copy of the plan (dataclasses.replace: a copy writes afresh). One JSON line per plan on
stdout (file, rules, whether the two sources are equal, both times in seconds), progress on stderr;
exit status 1 when any pair differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path


def _task_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(p for p in path.glob("*.py") if not p.name.startswith("_")) if path.is_dir() else [path])
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="task files or folders of them")
    parser.add_argument("--rules", nargs="+", default=["strict", "kernelbench"], choices=["strict", "kernelbench"])
    args = parser.parse_args(argv)

    from evokernel.builtin import analyze, default_config, generate

    differ = 0
    files = _task_files(args.paths)
    for i, path in enumerate(files, 1):
        for rules in args.rules:
            plan = analyze(path, rules)
            if not plan:
                print(f"[{i}/{len(files)}] {path} {rules}: not planned ({plan.reason})", file=sys.stderr)
                continue
            config = default_config(plan)
            t0 = time.perf_counter()
            kept = generate(plan, config)
            t1 = time.perf_counter()
            fresh = generate(replace(plan), config)
            t2 = time.perf_counter()
            differ += kept != fresh
            print(json.dumps({"file": str(path), "rules": rules, "equal": kept == fresh,
                              "kept_s": round(t1 - t0, 4), "fresh_s": round(t2 - t1, 4)}), flush=True)
            print(f"[{i}/{len(files)}] {path} {rules}: {'equal' if kept == fresh else 'DIFFERENT'}", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
