"""The built-in providers, through the official SDKs.

SDKs are imported inside the constructors: they cost a few hundred ms to import
and the CLI must start instantly. Their own retries are switched off
(`max_retries=0`) so that `LLMClient`'s policy is the only one, and every SDK
exception is translated into `ProviderCallError` here, at the edge.
"""

from __future__ import annotations

import inspect
import json
import re
import time
from typing import Any, Callable

from ._types import Completion, LLMError, ProviderCallError

DEFAULT_TIMEOUT_S = 600.0  # a reasoning model writing a long kernel can take minutes

# Local servers (vLLM, Ollama, llama.cpp) ignore the key but the SDK insists on one.
_DUMMY_KEY = "no-key-needed"

# OpenAI's reasoning models reject any temperature but the default.
_OPENAI_REASONING = re.compile(r"^(o\d|gpt-5)")


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


def _dummy_key_or_fail(provider: str, model: str, base_url: str | None, allow_no_key: bool) -> str:
    """The placeholder key for keyless servers, or LLMError when none is allowed.

    A keyless call is fine against a base URL (local servers ignore the key) or
    when the caller allows it (the CLI: `EVOKERNEL_<PROVIDER>_ALLOW_NO_KEY=1`);
    against the official API it can only end in a 401, so say what is missing
    before any request.
    """
    upper = provider.upper()
    if base_url or allow_no_key:
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


def _text_of(content: Any) -> str:
    """A message's content as plain text: parts (Anthropic-style blocks) joined."""
    if isinstance(content, str):
        return content
    return "\n\n".join(part.get("text", "") for part in content if isinstance(part, dict))


def _plain_messages(messages: list[dict]) -> list[dict]:
    """Messages with string content, for servers that take nothing else."""
    return [{"role": m["role"], "content": _text_of(m["content"])} for m in messages]


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) else None


