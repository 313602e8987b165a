"""The plain data and errors shared by the LLM layer.

Kept free of SDK imports so that the prompt builder, the parser and the CLI can
use them without paying for `openai`/`anthropic` at import time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ._secrets import mask_secrets


@dataclass(frozen=True)
class Completion:
    """One answer of the model, as the provider saw it.

    `truncated` is the provider-neutral reading of `finish_reason` ("length" for
    OpenAI, "max_tokens" for Anthropic): the parser needs it to tell a cut-off
    answer from one that simply has no code.

    `reasoning` is the provider's separate reasoning (OpenAI-compatible
    servers' `reasoning_content`/`reasoning`, Anthropic's thinking blocks):
    kept for the record, never searched for code unless the answer holds none.
    `tokens_out` includes reasoning tokens (they are billed);
    `reasoning_tokens` says how many, where the provider reports it.
    `cached_tokens_in` is the part of `tokens_in` read from the provider's
    prompt cache and `cache_write_tokens` the part written to it (Anthropic
    bills both apart from plain input). The fields from `cost_usd` on are
    filled by `LLMClient`, not by providers.
    """

    text: str
    tokens_in: int | None
    tokens_out: int | None
    finish_reason: str | None
    truncated: bool
    model: str
    latency_ms: float
    reasoning: str | None = None
    reasoning_tokens: int | None = None
    cached_tokens_in: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | None = None
    cached: bool = False
    attempts: int = 1
    call_id: int | None = None


@runtime_checkable
class Provider(Protocol):
    """A chat model. One method, so a plugin is a class of a dozen lines.

    `messages` are `{"role": "user"|"assistant", "content": str}` dicts; the
    system prompt travels apart because the two wire formats place it apart.
    A provider raises `ProviderCallError` for anything that went wrong on the
    wire; it never retries (the client does).
    """

    def complete(
        self, messages: list[dict], *, system: str, max_tokens: int, temperature: float
    ) -> Completion: ...


class ProviderCallError(Exception):
    """One failed request, translated out of the SDK's exception zoo.

    `status` is the HTTP status when there was one, else a word ("timeout",
    "connection", "malformed_response"); `retryable` says whether sending the
    same request again could succeed; `retry_after_s` carries the server's hint.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | str | None,
        retryable: bool,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(mask_secrets(message))
        self.status = status
        self.retryable = retryable
        self.retry_after_s = retry_after_s


class LLMError(RuntimeError):
    """The call failed for good: configuration, or every retry spent.

    The message names provider, model, status and attempts so that a log line
    alone is enough to tell a bad key from an overloaded server.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str,
        status: int | str | None = None,
        attempts: int = 0,
    ) -> None:
        self.provider = provider
        self.model = model
        self.status = status
        self.attempts = attempts
        detail = f"{provider}:{model}"
        if status is not None:
            detail += f", status {status}"
        if attempts:
            detail += f", {attempts} attempt{'s' if attempts != 1 else ''}"
        super().__init__(mask_secrets(f"{message} [{detail}]"))
