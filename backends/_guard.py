"""Runtime anti-hack guard: what ModelNew.forward really did.

A torch dispatch mode sees every aten op the candidate issues, from Python or
from its C++ extension. Outside its own kernels the candidate may only
allocate, take views and copy; anything else is PyTorch doing the work.
Backends pause the recording while the candidate's own kernel runs (the Triton
CPU interpreter, for one, issues torch ops of its own).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ._backend import LaunchLog

# Names of aten overload packets that neither compute nor reduce: allocation,
# fills used to initialise buffers, views, copies, dtype casts, metadata.
ALLOWED_OPS = frozenset(
    """
    empty empty_like empty_strided empty_permuted new_empty new_empty_strided new_zeros new_ones new_full
    zeros zeros_like ones ones_like full full_like fill fill_ zero_ scalar_tensor arange resize_
    view _unsafe_view reshape _reshape_alias as_strided permute transpose t expand expand_as squeeze
    unsqueeze select slice narrow split split_with_sizes chunk unbind alias detach view_as view_as_real
    view_as_complex unflatten movedim diagonal unfold lift_fresh lift_fresh_copy resolve_conj resolve_neg
    _to_copy to copy_ clone contiguous cat stack constant_pad_nd _local_scalar_dense
    sym_size sym_stride sym_numel sym_storage_offset is_contiguous size stride numel dim
    _has_compatible_shallow_copy_type record_stream set_ is_same_size
    """.split()
)


def op_name(func: Any) -> str:
    packet = getattr(func, "overloadpacket", None) or getattr(func, "_overloadpacket", None)
    name = getattr(packet, "__name__", None) or str(func)
    return name.split("::")[-1]


class OpRecorder(TorchDispatchMode):
    """Records aten ops issued while the candidate runs, except inside its own kernels."""

    def __init__(self, log: LaunchLog):
        super().__init__()
        self.log = log
        self.forbidden: dict[str, int] = {}
        self.allowed: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: D105
        if not self.log.paused:
            name = op_name(func)
            bucket = self.allowed if name in ALLOWED_OPS else self.forbidden
            bucket[name] = bucket.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def record_ops(log: LaunchLog) -> Iterator[OpRecorder]:
    recorder = OpRecorder(log)
    with recorder:
        yield recorder


def output_problems(out: Any) -> list[str]:
    """Outputs must be plain, dense, materialised tensors."""
    problems = []
    leaves = out if isinstance(out, (tuple, list)) else [out]
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, (tuple, list)):
            problems.extend(output_problems(leaf))
            continue
        if not isinstance(leaf, torch.Tensor):
            problems.append(f"output {i} is a {type(leaf).__name__}, not a torch.Tensor")
        elif type(leaf) is not torch.Tensor and not isinstance(leaf, torch.nn.Parameter):
            problems.append(f"output {i} is a tensor subclass ({type(leaf).__name__}): the work could be deferred")
        elif leaf.layout != torch.strided:
            problems.append(f"output {i} has layout {leaf.layout}, not a dense strided tensor")
        elif leaf.device.type == "meta":
            problems.append(f"output {i} is on the meta device: it holds no data")
    return problems
