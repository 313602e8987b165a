"""Runtime anti-hack guard: what ModelNew.forward really did.

A torch dispatch mode sees every aten op the candidate issues, from Python or
from its C++ extension. Outside its own kernels the strict rule set allows
only allocation, views and copies; anything else is PyTorch doing the work
(allowed beside an own kernel under `kernelbench`). The same mode sees casts
to a lower precision than the task's, and on request fills every fresh
`empty` allocation with a sentinel, so an output element the candidate never
writes shows whatever the allocator hands out. Switching to a side stream
from Python is refused while the forward runs. Backends pause all of this while
the candidate's own kernel runs (the Triton CPU interpreter, for one, issues
torch ops of its own).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Iterable, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ._backend import LaunchLog
from ._compare import flatten
from ._result import Verdict
from ._rules import DEFAULT_RULES, explain, verdict_for

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


# Allocations whose contents are whatever the allocator had: the sentinel run fills them.
EMPTY_OPS = frozenset({"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"})
CAST_OPS = frozenset({"_to_copy", "to", "copy_", "_to_dtype"})
HIGH_PRECISION = (torch.float32, torch.float64, torch.complex64, torch.complex128)
LOW_PRECISION = tuple(
    d for d in (torch.float16, torch.bfloat16, *(getattr(torch, n, None) for n in (
        "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"))) if d is not None
)


def sentinel_fill_(t: torch.Tensor) -> None:
    """Fill `t` with a value no honest kernel leaves behind: NaN, or the dtype's max."""
    if t.is_floating_point() or t.is_complex():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


def op_name(func: Any) -> str:
    packet = getattr(func, "overloadpacket", None) or getattr(func, "_overloadpacket", None)
    name = getattr(packet, "__name__", None) or str(func)
    return name.split("::")[-1]


# Integer host tensors made from Python numbers (`torch.tensor(x.shape)`), and what torch computes from
# them alone, are shape arithmetic (`torch.prod(torch.tensor(x.shape))`), not compute: at most this many elements.
SHAPE_TENSOR_NUMEL = 64
_SHAPE_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool)


def _is_shape_tensor(t: Any) -> bool:
    return (isinstance(t, torch.Tensor) and t.device.type == "cpu" and t.dtype in _SHAPE_DTYPES
            and t.numel() <= SHAPE_TENSOR_NUMEL)


class OpRecorder(TorchDispatchMode):
    """Records aten ops issued while the candidate runs, except inside its own kernels."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's handler so that dynamo never compiles inside it, importing torch._dynamo on
        # the first op (about 1 s of CPU in every fresh worker). Nothing is compiled while this mode is
        # on: it records the candidate, whose own torch.compile is refused by the static rules.
        return False

    def __init__(self, log: LaunchLog, *, fill_empty: bool = False):
        super().__init__()
        self.log = log
        self.fill_empty = fill_empty
        self.forbidden: dict[str, int] = {}
        self.allowed: dict[str, int] = {}
        self.downcasts: dict[str, int] = {}  # "float32->float16": count, outside own kernels
        self.shape_tensors: set[int] = set()  # ids of live shape tensors (see SHAPE_TENSOR_NUMEL)

    def _shape_arithmetic(self, name: str, args: tuple, kwargs: dict, out: Any) -> bool:
        """Whether this op only turned Python numbers, or shape tensors, into shape tensors."""
        tensors = [t for t in flatten([*args, *kwargs.values()]) if isinstance(t, torch.Tensor)]
        made_from_numbers = name in ("lift_fresh", "lift_fresh_copy", "scalar_tensor") and all(map(_is_shape_tensor, tensors))
        if not made_from_numbers and not (tensors and all(id(t) in self.shape_tensors and _is_shape_tensor(t) for t in tensors)):
            return False
        outs = [t for t in flatten(out) if isinstance(t, torch.Tensor)]
        if not all(map(_is_shape_tensor, outs)):
            return False
        self.shape_tensors.update(id(t) for t in outs)
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: D105
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not self.log.paused:
            name = op_name(func)
            shape_only = self._shape_arithmetic(name, args, kwargs, out)
            bucket = self.allowed if name in ALLOWED_OPS or shape_only else self.forbidden
            bucket[name] = bucket.get(name, 0) + 1
            if name in CAST_OPS:
                self._note_cast(name, args, kwargs, out)
            if self.fill_empty and name in EMPTY_OPS and isinstance(out, torch.Tensor):
                sentinel_fill_(out)  # this mode is off while its own handler runs: not recorded
        return out

    def _note_cast(self, name: str, args: tuple, kwargs: dict, out: Any) -> None:
        if name == "copy_" and len(args) >= 2:
            src, dst = args[1], args[0]
        else:
            src, dst = (args[0] if args else None), out
        if isinstance(src, torch.Tensor) and isinstance(dst, torch.Tensor):
            if src.dtype in HIGH_PRECISION and dst.dtype in LOW_PRECISION:
                key = f"{str(src.dtype).replace('torch.', '')}->{str(dst.dtype).replace('torch.', '')}"
                self.downcasts[key] = self.downcasts.get(key, 0) + 1

    def reduced_precision(self, task_dtypes: Iterable[torch.dtype]) -> list[str]:
        """Casts to a lower precision that the task itself never uses."""
        used = {str(d).replace("torch.", "") for d in task_dtypes}
        return [k for k in self.downcasts if k.split("->")[1] not in used]


class SideStreamUsed(RuntimeError):
    """Raised inside the candidate's forward when it opens or switches to a side stream."""