class OpenAIProvider:
    """OpenAI chat completions, or any server speaking that wire format.

    `base_url` points it at vLLM, Ollama, llama.cpp or a gateway. The key is
    `api_key` (the CLI reads `OPENAI_API_KEY` and `OPENAI_BASE_URL`); without
    one, a dummy key is used when a base URL is set or `allow_no_key` says so.

    `reasoning_effort` goes to reasoning models as the SDK's parameter of that
    name. OpenAI caches prompt prefixes by itself; what keeps it hitting is a
    prefix that does not change between calls (the prompt builder puts the
    stable parts first) and, on the official API, `prompt_cache_key`, which
    routes requests with the same prefix together. A separate reasoning field
    (`reasoning_content` from vLLM and DeepSeek, `reasoning` from others) is
    read back into `Completion.reasoning`.
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        allow_no_key: bool = False,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_tokens_param: str | None = None,
        send_temperature: bool | None = None,
        reasoning_effort: str | None = None,
        prompt_cache_key: bool | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url or None
        key = api_key or _dummy_key_or_fail(self.name, model, self.base_url, allow_no_key)
        # The official API wants `max_completion_tokens` (reasoning models reject
        # `max_tokens`); many local servers only know `max_tokens`.
        self.max_tokens_param = max_tokens_param or (
            "max_tokens" if self.base_url else "max_completion_tokens"
        )
        if send_temperature is None:
            send_temperature = bool(self.base_url) or not _OPENAI_REASONING.match(model)
        self.send_temperature = send_temperature and reasoning_effort is None
        self.reasoning_effort = reasoning_effort
        # Local servers may reject parameters they do not know; the key only helps OpenAI's routing.
        self.prompt_cache_key = (not self.base_url) if prompt_cache_key is None else prompt_cache_key

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
        plain = _plain_messages(messages)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, *plain] if system else plain,
            self.max_tokens_param: max_tokens,
        }
        if self.send_temperature:
            kwargs["temperature"] = temperature
        if self.reasoning_effort:
            kwargs["reasoning_effort"] = self.reasoning_effort
        if self.prompt_cache_key:
            kwargs["prompt_cache_key"] = _cache_key(system, messages)
        response, latency_ms = _timed_call(
            self._sdk, lambda: self._client.chat.completions.create(**kwargs)
        )
        choices = getattr(response, "choices", None)
        if not choices:
            raise ProviderCallError(
                "response has no choices", status="malformed_response", retryable=False
            )
        choice = choices[0]
        message = choice.message
        usage = getattr(response, "usage", None)  # some local servers omit it
        prompt_details = getattr(usage, "prompt_tokens_details", None)
        out_details = getattr(usage, "completion_tokens_details", None)
        reasoning = None
        if message is not None:
            reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
        finish = choice.finish_reason
        return Completion(
            text=(message.content if message else None) or "",
            tokens_in=getattr(usage, "prompt_tokens", None),
            tokens_out=getattr(usage, "completion_tokens", None),
            finish_reason=finish,
            truncated=finish == "length",
            model=getattr(response, "model", None) or self.model,
            latency_ms=latency_ms,
            reasoning=reasoning if isinstance(reasoning, str) and reasoning else None,
            reasoning_tokens=_int_or_none(getattr(out_details, "reasoning_tokens", None)),
            cached_tokens_in=_int_or_none(getattr(prompt_details, "cached_tokens", None)),
        )


def _cache_key(system: str, messages: list[dict]) -> str:
    """A routing key from the cached prefix: the system prompt and the first marked part."""
    import hashlib

    prefix = [system]
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            for part in content:
                prefix.append(part.get("text", ""))
                if part.get("cache_control"):
                    return "evokernel-" + hashlib.sha256("\0".join(prefix).encode()).hexdigest()[:32]
        break
    return "evokernel-" + hashlib.sha256(system.encode()).hexdigest()[:32]


class AnthropicProvider:
    """Anthropic messages API: `api_key` (or `auth_token`) and `base_url`, which the
    CLI reads from `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN` and `ANTHROPIC_BASE_URL`.

    Prompt caching: the system prompt goes as a text block marked
    `cache_control`, and message parts the prompt builder marked (the task's
    stable prefix; in a multi-turn conversation, the last earlier turn) keep
    their marks, so the repeated prefix is billed at the cache-read price.
    `thinking_tokens` turns on extended thinking with that budget; the answer
    keeps its own `max_tokens` on top. Thinking blocks come back as
    `Completion.reasoning`.
    """

    name = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        auth_token: str | None = None,
        base_url: str | None = None,
        allow_no_key: bool = False,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        thinking_tokens: int | None = None,
        prompt_caching: bool = True,
    ) -> None:
        self.model = model
        self.base_url = base_url or None
        key, token = api_key, auth_token
        if not key and not token:
            key = _dummy_key_or_fail(self.name, model, self.base_url, allow_no_key)
        if thinking_tokens is not None and thinking_tokens < 1024:
            raise LLMError(f"thinking_tokens must be at least 1024 (Anthropic's minimum), got {thinking_tokens}",
                           provider=self.name, model=model, status="bad_option")
        self.thinking_tokens = thinking_tokens
        self.prompt_caching = prompt_caching

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

    def _messages(self, messages: list[dict]) -> list[dict]:
        out = []
        for m in messages:
            content = m["content"]
            if isinstance(content, list):
                content = [
                    {k: v for k, v in part.items() if self.prompt_caching or k != "cache_control"}
                    for part in content
                ]
            out.append({"role": m["role"], "content": content})
        return out

    def complete(
        self, messages: list[dict], *, system: str, max_tokens: int, temperature: float
    ) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": self._messages(messages),
            "max_tokens": max_tokens + (self.thinking_tokens or 0),
        }
        if system:
            kwargs["system"] = (
                [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
                if self.prompt_caching else system
            )
        if self.thinking_tokens:
            # Extended thinking allows no temperature but the default.
            kwargs["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_tokens}
        elif self._accepts_temperature:
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
        thinking = "\n\n".join(
            getattr(block, "thinking", "") or "" for block in content if getattr(block, "type", "") == "thinking"
        )
        usage = getattr(response, "usage", None)
        plain_in = _int_or_none(getattr(usage, "input_tokens", None))
        read = _int_or_none(getattr(usage, "cache_read_input_tokens", None)) or 0
        written = _int_or_none(getattr(usage, "cache_creation_input_tokens", None)) or 0
        stop = getattr(response, "stop_reason", None)
        return Completion(
            text=text,
            # Anthropic's input_tokens leaves out what was read from or written to
            # the cache; tokens_in is the whole prompt, as for every provider.
            tokens_in=None if plain_in is None else plain_in + read + written,
            tokens_out=getattr(usage, "output_tokens", None),
            finish_reason=stop,
            truncated=stop == "max_tokens",
            model=getattr(response, "model", None) or self.model,
            latency_ms=latency_ms,
            reasoning=thinking or None,
            cached_tokens_in=read if usage is not None else None,
            cache_write_tokens=written if usage is not None else None,
        )


DRY_RUN_ANSWER = "(dry run: no model was called; the prompt is in the log, `evokernel logs --call ID`)"


class DryRunProvider:
    """Calls no model. `--model dry-run:gpt-5` runs a step as far as the request: the
    prompt is built for that model's tokenizer and logged as it would be sent, and the
    answer says that nothing was called (so the step records no candidate)."""

    name = "dry-run"

    def __init__(self, model: str, **_options: Any) -> None:
        self.model = model

    def complete(
        self, messages: list[dict], *, system: str, max_tokens: int, temperature: float
    ) -> Completion:
        return Completion(text=DRY_RUN_ANSWER, tokens_in=0, tokens_out=0, finish_reason="stop", truncated=False,
                          model=self.model, latency_ms=0.0)
