"""Flag benchmark tasks whose reference makes a wrong kernel look correct.

A task is degenerate when a kernel can pass verification without computing the
operator: the output is (nearly) zero, so writing zeros passes the tolerance;
the output does not move when an input or the weights change, so the kernel can
skip that input; the reference itself is non-finite or non-deterministic, so no
verdict means anything. `check_task` runs a task's reference on the CPU at a
chosen size and returns one `Finding` per problem; an empty list means clean.

The output checks are the executor's own (`backends.output_findings`), and a
task that is degenerate on its own inputs is also put through the executor's
stress search (`backends.assess_task`): `stress_tested` names the input
distribution under which the executor's stress trials will test candidates
anyway, `degenerate` says that none exists, so the task's speedups mean
nothing and bench reports keep them out of geometric means.

    python -m evokernel.bench.degenerate benchmarks/level1 benchmarks/level2

prints OK or the findings for each task file and exits 1 if anything was
flagged.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

# Tolerances the verifier applies when a task sets no TOLERANCE: the executor's own table,
# and the executor's own degeneracy checks.
from backends import DEFAULT_TOLERANCE, assess_task, output_findings

__all__ = [
    "Finding",
    "TaskLoadError",
    "check_task",
    "degenerate_tasks",
    "load_task_module",
    "task_files",
    "tolerance_for",
    "main",
]

# Findings that the executor's stress trials address (the output cannot tell kernels apart on these inputs).
STRESSABLE = frozenset({"near_zero", "mostly_zero", "constant", "low_variance", "one_value_per_row", "ignores_input"})


@dataclass(frozen=True)
class Finding:
    """One reason a task's reference cannot tell right kernels from wrong ones."""

    path: str
    check: str  # e.g. "near_zero", "ignores_input", "nondeterministic"
    detail: str
    group: int | None = None  # index into the task's input groups, None for the whole task

    def __str__(self) -> str:
        where = "" if self.group is None else f" [group {self.group}]"
        return f"{self.check}{where}: {self.detail}"


class TaskLoadError(Exception):
    """A task file could not be imported or lacks the names of the task format."""


def _size_env(size: str):
    """The task size, set as a task file hears it while its code runs (one mechanism: backends')."""
    from backends import task_size

    return task_size(size)


def load_task_module(path: str | os.PathLike[str], *, size: str = "small") -> ModuleType:
    """The task file imported at `size` by the executor's loader (backends.load_task_module).

    Raises TaskLoadError when the file cannot be imported or lacks Model,
    get_inputs or get_init_inputs.
    """
    from backends import TaskError
    from backends import load_task_module as load

    try:
        return load(Path(path), size=size)
    except TaskError as exc:  # a broken task is a finding, never a crash of the caller
        raise TaskLoadError(str(exc)) from exc


def task_files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Expand files and directories into task files (directories: *.py, no _private ones)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(f for f in sorted(p.glob("*.py")) if not f.name.startswith("_"))
        elif p.is_file():
            found.append(p)
        else:
            raise FileNotFoundError(p)
    return found


def tolerance_for(module: ModuleType, dtype: torch.dtype) -> tuple[float, float]:
    """(atol, rtol) the verifier uses for an output of `dtype` from this task."""
    override = getattr(module, "TOLERANCE", None)
    if override is not None:
        atol, rtol = override
        return float(atol), float(rtol)
    return DEFAULT_TOLERANCE.get(dtype, (0.0, 0.0))


# ---------------------------------------------------------------- running the reference


def _draw_groups(module: ModuleType, seed: int) -> list[list[Any]]:
    torch.manual_seed(seed)
    if hasattr(module, "get_input_groups"):
        return [list(group) for group in module.get_input_groups()]
    return [list(module.get_inputs())]


