"""Triton backend.

On a GPU, kernels compile and run for real and their resource use is read
from the compiled kernels. Without a GPU, kernels run in Triton's CPU
interpreter (TRITON_INTERPRET=1) for correctness, and each launched
specialisation is also compiled for sm_90 with Triton's own compiler, so real
compile errors, registers, spills and shared memory still reach the LLM.
The interpreter computes bf16 as the GPU does only with
backends/_interpreter_bf16.py installed, which the hooks do.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import sys
import subprocess
import time
from typing import Any, Iterator

from . import _interpreter_bf16
from ._device_lock import alone_for_timing
from ._backend import CompileReport, LaunchLog
from ._result import LatencySource
from ._static import StaticFinding
from ._triton_compile import ForkedServer, take_preforked
from ._pyast import indexed_module

_DTYPE_CODES = {
    "torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float64": "fp64",
    "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32", "torch.int64": "i64",
    "torch.uint8": "u8", "torch.bool": "i1",
}


def _describe_arg(value: Any) -> Any:
    """A launch argument reduced to what a compile needs (JSON-friendly)."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": _DTYPE_CODES.get(str(value.dtype), "fp32")}
    if isinstance(value, bool) or value is None or isinstance(value, (int, float, str)):
        return value
    dtype = getattr(value, "dtype", None)  # tensor-like (TensorDescriptor etc.)
    if dtype is not None:
        return {"tensor": _DTYPE_CODES.get(str(dtype), "fp32")}
    return repr(value)


