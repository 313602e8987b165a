"""`LLMClient`: a provider plus retries, cost, an optional cache and logging.

Every call, failed ones included, is written through a `CallLog` (the memory
database in production), so any caller gets a complete record of what the
policy was asked and answered. Keys never reach that record: prompts, answers
and error messages are masked on the way in.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import replace
from typing import Any, Callable, Protocol, runtime_checkable

from ._prices import PriceTable
from ._prompts import Prompt
from ._registry import get_provider, parse_spec
from ._backoff import SharedBackoff, shared_backoff
from ._retry import RetryPolicy, call_with_retries
from ._secrets import logger, mask_obj, mask_secrets
from ._types import Completion, LLMError, Provider

DEFAULT_MAX_TOKENS = 8192
DEFAULT_TEMPERATURE = 0.7

# The fields of a Completion that a cache entry keeps; the rest describe the call.
_CACHED_FIELDS = ("text", "tokens_in", "tokens_out", "finish_reason", "truncated", "model", "latency_ms",
                  "reasoning", "reasoning_tokens", "cached_tokens_in", "cache_write_tokens")


@runtime_checkable
class CallLog(Protocol):
    """Where calls are recorded and cached; `memory_store.MemoryStore` is one."""

    def log_llm_call(
        self,
        *,
        provider: str,
        model: str,
        prompt: dict,
        response_text: str | None,
        tokens_in: int | None,
        tokens_out: int | None,
        cost_usd: float | None,
        latency_ms: float | None,
        run_id: Any = None,
        step_id: Any = None,
        error: str | None = None,
    ) -> int: ...

    def llm_calls(self, *, run_id: Any = None, limit: int | None = None) -> list[dict]: ...

    def cache_get(self, request_hash: str) -> dict | None: ...

    def cache_put(self, request_hash: str, response: dict) -> None: ...


def request_hash(request: dict) -> str:
    """sha256 of the canonical JSON of a request: same request, same hash."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class LLMClient:
    """Calls one provider/model with retries, pricing, caching and logging.

    `cache=True` records every answer under the hash of its full request;
    `replay=True` also answers from those records when the same request comes
    again (no HTTP, no cost), which makes a rerun exact. Both need a `log`.
    `cache_salt` on a call separates requests that are meant to differ (e.g.
    several samples of one prompt).
    """

    def __init__(
        self,
        provider: Provider,
        *,
        provider_name: str,
        model: str,
        log: CallLog | None = None,
        retry: RetryPolicy | None = None,
        prices: PriceTable | None = None,
        cache: bool = False,
        replay: bool = False,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        rng: random.Random | None = None,
        backoff: SharedBackoff | None = None,
    ) -> None:
        if (cache or replay) and log is None:
            raise ValueError("cache and replay need a log (a MemoryStore) to keep answers in")
        self.provider = provider
        self.provider_name = provider_name
        self.model = model
        self.log = log
        self.retry = retry or RetryPolicy()
        self.prices = prices or PriceTable()
        self.cache = cache or replay
        self.replay = replay
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._rng = rng or random.Random()
        # Concurrent calls share one pause per provider: a 429 slows them all (see _backoff).
        self.backoff = backoff or shared_backoff(provider_name)

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        provider_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> "LLMClient":
        """`LLMClient.from_spec("openai:gpt-5", log=store)`."""
        name, model = parse_spec(spec)
        provider = get_provider(spec, **(provider_options or {}))
        return cls(provider, provider_name=name, model=model, **kwargs)

    @property
    def spec(self) -> str:
        return f"{self.provider_name}:{self.model}"

    def ask(self, prompt: Prompt, **kwargs: Any) -> Completion:
        """Send a built prompt; its report goes into the log beside it."""
        extra = {"report": prompt.report.as_dict()} if prompt.report else None
        return self.complete(prompt.messages, system=prompt.system, log_extra=extra, **kwargs)

    def complete(
        self,
        messages: list[dict],
        *,
        system: str = "",
        max_tokens: int | None = None,
        temperature: float | None = None,
        run_id: Any = None,
        step_id: Any = None,
        cache_salt: str | None = None,
        log_extra: dict | None = None,
        annotate: Callable[[Completion], dict] | None = None,
    ) -> Completion:
        """One call. `annotate(completion)` runs before the call is logged and its
        dict is logged with it (the policy records its parse decisions this way)."""
        params = {
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
        }
        request: dict[str, Any] = {
            "provider": self.provider_name,
            "model": self.model,
            "system": system,
            "messages": messages,
            "params": params,
        }
        if cache_salt is not None:
            request["salt"] = cache_salt
        key = request_hash(request)
        record = {"system": system, "messages": messages, "params": params, "request_hash": key}
        if log_extra:
            record.update(log_extra)

        if self.replay:
            hit = self._cache_get(key)
            if hit is not None:
                completion = Completion(
                    **{f: hit.get(f) for f in _CACHED_FIELDS}, cost_usd=0.0, cached=True, attempts=0
                )
                call_id = self._log(record | {"cache_hit": True}, completion, run_id, step_id, annotate=annotate)
                return replace(completion, call_id=call_id)

        start = time.perf_counter()
        try:
            def send() -> Completion:
                self.backoff.wait()
                return self.provider.complete(
                    list(messages),
                    system=system,
                    max_tokens=params["max_tokens"],
                    temperature=params["temperature"],
                )

            completion, attempts = call_with_retries(
                send,
                policy=self.retry,
                provider=self.provider_name,
                model=self.model,
                rng=self._rng,
                sleep=self.backoff.sleep,
            )
        except LLMError as exc:
            elapsed_ms = (time.perf_counter() - start) * 1000.0
            self._log(
                record | {"attempts": exc.attempts},
                None,
                run_id,
                step_id,
                error=str(exc),
                latency_ms=elapsed_ms,
            )
            raise

        cost = None
        for model in dict.fromkeys((self.model, completion.model)):
            cost = self.prices.cost_usd(
                self.provider_name, model, completion.tokens_in, completion.tokens_out,
                cached_in=completion.cached_tokens_in, cache_write=completion.cache_write_tokens,
            )
            if cost is not None:
                break
        completion = replace(completion, cost_usd=cost, attempts=attempts)
        if self.cache:
            self._cache_put(key, {f: getattr(completion, f) for f in _CACHED_FIELDS})
        call_id = self._log(record | {"attempts": attempts}, completion, run_id, step_id, annotate=annotate)
        return replace(completion, call_id=call_id)

    def _cache_get(self, key: str) -> dict | None:
        return self.log.cache_get(key) if self.log is not None else None

    def _cache_put(self, key: str, response: dict) -> None:
        if self.log is not None:
            self.log.cache_put(key, mask_obj(response))

    def _log(
        self,
        record: dict,
        completion: Completion | None,
        run_id: Any,
        step_id: Any,
        *,
        error: str | None = None,
        latency_ms: float | None = None,
        annotate: Callable[[Completion], dict] | None = None,
    ) -> int | None:
        if completion is not None:
            record = record | {
                "finish_reason": completion.finish_reason,
                "truncated": completion.truncated,
                "response_model": completion.model,
            }
            # The reasoning is kept with the call (its tokens are in tokens_out), apart from the answer.
            for name in ("reasoning", "reasoning_tokens", "cached_tokens_in", "cache_write_tokens"):
                if getattr(completion, name) is not None:
                    record[name] = getattr(completion, name)
            if annotate is not None:
                try:
                    record = record | annotate(completion)
                except Exception as exc:  # a bug in the annotation must not lose a paid answer
                    logger.error("annotating the LLM call failed: %s", exc)
            if completion.tokens_in is None or completion.tokens_out is None:
                # Some local servers omit usage; the log's token columns are
                # required, so 0 goes there and this flag says it is unknown.
                record["usage_missing"] = True
        if self.log is None:
            return None
        try:
            return self.log.log_llm_call(
                provider=self.provider_name,
                model=self.model,
                prompt=mask_obj(record),
                # A failed call produced no answer and was billed no tokens;
                # "" and 0 say so without NULLs in the log's required columns.
                response_text=mask_secrets(completion.text) if completion else "",
                tokens_in=(completion.tokens_in or 0) if completion else 0,
                tokens_out=(completion.tokens_out or 0) if completion else 0,
                cost_usd=completion.cost_usd if completion else None,
                latency_ms=completion.latency_ms if completion else latency_ms,
                run_id=run_id,
                step_id=step_id,
                error=mask_secrets(error) if error else None,
            )
        except Exception as exc:
            # Losing a paid answer because the log write failed would be worse
            # than a gap in the log; say so loudly and carry on.
            logger.error("could not log LLM call to %s: %s", type(self.log).__name__, exc)
            return None

