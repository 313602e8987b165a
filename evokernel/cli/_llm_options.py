"""The LLM policy's command-line flags, one group of every run-shaped command's settings.

`LLM_FLAGS` lists them (parameter name, typer annotation, default); `_flags.settings`
adds them to a command and `llm_options(...)` turns their values into the run's
`RunOptions.llm` (or the `llm=` of `get_policy`). Their record, `evokernel.llm.LLMOptions`,
belongs to the LLM package; tests/test_cli_flags.py holds the defaults here to its own.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

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
ReasoningEffortOpt = Annotated[
    Optional[str], typer.Option("--reasoning-effort", help="OpenAI reasoning models: none, minimal, low, medium, high, xhigh.")
]
ThinkingTokensOpt = Annotated[
    Optional[int], typer.Option("--thinking-tokens", min=1024, help="Anthropic extended thinking budget (tokens).")
]

# (parameter, annotation, default): the LLMOptions field each fills has the same name ("model": its models).
LLM_FLAGS: tuple[tuple[str, Any, Any], ...] = (
    ("model", ModelsOpt, None),
    ("context_tokens", ContextTokensOpt, 24_000),
    ("multi_turn", MultiTurnOpt, False),
    ("reasoning_effort", ReasoningEffortOpt, None),
    ("thinking_tokens", ThinkingTokensOpt, None),
)


def llm_options(models: list[str] | None, *, context_tokens: int = 24_000, multi_turn: bool = False,
                reasoning_effort: str | None = None, thinking_tokens: int | None = None):
    """The `LLMOptions` the flags describe, or None without `--model`; bad values are a usage error.

    Keys, endpoints, retries and prices come from the environment, read here at the edge
    (`evokernel.llm.from_environment` names the variables)."""
    if not models:
        return None
    import os

    from evokernel.llm import LLMOptions, from_environment

    settings = dict(context_tokens=context_tokens, multi_turn=multi_turn, reasoning_effort=reasoning_effort,
                    thinking_tokens=thinking_tokens)
    try:
        options = LLMOptions.from_specs(models, **settings)
    except ValueError as exc:
        raise fail_usage(f"Invalid value for '{_refused_flag(models, settings)}': {exc}") from None
    try:
        return from_environment(options, os.environ)
    except ValueError as exc:  # a bad EVOKERNEL_LLM_* value or price file: not a flag's fault
        raise fail_usage(str(exc)) from None


def _refused_flag(models: list[str], settings: dict[str, Any]) -> str:
    """The flag whose value alone LLMOptions refuses (--model when every setting passes alone)."""
    from evokernel.llm import LLMOptions

    for name, value in settings.items():
        try:
            LLMOptions.from_specs(["openai:any"], **{name: value})
        except ValueError:
            return "--" + name.replace("_", "-")
    return "--model"
