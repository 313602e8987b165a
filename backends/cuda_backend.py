"""CUDA C++ backend: candidates build kernels with torch's inline extension.

On a GPU machine the build is real (one build directory per source hash, so
candidates never collide) and every call into the extension is recorded as a
launch. Without a GPU, the sources given to `load_inline` are captured and
compiled with `nvcc -cubin -arch=sm_90 -Xptxas -v`: the verdict is then
`compiled` at best (real compile errors, registers and spills), never `ok`.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import subprocess
import sysconfig
import time
from pathlib import Path
from typing import Any

from ._backend import CompileReport, LaunchLog
from ._sandbox import harness

# Compiler and linker flags that run or load other programs (gcc -wrapper,
# plugins, -B search paths, @response files, nvcc -ccbin and -run).
_UNSAFE_FLAG = re.compile(r"^(@|-wrapper|-fplugin|-plugin|--plugin|-specs|--specs|-B|-ccbin|--compiler-bindir|-run\b|--run|-fuse-ld|--ld-path)")


def unsafe_build_flags(kwargs: dict[str, Any]) -> str | None:
    """The first flag in load_inline's extra_* arguments that could run other programs."""
    for key in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths"):
        for flag in kwargs.get(key) or []:
            for piece in [str(flag), *re.split(r"[,=\s]", str(flag))]:
                if _UNSAFE_FLAG.match(piece.strip()):
                    return str(flag)
    return None

# at::/torch:: functions a C++ wrapper may call: allocation and metadata only.
_ALLOWED_CPP_CALLS = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "from_blob", "TensorOptions", "IntArrayRef", "Tensor", "Device", "dtype", "device", "Scalar", "ScalarType",
    "arange",
}
_FORBIDDEN_CPP = {
    r"\bcudaStreamCreate": "side streams escape the timed region",
    r"getStreamFromPool": "side streams escape the timed region",
    r"std::thread|pthread_create|std::async": "threads run work outside the timed region",
    r"cudaEventRecord|cudaEventElapsedTime": "timers are reserved to the harness",
    r"\bcublas\w*\(|\bcudnn\w*\(|cutlass::": "library kernels are not the candidate's own",
    r"\bsystem\s*\(|\bpopen\s*\(|\bfork\s*\(": "candidates may not start processes",
}


def cache_root() -> Path:
    root = Path(os.environ.get("EVOKERNEL_CACHE") or Path.home() / ".cache" / "evokernel")
    return root / "cuda"


