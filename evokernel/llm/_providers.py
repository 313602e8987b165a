"""The built-in providers, through the official SDKs.

SDKs are imported inside the constructors: they cost a few hundred ms to import
and the CLI must start instantly. Their own retries are switched off
(`max_retries=0`) so that `LLMClient`'s policy is the only one, and every SDK
exception is translated into `ProviderCallError` here, at the edge.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import time
from typing import Any, Callable

from ._types import Completion, LLMError, ProviderCallError

DEFAULT_TIMEOUT_S = 600.0  # a reasoning model writing a long kernel can take minutes

# Local servers (vLLM, Ollama, llama.cpp) ignore the key but the SDK insists on one.
_DUMMY_KEY = "no-key-needed"

# OpenAI's reasoning models reject any temperature but the default.
_OPENAI_REASONING = re.compile(r"^(o\d|gpt-5)")


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    raw = headers.get("retry-after")
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except ValueError:
        return None  # an HTTP date; rare enough to ignore


def _dummy_key_or_fail(provider: str, model: str, base_url: str | None) -> str:
    """The placeholder key for keyless servers, or LLMError when none is allowed.

    A keyless call is fine against a base URL (local servers ignore the key) or
    when `EVOKERNEL_<PROVIDER>_ALLOW_NO_KEY` says so; against the official API
    it can only end in a 401, so say what is missing before any request.
    """
    upper = provider.upper()
    if base_url or _truthy(os.environ.get(f"EVOKERNEL_{upper}_ALLOW_NO_KEY")):
        return _DUMMY_KEY
    raise LLMError(
        f"{upper}_API_KEY is not set (for a local or compatible server set "
        f"{upper}_BASE_URL, or EVOKERNEL_{upper}_ALLOW_NO_KEY=1)",
        provider=provider,
        model=model,
        status="missing_key",
    )


def _timed_call(sdk: Any, fn: Callable[[], Any]) -> tuple[Any, float]:
    """Run one SDK request; return the response and its latency in ms."""
    start = time.perf_counter()
    try:
        response = fn()
    except Exception as exc:
        translated = _translate(sdk, exc)
        if translated is None:
            raise
        raise translated from exc
    return response, (time.perf_counter() - start) * 1000.0


def _is_retryable_status(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


def _translate(sdk: Any, exc: BaseException) -> ProviderCallError | None:
    """Map an SDK (or decoding) exception to ProviderCallError; None if foreign."""
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        return ProviderCallError(
            str(exc),
            status=status,
            retryable=_is_retryable_status(status),
            retry_after_s=_retry_after(exc),
        )
    if isinstance(exc, sdk.APITimeoutError):  # subclass of APIConnectionError: test first
        return ProviderCallError(str(exc), status="timeout", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderCallError(str(exc), status="connection", retryable=True)
    if isinstance(exc, (json.JSONDecodeError, sdk.APIResponseValidationError)):
        # A server that answers 200 with a broken body is misconfigured (wrong
        # base URL, a proxy's HTML page); the same request will not fix it.
        return ProviderCallError(
            f"malformed response body: {exc}", status="malformed_response", retryable=False
        )
    return None


class OpenAIProvider:
    """OpenAI chat completions, or any server speaking that wire format.

    `OPENAI_BASE_URL` points it at vLLM, Ollama, llama.cpp or a gateway. The
    key comes from `OPENAI_API_KEY`; without one, a dummy key is used when a
    base URL is set or `EVOKERNEL_OPENAI_ALLOW_NO_KEY=1`.
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_tokens_param: str | None = None,
        send_temperature: bool | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = os.environ.get("OPENAI_API_KEY") or _dummy_key_or_fail(
            self.name, model, self.base_url
        )
        # The official API wants `max_completion_tokens` (reasoning models reject
        # `max_tokens`); many local servers only know `max_tokens`.
        self.max_tokens_param = max_tokens_param or (
            "max_tokens" if self.base_url else "max_completion_tokens"
        )
        if send_temperature is None:
            send_temperature = bool(self.base_url) or not _OPENAI_REASONING.match(model)
        self.send_temperature = send_temperature

        import openai  # lazy: see module docstring

        self._sdk = openai
        self._client = openai.OpenAI(
            api_key=key, base_url=self.base_url, timeout=timeout_s, max_retries=0
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider(model={self.model!r}, base_url={self.base_url!r})"

    def complete(
        self, messages: list[dict], *, system: str, max_tokens: int, temperature: float
    ) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, *messages]
            if system
            else list(messages),
            self.max_tokens_param: max_tokens,
        }
        if self.send_temperature:
            kwargs["temperature"] = temperature
        response, latency_ms = _timed_call(
            self._sdk, lambda: self._client.chat.completions.create(**kwargs)
        )
        choices = getattr(response, "choices", None)
        if not choices:
            raise ProviderCallError(
                "response has no choices", status="malformed_response", retryable=False
            )
        choice = choices[0]
        usage = getattr(response, "usage", None)  # some local servers omit it
        finish = choice.finish_reason
        return Completion(
            text=(choice.message.content if choice.message else None) or "",
            tokens_in=getattr(usage, "prompt_tokens", None),
            tokens_out=getattr(usage, "completion_tokens", None),
            finish_reason=finish,
            truncated=finish == "length",
            model=getattr(response, "model", None) or self.model,
            latency_ms=latency_ms,
        )


class AnthropicProvider:
    """Anthropic messages API. Key from `ANTHROPIC_API_KEY` (or
    `ANTHROPIC_AUTH_TOKEN`), endpoint from `ANTHROPIC_BASE_URL`."""

    name = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.model = model
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        key = os.environ.get("ANTHROPIC_API_KEY")
        token = os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if not key and not token:
            key = _dummy_key_or_fail(self.name, model, self.base_url)

        import anthropic  # lazy: see module docstring

        self._sdk = anthropic
        # Passing the credentials explicitly keeps the SDK from discovering
        # others (profiles, config files) behind the user's back.
        self._client = anthropic.Anthropic(
            api_key=key or None,
            auth_token=None if key else token,
            base_url=self.base_url,
            timeout=timeout_s,
            max_retries=0,
        )
        # Recent SDK releases dropped `temperature` from messages.create; we do
        # not smuggle it in through extra_body, since the API may reject it too.
        params = inspect.signature(self._client.messages.create).parameters
        self._accepts_temperature = "temperature" in params

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r}, base_url={self.base_url!r})"

    def complete(
        self, messages: list[dict], *, system: str, max_tokens: int, temperature: float
    ) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "max_tokens": max_tokens,
        }
        if system:
            kwargs["system"] = system
        if self._accepts_temperature:
            kwargs["temperature"] = temperature
        response, latency_ms = _timed_call(
            self._sdk, lambda: self._client.messages.create(**kwargs)
        )
        content = getattr(response, "content", None)
        if content is None:
            raise ProviderCallError(
                "response has no content", status="malformed_response", retryable=False
            )
        text = "".join(
            getattr(block, "text", "") for block in content if getattr(block, "type", "") == "text"
        )
        usage = getattr(response, "usage", None)
        stop = getattr(response, "stop_reason", None)
        return Completion(
            text=text,
            tokens_in=getattr(usage, "input_tokens", None),
            tokens_out=getattr(usage, "output_tokens", None),
            finish_reason=stop,
            truncated=stop == "max_tokens",
            model=getattr(response, "model", None) or self.model,
            latency_ms=latency_ms,
        )
