"""CUDA C++ backend: candidates build kernels with torch's inline extension.

On a GPU machine the build is real and every call into the extension is
recorded as a launch. Without a GPU, the sources given to `load_inline` are
captured and compiled with `nvcc -cubin -arch=sm_90 -Xptxas -v`: the verdict
is then `compiled` at best (real compile errors, registers and spills), never
`ok`.

Builds are isolated by content: an extension is built and loaded under a
module name and directory derived from its sources, its build flags and the
toolchain (torch, CUDA, nvcc, Python, the target architectures), never from
the name the candidate chose. Two candidates that both call their extension
`fast_matmul` therefore never load each other's binary, in one worker or in
several at once (torch's build lock guards one directory; distinct sources
get distinct directories).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sysconfig
import time
from pathlib import Path
from typing import Any, Iterator

from ._backend import CompileReport, LaunchLog
from ._result import LatencySource
from ._sandbox import harness
from ._static import StaticFinding, scoped_strings

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
    "arange", "getCurrentCUDAStream", "getDefaultCUDAStream", "current_device", "device_of", "OptionalCUDAGuard",
    "CUDAGuard", "getCurrentDeviceProperties", "check", "TORCH_CHECK", "kFloat", "kHalf", "kBFloat16",
}
# C++/CUDA patterns: (regex, rule, why).
_FORBIDDEN_CPP = (
    (r"\bcudaStreamCreate\w*|getStreamFromPool|\bcudaStreamBeginCapture", "stream", "side streams escape the timed region"),
    (r"std::thread|pthread_create|std::async", "thread", "threads run work outside the timed region"),
    (r"\bcudaEventRecord|\bcudaEventElapsedTime|std::chrono", "timer", "timers are reserved to the harness"),
    (r"\bcudaGraph\w*", "cuda-graph", "CUDA graphs replay captured launches instead of running them"),
    (r"\bcublas\w*\s*\(|\bcublasLt\w*\s*\(|\bcudnn\w*\s*\(|cutlass::", "library-call", "library kernels are not the candidate's own"),
    (r"\bsystem\s*\(|\bpopen\s*\(|\bfork\s*\(|\bexecv\w*\s*\(", "sandbox", "candidates may not start processes"),
    (r"\bdlopen\s*\(|\bdlsym\s*\(", "harness", "loading other libraries bypasses the checks"),
)


def _without_cpp_comments(code: str) -> str:
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    return re.sub(r"//[^\n]*", "", code)


def global_kernels(cuda_source: str) -> list[str]:
    """Names of the `__global__` functions in a CUDA source."""
    code = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", _without_cpp_comments(cuda_source))
    names = []
    for m in re.finditer(r"__global__\s+[\w:<>,\s\*&]*?\b(\w+)\s*\(", code):
        if m.group(1) not in names:
            names.append(m.group(1))
    return names


def cache_root() -> Path:
    from ._cache import build_cache

    return build_cache() / "cuda"


def _sources(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return "\n".join(value)


def _cpp_strings(source: str) -> str:
    """The string constants of the code ModelNew runs (the C++/CUDA it builds), comments removed."""
    return _without_cpp_comments(scoped_strings(source))


_TOOLCHAIN: dict[str, str] = {}


def toolchain() -> str:
    """What a build depends on besides its sources: torch, CUDA, nvcc, Python, target architectures."""
    if "id" not in _TOOLCHAIN:
        import platform

        import torch

        nvcc = shutil.which("nvcc")
        version = ""
        if nvcc:
            try:
                out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
                version = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
            except (OSError, subprocess.SubprocessError):
                version = "unknown"
        arch = ""
        if torch.cuda.is_available():
            arch = "sm_%d%d" % torch.cuda.get_device_capability()
        _TOOLCHAIN["id"] = "|".join([
            f"torch {torch.__version__}", f"cuda {torch.version.cuda}", f"nvcc {nvcc} {version}",
            f"python {platform.python_version()}", f"arch {arch}",
            # torch's build reads the target list from here
            f"TORCH_CUDA_ARCH_LIST={os.environ.get('TORCH_CUDA_ARCH_LIST', '')}",
        ])
    return _TOOLCHAIN["id"]


_BUILD_KEYS = ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths", "with_cuda", "with_pytorch_error_handling")


def build_digest(name: str, cpp: str, cuda: str, functions: Any, kwargs: dict[str, Any], tools: str) -> str:
    """The identity of one build: sources, exported functions, build flags and toolchain."""
    flags = repr(sorted((k, repr(kwargs.get(k))) for k in _BUILD_KEYS))
    text = "\0".join([name, cpp, cuda, repr(functions), flags, tools])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _module_name(name: str, digest: str) -> str:
    """A Python identifier for the built module: the candidate's name, made safe, plus the digest."""
    safe = re.sub(r"\W", "_", str(name))[:40] or "ext"
    if safe[0].isdigit():
        safe = "_" + safe
    return f"{safe}_{digest}"


