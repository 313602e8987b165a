"""The LLM policy's settings as one frozen record, and model specs with weights.

`--model openai:gpt-5@0.7 --model anthropic:claude-sonnet-4-5@0.3` is an
ensemble (as OpenEvolve offers): each step draws one model by weight, and
each call is logged with the model that made it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ._access import ProviderAccess
from ._prices import PriceTable
from ._registry import PROVIDER_SETTINGS, parse_spec
from ._retry import RetryPolicy

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
MIN_THINKING_TOKENS = 1024  # Anthropic's smallest extended-thinking budget


@dataclass(frozen=True)
class ModelChoice:
    spec: str  # "PROVIDER:MODEL"
    weight: float = 1.0

    @classmethod
    def parse(cls, text: str) -> "ModelChoice":
        """`openai:gpt-5` or `openai:gpt-5@0.7` (the weight after the last `@`)."""
        spec, weight = text, 1.0
        head, sep, tail = text.rpartition("@")
        if sep:
            try:
                spec, weight = head, float(tail)
            except ValueError:
                spec = text  # an '@' that is part of the model name
        parse_spec(spec)  # raises ValueError for a malformed spec
        if not weight > 0:
            raise ValueError(f"a model's weight must be positive, got {text!r}")
        return cls(spec, weight)

    def __str__(self) -> str:
        return self.spec if self.weight == 1.0 else f"{self.spec}@{self.weight:g}"


@dataclass(frozen=True)
class LLMOptions:
    """How the LLM policy prompts and calls its model(s).

    `context_tokens` is the prompt's token budget (counted with the model's
    tokenizer); `multi_turn` continues one conversation per task instead of a
    fresh prompt per step (the default keeps values comparable with the
    paper); `reasoning_effort`, `thinking_tokens` (extended thinking with that
    budget) and `prompt_caching` (the stable prefix marked for a cache) go to every
    provider whose factory takes them by name: OpenAI's takes the effort,
    Anthropic's the thinking budget and caching, a plugin what it declares.

    `access` (each provider's key and endpoint), `retry` and `prices` say how to
    call, not what a run computes: the caller resolves them (the CLI from its
    environment, `evokernel.llm.from_environment`), and `to_dict` leaves them out,
    so no key reaches a run's record and a resumed run may use other ones.
    """

    models: tuple[ModelChoice, ...]
    context_tokens: int = 24_000
    multi_turn: bool = False
    reasoning_effort: str | None = None
    thinking_tokens: int | None = None
    max_tokens: int = 8192
    temperature: float = 0.7
    prompt_caching: bool = True
    cache: bool = False  # record every answer under its request's hash
    replay: bool = False  # answer repeated requests from those records
    timeout_s: float | None = None
    provider_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # per provider name, for plugins
    access: Mapping[str, ProviderAccess] = field(default_factory=dict, repr=False, metadata={"how": True})
    retry: RetryPolicy = field(default_factory=RetryPolicy, metadata={"how": True})
    prices: PriceTable | None = field(default=None, repr=False, metadata={"how": True})  # None: the built-in table

    def __post_init__(self) -> None:
        if not self.models:
            raise ValueError("the LLM policy needs at least one model (PROVIDER:MODEL)")
        if self.context_tokens < 256:
            raise ValueError(f"context tokens must be at least 256, got {self.context_tokens}")
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise ValueError(f"reasoning effort must be one of {', '.join(REASONING_EFFORTS)}, "
                             f"got {self.reasoning_effort!r}")
        if self.thinking_tokens is not None and self.thinking_tokens < MIN_THINKING_TOKENS:
            raise ValueError(f"thinking tokens must be at least {MIN_THINKING_TOKENS}, got {self.thinking_tokens}")
        if self.max_tokens < 1:
            raise ValueError(f"max tokens must be positive, got {self.max_tokens}")

    @classmethod
    def from_specs(cls, specs: Sequence[str] | str, **kwargs: Any) -> "LLMOptions":
        if isinstance(specs, str):
            specs = [specs]
        return cls(models=tuple(ModelChoice.parse(s) for s in specs), **kwargs)

    def to_dict(self) -> dict[str, Any]:
        """What the options decide, for a run's record: without access, retry and prices."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self) if not f.metadata.get("how")}

    def options_for(self, provider: str) -> dict[str, Any]:
        """Keyword arguments for the provider factory named `provider`: the run's settings that are
        set (`PROVIDER_SETTINGS`; the registry gives each factory the ones it declares), its access
        and its own `provider_options`."""
        access = self.access.get(provider)
        settings = {name: value for name in PROVIDER_SETTINGS if (value := getattr(self, name)) is not None}
        return {**settings, **(access.arguments() if access else {}), **self.provider_options.get(provider, {})}

    @property
    def label(self) -> str:
        """The policy's name: the model, or the ensemble with its weights."""
        if len(self.models) == 1:
            return self.models[0].spec
        return "ensemble(" + ", ".join(f"{m.spec}@{m.weight:g}" for m in self.models) + ")"


def _plain(value: Any) -> Any:
    """A field's value as JSON will hold it (lists, not tuples: a resumed run compares the two)."""
    if dataclasses.is_dataclass(value):
        return _plain(dataclasses.asdict(value))
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