def _sources(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return "\n".join(value)


def _cpp_strings(source: str) -> str:
    """All string constants in the candidate: the C++/CUDA it will build."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    return "\n".join(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))


class _Extension:
    """Wraps a built extension: each call into it is a launch of the candidate's own code."""

    def __init__(self, module: Any, log: LaunchLog, name: str):
        self._module = module
        self._log = log
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        target = getattr(self._module, attr)
        if not callable(target):
            return target
        log, name = self._log, self._name

        def call(*args: Any, **kwargs: Any) -> Any:
            log.record("cuda", f"{name}.{attr}")
            return target(*args, **kwargs)

        return call


class _NotBuilt:
    """Stands in for an extension that cannot be linked here (no GPU)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"extension {self._name} was compiled only: no GPU here to run {attr}")

        return call


class CudaBackend:
    name = "cuda"
    language = "cuda-cpp"
    builtin_policy = None  # no builtin generator writes CUDA C++
    api_notes = None
    title = "CUDA C++"
    kernel_marker = r"__global__"  # a kernel of this kind in a candidate's source (for the LLM answer parser)
    prompt_rules = """\
CUDA rules:
- Build the kernels with `torch.utils.cpp_extension.load_inline(name=..., cpp_sources=..., cuda_sources=..., functions=[...])`; the CUDA source is a Python string in the file and holds `__global__` kernels plus C++ launcher functions taking and returning `torch::Tensor`.
- Build once, at module import, and call the built functions from `forward`.
- In each launcher check device, dtype and contiguity (`TORCH_CHECK`), allocate outputs with `torch::empty`, compute the grid by ceiling division and launch on the current stream (`at::cuda::getCurrentCUDAStream()`); never create streams.
- Accumulate reductions in float; use shared memory and warp shuffles where they pay; check bounds in every thread.
"""

    def __init__(self) -> None:
        self.captured: list[dict[str, Any]] = []

    def mode(self) -> dict[str, Any]:
        import torch

        nvcc = shutil.which("nvcc")
        if torch.cuda.is_available():
            return {"mode": "gpu", "can_run": True, "detail": f"torch inline build on {torch.cuda.get_device_name(0)}"}
        if nvcc:
            return {"mode": "compile-only", "can_run": False, "detail": f"no GPU: nvcc -cubin -arch=sm_90 ({nvcc})"}
        return {"mode": "unavailable", "can_run": False, "detail": "no GPU and no nvcc"}

    def modelled_latency_ms(self, log: LaunchLog, device: str) -> float | None:
        return None  # always measured (GPU) or wall-clock interpreted (CPU)

    def can_run(self, device: str) -> bool:
        """Only on a GPU: without one, the inline build compiles but cannot link."""
        import torch

        return device.startswith("cuda") and torch.cuda.is_available()

    def latency_source(self, device: str) -> str:
        return "measured-gpu" if device.startswith("cuda") else "none"

    def static_problems(self, source: str) -> list[str]:
        cpp = _cpp_strings(source)
        problems = []
        if "__global__" not in cpp:
            problems.append("no __global__ kernel: the computation must be written as a CUDA kernel")
        if "load_inline" not in source:
            problems.append("no torch.utils.cpp_extension.load_inline call builds the kernels")
        for pattern, why in _FORBIDDEN_CPP.items():
            m = re.search(pattern, cpp)
            if m:
                problems.append(f"the C++/CUDA source uses {m.group(0).strip('( ')}: {why}")
        for m in re.finditer(r"\b(?:torch|at)::(\w+)\s*\(", cpp):
            if m.group(1) not in _ALLOWED_CPP_CALLS:
                problems.append(f"the C++ wrapper calls {m.group(0).rstrip('( ')}: compute must happen in the candidate's own kernels")
                break
        return problems

    def install_hooks(self, log: LaunchLog, *, compile_only: bool) -> None:
        import torch.utils.cpp_extension as ext

        if getattr(ext.load_inline, "_evokernel_hook", False):
            return
        original = ext.load_inline
        backend = self

        def load_inline(name, cpp_sources, cuda_sources=None, functions=None, **kwargs):
            cpp, cu = _sources(cpp_sources), _sources(cuda_sources)
            digest = hashlib.sha256(f"{name}\0{cpp}\0{cu}\0{functions}".encode()).hexdigest()[:16]
            backend.captured.append({"name": name, "cpp": cpp, "cuda": cu, "functions": functions, "digest": digest})
            if compile_only:
                return _NotBuilt(name)
            build_dir = cache_root() / digest
            build_dir.mkdir(parents=True, exist_ok=True)
            kwargs["build_directory"] = str(build_dir)
            kwargs.setdefault("verbose", False)
            unsafe = unsafe_build_flags(kwargs)
            if unsafe:
                raise ValueError(f"load_inline flag {unsafe!r} refused: it runs or loads other programs during the build")
            # ninja runs whatever its build file says, so it cannot be
            # allow-listed by path: open the harness window for torch's own
            # build only, with the candidate's flags screened above.
            with harness():
                # functions by keyword: torch >= 2.8 put sycl_sources fourth
                module = original(f"{name}_{digest}", cpp_sources, cuda_sources, functions=functions, **kwargs)
            return _Extension(module, log, name)

        load_inline._evokernel_hook = True  # type: ignore[attr-defined]
        ext.load_inline = load_inline

    def compile_check(self, module: Any, log: LaunchLog) -> CompileReport:
        captured, self.captured = self.captured, []
        if not captured:
            return CompileReport(False, "the candidate never called load_inline: no CUDA kernel was built")
        import torch

        if torch.cuda.is_available():
            return CompileReport(True, "built with torch's inline extension", kernels=[{"name": c["name"]} for c in captured])
        t0 = time.perf_counter()
        kernels = []
        for c in captured:
            if not c["cuda"].strip():
                return CompileReport(False, f"load_inline({c['name']!r}) has no cuda_sources: no CUDA kernel to compile")
            ok, info = nvcc_check(c["cuda"], c["digest"])
            if not ok:
                return CompileReport(False, f"nvcc failed for {c['name']}: {info['message']}", seconds=time.perf_counter() - t0)
            kernels.extend(info["kernels"])
        return CompileReport(
            True,
            "compiled for sm_90 with nvcc; no GPU here, so correctness and speed are unverified",
            kernels=kernels,
            seconds=time.perf_counter() - t0,
        )


def nvcc_check(cuda_source: str, digest: str) -> tuple[bool, dict[str, Any]]:
    """nvcc -cubin for sm_90 with ptxas statistics, cached by source hash."""
    import json

    import torch.utils.cpp_extension as ext

    nvcc = shutil.which("nvcc")
    if not nvcc:
        return False, {"message": "nvcc not found; cannot check CUDA sources without a GPU", "kernels": []}
    build = cache_root() / f"check_{digest}"
    build.mkdir(parents=True, exist_ok=True)
    cached = build / "result.json"
    if cached.exists():
        data = json.loads(cached.read_text())
        return data["ok"], data
    src = build / "kernel.cu"
    src.write_text(cuda_source)
    includes = [f"-I{p}" for p in ext.include_paths()] + [f"-I{sysconfig.get_paths()['include']}"]
    cmd = [nvcc, "-cubin", "-arch=sm_90", "-Xptxas", "-v", "-std=c++17", *includes, str(src), "-o", str(build / "kernel.cubin")]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return False, {"message": "nvcc timed out after 600 s", "kernels": []}
    text = out.stderr + out.stdout
    if out.returncode != 0:
        errors = [ln.replace(str(src), "kernel.cu") for ln in text.splitlines() if "error" in ln.lower()]
        data = {"ok": False, "message": "\n".join(errors[:12]) or text[-1500:], "kernels": []}
    else:
        data = {"ok": True, "message": "", "kernels": _ptxas_kernels(text)}
    cached.write_text(json.dumps(data))
    return data["ok"], data


def _ptxas_kernels(text: str) -> list[dict[str, Any]]:
    kernels: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = {"name": m.group(1)}
            kernels.append(current)
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes spill stores", line)
        if m:
            current["spills"] = int(m.group(1))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            current["registers"] = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            current["shared_bytes"] = int(m.group(1))
    return kernels