class _Extension:
    """Wraps a built extension: each call into it is a launch of the candidate's own code."""

    def __init__(self, module: Any, log: LaunchLog, name: str, kernels: list[str]):
        self._module = module
        self._log = log
        self._name = name
        self._kernels = kernels

    def __getattr__(self, attr: str) -> Any:
        target = getattr(self._module, attr)
        if not callable(target):
            return target
        log, name, kernels = self._log, self._name, self._kernels

        def call(*args: Any, **kwargs: Any) -> Any:
            # The __global__ functions this extension holds: what its own GPU time is spent in.
            log.record("cuda", f"{name}.{attr}", kernels=kernels)
            return target(*args, **kwargs)

        return call


class _NotBuilt:
    """Stands in for an extension that cannot be linked here (no GPU)."""

    def __init__(self, name: str, backend: "CudaBackend", log: LaunchLog, kernels: list[str]):
        self._name = name
        self._backend = backend
        self._log = log
        self._kernels = kernels

    def __getattr__(self, attr: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self._backend.dry_run:
                # `evokernel check`: the call is seen, nothing runs
                self._log.record("cuda", f"{self._name}.{attr}", kernels=self._kernels, dry=True)
                return None
            raise RuntimeError(f"extension {self._name} was compiled only: no GPU here to run {attr}")

        return call


class CudaBackend:
    name = "cuda"
    language = "cuda-cpp"
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
        self.compile_only = False
        self.dry_run = False  # `evokernel check`: capture and compile, never build or run

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

    def latency_source(self, device: str) -> LatencySource:
        return LatencySource.MEASURED_GPU if device.startswith("cuda") else LatencySource.NONE

    def static_problems(self, source: str) -> list[StaticFinding]:
        cpp = _cpp_strings(source)
        problems = []
        if "__global__" not in cpp:
            problems.append(StaticFinding("no-kernel", 0, "no __global__ kernel: the computation must be written as a CUDA kernel"))
        if "load_inline" not in source:
            problems.append(StaticFinding("no-kernel", 0, "no torch.utils.cpp_extension.load_inline call builds the kernels"))
        for pattern, rule, why in _FORBIDDEN_CPP:
            m = re.search(pattern, cpp)
            if m:
                problems.append(StaticFinding(rule, 0, f"the C++/CUDA source uses {m.group(0).strip('( ')}: {why}"))
        for m in re.finditer(r"\b(?:torch|at)::(\w+)\s*\(", cpp):
            if m.group(1) not in _ALLOWED_CPP_CALLS:
                problems.append(StaticFinding(
                    "torch-compute", 0,
                    f"the C++ wrapper calls {m.group(0).rstrip('( ')}: compute must happen in the candidate's own kernels"))
                break
        return problems

    def own_kernel_names(self, log: LaunchLog) -> set[str]:
        """The candidate's own kernels among the GPU activity of the calls in `log`."""
        names: set[str] = set()
        for entry in log.launches:
            if entry.get("kind") == "cuda":
                names.update(entry.get("kernels") or [])
        return names

    @contextlib.contextmanager
    def dry_launches(self) -> Iterator[None]:
        """Capture load_inline's sources without building, and let calls into them do nothing."""
        self.dry_run = True
        try:
            yield
        finally:
            self.dry_run = False

    def install_hooks(self, log: LaunchLog, *, compile_only: bool) -> None:
        import torch.utils.cpp_extension as ext

        self.compile_only = compile_only
        if getattr(ext.load_inline, "_evokernel_hook", False):
            return
        original = ext.load_inline
        backend = self
        tools = toolchain()

        def load_inline(name, cpp_sources, cuda_sources=None, functions=None, **kwargs):
            cpp, cu = _sources(cpp_sources), _sources(cuda_sources)
            digest = build_digest(str(name), cpp, cu, functions, kwargs, tools)
            kernels = global_kernels(cu)
            built = not (backend.compile_only or backend.dry_run)
            backend.captured.append({"name": name, "cpp": cpp, "cuda": cu, "functions": functions, "digest": digest,
                                     "kernels": kernels, "built": built,
                                     "flags": [str(f) for f in kwargs.get("extra_cuda_cflags") or []]})
            if not built:
                return _NotBuilt(str(name), backend, log, kernels)
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
                module = original(_module_name(name, digest), cpp_sources, cuda_sources, functions=functions, **kwargs)
            return _Extension(module, log, str(name), kernels)

        load_inline._evokernel_hook = True  # type: ignore[attr-defined]
        ext.load_inline = load_inline

    def compile_check(self, module: Any, log: LaunchLog) -> CompileReport:
        captured, self.captured = self.captured, []
        if not captured:
            return CompileReport(False, "the candidate never called load_inline: no CUDA kernel was built")
        if all(c["built"] for c in captured):
            return CompileReport(True, "built with torch's inline extension", kernels=[{"name": c["name"]} for c in captured])
        t0 = time.perf_counter()
        kernels, notes = [], []
        for c in captured:
            if c["built"]:
                kernels.append({"name": c["name"]})
                continue
            if not c["cuda"].strip():
                return CompileReport(False, f"load_inline({c['name']!r}) has no cuda_sources: no CUDA kernel to compile")
            ok, info = nvcc_check(c["cuda"], c["digest"], c.get("flags"))
            if not ok:
                return CompileReport(False, f"nvcc failed for {c['name']}: {info['message']}", seconds=time.perf_counter() - t0)
            kernels.extend(info["kernels"])
            if info.get("message"):
                notes.append(f"{c['name']}: {info['message']}")
        return CompileReport(
            True,
            "; ".join(notes) if notes else "compiled for sm_90 with nvcc; not run, so correctness and speed are unverified",
            kernels=kernels,
            seconds=time.perf_counter() - t0,
        )


# nvcc flags a candidate may pass through to the sm_90 check (others are ignored there).
_CHECK_FLAGS = re.compile(r"^(-O\d|--use_fast_math|-use_fast_math|-D\w+(=\S*)?|--expt-relaxed-constexpr|--expt-extended-lambda|-std=c\+\+\d+|-lineinfo)$")


def nvcc_check(cuda_source: str, digest: str, flags: list[str] | None = None) -> tuple[bool, dict[str, Any]]:
    """nvcc -cubin for sm_90 with ptxas statistics, cached by build digest.

    Concurrent workers may check the same digest: each compiles in its own
    temporary directory and the cached report is replaced atomically.
    """
    import json
    import tempfile

    import torch.utils.cpp_extension as ext

    nvcc = shutil.which("nvcc")
    if not nvcc:
        return False, {"message": "nvcc not found; cannot check CUDA sources without a GPU", "kernels": []}
    build = cache_root() / f"check2_{digest}"  # "2": the report format; older reports are not read
    build.mkdir(parents=True, exist_ok=True)
    cached = build / "result.json"
    if cached.exists():
        try:
            data = json.loads(cached.read_text())
            return data["ok"], data
        except (OSError, ValueError, KeyError):
            pass  # a torn or foreign file: compile again
    extra = [f for f in (flags or []) if _CHECK_FLAGS.match(f)]
    includes = [f"-I{p}" for p in [*ext.include_paths(), sysconfig.get_paths()["include"], *_library_includes()]]
    with tempfile.TemporaryDirectory(dir=build) as work:
        src = Path(work) / "kernel.cu"
        src.write_text(cuda_source)
        cmd = [nvcc, "-cubin", "-arch=sm_90", "-Xptxas", "-v", "-std=c++17", *extra, *includes, str(src), "-o", str(Path(work) / "kernel.cubin")]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return False, {"message": "nvcc timed out after 600 s", "kernels": []}
        text = out.stderr + out.stdout
        missing = _missing_library_header(text)
        if out.returncode != 0 and missing:
            # The toolkit here lacks a CUDA library's headers (ATen/cuda includes cuSPARSE's, for one):
            # that says nothing about the candidate, so the check is reported as not done, not failed.
            data = {"ok": True, "kernels": [], "message": f"sm_90 compile check not done: this machine's CUDA toolkit "
                    f"has no {missing} (a CUDA library header); the source is unverified"}
        elif out.returncode != 0:
            errors = [ln.replace(str(src), "kernel.cu") for ln in text.splitlines() if "error" in ln.lower()]
            data = {"ok": False, "message": "\n".join(errors[:12]) or text[-1500:].replace(str(src), "kernel.cu"), "kernels": []}
        else:
            data = {"ok": True, "message": "", "kernels": _ptxas_kernels(text)}
        if not missing:  # a check not done is not a result to keep
            tmp = Path(work) / "result.json"
            tmp.write_text(json.dumps(data))
            os.replace(tmp, cached)
    return data["ok"], data


# Headers of the CUDA math and DNN libraries: a toolkit can come without them.
_LIBRARY_HEADER = re.compile(r"fatal error: (?:[\w/]*/)?((?:cublas|cublasLt|cusparse|cusolver|curand|cufft|cudnn|nccl|nvrtc|cutlass)\w*\.h\w*): No such file")


def _missing_library_header(text: str) -> str | None:
    m = _LIBRARY_HEADER.search(text)
    return m.group(1) if m else None


def _library_includes() -> list[str]:
    """Include folders of the CUDA library wheels next to torch (nvidia/*/include), where installed."""
    roots = [Path(p) / "nvidia" for p in sysconfig.get_paths().values() if p]
    found = sorted({str(d) for r in roots if r.is_dir() for d in r.glob("*/include") if d.is_dir()})
    return found


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
