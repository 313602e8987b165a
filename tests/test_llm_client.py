"""LLMClient: logging through a CallLog, masking, cost, cache and replay."""

from __future__ import annotations

import json
import logging

import pytest
from llm_server import FakeLog, error_reply, llm_env, openai_reply, server  # noqa: F401

from evokernel.llm import (
    Completion,
    LLMClient,
    LLMError,
    PriceTable,
    RetryPolicy,
    build_prompt,
    mask_secrets,
    PromptInputs,
    MemoryView,
)

FAST = RetryPolicy(max_attempts=2, base_delay_s=0.001, max_delay_s=0.01)
SECRET = "sk-proj-S3cretS3cretS3cret0123"


def _client(server, llm_env, log, **kw) -> LLMClient:
    kw.setdefault("retry", FAST)
    access = {"base_url": server.url + "/v1", "api_key": SECRET}
    return LLMClient.from_spec("openai:test-model", provider_options={"timeout_s": 5, **access}, log=log, **kw)


def test_every_call_is_logged(server, llm_env):
    log = FakeLog()
    server.script = [openai_reply("answer", tokens_in=100, tokens_out=50)]
    prices = PriceTable(prices={"test-model": (1.0, 2.0)})
    client = _client(server, llm_env, log, prices=prices)
    out = client.complete(
        [{"role": "user", "content": "hi"}], system="sys", run_id=7, step_id=3, max_tokens=99
    )
    (row,) = log.calls
    assert out.call_id == row["id"] == 1
    assert (row["provider"], row["model"], row["run_id"], row["step_id"]) == (
        "openai", "test-model", 7, 3,
    )
    assert row["response_text"] == "answer"
    assert (row["tokens_in"], row["tokens_out"]) == (100, 50)
    assert row["cost_usd"] == pytest.approx((100 * 1.0 + 50 * 2.0) / 1e6) == out.cost_usd
    assert row["prompt"]["system"] == "sys"
    assert row["prompt"]["params"] == {"max_tokens": 99, "temperature": 0.7}
    assert row["error"] is None and row["latency_ms"] > 0


def test_secrets_never_reach_the_log(server, llm_env, caplog):
    log = FakeLog()
    server.script = [openai_reply(f"the key is {SECRET}"), error_reply(401, f"bad key {SECRET}")]
    client = _client(server, llm_env, log, retry=RetryPolicy(max_attempts=1))
    client.complete([{"role": "user", "content": f"use sk-ant-api03-abcdefghijkl and {SECRET}"}])
    with pytest.raises(LLMError) as info:
        client.complete([{"role": "user", "content": "again"}])
    with caplog.at_level(logging.DEBUG, logger="evokernel.llm"):
        logging.getLogger("evokernel.llm").warning("leaking %s", SECRET)
    # The server did get the key: it was used, just never written down.
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    dumped = json.dumps(log.calls) + str(info.value) + caplog.text
    assert SECRET not in dumped and "sk-ant-api03-abcdefghijkl" not in dumped
    assert "sk-***" in dumped and "sk-ant-***" in dumped
    assert log.calls[1]["error"] and "401" in log.calls[1]["error"]


def test_mask_secrets_patterns(llm_env):
    llm_env.setenv("ANTHROPIC_AUTH_TOKEN", "plain-token-without-prefix")
    text = (
        "sk-abc123def456 sk-ant-api03-XYZxyz_123-456 Authorization: Bearer abcdefghijklmnop "
        "x-api-key: qwertyuiopasdf plain-token-without-prefix task-abcdefgh1234"
    )
    masked = mask_secrets(text)
    for leaked in ("abc123def456", "XYZxyz_123", "abcdefghijklmnop", "qwertyuiopasdf",
                   "plain-token-without-prefix"):
        assert leaked not in masked
    assert "task-abcdefgh1234" in masked  # words merely containing "sk-" survive


