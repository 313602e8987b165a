"""Triton backend.

On a GPU, kernels compile and run for real and their resource use is read
from the compiled kernels. Without a GPU, kernels run in Triton's CPU
interpreter (TRITON_INTERPRET=1) for correctness, and each launched
specialisation is also compiled for sm_90 with Triton's own compiler, so real
compile errors, registers, spills and shared memory still reach the LLM.
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from ._backend import CompileReport, LaunchLog

_DTYPE_CODES = {
    "torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float64": "fp64",
    "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32", "torch.int64": "i64",
    "torch.uint8": "u8", "torch.bool": "i1",
}
_LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "debug", "launch_cooperative_grid"}


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


def _unwrap_jit(obj: Any) -> Any:
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn") and seen < 5:
        obj = obj.fn
        seen += 1
    return obj if isinstance(obj, JITFunction) else None


class TritonBackend:
    name = "triton"
    language = "python-triton"

    def __init__(self) -> None:
        self._specs: dict[tuple[str, str], dict[str, Any]] = {}
        self._gpu_kernels: dict[str, dict[str, Any]] = {}

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

    def latency_source(self, device: str) -> str:
        return "measured-gpu" if device.startswith("cuda") else "interpreted-cpu"

    def static_problems(self, source: str) -> list[str]:
        tree = ast.parse(source)
        jitted = []
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                for dec in node.decorator_list:
                    target = dec.func if isinstance(dec, ast.Call) else dec
                    text = ast.unparse(target)
                    if text in ("triton.jit", "jit"):
                        jitted.append(node.name)
        if not jitted:
            return ["no @triton.jit kernel: the computation must be written as a Triton kernel"]
        return []

    def install_hooks(self, log: LaunchLog, *, compile_only: bool) -> None:
        import triton  # noqa: F401  (import before patching its classes)
        from triton.runtime import autotuner
        from triton.runtime.jit import JITFunction

        backend = self

        def _wrap(cls: type, kind: str) -> None:
            original = cls.run
            if getattr(original, "_evokernel_hook", False):
                return

            def run(fn_self, *args, grid, warmup, **kwargs):
                if warmup:
                    return original(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
                name = getattr(fn_self.fn, "__name__", "kernel")
                backend._remember(fn_self.fn, name, args, kwargs)
                log.paused += 1
                try:
                    kernel = original(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
                finally:
                    log.paused -= 1
                info = {"grid": repr(grid) if not callable(grid) else "callable", "mode": kind}
                if kernel is not None and hasattr(kernel, "metadata"):
                    info.update(backend._kernel_resources(name, kernel))
                log.record("triton", name, **info)
                return kernel

            run._evokernel_hook = True  # type: ignore[attr-defined]
            cls.run = run

        _wrap(JITFunction, "gpu")
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
                    log.paused += 1
                    try:
                        return original(tuner_self, *args, **kwargs)
                    finally:
                        log.paused -= 1

                run._evokernel_hook = True  # type: ignore[attr-defined]
                return run

            cls.run = make(original)

    def compile_check(self, module: Any, log: LaunchLog) -> CompileReport:
        if self._gpu_kernels:  # compiled for real on the GPU: report what the compiler made
            return CompileReport(True, kernels=list(self._gpu_kernels.values()))
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

    def _kernel_resources(self, name: str, kernel: Any) -> dict[str, Any]:
        info = {
            "registers": getattr(kernel, "n_regs", None),
            "spills": getattr(kernel, "n_spills", None),
            "shared_bytes": getattr(kernel.metadata, "shared", None),
            "num_warps": getattr(kernel.metadata, "num_warps", None),
        }
        self._gpu_kernels[name] = {"name": name, **info}
        return info

    def _compile_for_sm90(self, module: Any) -> CompileReport:
        t0 = time.perf_counter()
        specs = [s for s in self._specs.values() if s["file"] == getattr(module, "__file__", None)]
        self._specs = {k: v for k, v in self._specs.items() if v["file"] != getattr(module, "__file__", None)}
        if not specs:
            return CompileReport(True, "no launches recorded to compile", seconds=time.perf_counter() - t0)
        try:
            import triton
            from triton.backends.compiler import GPUTarget
            from triton.compiler import ASTSource
        except ImportError as exc:
            return CompileReport(True, f"sm_90 compile check skipped: {exc}")
        jitted = _import_without_interpreter(Path(module.__file__))
        kernels, seen = [], set()
        for spec in specs[:8]:
            fn = _unwrap_jit(getattr(jitted, spec["name"], None))
            if fn is None:
                continue  # a kernel not at module level: the interpreter run is all we have
            signature, constexprs, options = {}, {}, {}
            kwargs = dict(spec["kwargs"])
            for k in list(kwargs):
                if k in _LAUNCH_OPTIONS:
                    options[k] = kwargs.pop(k)
            for i, param in enumerate(fn.params):
                if i < len(spec["args"]):
                    value = spec["args"][i]
                elif param.name in kwargs:
                    value = kwargs[param.name]
                elif param.default is not inspect.Parameter.empty:
                    value = param.default
                else:
                    value = None
                if param.is_constexpr or value is None or isinstance(value, str):
                    signature[param.name] = "constexpr"
                    constexprs[param.name] = value
                elif isinstance(value, dict):
                    signature[param.name] = "*" + value["tensor"]
                elif isinstance(value, bool):
                    signature[param.name] = "i1"
                elif isinstance(value, int):
                    signature[param.name] = "i32" if -(2**31) <= value < 2**31 else "i64"
                elif isinstance(value, float):
                    signature[param.name] = "fp32"
            key = (spec["name"], repr(sorted(signature.items())), repr(sorted(constexprs.items(), key=str)))
            if key in seen:
                continue
            seen.add(key)
            try:
                src = ASTSource(fn=fn, signature=signature, constexprs=constexprs)
                compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options or None)
            except Exception as exc:
                text = _clean_triton_error(str(exc))
                return CompileReport(
                    False,
                    f"Triton compile for sm_90 failed for kernel {spec['name']}: {text}",
                    kernels=kernels,
                    seconds=time.perf_counter() - t0,
                )
            info = {"name": spec["name"], "shared_bytes": compiled.metadata.shared, "num_warps": compiled.metadata.num_warps}
            info.update(_resource_usage(compiled.asm.get("cubin")))
            kernels.append(info)
        return CompileReport(True, "", kernels=kernels, seconds=time.perf_counter() - t0)


def _import_without_interpreter(path: Path) -> Any:
    from ._task import import_file

    previous = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "0"
    try:
        return import_file(path, "evokernel_compilecheck")
    finally:
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous


def _clean_triton_error(text: str, limit: int = 1500) -> str:
    text = re.sub(r"\n\s*\n", "\n", text).strip()
    return text if len(text) <= limit else text[:limit] + " ..."


def _resource_usage(cubin: bytes | None) -> dict[str, Any]:
    """Registers, local memory (spills) and stack from cuobjdump, which ships inside triton."""
    if not cubin:
        return {}
    try:
        import triton

        tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    except Exception:
        return {}
    if not tool.exists():
        return {}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.cubin"
        path.write_bytes(cubin)
        try:
            out = subprocess.run([str(tool), "-res-usage", str(path)], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return {}
    fields = dict(re.findall(r"(REG|STACK|LOCAL|SHARED):(\d+)", out.stdout))
    return {
        "registers": int(fields["REG"]) if "REG" in fields else None,
        "spills": int(fields["LOCAL"]) if "LOCAL" in fields else None,  # local memory bytes: spills and stack arrays
    }
