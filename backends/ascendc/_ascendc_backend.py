"""AscendCBackend: the executor's view of the Ascend C backend (the Backend
protocol in backends/_backend.py)."""

from __future__ import annotations

import hashlib
import io
import re
import tokenize
import time
from typing import Any

from .._backend import CompileReport, LaunchLog
from .._result import LatencySource
from ._cost import SOURCE as MODELLED_SOURCE
from ._cost import modelled_latency_ms
from ._detect import detect_mode
from ._errors import AscendCError
from ._launch import set_launch_hook
from ._loader import build_records, clear_build_records, load_inline
from ._signature import strip_comments

_ENTRY = re.compile(r"__global__\s+__aicore__\s+void\s+(\w+)\s*\(|__aicore__\s+__global__\s+void\s+(\w+)\s*\(")


def _without_python_comments(source: str) -> str:
    """The candidate's Python source without its # comments (strings, where the
    kernel source lives, are kept)."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.COMMENT]
        return tokenize.untokenize(tokens)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source


class AscendCBackend:
    name = "ascendc"
    language = "ascendc"
    api_notes = "evokernel.ascendc:seed_api_notes"  # seeds the API notes into a bank (store) -> count
    title = "Ascend C"
    kernel_marker = r"__aicore__"  # a kernel of this kind in a candidate's source (for the LLM answer parser)
    prompt_rules = """\
