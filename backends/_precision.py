"""The precision a task runs in, as KernelBench's harness has it (its `precision` option).

"fp32" is the task as written. Under "fp16" or "bf16" the reference model and
the candidate model are cast to that dtype after they are built (floating
parameters, buffers and plain tensor attributes), and so are the floating
tensors among `get_init_inputs()` and `get_inputs()` (drawn as the task draws
them, then cast; integer and bool tensors keep their dtype). The default
tolerance is then 1e-2 (atol and rtol) unless the task or the options set one.
The accuracy oracle (backends/_oracle.py) widens the cast model and inputs,
so its float64 run computes on the very values the low-precision runs see.
"""

from __future__ import annotations

from typing import Any

import torch

# KernelBench's names for them; fp32 first (the default).
PRECISIONS = ("fp32", "fp16", "bf16")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
# The default (atol, rtol) of a task run in that precision (KernelBench's, after torchbench's).
TOLERANCES = {"fp32": (1e-4, 1e-4), "fp16": (1e-2, 1e-2), "bf16": (1e-2, 1e-2)}


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; known: {', '.join(PRECISIONS)}")
    return precision


def cast_dtype(precision: str) -> torch.dtype | None:
    """The dtype floating tensors are cast to (None for fp32: the task runs as written)."""
    check_precision(precision)
    return None if precision == "fp32" else DTYPES[precision]


def precision_note(precision: str) -> str:
    """What a run in `precision` did, in words (for feedback)."""
    dtype = cast_dtype(precision)
    if dtype is None:
        return "run in fp32: the task as written"
    return f"run in {precision}: the reference, ModelNew and the floating inputs cast to {dtype}"


def cast_values(values: Any, precision: str) -> Any:
    """Floating tensors (in lists and tuples too) cast to the precision's dtype; everything else as it is."""
    dtype = cast_dtype(precision)
    return values if dtype is None else _cast(values, dtype)


def _cast(x: Any, dtype: torch.dtype) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(dtype) if x.is_floating_point() else x
    if isinstance(x, (list, tuple)):
        return type(x)(_cast(v, dtype) for v in x)
    return x


def cast_tensor_attributes(model: torch.nn.Module, convert: Any) -> None:
    """Replace each module's tensors kept as plain attributes (neither parameter nor buffer) by `convert(tensor)`."""
    for module in model.modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor):
                setattr(module, name, convert(value))


def cast_model(model: Any, precision: str) -> Any:
    """`model` (cast in place) with its floating parameters, buffers and plain tensor attributes in the
    precision's dtype, as `Module.to(dtype)` and then its plain attributes; a non-module is returned as it is."""
    dtype = cast_dtype(precision)
    if dtype is None or not isinstance(model, torch.nn.Module):
        return model
    model.to(dtype)
    cast_tensor_attributes(model, lambda t: _cast(t, dtype))
    return model


__all__ = ["DTYPES", "PRECISIONS", "TOLERANCES", "cast_dtype", "cast_model", "cast_tensor_attributes", "cast_values",
           "check_precision", "precision_note"]
