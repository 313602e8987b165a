"""Masking of API keys in anything that is logged or stored.

Keys come from the caller (the CLI reads them from the environment), but they leak back through error
messages (some servers echo the bad key), repr()s of clients and headers. Every
text the layer writes to the database or a log passes through `mask_secrets`.
"""

from __future__ import annotations

import logging

from typing import Any

# The patterns and the masking live in backends._sandbox (backends may not
# import evokernel), so executor verdicts and LLM logs are masked alike.
# Imported on first use: `import backends` loads torch, which `evokernel
# --help` and the LLM layer must not pay for up front.


def mask_secrets(text: str) -> str:
    """Return `text` with anything key-like replaced by a masked stub."""
    from backends._sandbox import mask_secrets as _mask

    return _mask(text)


def mask_obj(value: Any) -> Any:
    """`mask_secrets` applied to every string inside dicts, lists and tuples."""
    from backends._sandbox import mask_obj as _mask_obj

    return _mask_obj(value)


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
