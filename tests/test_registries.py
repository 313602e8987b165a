"""Builtin families, policies and kernel generators are registered records (issue 32, item 4),
found as backends and providers are: runtime registrations, entry points, the built-in ones."""

from __future__ import annotations

import importlib.metadata
import sys
import types
from importlib.metadata import EntryPoint

import pytest

from evokernel._plugins import Registry
from evokernel._step import Proposal, StepContext
from evokernel.builtin import (Config, Family, default_config, family, family_names, register_family, search_space,
                               unregister_family)
from evokernel.builtin._generate import stage_code
from evokernel.policies import GENERATORS, get_policy, policy_names, register_generator
from evokernel.policies._builtin import BuiltinPolicy


def _entry_points(monkeypatch, group: str, name: str, obj: object) -> None:
    """A package that declares `obj` under `group` as `name` (its module is importable)."""
    module = types.ModuleType("fake_evokernel_plugin")
    module.Plugin = obj
    monkeypatch.setitem(sys.modules, "fake_evokernel_plugin", module)
    declared = EntryPoint(name=name, value="fake_evokernel_plugin:Plugin", group=group)
    real = importlib.metadata.entry_points
    monkeypatch.setattr("importlib.metadata.entry_points",
                        lambda group, **kw: [declared] if group == declared.group else real(group=group, **kw))


def test_a_registry_prefers_runtime_then_entry_points_then_builtins(monkeypatch):
    registry: Registry[object] = Registry("evokernel.test-things", {"a": "os.path:sep", "b": "os.path:curdir"}, what="thing")
    _entry_points(monkeypatch, "evokernel.test-things", "b", "from an entry point")
    assert registry.names() == ["a", "b"] and registry.get("a") == "/" and registry.get("b") == "from an entry point"
    registry.register("b", ("at runtime",))  # a record itself (a string would name one: "module:attr")
    assert registry.get("b") == ("at runtime",)
    registry.unregister("b")
    with pytest.raises(LookupError, match="unknown thing 'c'; known: a, b"):
        registry.get("c")


def test_every_builtin_family_is_a_record_the_generator_dispatches_through():
    assert set(family_names()) >= {"elementwise", "rows", "matmul", "conv", "pool", "scan", "rnn", "attention", "host"}
    assert family("matmul").tunable[-1] == "precision" and family("host").search_space is None
    with pytest.raises(ValueError, match="unknown kernel family 'nonesuch'"):
        family("nonesuch")
    with pytest.raises(ValueError, match="takes no configuration"):
        Config("host")


def test_a_new_family_is_one_record_and_one_registration():
    plan = types.SimpleNamespace(family="copy", ops=("copy",))
    plan.main_stage = plan
    made = []
    copy = Family("copy", generate=lambda p, config, tag: made.append((p, config.text(), tag)) or "code",
                  tunable=("block_n",), search_space=lambda p: [Config("copy", block_n=n) for n in (256, 1024)],
                  default_config=lambda p: Config("copy", block_n=1024))
    register_family(copy)
    try:
        assert "copy" in family_names()
        assert [c.block_n for c in search_space(plan)] == [256, 1024] and default_config(plan).block_n == 1024
        assert stage_code(plan, None, "_s0") == "code" and made == [(plan, "block_n=1024", "_s0")]
    finally:
        unregister_family("copy")
    with pytest.raises(ValueError):
        Config("copy")


def test_a_policy_plugin_is_found_by_its_entry_point(monkeypatch):
    class Echo:
        name, is_llm = "echo", False

        def propose(self, ctx):
            return Proposal(None, stop=True, error="echo")

    _entry_points(monkeypatch, "evokernel.policies", "echo", Echo)
    assert {"builtin", "echo"} <= set(policy_names())
    assert isinstance(get_policy(policy="echo"), Echo) and isinstance(get_policy(), BuiltinPolicy)
    with pytest.raises(ValueError, match="unknown policy 'clever'; known: .*builtin.*; or --model"):
        get_policy(policy="clever")


def _ctx(backend: str) -> StepContext:
    return StepContext(task_name="t", task_key="k", task_path="t.py", task_source="", category="", backend=backend,
                       stage="draft", step=1, memories=(), feedback=None, start_point=None, tried=frozenset(), run_id=1)


def test_the_builtin_policy_takes_each_backends_generator_from_the_registry():
    assert BuiltinPolicy().propose(_ctx("cuda")).stop, "no generator writes CUDA C++"

    class CudaGenerator:
        def __init__(self, plans):
            self.plans = plans

        def propose(self, ctx):
            return Proposal("// a CUDA kernel", fingerprint="cuda-gen")

    register_generator("cuda", CudaGenerator)
    try:
        assert BuiltinPolicy().propose(_ctx("cuda")).source == "// a CUDA kernel"
    finally:
        GENERATORS.unregister("cuda")
    assert {"triton", "ascendc"} <= set(GENERATORS.names())
