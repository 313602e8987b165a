"""Memory planning: will this task's evaluation fit on its device?

Before any input is drawn, the task is run on the meta device (shapes and
dtypes, no data): `get_inputs()` (and every input group) and the reference's
forward give the bytes of the inputs and of the outputs; the reference's
weights are counted from a meta copy of the model. The harness then holds at
most, at one time, during a correctness trial:

    2 x weights                (the reference and the candidate, on the device)
  + inputs + a clone of them   (every forward gets its own clone)
  + 2 x outputs                (the reference's, kept until compared, and the candidate's)
  + the comparison's chunks    (float64 copies of one chunk, never of a whole output)

and while timing, inputs + a clone + one output + the L2 flush buffer. Input
groups are drawn together, so all of them are held while each is checked.
The larger of these is what the evaluation needs; what is available is the
device's free memory (CUDA: free plus what this process's allocator caches; CPU:
the address-space limit left, the host's available memory, the cgroup's limit
left), capped by `EvalOptions.memory_budget_bytes`. Inputs under 64 MiB skip the
meta forward: their outputs are taken as large as the inputs (and the plan
says so). The needed figure is a
lower bound (the reference's own temporaries are not counted), so a task is
refused only when it cannot fit; an out-of-memory error at run time is then
blamed on whoever allocated: the harness or the reference (task_error) or the
candidate (runtime_error).
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Any

import torch

from ._compare import CHUNK as COMPARE_CHUNK
from ._compare import flatten
from ._result import MemoryPlan, gib
from ._task import tensor_bytes

_COMPARE_TEMPORARIES = 6  # float64 copies alive at once while one chunk is compared


def plan(
    task: Any,
    init_inputs: list[Any],
    device: torch.device,
    *,
    flush_bytes: int,
    budget_bytes: int | None,
    budget_source: str = "the configured memory budget",
) -> MemoryPlan:
    """The plan for `task` (a task module) on `device`, from meta runs; `budget_source` says what set
    `budget_bytes` where it is what bounds the plan."""
    weights, model = _meta_model(task, init_inputs)
    with torch.device("meta"):
        first = list(task.get_inputs())
        groups_fn = getattr(task, "get_input_groups", None)
        groups = [list(g) for g in groups_fn()] if callable(groups_fn) else []
    # (bytes held while the set is checked, the set, its outputs)
    candidates = [(tensor_bytes(first), first)] + [(tensor_bytes(groups), g) for g in groups]
    need, worst, first_out = -1, (0, 0, 0, False), 0
    for i, (held, inputs) in enumerate(candidates):
        out, elements, estimated = _outputs(model, inputs)
        first_out = out if i == 0 else first_out
        trial = held + tensor_bytes(inputs) + 2 * out
        if trial > need:
            need, worst = trial, (tensor_bytes(inputs), out, elements, estimated)
    one, out, elements, estimated = worst
    timing = 2 * tensor_bytes(first) + first_out + flush_bytes
    compare = min(elements, COMPARE_CHUNK) * 8 * _COMPARE_TEMPORARIES
    needed = 2 * weights + max(need, timing) + compare
    available, source = available_bytes(device)
    if budget_bytes is not None and budget_bytes < available:
        available, source = budget_bytes, budget_source
    return MemoryPlan(str(device), one, out, weights, flush_bytes, compare, estimated, needed, available, source)


def _meta_model(task: Any, init_inputs: list[Any]) -> tuple[int, Any]:
    try:
        with torch.device("meta"):
            model = task.Model(*init_inputs)
    except Exception:
        return 0, None
    if not isinstance(model, torch.nn.Module):
        return 0, None
    weights = sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
    return weights, model.eval()


# Below this many input bytes the outputs are estimated rather than run on meta:
# a meta forward can import torch._dynamo (seconds, once per worker), and so
# small a task fits anywhere the harness runs.
META_FORWARD_BYTES = 64 << 20


def _outputs(model: Any, inputs: list[Any]) -> tuple[int, int, bool]:
    """Bytes of the reference's outputs, elements of the largest, whether estimated."""
    if model is not None and tensor_bytes(inputs) >= META_FORWARD_BYTES:
        try:
            with torch.no_grad():
                leaves = [t for t in flatten(model(*inputs)) if isinstance(t, torch.Tensor)]
            return sum(tensor_bytes(t) for t in leaves), max((t.numel() for t in leaves), default=0), False
        except Exception:  # no meta kernel, data-dependent shapes: assume outputs as large as the inputs
            pass
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    return tensor_bytes(inputs), max((t.numel() for t in tensors), default=0), True


def device_free_bytes(device: torch.device) -> int:
    """What this process may still allocate on a CUDA device: the device's free memory and the
    caching allocator's idle blocks (freed tensors it keeps; mem_get_info counts them as used)."""
    free, _ = torch.cuda.mem_get_info(device)
    return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))


def available_bytes(device: torch.device) -> tuple[int, str]:
    """What this process may still allocate on `device`, and what bounds it."""
    if device.type == "cuda":
        return device_free_bytes(device), f"free memory of {torch.cuda.get_device_name(device)}"
    limits: list[tuple[int, str]] = []
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft not in (resource.RLIM_INFINITY, -1):
        limits.append((max(0, soft - _address_space_used()), f"address-space limit of {soft >> 20} MiB"))
    meminfo = _meminfo_available()
    if meminfo is not None:
        limits.append((meminfo, "the host's available memory"))
    cgroup = _cgroup_left()
    if cgroup is not None:
        limits.append((cgroup, "the cgroup's memory limit"))
    if not limits:
        return 1 << 62, "no known limit"
    return min(limits)


def _address_space_used() -> int:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_left() -> int | None:
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        return max(0, int(limit) - used)
    except (OSError, ValueError):
        return None


_OOM_TEXT = ("out of memory", "can't allocate memory", "cannot allocate memory", "bad_alloc", "[errno 12]")


def is_out_of_memory(exc: BaseException) -> bool:
    oom = getattr(torch, "OutOfMemoryError", None)
    if isinstance(exc, MemoryError) or (oom is not None and isinstance(exc, oom)):
        return True
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(t in text for t in _OOM_TEXT)


def free_now(device: torch.device) -> str:
    """Free memory on `device` right now, in words, for out-of-memory messages."""
    try:
        available, source = available_bytes(device)
    except Exception:
        return "unknown"
    return f"{gib(available)} ({source})"


__all__ = ["MemoryPlan", "available_bytes", "free_now", "gib", "is_out_of_memory", "plan"]
