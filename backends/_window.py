"""The harness window: a block in which the harness itself, not candidate code,
launches processes and sets limits (`harness()`), and the question the audit
hook (backends/_audit.py) asks of it (`in_harness_window()`).

A leaf, so that the sandbox (which installs the hook) and the hook both take
it from here.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

_window = {"depth": 0}


@contextlib.contextmanager
def harness() -> Iterator[None]:
    """Let the harness itself launch processes (and set limits) inside this block.

    Used only around code where no candidate code runs: torch's inline build
    (ninja runs any build file, so it cannot be allow-listed by path), the
    torch.compile baseline (inductor's compile workers) and the worker's own
    rlimit updates. Everything else the backends launch goes through the
    executable allow-list in `backends._audit`.
    """
    _window["depth"] += 1
    try:
        yield
    finally:
        _window["depth"] -= 1


def in_harness_window() -> bool:
    return _window["depth"] > 0


__all__ = ["harness", "in_harness_window"]
