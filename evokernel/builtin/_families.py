"""The builtin generator's kernel families, as registered records.

A family is what one generated kernel computes (`Plan.family`): elementwise
chains, row reductions, matmuls, convolutions, pools, scans, recurrent layers,
attention, and `host` (library calls and host-side ops, not configured). Its
`Family` record says which `Config` fields it reads, where its configuration
search space and default come from, how its kernels are generated and how a
plan of it is named for retrieval; the generator, the configuration search and
the retrieval key dispatch through these records, never on the family's name.

Records are found as providers and backends are (`evokernel._plugins.Registry`,
entry-point group `evokernel.families`: a record object per name); the built-in
ones are in `_family_records.py`. Adding a family is its generator file (with
its record) and one registration. Resolved records are kept per process: a
configuration search asks for its family thousands of times.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from evokernel._plugins import Registry

from ._ir import Plan

# `Config` (in `_config`, which dispatches through these records) and `StageCode` (`_emit`) are named in
# words below, not imported: the records sit beneath every module that uses them.


@dataclasses.dataclass(frozen=True)
class Family:
    name: str
    # generate(plan, config, tag) -> the stage's StageCode (config None for a family without one)
    generate: Callable[[Plan, Any, str], Any]
    tunable: tuple[str, ...] = ()  # the Config fields its kernels read: its search axes, and Config.text
    search_space: Callable[[Plan], list[Any]] | None = None  # its Configs in trying order; None: not configured
    default_config: Callable[[Plan], Any] | None = None  # the Config a draft starts from
    pattern: Callable[[Plan], str] | None = None  # retrieval words for what a plan of it computes
    # how much work a stage of it does, to pick a pipeline's configured stage; None: the elements it touches
    work: Callable[[Plan], float] | None = None


_BUILTIN = ("elementwise", "rows", "matmul", "conv", "pool", "scan", "rnn", "attention", "host")
FAMILIES: Registry[Family] = Registry(
    "evokernel.families", {name: f"evokernel.builtin._family_records:{name.upper()}" for name in _BUILTIN},
    what="kernel family")
_resolved: dict[str, Family] = {}


def family(name: str) -> Family:
    """The family record of that name; ValueError when none is registered."""
    found = _resolved.get(name)
    if found is None:
        found = _resolved[name] = FAMILIES.get(name, ValueError)
    return found


def family_names() -> list[str]:
    return FAMILIES.names()


def register_family(record: Family) -> None:
    """Add or replace a family for this process (a package adds one through its entry point instead)."""
    FAMILIES.register(record.name, record)
    _resolved.pop(record.name, None)


def unregister_family(name: str) -> None:
    FAMILIES.unregister(name)
    _resolved.pop(name, None)


__all__ = ["FAMILIES", "Family", "family", "family_names", "register_family", "unregister_family"]