# The Python routes to making another stream current (StreamContext.__enter__ calls set_stream).
# Stream objects themselves are left alone: torch.cuda.current_stream() builds one, and creating
# a stream does nothing until work is queued on it.
_STREAM_SWITCHES = ("stream", "set_stream")


@contextlib.contextmanager
def no_side_streams(log: LaunchLog) -> Iterator[list[str]]:
    """Refuse switching to another torch.cuda stream while the forward runs.

    Work queued on another stream escapes the timer (KernelBench's own
    adversarial kernel does this). C++ extensions that create streams
    natively are seen by the GPU profile instead (backends/_share.py).
    """
    import torch.cuda

    used: list[str] = []
    saved = [(torch.cuda, n, torch.cuda.__dict__[n]) for n in _STREAM_SWITCHES if n in torch.cuda.__dict__]

    def refuse(name: str, original: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if log.paused:  # the backend's own machinery (an autotuner) is not the candidate
                return original(*args, **kwargs)
            used.append(f"torch.cuda.{name}")
            raise SideStreamUsed(f"torch.cuda.{name}: side streams escape the timed region")

        return call

    for m, n, original in saved:
        setattr(m, n, refuse(n, original))
    try:
        yield used
    finally:
        for m, n, original in saved:
            setattr(m, n, original)


@contextlib.contextmanager
def record_ops(log: LaunchLog, *, fill_empty: bool = False) -> Iterator[OpRecorder]:
    recorder = OpRecorder(log, fill_empty=fill_empty)
    with recorder:
        yield recorder


def output_problems(out: Any, device: torch.device | None = None) -> list[str]:
    """Outputs must be plain, dense tensors with real storage on the inputs' device."""
    problems = []
    leaves = out if isinstance(out, (tuple, list)) else [out]
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, (tuple, list)):
            problems.extend(output_problems(leaf, device))
            continue
        if not isinstance(leaf, torch.Tensor):
            problems.append(f"output {i} is a {type(leaf).__name__}, not a torch.Tensor")
        elif type(leaf) is not torch.Tensor and not isinstance(leaf, torch.nn.Parameter):
            problems.append(f"output {i} is a tensor subclass ({type(leaf).__name__}): the work could be deferred")
        elif leaf.layout != torch.strided:
            problems.append(f"output {i} has layout {leaf.layout}, not a dense strided tensor")
        elif leaf.device.type == "meta":
            problems.append(f"output {i} is on the meta device: it holds no data")
        elif device is not None and leaf.device.type != device.type:
            problems.append(f"output {i} is on {leaf.device}, not on the inputs' device {device}")
        elif leaf.numel() and not _has_storage(leaf):
            problems.append(f"output {i} has no real storage (null data pointer)")
    return problems


def _has_storage(t: torch.Tensor) -> bool:
    try:
        return t.untyped_storage().data_ptr() != 0
    except (RuntimeError, NotImplementedError):  # fake and functional tensors have none to give
        return False


def inputs_changed(before: list[Any], after: list[Any], chunk: int = 1 << 24) -> list[int]:
    """Indices of input tensors whose contents differ (NaN equals NaN), compared in chunks:
    a 6 GB input must not need another 6 GB of masks."""
    changed = []
    for i, (a, b) in enumerate(zip(before, after)):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            continue
        if a.shape != b.shape or a.dtype != b.dtype:
            changed.append(i)
            continue
        fa, fb = a.detach().reshape(-1), b.detach().reshape(-1)
        for start in range(0, fa.numel(), chunk):
            x, y = fa[start:start + chunk], fb[start:start + chunk]
            same = x == y
            if x.is_floating_point() or x.is_complex():
                same |= x.isnan() & y.isnan()
            if not bool(same.all()):
                changed.append(i)
                break
    return changed


# ---------------------------------------------------------------- judging one guarded run


@dataclasses.dataclass(frozen=True)
class Breach:
    """A rule one forward call broke, in words for the verdict and for the LLM."""

    rule: str
    message: str
    feedback: str