Ascend C rules:
- The answer is still one Python file. Put the Ascend C source in a module-level string `KERNEL_SOURCE = r\"\"\"...\"\"\"`.
- Build it with `from backends.ascendc import load_inline` and `ops = load_inline(name="...", source=KERNEL_SOURCE, functions=["kernel_name", ...])`, once, at import or in `__init__`.
- In `forward`, allocate outputs with `torch.empty` and launch with `ops.kernel_name(*tensors_and_scalars, block_dim=N)`: tensors arrive in the kernel as `GM_ADDR` arguments and scalars as plain integer or float parameters, in the order you pass them.
- The source starts with `#include "kernel_operator.h"` and has one `extern "C" __global__ __aicore__ void kernel_name(...)` entry per launched function.
- Use the Ascend C vector programming model: `AscendC::TPipe`, `TQue<QuePosition::VECIN/VECOUT, depth>`, `GlobalTensor`/`LocalTensor`, `AllocTensor`/`EnQue`/`DeQue`/`FreeTensor`, `DataCopy`, vector instructions such as `Add`, `Mul`, `Exp`, `Muls`, `ReduceMax`; split the work across cores with `GetBlockIdx()` and handle the tail.
- Use only APIs you are certain exist (the API notes below are authoritative); invented APIs are the most common reason Ascend C fails to compile.
- Every `DataCopy` moves a multiple of 32 bytes; everything a core keeps in the Unified Buffer must fit in 192 KB; every `DeQue` matches an `EnQue`, and a queue never holds more tensors than its depth.
"""

    def __init__(self) -> None:
        self._compile_only = False
        self._hooks_installed_at = 0

    def mode(self) -> dict[str, Any]:
        found = detect_mode()
        detected = {k: v for k, v in found.items() if k not in ("mode", "can_run", "detail")}
        return {"mode": found["mode"], "can_run": found["can_run"], "detail": found["detail"], "detected": detected}

    def static_problems(self, source: str) -> list[str]:
        code = _without_python_comments(source)
        problems = []
        if "__aicore__" not in code:
            problems.append("no Ascend C kernel: the candidate must define an "
                            "extern \"C\" __global__ __aicore__ void entry in its kernel source")
        imports = re.search(r"from\s+backends\.ascendc\s+import\s+[^\n]*\bload_inline\b", code) or re.search(
            r"\bbackends\.ascendc\.load_inline\s*\(", code)
        if not imports or not re.search(r"\bload_inline\s*\(", code):
            problems.append("the kernels must be built with load_inline(...) from backends.ascendc "
                            "(from backends.ascendc import load_inline)")
        return problems

    def install_hooks(self, log: LaunchLog, *, compile_only: bool) -> None:
        self._compile_only = compile_only
        clear_build_records()

        def record(kind: str, name: str, **info: Any) -> None:
            log.record(kind, name, **info)

        set_launch_hook(record, around=log.pause)

    def compile_check(self, module: Any, log: LaunchLog) -> CompileReport:
        """Report the builds the candidate made; when it made none yet (compile
        only, kernels built in ModelNew.__init__), build every kernel source
        string found in the module."""
        started = time.perf_counter()
        records = build_records()
        message = ""
        if not records:
            try:
                records = self._build_module_sources(module)
            except AscendCError as exc:
                return CompileReport(ok=False, message=str(exc), seconds=time.perf_counter() - started)
            if not records:
                message = "no Ascend C kernel source (a string with __aicore__) was found to build"
        found = detect_mode()
        if found["mode"] == "cann-sim" and records:
            problem = self._bisheng_check(records, found)
            if problem:
                return CompileReport(ok=False, message=problem, seconds=time.perf_counter() - started)
        launched = {}
        for entry in log.launches:
            if entry.get("kind") == "ascendc":
                launched[entry["name"]] = entry.get("cost", {})
        kernels = []
        for record in records:
            for fn in record.functions:
                cost = launched.get(fn) or {}
                slowest = cost.get("slowest_block") or {}
                kernels.append({
                    "name": fn,
                    "build": record.name,
                    "mode": record.mode,
                    "cache_hit": record.cache_hit,
                    "registers": None,
                    "shared_bytes": slowest.get("ub_bytes"),  # the executor's generic name for on-chip memory
                    "ub_bytes": slowest.get("ub_bytes"),  # Unified Buffer bytes per core
                    "spills": None,
                    "launched": fn in launched,
                    "modelled_latency_us": cost.get("latency_us"),
                })
        return CompileReport(ok=bool(records), message=message, kernels=kernels,
                             seconds=time.perf_counter() - started)

    @staticmethod
    def _bisheng_check(records: list[Any], found: dict[str, Any]) -> str:
        """With CANN but no NPU, compile each source with the real compiler too:
        its errors are the ones that count. Returns the first failure's message."""
        from ._build import cache_root
        from ._cann import build_plan, run_plan

        for record in records:
            if not record.source:
                continue
            digest = hashlib.sha256(record.source.encode()).hexdigest()[:16]
            plan = build_plan(record.name, record.source, list(record.functions),
                              directory=cache_root() / f"{record.name}-bisheng-{digest}",
                              ascend_home=found["ascend_home_path"], bisheng=found["bisheng"] or "bisheng")
            try:
                run_plan(plan, compile_only=True)
            except AscendCError as exc:
                return f"bisheng (CANN) rejected {record.name}: {exc}"
        return ""

    @staticmethod
    def _build_module_sources(module: Any) -> list[Any]:
        for value in vars(module).values():
            if isinstance(value, str) and "__aicore__" in value:
                names = [a or b for a, b in _ENTRY.findall(strip_comments(value))]
                if names:
                    load_inline(name=f"{getattr(module, '__name__', 'candidate').split('.')[-1]}_check",
                                source=value, functions=names)
        return build_records()

    def modelled_latency_ms(self, log: LaunchLog, device: str) -> float | None:
        if self.latency_source(device) != MODELLED_SOURCE:
            return None
        return modelled_latency_ms(log.launches)

    def can_run(self, device: str) -> bool:
        """The CPU model runs every kernel; CANN modes decide by what they detected."""
        return bool(self.mode()["can_run"])

    def latency_source(self, device: str) -> LatencySource:
        mode = detect_mode()["mode"]
        if mode == "cann-npu" and device.startswith("npu"):
            return LatencySource.MEASURED_NPU
        return MODELLED_SOURCE
