"""The contract every executor backend meets, and the registry that finds them.

A backend knows three things about its target: which static rules a candidate
must obey (it must contain a real kernel of this kind), how to watch the
candidate launch its own kernels inside the worker, and what it can tell about a
kernel without running it (compile errors, registers, shared memory).
Everything else (isolation, correctness, timing, anti-hack) is shared.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from importlib import metadata
from typing import Any, Callable, Iterator, Protocol, runtime_checkable

from ._result import KernelFacts, LatencySource

ENTRY_POINT_GROUP = "evokernel.backends"

# Built-in backends go through the same lazy "module:attr" path as plugins, so
# that a source checkout without installed entry points still finds them.
_BUILTIN = {
    "triton": "backends.triton_backend:TritonBackend",
    "cuda": "backends.cuda_backend:CudaBackend",
    "ascendc": "backends.ascendc:AscendCBackend",
}


@dataclasses.dataclass
class LaunchLog:
    """Kernels the candidate launched during one forward call.

    `paused` counts nesting of the candidate's own kernels: while it is above
    zero, torch ops that the kernel machinery itself issues (the Triton CPU
    interpreter copies tensors, for example) are not charged to the candidate.
    """

    launches: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    paused: int = 0
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)
    # While the candidate is timed nothing is recorded, and the hooks launch straight through: what
    # each launch would cost to log (a lock, a dict, the grid's repr, the JIT's argument
    # descriptions) is not the candidate's, and neither is it the torch.compile baseline's
    quiet: bool = False

    def record(self, kind: str, name: str, **info: Any) -> None:
        if self.quiet:
            return
        with self.lock:
            self.launches.append({"kind": kind, "name": name, **info})

    @contextlib.contextmanager
    def quieted(self) -> Iterator[None]:
        """Timed runs: launches are neither recorded nor described (see `quiet`)."""
        self.quiet = True
        try:
            yield
        finally:
            self.quiet = False

    def clear(self) -> None:
        with self.lock:
            self.launches.clear()

    @contextlib.contextmanager
    def pause(self) -> Iterator[None]:
        """While one of the candidate's own kernels runs: torch ops its machinery issues are not charged."""
        with self.lock:
            self.paused += 1
        try:
            yield
        finally:
            with self.lock:
                self.paused -= 1


@dataclasses.dataclass
class CompileReport:
    """What the toolchain said about the candidate's kernels without running them."""

    ok: bool
    message: str = ""
    kernels: list[KernelFacts] = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    def __post_init__(self) -> None:
        # Toolchains report through JSON (the compile server, ptxas parsing): type them here, once.
        self.kernels = [k if isinstance(k, KernelFacts) else KernelFacts.from_dict(k) for k in self.kernels]


@runtime_checkable
class Backend(Protocol):
    name: str
    language: str  # what the kernel itself is written in, for prompts and static checks
    title: str  # the target as prompts name it ("Triton", "CUDA C++")
    prompt_rules: str  # this backend's rules for a model writing a candidate, as prompt text
    kernel_marker: str  # a regex matching candidate source that holds a kernel of this kind
    # A lazy "module:attr" reference (backends never import evokernel), or None. (A backend's offline
    # kernel generator is registered on evokernel's side: evokernel.policies.GENERATORS.)
    api_notes: str | None  # a function seeding this backend's API notes into a memory bank: f(store) -> count

    def mode(self) -> dict[str, Any]:
        """How this backend runs here: {'mode': ..., 'can_run': bool, 'detail': ...}."""
        ...

    def static_problems(self, source: str) -> list[str]:
        """Backend rules the candidate's source breaks (for example: no kernel of this kind)."""
        ...

    def install_hooks(self, log: LaunchLog, *, compile_only: bool) -> None:
        """Called once per worker before any candidate is imported."""
        ...

    def compile_check(self, module: Any, log: LaunchLog) -> CompileReport:
        """After the candidate ran (or was imported, when compile-only), check its kernels."""
        ...

    def can_run(self, device: str) -> bool:
        """Whether candidates run (not only compile) on `device` here."""
        ...

    def latency_source(self, device: str) -> LatencySource:
        """How latencies are obtained on `device` (`LatencySource.MEASURED_GPU`, `INTERPRETED_CPU`, ...)."""
        ...

    def modelled_latency_ms(self, log: LaunchLog, device: str) -> float | None:
        """Latency of the forward call whose launches are in `log`, when this
        backend models time on `device` instead of measuring it; else None."""
        ...


class UnknownBackend(LookupError):
    pass


def _entry_points() -> dict[str, str]:
    found = dict(_BUILTIN)
    try:
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            found[ep.name] = ep.value
    except Exception:  # a broken distribution must not hide the built-ins
        pass
    return found


def backend_names() -> list[str]:
    return sorted(_entry_points())


def get_backend(name: str) -> Backend:
    targets = _entry_points()
    if name not in targets:
        raise UnknownBackend(f"unknown backend {name!r}; known: {', '.join(sorted(targets))}")
    module_name, _, attr = targets[name].partition(":")
    import importlib

    cls: Callable[[], Backend] = getattr(importlib.import_module(module_name), attr)
    return cls()


def runs_on(backend: Backend, device: str) -> bool:
    """`backend.can_run(device)`, for plugins written before the protocol had it: their mode's word."""
    can_run = getattr(backend, "can_run", None)
    if callable(can_run):
        return bool(can_run(device))
    return bool(backend.mode().get("can_run", True))