@dataclasses.dataclass
class RunRules:
    """What the runtime guard holds a forward call to: the rule set and facts about the task."""

    rules: str = DEFAULT_RULES
    reference_writes_inputs: bool = False  # then the candidate may too
    task_dtypes: set = dataclasses.field(default_factory=set)  # dtypes of the task's inputs and outputs

    def note_task(self, inputs: list[Any], expected: Any) -> None:
        for t in [*inputs, *flatten(expected)]:
            if isinstance(t, torch.Tensor):
                self.task_dtypes.add(t.dtype)

    def breaches(self, ops: OpRecorder, launched: bool, out: Any, device: torch.device | None,
                 changed_inputs: list[int]) -> list[Breach]:
        """Broken rules, cheating first, keeping only what `rules` forbids."""
        found: list[Breach] = []
        low = ops.reduced_precision(self.task_dtypes)
        if low:
            casts = ", ".join(f"{k} x{ops.downcasts[k]}" for k in low)
            found.append(Breach("reduced-precision", f"ModelNew.forward casts to a lower precision than the task uses: {casts}",
                                f"ModelNew.forward cast tensors to a lower precision than any the task uses ({casts}); "
                                "compute in the task's precision."))
        if changed_inputs and not self.reference_writes_inputs:
            which = ", ".join(str(i) for i in changed_inputs)
            found.append(Breach("input-mutation", f"ModelNew.forward writes into its input tensor(s) {which}",
                                f"ModelNew.forward changed input tensor(s) {which} in place, which the reference does not do; "
                                "inputs are read-only."))
        problems = output_problems(out, device)
        if problems:
            found.append(Breach("output-type", "output check: " + problems[0], "; ".join(problems)))
        if ops.forbidden:
            names = ", ".join(f"aten.{n} x{c}" for n, c in sorted(ops.forbidden.items()))
            found.append(Breach(
                "torch-compute", f"ModelNew.forward computed with PyTorch ops outside its own kernels: {names}",
                f"ModelNew.forward ran these PyTorch compute ops: {names}. Outside its own kernels it may only "
                "allocate (torch.empty...), take views and copy; move this computation into the kernel."))
        if not launched:
            found.append(Breach("no-launch", "ModelNew.forward launched none of its own kernels",
                                "ModelNew.forward returned without launching any of its own kernels; the computation must run in them."))
        kept = [b for b in found if verdict_for(b.rule, self.rules) is not None]
        return sorted(kept, key=lambda b: verdict_for(b.rule, self.rules) is not Verdict.HACK)

    def verdict(self, breach: Breach) -> tuple[Verdict, str, str]:
        """(verdict, message, feedback) for a breach, naming the rule and what other rule set allows it."""
        why = explain(breach.rule, self.rules)
        return verdict_for(breach.rule, self.rules) or Verdict.DISALLOWED, f"{breach.message} ({why})", f"{breach.feedback} ({why})"


def fingerprint(out: Any, limit: int = 4096) -> tuple:
    """Shapes, dtypes and a sample of the values of an output: enough to see it again."""
    parts = []
    for t in flatten(out):
        if isinstance(t, torch.Tensor):
            flat = t.detach().reshape(-1)
            step = max(1, -(-flat.numel() // limit))
            parts.append((tuple(t.shape), str(t.dtype), flat[::step].cpu().clone()))
    return tuple(parts)


def same_fingerprint(a: tuple, b: tuple) -> bool:
    if len(a) != len(b):
        return False
    for (sa, da, va), (sb, db, vb) in zip(a, b):
        if sa != sb or da != db or va.shape != vb.shape:
            return False
        same = va == vb
        if va.is_floating_point():
            same = same | (va.isnan() & vb.isnan())
        if not bool(same.all()):
            return False
    return True


def is_constant(fp: tuple) -> bool:
    return all(v.numel() == 0 or bool((v == v[0]).all()) for _, _, v in fp)


def unwritten_share(out: Any, expected: Any) -> float:
    """Share of output elements still holding the sentinel (see OpRecorder.fill_empty) where the reference has none."""
    total = unwritten = 0
    for g, e in zip(flatten(out), flatten(expected)):
        if not (isinstance(g, torch.Tensor) and isinstance(e, torch.Tensor)) or g.shape != e.shape or g.dtype == torch.bool:
            continue
        if g.is_floating_point():
            mark = g.isnan() & ~e.isnan()
        elif g.is_complex():
            mark = g.real.isnan() & ~e.real.isnan()
        else:
            top = torch.iinfo(g.dtype).max
            mark = (g == top) & (e != top)
        total += g.numel()
        unwritten += int(mark.sum())
    return unwritten / total if total else 0.0
