"""The LLM layer against the real memory database (memory_store.MemoryStore)."""

from __future__ import annotations

import json

import pytest
from llm_server import llm_env, openai_reply, server  # noqa: F401
from typer.testing import CliRunner

from evokernel.llm import CallLog, LLMClient, RetryPolicy

memory_store = pytest.importorskip("memory_store")
MemoryStore = getattr(memory_store, "MemoryStore", None)
pytestmark = pytest.mark.skipif(MemoryStore is None, reason="memory_store.MemoryStore not there yet")

SECRET = "sk-proj-S3cretS3cretS3cret0123"


def test_store_logs_caches_and_replays(server, llm_env, tmp_path):
    store = MemoryStore(tmp_path / "memory.db")
    assert isinstance(store, CallLog)
    server.script = [openai_reply("the answer", tokens_in=12, tokens_out=3)]

    def client(**kw) -> LLMClient:
        return LLMClient.from_spec(
            "openai:test-model", provider_options={"timeout_s": 5, "base_url": server.url + "/v1", "api_key": SECRET},
            log=store,
            retry=RetryPolicy(max_attempts=1), **kw,
        )

    messages = [{"role": "user", "content": f"key {SECRET} pasted by mistake"}]
    first = client(cache=True).complete(messages, system="s")
    again = client(replay=True).complete(messages, system="s")
    assert len(server.requests) == 1 and again.cached and again.text == first.text
    rows = store.llm_calls()
    assert [r["id"] for r in rows] == [first.call_id, again.call_id]
    assert rows[0]["tokens_in"] == 12 and rows[0]["prompt"]["system"] == "s"
    assert SECRET not in json.dumps(rows, default=str)

    import typer

    from evokernel.cli import logs_cmd

    app = typer.Typer()
    logs_cmd.register(app)
    app.callback()(lambda: None)
    result = CliRunner().invoke(app, ["logs", "--memory", str(tmp_path / "memory.db"), "--json"])
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in json.loads(result.stdout)] == [again.call_id, first.call_id]