def test_cache_replay_makes_no_http_calls(server, llm_env):
    log = FakeLog()
    server.script = [openai_reply("first answer", tokens_in=10, tokens_out=5)]
    messages = [{"role": "user", "content": "write a kernel"}]
    recorded = _client(server, llm_env, log, cache=True).complete(messages, system="s")
    assert len(server.requests) == 1 and len(log.cache) == 1

    replayed = _client(server, llm_env, log, replay=True).complete(messages, system="s")
    assert len(server.requests) == 1  # no new HTTP call
    assert replayed.cached and replayed.cost_usd == 0.0 and replayed.attempts == 0
    assert (replayed.text, replayed.tokens_in, replayed.tokens_out) == ("first answer", 10, 5)
    assert recorded.text == replayed.text
    assert log.calls[-1]["prompt"]["cache_hit"] is True


def test_replay_miss_calls_and_records(server, llm_env):
    log = FakeLog()
    server.script = [openai_reply("a"), openai_reply("b")]
    client = _client(server, llm_env, log, replay=True)
    client.complete([{"role": "user", "content": "one"}])
    client.complete([{"role": "user", "content": "one"}], cache_salt="sample-2")
    assert len(server.requests) == 2 and len(log.cache) == 2
    again = client.complete([{"role": "user", "content": "one"}], cache_salt="sample-2")
    assert again.text == "b" and len(server.requests) == 2


def test_cache_needs_a_log(server, llm_env):
    with pytest.raises(ValueError):
        _client(server, llm_env, None, replay=True)


def test_log_failure_does_not_lose_the_answer(server, llm_env, caplog):
    class BrokenLog(FakeLog):
        def log_llm_call(self, **fields):
            raise RuntimeError("disk full")

    server.script = [openai_reply("precious")]
    out = _client(server, llm_env, BrokenLog()).complete([{"role": "user", "content": "x"}])
    assert out.text == "precious" and out.call_id is None
    assert "disk full" in caplog.text


def test_ask_logs_the_prompt_report(server, llm_env):
    log = FakeLog()
    server.script = [openai_reply("ok")]
    prompt = build_prompt(
        PromptInputs("Relu", "class Model: ...", "triton", "draft",
                     memories=[MemoryView("api_note", "tl.load", "mask it", id=42)])
    )
    _client(server, llm_env, log).ask(prompt, run_id=1)
    logged = log.calls[0]["prompt"]
    assert logged["report"]["included_memories"] == [0]
    # The OpenAI wire format takes the prompt's parts as one text, the stable part first.
    assert server.requests[0].body["messages"][1]["content"] == prompt.user_text


def test_price_table_file_and_unknown_models(tmp_path, llm_env):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"gpt-5": {"input": 2.0, "output": 4.0}, "openai:local": [0, 0]}))
    table = PriceTable.load(path)
    assert table.cost_usd("openai", "gpt-5", 1_000_000, 1_000_000) == pytest.approx(6.0)
    assert table.cost_usd("openai", "local", 500, 500) == 0.0
    assert table.cost_usd("openai", "gpt-4o-2024-08-06", 1_000_000, 0) == pytest.approx(2.5)
    assert table.cost_usd("anthropic", "claude-sonnet-4-20250514", 0, 1_000_000) == 15.0
    assert table.cost_usd("openai", "gpt-5.2", 10, 10) is None  # no guessing
    assert table.cost_usd("openai", "mystery", 10, 10) is None


def test_client_with_a_plugin_provider():
    class Echo:
        def complete(self, messages, *, system, max_tokens, temperature):
            return Completion(messages[-1]["content"], 1, 1, "stop", False, "echo", 0.1)

    log = FakeLog()
    client = LLMClient(Echo(), provider_name="echo", model="e1", log=log, prices=PriceTable({}))
    assert client.complete([{"role": "user", "content": "ping"}]).text == "ping"
    assert log.llm_calls(limit=1)[0]["model"] == "e1"
