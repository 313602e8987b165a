"""The LLM policy: the frozen model writes each candidate from a prompt that
carries the task, the hardware and the task's floor, the retrieved memories,
the last verifier feedback and, when refining, the start-point kernel.

Single-turn by default (every step a fresh prompt, as in the paper). With
`LLMOptions.multi_turn` the steps of one task continue one conversation: the
policy keeps it per task key, the loop's feedback for the previous step
becomes the next user turn, and retrieval is refreshed every turn. A resumed
run starts a new conversation (the dialogue lives in this process only).
"""

from __future__ import annotations

import random
from typing import Any

from backends import EvalResult, LatencySource, Verdict
from evokernel._step import Proposal, StartPointView, StepContext


def _title(note) -> str:
    status = note.status or ""
    lat = f", {note.latency_ms:.4f} ms" if note.latency_ms else ""
    return f"{note.kind} for {note.extra.get('task_name', note.task_key)} ({note.backend}, {status}{lat})"


class LLMPolicy:
    is_llm = True

    def __init__(self, spec: "str | Any", *, log: Any = None, replay: bool = False, cache: bool = False,
                 token_budget: int | None = None, provider_options: dict | None = None, hardware: Any = None,
                 options: Any = None):
        """`spec` is a model spec (`"openai:gpt-5"`) or an `LLMOptions`; `hardware` is the
        device's `backends.HardwareFacts` (measured once per device by the caller)."""
        from evokernel.llm import LLMClient, LLMOptions

        if options is None:
            options = spec if isinstance(spec, LLMOptions) else LLMOptions.from_specs(
                [spec], cache=cache, replay=replay, **({"context_tokens": token_budget} if token_budget else {}))
        self.options = options
        self.name = options.label
        self.hardware = hardware
        self.clients = []
        for choice in options.models:
            provider = choice.spec.partition(":")[0]
            opts = {**options.options_for(provider), **(provider_options or {})}
            self.clients.append(LLMClient.from_spec(
                choice.spec, log=log, cache=options.cache or options.replay, replay=options.replay,
                provider_options=opts, max_tokens=options.max_tokens, temperature=options.temperature,
                retry=options.retry, prices=options.prices))
        self._weights = [c.weight for c in options.models]
        self._conversations: dict[str, Any] = {}
        self._costs: dict[tuple[str, str], Any] = {}

    @property
    def client(self):
        """The first model's client (the only one unless this is an ensemble)."""
        return self.clients[0]

    @property
    def token_budget(self) -> int:
        return self.options.context_tokens

    def _pick(self, ctx: StepContext) -> tuple[int, Any]:
        if len(self.clients) == 1:
            return 0, self.clients[0]
        # Seeded by task and step: a rerun draws the same model for the same step.
        rng = random.Random(f"ensemble:{ctx.task_key}:{ctx.step}")
        index = rng.choices(range(len(self.clients)), weights=self._weights)[0]
        return index, self.clients[index]

    def _task_cost(self, ctx: StepContext) -> Any:
        if ctx.task_cost is not None:
            return ctx.task_cost
        key = (ctx.task_path, ctx.size)
        if key not in self._costs:
            from backends import task_cost

            self._costs[key] = task_cost(ctx.task_path, size=key[1]) if ctx.task_path else None
        return self._costs[key]

    def inputs(self, ctx: StepContext) -> Any:
        """The prompt's inputs for this step (public so the prompt can be previewed without a call)."""
        from evokernel.llm import MemoryView, PromptInputs

        views = [
            MemoryView(kind=m.kind, title=_title(m), content=m.content, status=m.status, latency_ms=m.latency_ms,
                       value=m.value, id=m.id, parent_id=m.parent_id,
                       latency_iqr_ms=m.result.latency_iqr_ms if m.result is not None else None,
                       latency_source=_known(m.latency_source))
            for m in ctx.memories
        ]
        # Backend API notes (exact-name and category lookups): reference material, given no id so
        # no value update credits them.
        notes = [MemoryView(kind="api_note", title=n.key_text.splitlines()[0], content=n.content, value=1.0, id=None)
                 for n in ctx.api_notes]
        skills = [MemoryView(kind="skill", title=s.key_text.splitlines()[0], content=s.content, value=s.value,
                             id=None) for s in ctx.skills]
        start = _start(ctx.start_point)
        source = _known(ctx.latency_source)
        best = _start(ctx.best)
        return PromptInputs(
            task_name=ctx.task_name, task_source=ctx.task_source, backend=ctx.backend, stage=ctx.stage,
            memories=views, feedback=ctx.feedback, start_point=start, best=best, api_notes=notes, skills=skills,
            hardware=self.hardware, cost=self._task_cost(ctx),
            latency_source=source, rules=ctx.rules, precision=ctx.precision,
        )

    def prompt(self, ctx: StepContext, *, model: str | None = None, answer_tokens: int | None = None) -> Any:
        from evokernel.llm import Conversation, build_prompt

        conversation = None
        if self.options.multi_turn:
            conversation = self._conversations.setdefault(ctx.task_key, Conversation())
        return build_prompt(self.inputs(ctx), token_budget=self.options.context_tokens,
                            model=model or self.client.model, conversation=conversation, answer_tokens=answer_tokens)

    def propose(self, ctx: StepContext) -> Proposal:
        from evokernel.llm import Candidate, LLMError, ParseError, parse_candidate, parse_edited, split_reasoning

        index, client = self._pick(ctx)
        choice = self.options.models[index]
        # a start point past half the answer's tokens is asked for as edits (evokernel/llm/_edits.py)
        prompt = self.prompt(ctx, model=client.model, answer_tokens=client.max_tokens)
        inputs_ids = [m.id for m in ctx.memories]
        shown = tuple(inputs_ids[i] for i in prompt.report.included_memories if inputs_ids[i] is not None)
        # Skills the token budget left out were not seen: only the others learn from this step.
        dropped = set(prompt.report.dropped)
        shown_skills = tuple(s.id for s in ctx.skills
                             if f"skill {s.key_text.splitlines()[0][:60]}" not in dropped)
        marker = getattr(_backend(ctx.backend), "kernel_marker", None)
        parsed: list[Candidate | ParseError] = []

        def parse(completion) -> dict:
            # Parsed before the call is logged, so the log row carries the decisions too.
            try:
                # a refinement's answer may be edits to its start point, asked for or not
                edited = (parse_edited(completion.text, ctx.start_point.code, kernel_marker=marker,
                                       truncated=completion.truncated, finish_reason=completion.finish_reason)
                          if ctx.stage == "refine" and ctx.start_point is not None else None)
                parsed.append(edited or parse_candidate(
                    completion.text, reasoning=completion.reasoning, finish_reason=completion.finish_reason,
                    truncated=completion.truncated, kernel_marker=marker, max_tokens=client.max_tokens,
                ))
            except ParseError as exc:
                parsed.append(exc)
            return {"parse": parsed[-1].report.as_dict()} if parsed[-1].report else {}

        extra: dict[str, Any] = {"model": choice.spec, "prompt": prompt.report.as_dict()}
        try:
            completion = client.ask(prompt, run_id=ctx.run_id, annotate=parse)
        except LLMError as exc:
            return Proposal(None, error=f"LLM call failed: {exc}", extra=extra, used_memory_ids=shown,
                            used_skill_ids=shown_skills)
        usage = dict(tokens_in=completion.tokens_in or 0, tokens_out=completion.tokens_out or 0,
                     cost_usd=completion.cost_usd)
        outcome = parsed[-1] if parsed else ParseError("no_code", "answer not parsed", "Your previous answer was not read.")
        extra["call_id"] = completion.call_id
        if outcome.report is not None:
            extra["parse"] = outcome.report.as_dict()
        if self.options.multi_turn:
            # The assistant turn is the answer without its reasoning (as the providers advise).
            answer = "\n".join(line for line in split_reasoning(completion.text).answer.strip().splitlines())
            self._conversations[ctx.task_key].record(
                prompt, answer.strip() or "(no answer)", None if isinstance(outcome, ParseError) else outcome.code)
        if isinstance(outcome, ParseError):
            return Proposal(None, error=outcome.feedback, extra=extra, used_memory_ids=shown,
                            used_skill_ids=shown_skills, **usage)
        return Proposal(
            outcome.code,
            key_text=f"{ctx.task_name} {ctx.category} {ctx.backend}\n{ctx.stage} by {choice.spec}",
            extra=extra,
            used_memory_ids=shown, used_skill_ids=shown_skills,
            **usage,
        )


def _known(source: LatencySource) -> LatencySource | None:
    """The prompt's label for a latency source: None where nothing was timed."""
    return None if source is LatencySource.NONE else source


def _start(sp: StartPointView | None) -> Any:
    """A StartPointView (or the best kernel's view) as the prompt's StartPoint."""
    if sp is None:
        return None
    from evokernel.llm import StartPoint

    result = sp.result or EvalResult(Verdict.OK)  # a view built without its verdict (tests, agents) times nothing
    return StartPoint(
        code=sp.code, latency_ms=sp.latency_ms, speedup_eager=sp.speedup_eager, speedup_compile=sp.speedup_compile,
        facts=tuple(sp.facts), latency_iqr_ms=result.latency_iqr_ms, timing_runs=len(result.latency_samples_ms) or None,
        latency_source=_known(sp.latency_source),
        min_bytes=result.roofline.min_bytes_moved if result.roofline is not None else None, id=sp.id,
    )


def _backend(name: str):
    from backends import UnknownBackend, get_backend

    try:
        return get_backend(name)
    except UnknownBackend:
        return None
