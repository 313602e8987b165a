"""The builtin policy and an LLM together: the builtin drafts first, the LLM refines past it.

With `--model`, a step goes to the offline builtin policy while it covers the
task and has tries left (no tokens spent), and to the LLM otherwise:

- drafting: the builtin writes the draft where the task is inside its families;
  where it stops (outside its families, no generator for the backend, its
  search exhausted) the LLM drafts alone;
- refining: the builtin keeps refining while the start point is one of its own
  kernels (its neighbour search moves from the start point's configuration),
  up to `builtin_tries` builtin kernels per task; then the LLM refines from the
  best kernel, which the loop passes to it as the start point, builtin-made or not.

Nothing here keeps state between steps: whose turn it is comes from the step's
context (the fingerprints the task tried, the start point's record), so a
resumed run or a second run on the same memory continues the same way. The
builtin's kernels and plans reach the memory as every step's trace does, and
the LLM's prompts retrieve them like any other item.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from evokernel._step import Proposal, StepContext

# The builtin policies' fingerprints (ConfigSpace.prefix: "builtin:" for Triton,
# "builtin-ascendc:" for Ascend C) start with this; an LLM's carry none.
BUILTIN_FINGERPRINT = "builtin"
# The draft, a second rounding if a matmul's first missed the tolerance, and the first
# neighbours of the drafted configuration: the cheap part of the builtin's search. The LLM
# gets the rest of the budget, where a configuration search has nothing left to change.
DEFAULT_BUILTIN_TRIES = 4


class HybridPolicy:
    """`builtin` (a policy that may stop) first, `llm` (the LLM policy) past it."""

    is_llm = True

    def __init__(self, builtin: Any, llm: Any, *, builtin_tries: int = DEFAULT_BUILTIN_TRIES) -> None:
        if builtin_tries < 1:
            raise ValueError(f"builtin_tries must be at least 1, got {builtin_tries}")
        self.builtin = builtin
        self.llm = llm
        self.builtin_tries = builtin_tries
        self.name = f"builtin+{llm.name}"

    @property
    def client(self) -> Any:
        """The LLM's client (the skill library's rerank and summaries use it)."""
        return self.llm.client

    def propose(self, ctx: StepContext) -> Proposal:
        handed_over = None
        if self.builtin_turn(ctx):
            proposal = self.builtin.propose(ctx)
            if not proposal.stop:
                return dataclasses.replace(proposal, extra={**proposal.extra, "proposer": "builtin"})
            handed_over = proposal.error or "the builtin policy stopped"
        proposal = self.llm.propose(ctx)
        extra = {**proposal.extra, "proposer": "llm"}
        if handed_over:
            extra["builtin_stopped"] = handed_over
        return dataclasses.replace(proposal, extra=extra)

    def builtin_turn(self, ctx: StepContext) -> bool:
        """Whether the builtin policy takes this step (it may still stop and hand it to the LLM)."""
        if builtin_tries(ctx) >= self.builtin_tries:
            return False
        if ctx.stage == "draft":
            return True
        # The builtin's refinement moves its own configuration; from an LLM's kernel it would
        # write an unrelated kernel of its own, not refine the start point.
        start = ctx.start_point
        return start is not None and str(start.extra.get("fingerprint", "")).startswith(BUILTIN_FINGERPRINT)


def builtin_tries(ctx: StepContext) -> int:
    """How many builtin kernels the memory holds for this task (this run's and earlier runs')."""
    return sum(fp.startswith(BUILTIN_FINGERPRINT) for fp in ctx.tried)
