"""Summaries of a step for the memory: what was tried, the verdict, and why.

With an LLM the summary is the model's reading of the attempt; without one (or
when the call fails) it is assembled from the verifier's facts, so the memory
never waits on the network to record an experience.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from backends import LatencySource, Verdict

from ._secrets import logger
from ._types import LLMError

if TYPE_CHECKING:
    from ._client import LLMClient

_MAX_CODE_CHARS = 8000
_MAX_MESSAGE_CHARS = 2000

_SYSTEM = (
    "You keep the notebook of an agent that writes GPU/NPU kernels. Summarise one "
    "attempt in two to four plain sentences: the technique the kernel tried, what the "
    "verifier reported, and the most likely reason it worked or failed, phrased so it "
    "helps the next attempt on this or a similar operator. No code, no preamble."
)


@dataclass(frozen=True)
class StepFacts:
    """What the verifier said about one step, as plain data."""

    task_name: str
    backend: str
    stage: str
    status: str  # the verdict: "ok", "compile_error", "wrong_result", "timeout", ...
    message: str | None = None
    max_abs_error: float | None = None
    latency_ms: float | None = None
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    code: str | None = None
    latency_iqr_ms: float | None = None
    latency_source: LatencySource | None = None
    location: str | None = None  # where it went wrong: the feedback line naming an index, row or line
    roofline: str | None = None  # the latency against the copy bandwidth
    kernels: tuple[str, ...] = ()  # "name: registers 32, spills 0"

    @classmethod
    def from_result(cls, task_name: str, backend: str, stage: str, result: Any, code: str | None = None) -> "StepFacts":
        """The facts of a `backends.EvalResult` that help the next attempt."""
        roof = getattr(result, "roofline", None)
        roofline = None
        if roof is not None and result.feasible and getattr(roof, "copy_bandwidth_gbps", None):
            share = roof.achieved_gbps / roof.copy_bandwidth_gbps
            roofline = (f"{roof.achieved_gbps:.4g} GB/s of its minimum traffic ({roof.min_bytes_moved} bytes), "
                        f"{share:.0%} of the measured copy bandwidth")
        kernels = tuple(f"{k.name}: {k.summary()}" for k in (getattr(result, "kernels", None) or [])[:4] if k.summary())
        return cls(
            task_name=task_name, backend=backend, stage=stage, status=result.status.value, message=result.message,
            max_abs_error=result.max_abs_error, latency_ms=result.latency_ms if result.feasible else None,
            speedup_eager=result.speedup_eager, speedup_compile=result.speedup_compile, code=code,
            latency_iqr_ms=getattr(result, "latency_iqr_ms", None), latency_source=result.latency_source,
            location=_location(result.feedback or "", result.message or ""), roofline=roofline, kernels=kernels,
        )


_WHERE = re.compile(r"(?i)\b(?:index|indices|row|rows|column|line \d+|at \[|element|offset)\b")


def _location(feedback: str, message: str) -> str | None:
    """The first line of the feedback that says where: an index, a row, a source line."""
    first = _first_line(message, 300)
    for line in feedback.splitlines():
        line = line.strip()
        if line and line != first and _WHERE.search(line):
            return line[:240]
    return None


@dataclass(frozen=True)
class StepSummary:
    text: str
    key_text: str  # what retrieval matches the next task against
    source: str  # "llm" or "facts"


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit // 2] + "\n[...]\n" + text[-limit // 2 :]


def _first_line(text: str | None, limit: int = 160) -> str:
    if not text:
        return ""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:limit]


def _feasible(status: str) -> bool:
    """What the executor's verdict says (`compiled` is feasible: it compiles where it cannot run)."""
    try:
        return Verdict(status.lower()).feasible
    except ValueError:
        return False


def facts_summary(facts: StepFacts) -> str:
    """The structured summary: one line per fact that is known."""
    feasible = _feasible(facts.status)
    lines = [
        f"{facts.task_name} on {facts.backend}, {facts.stage} step: "
        f"{'feasible' if feasible else 'infeasible'} (verdict: {facts.status})."
    ]
    if facts.message:
        lines.append(f"Verifier: {_first_line(facts.message, 300)}")
    if facts.location:
        lines.append(f"Where: {facts.location}")
    if facts.max_abs_error is not None:
        lines.append(f"Max abs error: {facts.max_abs_error:.3g}.")
    if facts.latency_ms is not None:
        lat = f"Latency: {facts.latency_ms:.4g} ms"
        if facts.latency_iqr_ms:
            lat += f" (IQR {facts.latency_iqr_ms:.3g} ms)"
        if facts.latency_source is not None and LatencySource(facts.latency_source).interpreted:
            lat += f", {facts.latency_source}: a correctness run, not speed"
        elif facts.latency_source:
            lat += f", {facts.latency_source}"
        lines.append(lat + ".")
    speedups = []
    if facts.speedup_eager is not None:
        speedups.append(f"{facts.speedup_eager:.3g}x over eager")
    if facts.speedup_compile is not None:
        speedups.append(f"{facts.speedup_compile:.3g}x over torch.compile")
    if speedups:
        lines.append("Speedup: " + ", ".join(speedups) + ".")
    if facts.roofline:
        lines.append(f"Roofline: {facts.roofline}.")
    if facts.kernels:
        lines.append("Kernels: " + "; ".join(facts.kernels) + ".")
    return "\n".join(lines)


def _key_text(facts: StepFacts, summary: str) -> str:
    head = " ".join(
        part for part in (facts.task_name, facts.backend, facts.stage, facts.status,
                          _first_line(facts.message)) if part
    )
    return f"{head} {' '.join(summary.split())}".strip()


def _llm_request(facts: StepFacts) -> str:
    parts = [facts_summary(facts)]
    if facts.message:
        parts.append("Full verifier message:\n" + _clip(facts.message, _MAX_MESSAGE_CHARS))
    if facts.code:
        parts.append("Kernel:\n```python\n" + _clip(facts.code, _MAX_CODE_CHARS) + "\n```")
    return "\n\n".join(parts)


def summarize_step(
    facts: StepFacts,
    *,
    client: "LLMClient | None" = None,
    max_tokens: int = 400,
    run_id: Any = None,
    step_id: Any = None,
) -> StepSummary:
    """Summarise a step; with `client` ask the model, else (or on failure) use facts."""
    if client is not None:
        try:
            answer = client.complete(
                [{"role": "user", "content": _llm_request(facts)}],
                system=_SYSTEM,
                max_tokens=max_tokens,
                temperature=0.0,
                run_id=run_id,
                step_id=step_id,
            )
            text = answer.text.strip()
            if text:
                return StepSummary(text=text, key_text=_key_text(facts, text), source="llm")
            logger.warning("empty summary from %s; using the verifier facts", client.spec)
        except LLMError as exc:
            logger.warning("summary call failed, using the verifier facts: %s", exc)
    text = facts_summary(facts)
    return StepSummary(text=text, key_text=_key_text(facts, text), source="facts")
