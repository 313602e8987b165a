"""A task's constructor arguments, inputs, outputs and tolerances, for `show_task`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ._records import TensorSpec, Tolerance


def describe_io(path: Path, size: str, notes: list[str]) -> tuple[list[str], list[list[TensorSpec]], list[TensorSpec]]:
    """Constructor arguments, input sets and outputs of a task at `size`, from a run on the
    meta device (shapes and dtypes, no data)."""
    import torch

    from backends import load_task_module

    module = load_task_module(path, size=size)
    try:
        with torch.device("meta"):
            init = list(module.get_init_inputs())
            sets = [list(module.get_inputs())]
            groups = getattr(module, "get_input_groups", None)
            if callable(groups):
                sets.extend(list(g) for g in groups())
    except Exception as exc:
        notes.append(f"the inputs could not be described: {type(exc).__name__}: {exc}"[:300])
        return [], [], []
    outputs: list[TensorSpec] = []
    try:
        with torch.device("meta"), torch.no_grad():
            out = module.Model(*init).to("meta")(*sets[0])
        outputs = _specs(out if isinstance(out, (tuple, list)) else [out])
    except Exception as exc:  # no meta kernel, data-dependent shapes
        notes.append(f"the outputs could not be described on the meta device: {type(exc).__name__}: {exc}"[:300])
    return [_short_repr(v) for v in init], [_specs(s) for s in sets], outputs


def _specs(values: Sequence[Any]) -> list[TensorSpec]:
    import torch

    return [TensorSpec(shape=list(v.shape), dtype=str(v.dtype).replace("torch.", "")) if isinstance(v, torch.Tensor)
            else TensorSpec(shape=[], dtype=f"{type(v).__name__} {_short_repr(v)}") for v in values]


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def tolerances(task_tolerance: tuple[float, float] | None, specs: list[TensorSpec]) -> list[Tolerance]:
    """The (atol, rtol) the verifier applies to each floating dtype the task uses."""
    import torch

    from backends import DEFAULT_TOLERANCE

    out = []
    for dtype in dict.fromkeys(s.dtype for s in specs):
        torch_dtype = getattr(torch, dtype, None)
        if not isinstance(torch_dtype, torch.dtype) or not torch_dtype.is_floating_point:
            continue
        if task_tolerance is not None:
            out.append(Tolerance(dtype, task_tolerance[0], task_tolerance[1], "task TOLERANCE"))
        else:
            atol, rtol = DEFAULT_TOLERANCE.get(torch_dtype, (1e-4, 1e-4))
            out.append(Tolerance(dtype, atol, rtol, f"default for {dtype}"))
    return out
