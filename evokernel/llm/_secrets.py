"""Masking of API keys in anything that is logged or stored.

Keys only ever come from the environment, but they leak back through error
messages (some servers echo the bad key), repr()s of clients and headers. Every
text the layer writes to the database or a log passes through `mask_secrets`.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

# Order matters: the Anthropic prefix is a special case of the OpenAI one.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_\-]{6,}"), "sk-ant-***"),
    (re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{6,}"), "sk-***"),
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*"), r"\1***"),
    (re.compile(r"(?i)((?:x-api-key|api[_-]?key|auth[_-]?token)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{8,}"), r"\1***"),
)

# Keys of local servers need not look like `sk-...`; mask their exact values too.
_KEY_ENV_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


def mask_secrets(text: str) -> str:
    """Return `text` with anything key-like replaced by a masked stub."""
    if not text:
        return text
    for name in _KEY_ENV_VARS:
        value = os.environ.get(name)
        # Short values ("x", "none") are dummies for local servers and would
        # otherwise mask ordinary words all over the prompt.
        if value and len(value) >= 8 and value in text:
            stub = "sk-ant-***" if value.startswith("sk-ant-") else (
                "sk-***" if value.startswith("sk-") else "***"
            )
            text = text.replace(value, stub)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def mask_obj(value: Any) -> Any:
    """`mask_secrets` applied to every string inside dicts, lists and tuples."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, dict):
        return {k: mask_obj(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(mask_obj(v) for v in value)
    return value


class MaskSecretsFilter(logging.Filter):
    """A logging filter that masks keys in the formatted message."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = mask_secrets(record.getMessage())
        record.args = None
        return True


logger = logging.getLogger("evokernel.llm")
# The layer logs through this one logger, so one filter covers all of it.
# Adding a filter to our own logger is the only thing done at import time.
if not any(isinstance(f, MaskSecretsFilter) for f in logger.filters):
    logger.addFilter(MaskSecretsFilter())
