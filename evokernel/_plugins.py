"""Named records that plugins can add: LLM providers, policies, kernel generators, builtin families.

A `Registry` resolves a name to a record, from (in order of precedence) what was
registered at runtime (tests, notebooks), the entry points of its group (a
third-party package's `[project.entry-points."GROUP"]`), and the built-in ones,
each a lazy `"module:attr"` reference so nothing is imported until the name is
asked for (`evokernel --help` loads no SDK and no torch). The built-in ones are
declared in our own pyproject under the same groups; the registry repeats them
so that a checkout not reinstalled since they were declared still finds them.
Adding one is one file (the record or its factory) and one registration.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Generic, Mapping, TypeVar

T = TypeVar("T")


def load_target(target: str) -> Any:
    """The object a `"module:attr"` (or `"module:attr.inner"`) reference names."""
    module_name, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Records of one kind by name: runtime registrations, then entry points, then built-ins."""

    def __init__(self, group: str, builtin: Mapping[str, str], *, what: str):
        self.group = group
        self.what = what  # how an unknown name is reported ("policy", "provider", ...)
        self._builtin = dict(builtin)
        self._runtime: dict[str, str | T] = {}

    def register(self, name: str, record: str | T) -> None:
        """Add or replace a record for this process: the record itself or a `"module:attr"`."""
        self._runtime[name] = record

    def unregister(self, name: str) -> None:
        self._runtime.pop(name, None)

    def _entry_points(self) -> dict[str, str]:
        from importlib.metadata import entry_points  # ~15 ms, paid only when a name is resolved

        try:
            return {ep.name: ep.value for ep in entry_points(group=self.group)}
        except Exception:  # a broken distribution must not hide the built-ins
            return {}

    def names(self) -> list[str]:
        return sorted({*self._builtin, *self._entry_points(), *self._runtime})

    def target(self, name: str) -> str | T | None:
        """What `name` resolves to, unloaded; None when nothing has that name."""
        if name in self._runtime:
            return self._runtime[name]
        return self._entry_points().get(name) or self._builtin.get(name)

    def get(self, name: str, unknown: Callable[[str], Exception] | None = None) -> T:
        """The record named `name`, loaded; `unknown(message)` (default LookupError) when there is none."""
        target = self.target(name)
        if target is None:
            message = f"unknown {self.what} {name!r}; known: {', '.join(self.names())}"
            raise (unknown or LookupError)(message)
        return load_target(target) if isinstance(target, str) else target


__all__ = ["Registry", "load_target"]
