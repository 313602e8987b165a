"""The built-in providers driven over HTTP against a local fake server."""

from __future__ import annotations

import pytest
from llm_server import (  # noqa: F401  (fixtures)
    FakeLog,
    Reply,
    anthropic_reply,
    error_reply,
    llm_env,
    openai_reply,
    server,
)

from evokernel.llm import LLMClient, LLMError, ParseError, RetryPolicy, get_provider, parse_candidate

FAST = RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.01)
CODE = "```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n```"


def _point_at(server, provider: str) -> dict:
    """The provider's access arguments for the local server (the library reads no environment)."""
    if provider == "openai":
        return {"base_url": server.url + "/v1"}
    return {"base_url": server.url, "api_key": "sk-ant-test-0123456789"}


def _reply(provider: str, text: str, truncated: bool = False) -> Reply:
    if provider == "openai":
        return openai_reply(text, finish_reason="length" if truncated else "stop")
    return anthropic_reply(text, stop_reason="max_tokens" if truncated else "end_turn")


def _client(provider: str, access: dict, **kw) -> LLMClient:
    return LLMClient.from_spec(
        f"{provider}:test-model", provider_options={"timeout_s": 5, **access}, retry=FAST, **kw
    )


def test_openai_success_wire_format(server, llm_env):
    access = _point_at(server, "openai")
    server.script = [openai_reply(CODE, tokens_in=21, tokens_out=9)]
    provider = get_provider("openai:test-model", timeout_s=5, **access)
    out = provider.complete(
        [{"role": "user", "content": "write it"}], system="rules", max_tokens=100, temperature=0.3
    )
    assert out.text == CODE
    assert (out.tokens_in, out.tokens_out, out.finish_reason, out.truncated) == (21, 9, "stop", False)
    assert out.latency_ms > 0
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["messages"][0] == {"role": "system", "content": "rules"}
    assert request.body["messages"][1] == {"role": "user", "content": "write it"}
    # A base URL means a local server: classic max_tokens, temperature sent.
    assert request.body["max_tokens"] == 100 and request.body["temperature"] == 0.3
    assert request.headers["x-stainless-retry-count"] == "0"


def test_anthropic_success_wire_format(server, llm_env):
    access = _point_at(server, "anthropic")
    server.script = [anthropic_reply(CODE, tokens_in=30, tokens_out=4)]
    out = get_provider("anthropic:test-model", timeout_s=5, **access).complete(
        [{"role": "user", "content": "write it"}], system="rules", max_tokens=64, temperature=0.0
    )
    assert out.text == CODE and (out.tokens_in, out.tokens_out) == (30, 4)
    assert out.finish_reason == "end_turn" and not out.truncated
    (request,) = server.requests
    assert request.path == "/v1/messages"
    # The system prompt is the stable prefix: sent as a block marked for prompt caching.
    assert request.body["system"] == [{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}]
    assert request.body["max_tokens"] == 64
    # SDK releases differ in how they send the key; either header is the key.
    sent = request.headers.get("x-api-key") or request.headers.get("authorization", "")
    assert sent.removeprefix("Bearer ") == "sk-ant-test-0123456789"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_429_then_success(server, llm_env, provider):
    access = _point_at(server, provider)
    server.script = [error_reply(429, "slow down"), _reply(provider, CODE)]
    out = _client(provider, access).complete([{"role": "user", "content": "x"}], system="s")
    assert out.text == CODE and out.attempts == 2
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_500_until_failure_is_bounded(server, llm_env, provider):
    access = _point_at(server, provider)
    server.default = error_reply(500, "boom")
    log = FakeLog()
    with pytest.raises(LLMError) as info:
        _client(provider, access, log=log).complete([{"role": "user", "content": "x"}], system="s")
    err = info.value
    assert (err.provider, err.model, err.status, err.attempts) == (provider, "test-model", 500, 3)
    assert f"{provider}:test-model" in str(err) and "3 attempts" in str(err)
    assert len(server.requests) == 3  # our retries only: the SDK's are off
    assert log.calls[-1]["error"] and log.calls[-1]["response_text"] == ""


def test_client_error_is_not_retried(server, llm_env):
    access = _point_at(server, "openai")
    server.default = error_reply(400, "bad request")
    with pytest.raises(LLMError) as info:
        _client("openai", access).complete([{"role": "user", "content": "x"}], system="s")
    assert info.value.status == 400 and info.value.attempts == 1
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_malformed_json(server, llm_env, provider):
    access = _point_at(server, provider)
    server.default = Reply(body=b'{"id": "x", "choices": [ {')
    with pytest.raises(LLMError) as info:
        _client(provider, access).complete([{"role": "user", "content": "x"}], system="s")
    assert info.value.status == "malformed_response"
    assert len(server.requests) == 1


