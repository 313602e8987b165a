"""The Ascend C backend: build and run Ascend C kernels written for the 910B.

On a machine with CANN and an NPU, kernels are built with bisheng and timed on
the NPU (`_cann.py`, never run on hardware yet). Everywhere else they run on
EvoKernel's own CPU model of the Ascend C programming model
(`include/kernel_operator.h`), which checks the rules the hardware punishes and
estimates latency with an analytic 910B model ("modelled-910b").

A candidate builds its kernels like a CUDA inline extension::

    from backends.ascendc import load_inline
    ops = load_inline(name="add", source=KERNEL_SOURCE, functions=["add_custom"])
    ops.add_custom(x, y, z, n, block_dim=8)
"""

from ._api import API_NAMES, KNOWN_UNMODELLED, MEMBER_NAMES
from ._ascendc_backend import AscendCBackend
from ._cost import CHIP_910B, Chip, estimate_cost, modelled_latency_ms, parse_stats
from ._detect import detect_mode
from ._errors import COMPILE_KINDS, RUNTIME_KINDS, AscendCCompileError, AscendCError, AscendCRuntimeError
from ._launch import get_launch_hook, set_launch_hook
from ._loader import AscendCModule, build_records, load_inline
from ._msopgen import CannProject, OpSpec, TensorArg, msopgen_project

__all__ = [
    "API_NAMES",
    "AscendCBackend",
    "AscendCCompileError",
    "AscendCError",
    "AscendCModule",
    "AscendCRuntimeError",
    "CannProject",
    "CHIP_910B",
    "COMPILE_KINDS",
    "Chip",
    "KNOWN_UNMODELLED",
    "MEMBER_NAMES",
    "OpSpec",
    "TensorArg",
    "RUNTIME_KINDS",
    "build_records",
    "detect_mode",
    "estimate_cost",
    "get_launch_hook",
    "load_inline",
    "modelled_latency_ms",
    "msopgen_project",
    "parse_stats",
    "set_launch_hook",
]
