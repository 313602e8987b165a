"""The LLM policy: the frozen model writes each candidate from a prompt that
carries the task, the retrieved memories, the last verifier feedback and,
when refining, the start-point kernel."""

from __future__ import annotations

from typing import Any

from evokernel.loop import Proposal, StepContext


def _title(note) -> str:
    status = note.status or ""
    lat = f", {note.latency_ms:.4f} ms" if note.latency_ms else ""
    return f"{note.kind} for {note.extra.get('task_name', note.task_key)} ({note.backend}, {status}{lat})"


class LLMPolicy:
    is_llm = True

    def __init__(self, spec: str, *, log: Any = None, replay: bool = False, cache: bool = False,
                 token_budget: int = 24_000, provider_options: dict | None = None):
        from evokernel.llm import LLMClient

        self.name = spec
        self.client = LLMClient.from_spec(spec, log=log, cache=cache or replay, replay=replay,
                                          provider_options=provider_options)
        self.token_budget = token_budget

    def propose(self, ctx: StepContext) -> Proposal:
        from evokernel.llm import (Candidate, LLMError, MemoryView, ParseError, PromptInputs, StartPoint, build_prompt,
                                   parse_candidate)

        views = [
            MemoryView(kind=m.kind, title=_title(m), content=m.content, status=m.status, latency_ms=m.latency_ms,
                       value=m.value, id=m.id)
            for m in ctx.memories
        ]
        # Backend API notes (exact-name and category lookups): reference material shown beside the
        # memories, kept before them when the prompt is trimmed, and given no id so no value update
        # credits them.
        views += [
            MemoryView(kind="api_note", title=n.key_text.splitlines()[0], content=n.content, value=1.0, id=None)
            for n in ctx.api_notes
        ]
        start = None
        if ctx.start_point is not None:
            sp = ctx.start_point
            start = StartPoint(code=sp.code, latency_ms=sp.latency_ms, speedup_eager=sp.speedup_eager,
                               speedup_compile=sp.speedup_compile, facts=sp.facts)
        prompt = build_prompt(
            PromptInputs(task_name=ctx.task_name, task_source=ctx.task_source, backend=ctx.backend, stage=ctx.stage,
                         memories=views, feedback=ctx.feedback, start_point=start),
            token_budget=self.token_budget, model=self.client.model,
        )
        shown = tuple(views[i].id for i in prompt.report.included_memories if views[i].id is not None)
        marker = getattr(_backend(ctx.backend), "kernel_marker", None)
        parsed: list[Candidate | ParseError] = []

        def parse(completion) -> dict:
            # Parsed before the call is logged, so the log row carries the decisions too.
            try:
                parsed.append(parse_candidate(
                    completion.text, reasoning=completion.reasoning, finish_reason=completion.finish_reason,
                    truncated=completion.truncated, kernel_marker=marker, max_tokens=self.client.max_tokens,
                ))
            except ParseError as exc:
                parsed.append(exc)
            return {"parse": parsed[-1].report.as_dict()} if parsed[-1].report else {}

        try:
            completion = self.client.ask(prompt, run_id=ctx.run_id, annotate=parse)
        except LLMError as exc:
            return Proposal(None, error=f"LLM call failed: {exc}", used_memory_ids=shown)
        usage = dict(tokens_in=completion.tokens_in or 0, tokens_out=completion.tokens_out or 0, cost_usd=completion.cost_usd)
        outcome = parsed[-1] if parsed else ParseError("no_code", "answer not parsed", "Your previous answer was not read.")
        extra = {"model": self.name, "call_id": completion.call_id}
        if outcome.report is not None:
            extra["parse"] = outcome.report.as_dict()
        if isinstance(outcome, ParseError):
            return Proposal(None, error=outcome.feedback, extra=extra, used_memory_ids=shown, **usage)
        return Proposal(
            outcome.code,
            key_text=f"{ctx.task_name} {ctx.category} {ctx.backend}\n{ctx.stage} by {self.name}",
            extra=extra,
            used_memory_ids=shown,
            **usage,
        )


def _backend(name: str):
    from backends import UnknownBackend, get_backend

    try:
        return get_backend(name)
    except UnknownBackend:
        return None