def test_timeout_is_retried_then_reported(server, llm_env):
    access = _point_at(server, "openai")
    server.default = Reply(body={}, delay_s=1.0)
    client = LLMClient.from_spec(
        "openai:test-model",
        provider_options={"timeout_s": 0.2, **access},
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.001),
    )
    with pytest.raises(LLMError) as info:
        client.complete([{"role": "user", "content": "x"}], system="s")
    assert info.value.status == "timeout" and info.value.attempts == 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_answer_without_code(server, llm_env, provider):
    access = _point_at(server, provider)
    server.script = [_reply(provider, "I would use a tiled kernel here.")]
    out = _client(provider, access).complete([{"role": "user", "content": "x"}], system="s")
    with pytest.raises(ParseError) as info:
        parse_candidate(out.text, finish_reason=out.finish_reason, truncated=out.truncated)
    assert info.value.kind == "no_code"
    assert "```python" in info.value.feedback


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_truncated_answer(server, llm_env, provider):
    access = _point_at(server, provider)
    server.script = [_reply(provider, "Plan.\n```python\nimport torch\nclass Mod", truncated=True)]
    out = _client(provider, access).complete([{"role": "user", "content": "x"}], system="s")
    assert out.truncated
    with pytest.raises(ParseError) as info:
        parse_candidate(out.text, finish_reason=out.finish_reason, truncated=out.truncated)
    assert info.value.kind == "truncated"
    assert "cut off" in info.value.feedback


def test_openai_key_required_without_base_url(llm_env):
    with pytest.raises(LLMError) as info:
        get_provider("openai:gpt-5")
    assert info.value.status == "missing_key" and "OPENAI_API_KEY" in str(info.value)


def test_anthropic_key_required_without_base_url(llm_env):
    with pytest.raises(LLMError) as info:
        get_provider("anthropic:claude-sonnet-4-5")
    assert info.value.status == "missing_key"


def test_openai_no_key_opt_in_and_official_api_params(llm_env):
    provider = get_provider("openai:gpt-5", allow_no_key=True)
    # The official API: max_completion_tokens, and no temperature for reasoning models.
    assert provider.max_tokens_param == "max_completion_tokens"
    assert provider.send_temperature is False
    assert get_provider("openai:gpt-4o", allow_no_key=True).send_temperature is True


def test_the_library_reads_no_key_from_the_environment(llm_env):
    """Keys reach a provider as arguments; what the process's environment holds is the CLI's to read."""
    llm_env.setenv("OPENAI_API_KEY", "sk-test-in-the-environment-000000")
    with pytest.raises(LLMError) as info:
        get_provider("openai:gpt-5")
    assert info.value.status == "missing_key"
    assert get_provider("openai:gpt-5", api_key="sk-test-passed-in-000000").model == "gpt-5"


def test_access_retry_and_prices_from_a_given_environment(tmp_path):
    from evokernel.llm import LLMOptions, from_environment

    prices = tmp_path / "prices.json"
    prices.write_text('{"test-model": [1, 2]}')
    environ = {"OPENAI_API_KEY": "sk-test-given-000000", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
               "EVOKERNEL_ANTHROPIC_ALLOW_NO_KEY": "1", "EVOKERNEL_LLM_MAX_ATTEMPTS": "2",
               "EVOKERNEL_LLM_BACKOFF_S": "0.5", "EVOKERNEL_PRICES": str(prices)}
    options = from_environment(LLMOptions.from_specs(["openai:test-model", "anthropic:claude-x"]), environ)
    assert options.options_for("openai") == {"api_key": "sk-test-given-000000", "base_url": "http://127.0.0.1:9/v1",
                                             "prompt_caching": True}
    assert options.options_for("anthropic") == {"allow_no_key": True, "prompt_caching": True}
    assert (options.retry.max_attempts, options.retry.base_delay_s) == (2, 0.5)
    assert options.prices.cost_usd("openai", "test-model", 1_000_000, 1_000_000) == 3.0
    assert "sk-test-given" not in repr(options) and "sk-test-given" not in str(options.to_dict())
    for bad, words in ((dict(EVOKERNEL_LLM_MAX_ATTEMPTS="many"), "EVOKERNEL_LLM_MAX_ATTEMPTS='many' is not an integer"),
                       (dict(EVOKERNEL_LLM_MAX_ATTEMPTS="0"), "attempts must be at least 1"),
                       (dict(EVOKERNEL_PRICES=str(tmp_path / "none.json")), "not a readable JSON price table")):
        with pytest.raises(ValueError, match=words):
            from_environment(LLMOptions.from_specs(["openai:m"]), bad)
