"""Policies that write candidates: the LLM policy and the offline builtin one."""

from __future__ import annotations

from typing import Any

from ._search import FEASIBLE, ConfigSpace, PlanCache


def get_policy(*, model: str | None = None, policy: str | None = None, log: Any = None, replay: bool = False,
               cache: bool = False):
    """`--model PROVIDER:MODEL` gives the LLM policy; otherwise the builtin one."""
    if model:
        from ._llm import LLMPolicy

        return LLMPolicy(model, log=log, replay=replay, cache=cache)
    if policy in (None, "builtin"):
        from ._builtin import BuiltinPolicy

        return BuiltinPolicy()
    raise ValueError(f"unknown policy {policy!r}: use --policy builtin or --model PROVIDER:MODEL")


__all__ = ["FEASIBLE", "ConfigSpace", "PlanCache", "get_policy"]
