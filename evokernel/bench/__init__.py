"""Benchmarks: the loop (`evokernel.run`) over a suite, its metrics, the ablation and the report."""

from ._ablate import ARM_NAMES, ARM_SETTINGS, ARMS, AblationResult, Arm, ArmResult, run_ablation
from ._metrics import FAST_PS, below_half_line, compute_metrics, fast_key, geomean, speed_comparability, task_row
from ._report import ReportError, ReportFiles, write_report
from ._runner import (
    BUNDLED_SUITES,
    BenchError,
    BenchInterrupted,
    BenchResult,
    SuiteError,
    benchmarks_root,
    resolve_tasks,
    run_bench,
    write_result,
)

__all__: list[str] = [
    "ARMS",
    "ARM_NAMES",
    "ARM_SETTINGS",
    "AblationResult",
    "Arm",
    "ArmResult",
    "BUNDLED_SUITES",
    "BenchError",
    "BenchInterrupted",
    "BenchResult",
    "FAST_PS",
    "ReportError",
    "ReportFiles",
    "SuiteError",
    "benchmarks_root",
    "below_half_line",
    "compute_metrics",
    "fast_key",
    "geomean",
    "resolve_tasks",
    "run_ablation",
    "run_bench",
    "speed_comparability",
    "task_row",
    "write_report",
    "write_result",
]
