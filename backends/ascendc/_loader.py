"""load_inline: the one call a candidate makes to build its Ascend C kernels."""

from __future__ import annotations

import ctypes
import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

from .._sandbox import harness
from ._build import build
from ._detect import detect_mode
from ._launch import KernelLauncher
from ._signature import Entry, parse_entries


@dataclasses.dataclass(frozen=True)
class BuildRecord:
    """One load_inline call, as the executor's compile report shows it."""

    name: str
    functions: tuple[str, ...]
    mode: str
    library: str
    cache_hit: bool
    seconds: float
    source: str = dataclasses.field(default="", repr=False)


_records: list[BuildRecord] = []
_records_lock = threading.Lock()


def build_records() -> list[BuildRecord]:
    with _records_lock:
        return list(_records)


def clear_build_records() -> None:
    with _records_lock:
        _records.clear()


class AscendCModule:
    """What load_inline returns: one launcher attribute per kernel entry."""

    def __init__(self, name: str, entries: dict[str, Entry], launchers: dict[str, Any], *, mode: str,
                 library: Path, build_dir: Path, cache_hit: bool, compile_seconds: float) -> None:
        self.name = name
        self.mode = mode
        self.entries = entries
        self.library_path = library
        self.build_dir = build_dir
        self.cache_hit = cache_hit
        self.compile_seconds = compile_seconds
        self.last_cost: dict[str, Any] | None = None
        self._launchers: dict[str, Any] = {}
        self._attach(launchers)

    def _attach(self, launchers: dict[str, Any]) -> None:
        self._launchers.update(launchers)
        for fn, launcher in launchers.items():
            setattr(self, fn, launcher)

    @property
    def functions(self) -> tuple[str, ...]:
        return tuple(self._launchers)

    def __repr__(self) -> str:
        return f"<AscendCModule {self.name} ({self.mode}): {', '.join(self._launchers)}>"


def load_inline(name: str, source: str, functions: list[str] | tuple[str, ...] | str, *,
                build_dir: str | Path | None = None, extra_cflags: tuple[str, ...] | list[str] = (),
                mode: str | None = None) -> AscendCModule:
    """Build Ascend C `source` and return launchers for `functions`.

    Each entry `extern "C" __global__ __aicore__ void f(GM_ADDR x, ..., uint32_t n)`
    becomes `ops.f(x_tensor, ..., n, block_dim=N)`. On the CPU model the source is
    compiled with g++ against EvoKernel's own kernel_operator.h and every block
    runs on the CPU; on a CANN + NPU machine it is built with bisheng and
    launched on the NPU (that path has never run on hardware, see _cann.py).
    `build_dir` replaces the cache root; `mode` overrides detect_mode().

    Raises AscendCCompileError on a build failure; launches raise
    AscendCRuntimeError (with a .kind) when the kernel breaks a hardware rule.
    """
    if isinstance(functions, str):
        functions = [functions]
    functions = tuple(functions)
    mode = mode or detect_mode()["mode"]
    entries = parse_entries(source, functions)
    started = time.perf_counter()
    if mode == "cann-npu":
        module = _load_on_npu(name, source, entries, build_dir, tuple(extra_cflags))
    else:
        built = build(name, source, entries, root=Path(build_dir) if build_dir else None,
                      extra_cflags=tuple(extra_cflags))
        with harness():  # the sandbox refuses dlopen of files in writable dirs to candidates, not to us
            library = ctypes.CDLL(str(built.library))
        module = AscendCModule(name, entries, {}, mode="cpu-model", library=built.library,
                               build_dir=built.directory, cache_hit=built.cache_hit, compile_seconds=built.seconds)
        module._attach({fn: KernelLauncher(library, entries[fn], module, source) for fn in functions})
    with _records_lock:
        _records.append(BuildRecord(name, functions, module.mode, str(module.library_path), module.cache_hit,
                                    time.perf_counter() - started, source))
    return module


def _load_on_npu(name: str, source: str, entries: dict[str, Entry], build_dir: str | Path | None,
                 extra_cflags: tuple[str, ...]) -> AscendCModule:
    from ._build import build_key, cache_root
    from ._cann import NpuKernelLauncher, build_plan, run_plan

    from ._cann import bisheng_version

    # the directory (and so the library path) comes from the source and the toolchain, never the name alone:
    # two candidates naming their extension alike never load each other's binary
    key = build_key(source, entries, ("cann", bisheng_version()) + extra_cflags)
    directory = (Path(build_dir) if build_dir else cache_root()) / f"{name}-npu-{key[:16]}"
    plan = build_plan(name, source, list(entries), directory=directory, extra_cflags=extra_cflags)
    started = time.perf_counter()
    hit = plan.library.exists()
    if not hit:
        run_plan(plan)
    with harness():
        library = ctypes.CDLL(str(plan.library))
    launchers = {fn: NpuKernelLauncher(library, entry) for fn, entry in entries.items()}
    return AscendCModule(name, entries, launchers, mode="cann-npu", library=plan.library, build_dir=directory,
                         cache_hit=hit, compile_seconds=time.perf_counter() - started)
