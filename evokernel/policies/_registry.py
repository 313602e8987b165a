"""Policies and kernel generators, by name (`evokernel._plugins.Registry`).

- `POLICIES` (entry-point group `evokernel.policies`): `--policy NAME` without
  `--model`; a record is a factory called with no arguments that returns a
  `Policy` (`name`, `is_llm`, `propose(ctx)`). Built in: `builtin`.
- `GENERATORS` (group `evokernel.generators`), by backend name: the builtin
  policy's kernel generator for that backend, a class built as `cls(plan_cache)`
  whose `propose(ctx)` writes the backend's kernels. Built in: `triton` (Triton
  kernels from the traced reference) and `ascendc`. A backend with none gets an
  honest stop from the builtin policy.

Adding one is its file and one registration: an entry point in a package's
pyproject, or `register_policy` / `register_generator` in a process.
"""

from __future__ import annotations

from typing import Any, Callable

from evokernel._plugins import Registry
from evokernel._step import Policy

POLICIES: Registry[Callable[[], Policy]] = Registry("evokernel.policies", {
    "builtin": "evokernel.policies._builtin:BuiltinPolicy",
}, what="policy")

GENERATORS: Registry[Callable[[Any], Any]] = Registry("evokernel.generators", {
    "triton": "evokernel.policies._builtin:TritonBuiltinPolicy",
    "ascendc": "evokernel.ascendc:AscendCBuiltinPolicy",
}, what="kernel generator")


def policy_names() -> list[str]:
    return POLICIES.names()


def register_policy(name: str, factory: str | Callable[[], Policy]) -> None:
    POLICIES.register(name, factory)


def register_generator(backend: str, generator: str | Callable[[Any], Any]) -> None:
    GENERATORS.register(backend, generator)


__all__ = ["GENERATORS", "POLICIES", "policy_names", "register_generator", "register_policy"]
