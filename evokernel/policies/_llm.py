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
        from evokernel.llm import LLMError, MemoryView, ParseError, PromptInputs, StartPoint, build_prompt, parse_candidate

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
        try:
            completion = self.client.ask(prompt, run_id=ctx.run_id)
        except LLMError as exc:
            return Proposal(None, error=f"LLM call failed: {exc}", used_memory_ids=shown)
        usage = dict(tokens_in=completion.tokens_in or 0, tokens_out=completion.tokens_out or 0, cost_usd=completion.cost_usd)
        try:
            candidate = parse_candidate(completion.text, finish_reason=completion.finish_reason, truncated=completion.truncated)
        except ParseError as exc:
            return Proposal(None, error=exc.feedback, used_memory_ids=shown, **usage)
        return Proposal(
            candidate.code,
            key_text=f"{ctx.task_name} {ctx.category} {ctx.backend}\n{ctx.stage} by {self.name}",
            extra={"model": self.name, "call_id": completion.call_id},
            used_memory_ids=shown,
            **usage,
        )
