"""Executors: compile, verify and time candidate kernels, in isolated workers.

Depends only on torch, numpy and each target's own toolchain, so it runs on a
GPU machine where the rest of EvoKernel's dependencies are absent.
"""

from ._backend import Backend, CompileReport, LaunchLog, UnknownBackend, backend_names, get_backend
from ._cache import build_cache, use_build_cache
from ._check import check
from ._compare import DEFAULT_TOLERANCE, Comparison, compare
from ._contract import ExecutorProtocol
from ._hardware import HardwareFacts, TaskCost, hardware_facts, measure_hardware, task_cost
from ._evaluate import KERNELBENCH_SEED
from ._executor import EvalJob, Executor, default_device
from ._options import PRECISIONS, EvalOptions
from ._precision import cast_model, cast_values
from ._pyast import parse_python
from ._pool import DevicePlanError, ExecutorPool, MemoryWatch, PoolStats, plan_devices, visible_gpu_count
from ._ray import RayPool, RayUnavailable
from ._result import RULE_SETS, Baselines, EvalResult, KernelFacts, LatencySource, MemoryPlan, Roofline, Verdict
from ._retime import RetimeReport
from ._rules import RULES, Rule, describe_rules
from ._sandbox import SandboxLimits
from ._static import StaticFinding, static_findings, static_rejection
from ._stress import DISTRIBUTIONS, StressPlan, assess_task, output_findings, output_reasons
from ._task import Task, TaskError, load_task, load_task_module, task_size
from ._timing import Timing, benchmark

__all__ = [
    "DISTRIBUTIONS",
    "PRECISIONS",
    "RULES",
    "RULE_SETS",
    "Rule",
    "Backend",
    "Baselines",
    "CompileReport",
    "Comparison",
    "DEFAULT_TOLERANCE",
    "DevicePlanError",
    "EvalJob",
    "EvalOptions",
    "EvalResult",
    "Executor",
    "ExecutorProtocol",
    "HardwareFacts",
    "ExecutorPool",
    "KERNELBENCH_SEED",
    "KernelFacts",
    "LatencySource",
    "LaunchLog",
    "MemoryPlan",
    "MemoryWatch",
    "PoolStats",
    "RayPool",
    "RayUnavailable",
    "RetimeReport",
    "SandboxLimits",
    "StaticFinding",
    "StressPlan",
    "Task",
    "TaskCost",
    "Roofline",
    "TaskError",
    "Timing",
    "UnknownBackend",
    "Verdict",
    "backend_names",
    "parse_python",
    "benchmark",
    "build_cache",
    "cast_model",
    "cast_values",
    "check",
    "assess_task",
    "describe_rules",
    "compare",
    "default_device",
    "get_backend",
    "hardware_facts",
    "load_task",
    "load_task_module",
    "task_size",
    "plan_devices",
    "measure_hardware",
    "output_findings",
    "output_reasons",
    "static_findings",
    "static_rejection",
    "task_cost",
    "use_build_cache",
    "visible_gpu_count",
]
