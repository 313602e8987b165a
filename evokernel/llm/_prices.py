"""Cost of a call from a price table, in USD per million tokens.

The built-in entries are list prices as published when this was written;
prices change, so users override or extend them with a JSON file named by
`$EVOKERNEL_PRICES`:

    {"gpt-5": {"input": 1.25, "output": 10.0}, "openai:qwen2.5-coder": [0, 0]}

Keys are `model` or `provider:model` (the latter wins). A dated snapshot
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

# (input, output) USD per 1M tokens.
BUILTIN_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "claude-opus-4": (15.00, 75.00),
    "claude-opus-4-1": (15.00, 75.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-7-sonnet": (3.00, 15.00),
}

_SNAPSHOT_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def _parse_entry(key: str, value: object) -> tuple[float, float]:
    if isinstance(value, dict):
        return float(value["input"]), float(value["output"])
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return float(value[0]), float(value[1])
    raise ValueError(f"price for {key!r} must be {{'input':..,'output':..}} or [in, out]")


@dataclass(frozen=True)
class PriceTable:
    prices: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(BUILTIN_PRICES))

    @classmethod
    def load(cls, path: str | os.PathLike | None = None) -> "PriceTable":
        """Built-in prices with the JSON file at `path` (or `$EVOKERNEL_PRICES`) on top."""
        prices = dict(BUILTIN_PRICES)
        path = path or os.environ.get("EVOKERNEL_PRICES")
        if path:
            data = json.loads(Path(path).read_text())
            if not isinstance(data, dict):
                raise ValueError(f"{path}: expected a JSON object of model -> price")
            prices.update({k: _parse_entry(k, v) for k, v in data.items()})
        return cls(prices=prices)

    def lookup(self, provider: str, model: str) -> tuple[float, float] | None:
        base = _SNAPSHOT_SUFFIX.sub("", model)
        for key in (f"{provider}:{model}", model, f"{provider}:{base}", base):
            if key in self.prices:
                return self.prices[key]
        return None

    def cost_usd(
        self, provider: str, model: str, tokens_in: int | None, tokens_out: int | None
    ) -> float | None:
        price = self.lookup(provider, model)
        if price is None or tokens_in is None or tokens_out is None:
            return None
        return (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
