"""The provider registry: entry points, lazy loading, runtime registration."""

from __future__ import annotations

import subprocess
import sys
import types
from importlib.metadata import EntryPoint

import pytest
from llm_server import llm_env  # noqa: F401

from evokernel.llm import (
    Completion,
    LLMError,
    get_provider,
    parse_spec,
    provider_names,
    register_provider,
    unregister_provider,
)
from evokernel.llm import _registry


class StubProvider:
    def __init__(self, model, **options):
        self.model, self.options = model, options

    def complete(self, messages, *, system, max_tokens, temperature):
        return Completion("ok", 1, 1, "stop", False, self.model, 0.0)


def test_parse_spec():
    assert parse_spec("openai:gpt-5") == ("openai", "gpt-5")
    assert parse_spec("openai:qwen2.5-coder:32b") == ("openai", "qwen2.5-coder:32b")
    for bad in ("gpt-5", ":gpt-5", "openai:"):
        with pytest.raises(ValueError):
            parse_spec(bad)


def test_builtins_are_known():
    assert {"openai", "anthropic"} <= set(provider_names())


def test_unknown_provider():
    with pytest.raises(LLMError) as info:
        get_provider("nonesuch:model")
    assert info.value.status == "unknown_provider" and "openai" in str(info.value)


def test_entry_point_is_loaded_lazily(monkeypatch):
    module = types.ModuleType("fake_provider_plugin")
    module.Factory = StubProvider
    monkeypatch.setitem(sys.modules, "fake_provider_plugin", module)
    ep = EntryPoint(name="fake", value="fake_provider_plugin:Factory", group=_registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: [ep])
    assert "fake" in provider_names()
    provider = get_provider("fake:m1", temperature_floor=0.1)
    assert isinstance(provider, StubProvider)
    assert provider.model == "m1" and provider.options == {"temperature_floor": 0.1}


def test_a_provider_gets_the_run_settings_its_factory_declares():
    """Issue 32: the core branched on the names "openai" and "anthropic", so a plugin never got
    the reasoning effort or the thinking budget. Now each factory gets the settings it names."""
    from evokernel.llm import LLMOptions

    class Thinker(StubProvider):
        def __init__(self, model, *, reasoning_effort=None, thinking_tokens=None, api_key=None):
            super().__init__(model, reasoning_effort=reasoning_effort, thinking_tokens=thinking_tokens, api_key=api_key)

    options = LLMOptions.from_specs(["thinker:m"], reasoning_effort="high", thinking_tokens=2048, timeout_s=30.0,
                                    provider_options={"thinker": {"api_key": "k"}})
    register_provider("thinker", Thinker)
    try:
        provider = get_provider("thinker:m", **options.options_for("thinker"))
    finally:
        unregister_provider("thinker")
    assert provider.options == {"reasoning_effort": "high", "thinking_tokens": 2048, "api_key": "k"}
    # The built-in factories declare theirs: OpenAI's the effort, not the thinking budget or caching.
    from evokernel.llm._providers import AnthropicProvider, OpenAIProvider

    given = options.options_for("openai")
    assert _registry.accepted_options(OpenAIProvider, given) == {"reasoning_effort": "high", "timeout_s": 30.0}
    assert _registry.accepted_options(AnthropicProvider, given) == {"thinking_tokens": 2048, "timeout_s": 30.0,
                                                                   "prompt_caching": True}
    # A factory taking any keyword (`**options`) is given everything, as before.
    assert _registry.accepted_options(StubProvider, given) == given


def test_runtime_registration_wins():
    register_provider("openai", StubProvider)
    try:
        assert isinstance(get_provider("openai:gpt-5"), StubProvider)
    finally:
        unregister_provider("openai")


def test_importing_the_package_loads_no_sdk():
    code = (
        "import sys, evokernel.llm\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'tiktoken') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