def _build_model(module: ModuleType, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return module.Model(*module.get_init_inputs())


def _clone(inputs: Sequence[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def _flatten(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in _flatten(item)]
    return [torch.as_tensor(out)]


def _forward(model: torch.nn.Module, inputs: Sequence[Any]) -> list[torch.Tensor]:
    with torch.no_grad():
        return [t.detach() for t in _flatten(model(*_clone(inputs)))]


def _close(module: ModuleType, a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    """Whether the verifier would accept `a` for reference `b`."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if not (x.is_floating_point() or x.is_complex()):
            if not torch.equal(x, y):
                return False
            continue
        atol, rtol = tolerance_for(module, y.dtype)
        if not torch.allclose(x, y, atol=atol, rtol=rtol, equal_nan=False):
            return False
    return True


def _float_inputs(inputs: Sequence[Any], dtype: torch.dtype) -> list[Any]:
    return [
        x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
        for x in inputs
    ]


# ---------------------------------------------------------------- the checks


def _output_findings(module: ModuleType, outs: list[torch.Tensor]) -> list[tuple[str, str]]:
    override = getattr(module, "TOLERANCE", None)
    tolerance = (float(override[0]), float(override[1])) if override is not None else None
    return [f for f in output_findings(outs, tolerance) if f[0] != "empty"]


def _tolerance_findings(
    module: ModuleType, model: torch.nn.Module, inputs: Sequence[Any], outs: list[torch.Tensor]
) -> list[tuple[str, str]]:
    """Compare the reference with a float64 re-run of itself.

    A candidate as accurate as the reference but with another summation order
    may differ from it by up to twice the reference's own error, so that error
    must stay within half the tolerance.
    """
    try:
        exact = _forward(copy.deepcopy(model).double(), _float_inputs(inputs, torch.float64))
    except Exception:  # ops without float64 kernels: nothing to compare against
        return []
    found = []
    for k, (out, ref) in enumerate(zip(outs, exact)):
        if not out.is_floating_point() or out.shape != ref.shape:
            continue
        atol, rtol = tolerance_for(module, out.dtype)
        error = (out.double() - ref).abs()
        budget = 0.5 * (atol + rtol * ref.abs())
        ratio = float((error / budget.clamp_min(1e-300)).max()) if out.numel() else 0.0
        if ratio > 1.0:
            found.append((
                "tolerance_tight",
                f"output {k} is off from a float64 run by {float(error.max()):.3g} "
                f"({ratio:.1f}x half the tolerance atol={atol:g}, rtol={rtol:g})",
            ))
    return found


def _fixed_parameters(model_a: torch.nn.Module, model_b: torch.nn.Module) -> list[str]:
    """Floating parameters and buffers that come out identical under two seeds."""
    named_b = dict(itertools.chain(model_b.named_parameters(), model_b.named_buffers()))
    fixed = []
    for name, value in itertools.chain(model_a.named_parameters(), model_a.named_buffers()):
        if value.is_floating_point() and name in named_b and torch.equal(value, named_b[name]):
            fixed.append(name)
    return fixed


def _has_float_state(model: torch.nn.Module) -> bool:
    return any(
        t.is_floating_point() for t in itertools.chain(model.parameters(), model.buffers())
    )


def _check_group(
    module: ModuleType,
    group: int,
    groups_by_seed: list[list[list[Any]]],
    models: list[torch.nn.Module],
) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    seeds = len(groups_by_seed) - 1  # the last draw only serves as "another seed"
    for s in range(seeds):
        inputs, other = groups_by_seed[s][group], groups_by_seed[s + 1][group]
        model = models[s]
        base = _forward(model, inputs)
        found += _output_findings(module, base)
        if not _close(module, _forward(model, inputs), base):
            found.append(("nondeterministic", "two runs on the same inputs differ beyond tolerance"))
        # The verifier runs the reference on clones, but a reference that writes
        # into its inputs hands the candidate different data.
        probe = _clone(inputs)
        with torch.no_grad():
            model(*probe)
        if not all(
            not isinstance(x, torch.Tensor) or torch.equal(x, y) for x, y in zip(probe, inputs)
        ):
            found.append(("mutates_inputs", "forward writes into its input tensors"))
        for i, (x, y) in enumerate(zip(inputs, other)):
            if not isinstance(x, torch.Tensor) or torch.equal(x, y):
                continue
            mixed = list(inputs)
            mixed[i] = y
            if _close(module, _forward(model, mixed), base):
                found.append(("ignores_input", f"input {i} redrawn with another seed: output unchanged within tolerance"))
        if _has_float_state(model):
            if _close(module, _forward(models[s + 1], inputs), base):
                found.append(("ignores_weights", "model re-initialised with another seed: output unchanged within tolerance"))
        if s == 0:
            found += _tolerance_findings(module, model, inputs, base)
    return found


def check_task(path: str | os.PathLike[str], *, size: str = "small", seeds: int = 3) -> list[Finding]:
    """Run a task's reference at `size` under `seeds` seeds and return what is degenerate.

    Checks: the task loads and runs; outputs are finite, not (mostly) zero
    within the tolerance, deterministic, unchanged inputs; every input tensor
    and the weights (when there are any) change the output beyond the
    tolerance; no parameter is seed-independent (a kernel could hard-code
    it); the reference's own float32/float16 error stays within half the
    tolerance; get_inputs() matches the first input group.
    """
    where = str(path)
    try:
        module = load_task_module(path, size=size)
    except TaskLoadError as exc:
        return [Finding(where, "load_error", str(exc))]
    seeds = max(seeds, 1)
    findings: list[Finding] = []
    try:
        with _size_env(size):
            groups_by_seed = [_draw_groups(module, s) for s in range(seeds + 1)]
            models = [_build_model(module, s) for s in range(seeds + 1)]
            if hasattr(module, "get_input_groups"):
                torch.manual_seed(0)
                first = list(module.get_inputs())
                expected = groups_by_seed[0][0]
                if len(first) != len(expected) or not all(
                    _same_tensor(a, b) for a, b in zip(first, expected)
                ):
                    findings.append(Finding(where, "first_group_mismatch",
                                            "get_inputs() differs from get_input_groups()[0] under the same seed"))
            for name in _fixed_parameters(models[0], models[1]):
                findings.append(Finding(where, "fixed_parameter",
                                        f"{name} is identical under two seeds; a kernel could hard-code it"))
            for g in range(len(groups_by_seed[0])):
                seen: set[tuple[str, str]] = set()
                for check, detail in _check_group(module, g, groups_by_seed, models):
                    if (check, detail) not in seen:
                        seen.add((check, detail))
                        group = g if len(groups_by_seed[0]) > 1 else None
                        findings.append(Finding(where, check, detail, group))
        if any(f.check in STRESSABLE for f in findings) and not any(f.check == "nondeterministic" for f in findings):
            with _size_env(size):
                plan = assess_task(module, trials=seeds)
            if plan.distribution:
                findings.append(Finding(where, "stress_tested",
                                        f"the executor's stress trials test candidates on inputs from {plan.distribution}"))
            elif plan.degenerate:
                findings.append(Finding(where, "degenerate", plan.degenerate))
    except Exception as exc:  # failures are data: report the task, keep checking the others
        findings.append(Finding(where, "run_error", f"{type(exc).__name__}: {exc}"))
    return findings


def degenerate_tasks(paths: Sequence[str | os.PathLike[str]], *, size: str = "small", seeds: int = 2) -> dict[str, str]:
    """{task file: why} for the tasks no input distribution makes testable (what bench reports list)."""
    out = {}
    for f in task_files(paths):
        for finding in check_task(f, size=size, seeds=seeds):
            if finding.check == "degenerate":
                out[str(f)] = finding.detail
    return out


def _same_tensor(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)
    return a == b


# ---------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evokernel.bench.degenerate",
        description="Flag benchmark tasks whose reference outputs let a wrong kernel pass.",
    )
    parser.add_argument("paths", nargs="+", help="task files or directories of task files")
    parser.add_argument("--size", default="small", help="EVOKERNEL_SIZE to load the tasks at (default: small)")
    parser.add_argument("--seeds", type=int, default=3, help="input/weight seeds to try (default: 3)")
    args = parser.parse_args(argv)
    try:
        files = task_files(args.paths)
    except FileNotFoundError as exc:
        print(f"error: no such file or directory: {exc}", file=sys.stderr)
        return 2
    if not files:
        print("error: no task files found", file=sys.stderr)
        return 2
    flagged = 0
    for f in files:
        findings = check_task(f, size=args.size, seeds=args.seeds)
        if findings:
            flagged += 1
            print(f"FLAGGED {f}")
            for finding in findings:
                print(f"    {finding}")
        else:
            print(f"OK      {f}")
        sys.stdout.flush()
    print(f"\n{len(files)} task files checked at size={args.size}, seeds={args.seeds}: "
          f"{len(files) - flagged} OK, {flagged} flagged")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
