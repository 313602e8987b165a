"""The LLM policy's command-line options, shared by the commands that run it.

A command adds these parameters and calls `llm_options(...)`; the result goes
into the run's options (`RunOptions.llm`) or straight to `get_policy(llm=...)`.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ._exit import fail_usage

ModelsOpt = Annotated[
    Optional[list[str]],
    typer.Option("--model", metavar="PROVIDER:MODEL", help="PROVIDER:MODEL, optionally @WEIGHT; repeat for an ensemble "
                                 "(each step draws one model by weight)."),
]
ContextTokensOpt = Annotated[
    int, typer.Option("--context-tokens", min=256, help="Token budget of each prompt, counted with the model's tokenizer.")
]
MultiTurnOpt = Annotated[
    bool, typer.Option("--multi-turn", help="The steps of a task continue one conversation (default: a fresh prompt per step).")
]
BuiltinFirstOpt = Annotated[
    bool, typer.Option("--builtin-first/--llm-only", help="With --model: the builtin policy drafts first where it covers "
                       "the task (no tokens) and the LLM refines past it or drafts where it stops; --llm-only: the LLM writes every step."),
]
ReasoningEffortOpt = Annotated[
    Optional[str], typer.Option("--reasoning-effort", help="OpenAI reasoning models: none, minimal, low, medium, high, xhigh.")
]
ThinkingTokensOpt = Annotated[
    Optional[int], typer.Option("--thinking-tokens", min=1024, help="Anthropic extended thinking budget (tokens).")
]


def llm_options(models: list[str] | None, *, context_tokens: int = 24_000, multi_turn: bool = False,
                reasoning_effort: str | None = None, thinking_tokens: int | None = None, replay: bool = False):
    """The `LLMOptions` the flags describe, or None without `--model`; bad values are a usage error.

    Keys, endpoints, retries and prices come from the environment, read here at the edge
    (`evokernel.llm.from_environment` names the variables)."""
    if not models:
        return None
    import os

    from evokernel.llm import LLMOptions, from_environment

    try:
        options = LLMOptions.from_specs(models, context_tokens=context_tokens, multi_turn=multi_turn,
                                        reasoning_effort=reasoning_effort, thinking_tokens=thinking_tokens, replay=replay)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    try:
        return from_environment(options, os.environ)
    except ValueError as exc:  # a bad EVOKERNEL_LLM_* value or price file: not a flag's fault
        raise fail_usage(str(exc)) from None
