"""Policies that write candidates: the LLM policy and the offline builtin one."""

from __future__ import annotations

from typing import Any

from ._hybrid import HybridPolicy
from ._registry import GENERATORS, POLICIES, policy_names, register_generator, register_policy
from ._search import FEASIBLE, ConfigSpace, PlanCache


def get_policy(*, model: str | None = None, policy: str | None = None, log: Any = None, replay: bool = False,
               cache: bool = False, llm: Any = None, hardware: Any = None, builtin_first: bool = False):
    """`--model PROVIDER:MODEL` (or `llm`, an `evokernel.llm.LLMOptions`: several models,
    budget, multi-turn, reasoning) gives the LLM policy; otherwise the builtin one.
    With `builtin_first`, the LLM policy comes inside a `HybridPolicy`: the builtin drafts
    first where it covers the task and the LLM refines past it (or drafts where it stops).
    `hardware` is the device's `backends.HardwareFacts`, stated in every GPU prompt. Without a
    model, `policy` names a registered policy (`POLICIES`: `builtin`, or a plugin's)."""
    if model or llm is not None:
        import dataclasses

        from evokernel.llm import LLMOptions

        from ._llm import LLMPolicy

        options = llm if llm is not None else LLMOptions.from_specs([model])
        options = dataclasses.replace(options, replay=options.replay or replay, cache=options.cache or cache)
        llm_policy = LLMPolicy(options, log=log, hardware=hardware)
        if builtin_first:
            from ._builtin import BuiltinPolicy

            return HybridPolicy(BuiltinPolicy(), llm_policy)
        return llm_policy
    return POLICIES.get(policy or "builtin", lambda message: ValueError(f"{message}; or --model PROVIDER:MODEL"))()


__all__ = ["FEASIBLE", "GENERATORS", "POLICIES", "ConfigSpace", "HybridPolicy", "PlanCache", "get_policy",
           "policy_names", "register_generator", "register_policy"]
