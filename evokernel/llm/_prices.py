"""Cost of a call from a price table, in USD per million tokens.

The built-in entries are list prices as published when this was written;
prices change, so users override or extend them with a JSON file (the CLI
loads the one `$EVOKERNEL_PRICES` names):

    {"gpt-5": {"input": 1.25, "output": 10.0, "cached_input": 0.125},
     "openai:qwen2.5-coder": [0, 0]}

`cached_input` prices tokens read from the provider's prompt cache and
`cache_write` tokens written to it (Anthropic); a model without them pays the
full input price for those tokens, an upper bound. Keys are `model` or `provider:model` (the latter wins). A dated snapshot
(`claude-sonnet-4-20250514`, `gpt-4o-2024-08-06`) matches its base name. An
unknown model costs None, never a guess: a wrong number in a report is worse
than a missing one.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

# (input, output, cached input, cache write) USD per 1M tokens; None: not offered or not known.
# Anthropic bills a cache read at 0.1x and a five-minute cache write at 1.25x the input price.
BUILTIN_PRICES: dict[str, tuple[float, ...]] = {
    "gpt-4o": (2.50, 10.00, 1.25),
    "gpt-4o-mini": (0.15, 0.60, 0.075),
    "gpt-4.1": (2.00, 8.00, 0.50),
    "gpt-4.1-mini": (0.40, 1.60, 0.10),
    "gpt-4.1-nano": (0.10, 0.40, 0.025),
    "o3": (2.00, 8.00, 0.50),
    "o3-mini": (1.10, 4.40, 0.55),
    "o4-mini": (1.10, 4.40, 0.275),
    "gpt-5": (1.25, 10.00, 0.125),
    "gpt-5-mini": (0.25, 2.00, 0.025),
    "gpt-5-nano": (0.05, 0.40, 0.005),
    "claude-opus-4": (15.00, 75.00, 1.50, 18.75),
    "claude-opus-4-1": (15.00, 75.00, 1.50, 18.75),
    "claude-sonnet-4": (3.00, 15.00, 0.30, 3.75),
    "claude-sonnet-4-5": (3.00, 15.00, 0.30, 3.75),
    "claude-haiku-4-5": (1.00, 5.00, 0.10, 1.25),
    "claude-3-5-haiku": (0.80, 4.00, 0.08, 1.00),
    "claude-3-7-sonnet": (3.00, 15.00, 0.30, 3.75),
}

_SNAPSHOT_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


@dataclass(frozen=True)
class Price:
    """USD per million tokens. Without a cached price, cached tokens cost the
    full input price: an upper bound, never an invented discount."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    @classmethod
    def of(cls, value: "Price | tuple | list") -> "Price":
        if isinstance(value, Price):
            return value
        return cls(*(float(v) if v is not None else None for v in value))  # type: ignore[arg-type]


def _parse_entry(key: str, value: object) -> Price:
    if isinstance(value, dict):
        try:
            return Price(float(value["input"]), float(value["output"]),
                         _opt(value.get("cached_input")), _opt(value.get("cache_write")))
        except KeyError as exc:
            raise ValueError(f"price for {key!r} needs 'input' and 'output'") from exc
    if isinstance(value, (list, tuple)) and 2 <= len(value) <= 4:
        return Price.of(value)
    raise ValueError(
        f"price for {key!r} must be {{'input':..,'output':..[,'cached_input':..,'cache_write':..]}} or [in, out]"
    )


def _opt(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


@dataclass(frozen=True)
class PriceTable:
    prices: dict[str, Price | tuple] = field(default_factory=lambda: dict(BUILTIN_PRICES))

    @classmethod
    def load(cls, path: str | os.PathLike | None = None) -> "PriceTable":
        """Built-in prices with the JSON file at `path` on top; ValueError naming the file
        when it cannot be read or is not a price table."""
        prices: dict[str, Price | tuple] = dict(BUILTIN_PRICES)
        if path:
            try:
                data = json.loads(Path(path).read_text())
            except (OSError, ValueError) as exc:
                raise ValueError(f"{path}: not a readable JSON price table ({exc})") from None
            if not isinstance(data, dict):
                raise ValueError(f"{path}: expected a JSON object of model -> price")
            prices.update({k: _parse_entry(k, v) for k, v in data.items()})
        return cls(prices=prices)

    def lookup(self, provider: str, model: str) -> Price | None:
        base = _SNAPSHOT_SUFFIX.sub("", model)
        for key in (f"{provider}:{model}", model, f"{provider}:{base}", base):
            if key in self.prices:
                return Price.of(self.prices[key])
        return None

    def cost_usd(
        self,
        provider: str,
        model: str,
        tokens_in: int | None,
        tokens_out: int | None,
        *,
        cached_in: int | None = None,
        cache_write: int | None = None,
    ) -> float | None:
        """Cost of one call; `cached_in` and `cache_write` are parts of `tokens_in`."""
        price = self.lookup(provider, model)
        if price is None or tokens_in is None or tokens_out is None:
            return None
        read, written = cached_in or 0, cache_write or 0
        plain = max(0, tokens_in - read - written)
        total = (
            plain * price.input
            + read * (price.input if price.cached_input is None else price.cached_input)
            + written * (price.input if price.cache_write is None else price.cache_write)
            + tokens_out * price.output
        )
        return total / 1_000_000
