"""The executor contract: what the loop, the skills and the progress monitor use of
whatever evaluates candidates.

Every implementation meets it: the local `Executor` (one worker process), the
`ExecutorPool` (several, one per GPU), the `RayPool` (Ray actors on a cluster),
the MCP session's lazily started pool and the tests' doubles. A caller types
its executor with `ExecutorProtocol` and calls these four members directly,
never probing with `getattr`. tests/test_executor_contract.py checks each
implementation against it, by signature.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from ._options import EvalOptions
from ._result import EvalResult
from ._retime import RetimeReport


@runtime_checkable
class ExecutorProtocol(Protocol):
    @property
    def waiting(self) -> int:
        """Evaluations queued for a free worker (the progress monitor's `queued`); 0 without a queue."""
        ...

    def evaluate(self, task_path: str | Path, source: str, *, backend: str = "triton",
                 options: EvalOptions | None = None, timeout_s: float | None = None) -> EvalResult:
        """The verdict on one candidate: failures (crashes, timeouts, wrong results) are the result's status."""
        ...

    def retime(self, task_path: str | Path, baseline_source: str, candidate_source: str, *, backend: str = "triton",
               options: EvalOptions | None = None, rounds: int = 3, timeout_s: float | None = None) -> RetimeReport:
        """Two feasible kernels of one task timed in alternation in one worker (a skill's admission)."""
        ...

    def close(self) -> None:
        """Stop every worker; a closed executor is not used again."""
        ...


__all__ = ["ExecutorProtocol"]
