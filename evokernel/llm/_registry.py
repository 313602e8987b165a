"""Provider registry: `"name:model"` specs resolved through entry points.

Providers are plugins in the `evokernel.providers` entry-point group, each a
lazy `"module:attr"` reference to a factory `factory(model, **options) ->
Provider` (an `evokernel._plugins.Registry`: runtime registrations first, then
entry points, then the built-in ones). A factory declares the run's settings it
takes (`PROVIDER_SETTINGS`: reasoning effort, thinking tokens, prompt caching,
the timeout) and the access arguments it takes (key, endpoint) as keyword
parameters of those names; it is given those and not the others, so the core
never asks which provider it is. Nothing is imported until a provider is asked
for, so `evokernel --help` never loads an SDK.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from evokernel._plugins import Registry

from ._access import ACCESS_ARGUMENTS
from ._types import LLMError, Provider

ENTRY_POINT_GROUP = "evokernel.providers"
# The LLMOptions settings any provider may take, each passed to the factories that name it.
PROVIDER_SETTINGS = ("timeout_s", "reasoning_effort", "thinking_tokens", "prompt_caching")

PROVIDERS: Registry[Callable[..., Provider]] = Registry(ENTRY_POINT_GROUP, {
    "openai": "evokernel.llm._providers:OpenAIProvider",
    "anthropic": "evokernel.llm._providers:AnthropicProvider",
    "dry-run": "evokernel.llm._providers:DryRunProvider",
}, what="provider")


def register_provider(name: str, factory: str | Callable[..., Provider]) -> None:
    """Add or replace a provider for this process (it wins over entry points): a factory or `"module:attr"`."""
    PROVIDERS.register(name, factory)


def unregister_provider(name: str) -> None:
    PROVIDERS.unregister(name)


def provider_names() -> list[str]:
    """Every provider name that `get_provider` would accept."""
    return PROVIDERS.names()


def parse_spec(spec: str) -> tuple[str, str]:
    """`"openai:gpt-5"` -> `("openai", "gpt-5")`. The model may contain colons."""
    name, sep, model = spec.partition(":")
    if not sep or not name or not model:
        raise ValueError(f"provider spec must look like 'PROVIDER:MODEL', got {spec!r}")
    return name, model


def get_provider(spec: str, **options: Any) -> Provider:
    """Build the provider named by `spec`; `options` go to its factory."""
    name, model = parse_spec(spec)

    def unknown(message: str) -> LLMError:
        return LLMError(message, provider=name, model=model, status="unknown_provider")

    factory = PROVIDERS.get(name, unknown)
    return factory(model, **accepted_options(factory, options))


def accepted_options(factory: Callable[..., Provider], options: dict[str, Any]) -> dict[str, Any]:
    """`options` without the access arguments (key, endpoint) and run settings (`PROVIDER_SETTINGS`)
    the factory does not take: a provider declares what it uses by naming it. A plugin without a
    key parameter finds its own credentials; any other option (`provider_options`) still reaches it."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable: give it everything
        return options
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return options
    optional = (*ACCESS_ARGUMENTS, *PROVIDER_SETTINGS)
    return {k: v for k, v in options.items() if k not in optional or k in params}