class TritonBackend:
    name = "triton"
    language = "python-triton"
    api_notes = None  # no API notes to seed: the language is in every model's training data
    title = "Triton"
    # A kernel of this kind in a candidate's source (the LLM answer parser tells whole files from pieces by it).
    kernel_marker = r"@(?:triton\.)?jit\b"
    prompt_rules = """\
Triton rules:
- `import triton` and `import triton.language as tl`; every kernel is a `@triton.jit` function defined at module level.
- The kernel only computes offsets, loads, computes and stores; a Python launcher checks the inputs, allocates outputs and launches on a grid built with `triton.cdiv`.
- Name pointer arguments `*_ptr`, pass strides explicitly (`stride_*`), make block sizes `tl.constexpr`.
- Mask every `tl.load` and `tl.store`. Load fp16/bf16 values and convert them to `tl.float32` before arithmetic; accumulate reductions in fp32 and cast when storing.
- Stay within the language of Triton 3.x (no experimental or brand-new APIs): the kernel must run on Triton 3.6 and later.
"""

    def __init__(self) -> None:
        self._specs: dict[tuple[str, str], dict[str, Any]] = {}
        self._compiler: subprocess.Popen | ForkedServer | None = None
        self.dry_run = False  # `evokernel check`: record launches' signatures, launch nothing

    # --- Backend protocol --------------------------------------------------
    def mode(self) -> dict[str, Any]:
        import torch

        try:
            import triton

            version = triton.__version__
        except ImportError:
            return {"mode": "unavailable", "can_run": False, "detail": "triton is not installed"}
        if torch.cuda.is_available():
            return {"mode": "gpu", "can_run": True, "detail": f"triton {version} on {torch.cuda.get_device_name(0)}"}
        return {
            "mode": "cpu-interpreter",
            "can_run": True,
            "detail": f"triton {version}: kernels run in the CPU interpreter (TRITON_INTERPRET=1) and compile for sm_90",
        }

    def modelled_latency_ms(self, log: LaunchLog, device: str) -> float | None:
        return None  # always measured (GPU) or wall-clock interpreted (CPU)

    def can_run(self, device: str) -> bool:
        """Kernels run on a GPU, and in the interpreter on a CPU, wherever triton is installed."""
        return bool(self.mode()["can_run"])

    def latency_source(self, device: str) -> LatencySource:
        return LatencySource.MEASURED_GPU if device.startswith("cuda") else LatencySource.INTERPRETED_CPU

    def static_problems(self, source: str) -> list[StaticFinding]:
        jitted = []
        for node in indexed_module(source).nodes:  # the static rules' parse of the same text
            if isinstance(node, ast.FunctionDef):
                for dec in node.decorator_list:
                    target = dec.func if isinstance(dec, ast.Call) else dec
                    text = ast.unparse(target)
                    if text in ("triton.jit", "jit"):
                        jitted.append(node.name)
        if not jitted:
            return [StaticFinding("no-kernel", 0, "no @triton.jit kernel: the computation must be written as a Triton kernel")]
        return []

    def own_kernel_names(self, log: LaunchLog) -> set[str]:
        """The candidate's own kernels among the GPU activity of the calls in `log` (Triton names kernels after the function)."""
        return {entry["name"] for entry in log.launches if entry.get("kind") == "triton"}

    @contextlib.contextmanager
    def dry_launches(self) -> Iterator[None]:
        """Launches record their signature (for the sm_90 compile) and run nothing."""
        self.dry_run = True
        try:
            yield
        finally:
            self.dry_run = False

    def install_hooks(self, log: LaunchLog, *, compile_only: bool) -> None:
        import triton  # noqa: F401  (import before patching its classes)

        # Off the GPU the interpreter would compute on bf16 values' raw bits (backends/_interpreter_bf16.py).
        _interpreter_bf16.install()
        _skip_unasserted_overflow_checks()
        from triton.runtime import autotuner
        from triton.runtime.jit import JITFunction

        backend = self

        def _wrap(cls: type, kind: str) -> None:
            original = cls.run
            if getattr(original, "_evokernel_hook", False):
                return

            def run(fn_self, *args, grid, warmup, **kwargs):
                if warmup or (log.quiet and not backend.dry_run):
                    return original(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
                name = getattr(fn_self.fn, "__name__", "kernel")
                backend._remember(fn_self.fn, name, args, kwargs)
                if backend.dry_run:
                    log.record("triton", name, mode="dry")
                    return None
                with log.pause():
                    kernel = original(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
                info = {"grid": repr(grid) if not callable(grid) else "callable", "mode": kind}
                if kernel is not None and hasattr(kernel, "metadata"):
                    info.update(backend._kernel_resources(kernel))
                log.record("triton", name, **info)
                return kernel

            run._evokernel_hook = True  # type: ignore[attr-defined]
            cls.run = run

        _wrap(JITFunction, "gpu")
        _wrap_compiled(log, backend)
        try:
            from triton.runtime.interpreter import InterpretedFunction

            _wrap(InterpretedFunction, "interpreter")
        except ImportError:
            pass

        # The autotuner's own benchmarking issues torch ops of its own: not the candidate's.
        for cls in (autotuner.Autotuner, autotuner.Heuristics):
            original = cls.run
            if getattr(original, "_evokernel_hook", False):
                continue

            def make(original):
                def run(tuner_self, *args, **kwargs):
                    configs = getattr(tuner_self, "configs", None)
                    if backend.dry_run and configs:
                        # no benchmarking in a dry run: the first configuration stands for all
                        return tuner_self.fn.run(*args, **kwargs, **configs[0].all_kwargs())
                    with log.pause():
                        return original(tuner_self, *args, **kwargs)

                run._evokernel_hook = True  # type: ignore[attr-defined]
                return run

            cls.run = make(original)

        _time_configs_alone(autotuner.Autotuner)

    def compile_check(self, module: Any, log: LaunchLog) -> CompileReport:
        gpu = [entry for entry in log.launches if entry.get("kind") == "triton" and entry.get("mode") == "gpu"]
        if gpu:  # compiled for real on the GPU: report what the compiler made for this forward call
            kernels: dict[str, dict[str, Any]] = {}
            for entry in gpu:
                kernels.setdefault(entry["name"], {
                    "name": entry["name"],
                    **{k: entry.get(k) for k in ("registers", "spills", "shared_bytes", "num_warps")},
                })
            return CompileReport(True, kernels=list(kernels.values()))
        return self._compile_for_sm90(module)

    # --- internals ---------------------------------------------------------
    def _remember(self, fn: Any, name: str, args: tuple, kwargs: dict) -> None:
        described_args = [_describe_arg(a) for a in args]
        described_kwargs = {k: _describe_arg(v) for k, v in kwargs.items()}
        key = (f"{getattr(fn, '__module__', '')}.{name}", repr((described_args, sorted(described_kwargs.items(), key=str))))
        if key not in self._specs and len(self._specs) < 64:
            self._specs[key] = {
                "name": name,
                "file": getattr(getattr(fn, "__code__", None), "co_filename", None),
                "args": described_args,
                "kwargs": described_kwargs,
            }

    @staticmethod
    def _kernel_resources(kernel: Any) -> dict[str, Any]:
        return {
            "registers": getattr(kernel, "n_regs", None),
            "spills": getattr(kernel, "n_spills", None),
            "shared_bytes": getattr(kernel.metadata, "shared", None),
            "num_warps": getattr(kernel.metadata, "num_warps", None),
        }

    def _compile_for_sm90(self, module: Any) -> CompileReport:
        t0 = time.perf_counter()
        file = getattr(module, "__file__", None)
        specs = [s for s in self._specs.values() if s["file"] == file]
        self._specs = {k: v for k, v in self._specs.items() if v["file"] != file}
        if not specs:
            return CompileReport(True, "no launches recorded to compile", seconds=time.perf_counter() - t0)
        if self._compiler is None or self._compiler.poll() is not None:
            self._compiler = _start_compile_server()
        if self._compiler is None:
            return CompileReport(True, "sm_90 compile check skipped: the compile server did not start")
        try:
            assert self._compiler.stdin is not None and self._compiler.stdout is not None
            self._compiler.stdin.write(json.dumps({"file": file, "specs": specs[:8]}) + "\n")
            self._compiler.stdin.flush()
            line = self._compiler.stdout.readline()
            reply = json.loads(line)
        except (OSError, ValueError):
            self._compiler = None
            return CompileReport(True, "sm_90 compile check skipped: the compile server died", seconds=time.perf_counter() - t0)
        return CompileReport(reply["ok"], reply.get("message", ""), kernels=reply.get("kernels", []), seconds=time.perf_counter() - t0)


def _time_configs_alone(tuner: type) -> None:
    """The autotuner times its configurations with the GPU to this worker alone where workers share
    it (`alone_for_timing`); each configuration is compiled and run once before, outside that hold,
    so the compiles still overlap other workers' work."""
    original = tuner._bench
    if getattr(original, "_evokernel_hook", False):
        return

    def bench(tuner_self, *args, config, **meta):
        inner = tuner_self.do_bench

        def do_bench(kernel_call, *bench_args, **bench_kwargs):
            kernel_call()  # the compile, and a failure to compile, happen here as in do_bench's first call
            with alone_for_timing():
                return inner(kernel_call, *bench_args, **bench_kwargs)

        tuner_self.__dict__["do_bench"] = do_bench  # do_bench is a cached property: this call's wins
        try:
            return original(tuner_self, *args, config=config, **meta)
        finally:
            tuner_self.__dict__["do_bench"] = inner

    bench._evokernel_hook = True  # type: ignore[attr-defined]
    tuner._bench = bench


def _skip_unasserted_overflow_checks() -> None:
    """The interpreter's integer add, sub and mul each compute Triton's overflow check (both operands
    cast to int64, the operation again, two comparisons and an and) only to hand it to
    `device_assert`, which returns at once unless the options say `debug`, and the interpreter's
    never do: the check changes nothing, yet a worker evaluating 12 generated builtin candidates
    spent 11.0 s of CPU with it and 9.3 s without. The interpreter's semantic now skips it whenever
    debug is off and runs it as before when debug is on (an overflow is then reported as before);
    compiled kernels (the GPU, the sm_90 compile server) are untouched."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    semantic = getattr(interpreter, "interpreter_semantic", None)
    original = getattr(type(semantic), "binary_op_sanitize_overflow_impl", None)
    if original is None or "binary_op_sanitize_overflow_impl" in vars(semantic):
        return  # this Triton has no such check, or it is wrapped already

    def check(lhs: Any, rhs: Any, binary_op: Any) -> Any:
        if not getattr(semantic.builder.options, "debug", True):
            return None  # what device_assert would do with the check's result
        return original(semantic, lhs, rhs, binary_op)

    semantic.binary_op_sanitize_overflow_impl = check


def _start_compile_server() -> subprocess.Popen | ForkedServer | None:
    """A helper process that never runs the interpreter.

    The Triton interpreter patches triton.language in place while kernels run,
    which breaks later compiles in the same process; so compiles happen in a
    clean child (killed with the worker's process group): the one a CPU worker
    forked before importing Triton (`_triton_compile.prefork`), else a new one.
    """
    forked = take_preforked()
    if forked is not None:
        return forked
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "backends._triton_compile"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )
    except OSError:
        return None


def _wrap_compiled(log: LaunchLog, backend: "TritonBackend") -> None:
    """Launches through a compiled kernel's own launcher (`compiled[grid](*args)`, which a
    generated forward keeps to skip Triton's per-launch binding) are logged like the JIT's: the
    audit and the own-kernel share must see every launch, whichever entry it took."""
    from triton.compiler import CompiledKernel

    original = CompiledKernel.__getitem__
    if getattr(original, "_evokernel_hook", False):
        return

    def getitem(kernel_self, grid):
        runner = original(kernel_self, grid)
        name = kernel_self.name

        def launch(*args, **kwargs):
            if backend.dry_run:
                log.record("triton", name, mode="dry")
                return None
            if log.quiet:
                return runner(*args, **kwargs)
            with log.pause():
                runner(*args, **kwargs)
            log.record("triton", name, grid=repr(grid), mode="gpu")
            return None

        return launch

    getitem._evokernel_hook = True  # type: ignore[attr-defined]
    CompiledKernel.__getitem__ = getitem

