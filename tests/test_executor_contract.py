"""Every executor meets `backends.ExecutorProtocol` (issue 32, item 2): the local
`Executor`, the pool, the Ray pool, the MCP session's lazy pool and the tests' doubles.

Checked two ways: `isinstance` against the runtime-checkable protocol (the members
exist), and by signature: each method binds the calls the protocol declares, with
the protocol's own parameter names, so a caller written against the protocol works
with every implementation."""

from __future__ import annotations

import inspect

import pytest

from backends import Executor, ExecutorPool, ExecutorProtocol, RayPool
from evokernel.mcp._session import _LazyExecutor

from loop_doubles import ScriptedExecutor

IMPLEMENTATIONS = [Executor, ExecutorPool, RayPool, _LazyExecutor, ScriptedExecutor]
METHODS = ("evaluate", "retime", "close")


def _call_of(method) -> tuple[list[object], dict[str, object]]:
    """The arguments a caller written against the protocol passes: positional ones by position,
    keyword-only ones by name."""
    args, kwargs = [], {}
    for p in list(inspect.signature(method).parameters.values())[1:]:  # past self
        value = p.default if p.default is not inspect.Parameter.empty else f"<{p.name}>"
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            args.append(value)
    return args, kwargs


@pytest.mark.parametrize("cls", IMPLEMENTATIONS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", METHODS)
def test_each_method_takes_the_protocols_calls(cls, name):
    args, kwargs = _call_of(getattr(ExecutorProtocol, name))
    signature = inspect.signature(getattr(cls, name))
    signature.bind(object(), *args, **kwargs)  # raises TypeError when a call would fail


@pytest.mark.parametrize("cls", IMPLEMENTATIONS, ids=lambda c: c.__name__)
def test_each_reports_what_waits(cls):
    # A property on the class, or (the doubles) an attribute every instance sets.
    assert isinstance(inspect.getattr_static(cls, "waiting", None), property) or cls is ScriptedExecutor


def test_instances_meet_the_runtime_checkable_protocol():
    made = [Executor(device="cpu"), ExecutorPool(["cpu", "cpu"], executor_factory=lambda device: ScriptedExecutor()),
            _LazyExecutor(ScriptedExecutor), ScriptedExecutor()]
    try:
        assert all(isinstance(ex, ExecutorProtocol) for ex in made)
        assert [ex.waiting for ex in made] == [0, 0, 0, 0]
    finally:
        for ex in made:
            ex.close()


def test_a_method_that_drifts_from_the_protocol_is_caught():
    class Drifted(ScriptedExecutor):
        def retime(self, task_path, baseline, candidate, *, backend="triton", options=None):  # no rounds, no timeout
            raise AssertionError("never called")

    args, kwargs = _call_of(ExecutorProtocol.retime)
    with pytest.raises(TypeError):
        inspect.signature(Drifted.retime).bind(object(), *args, **kwargs)
