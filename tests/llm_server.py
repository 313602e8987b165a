"""A fake LLM server for tests: OpenAI chat completions and Anthropic messages.

It listens on 127.0.0.1 on an ephemeral port, in a thread, and answers from a
script of replies, so tests drive the real SDK clients over real HTTP without
touching the network. Each request is recorded (path, headers, JSON body).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a status and a body (dict -> JSON, bytes -> raw)."""

    status: int = 200
    body: dict | bytes = field(default_factory=dict)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def openai_reply(
    text: str, *, finish_reason: str = "stop", tokens_in: int = 11, tokens_out: int = 7,
    model: str = "test-model", cached_tokens: int | None = None, reasoning: str | None = None,
    reasoning_tokens: int | None = None,
) -> Reply:
    """A chat completion; `reasoning` goes in the `reasoning_content` field vLLM and DeepSeek use."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    usage: dict[str, Any] = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                             "total_tokens": tokens_in + tokens_out}
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    if reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return Reply(body={
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage,
    })


def anthropic_reply(
    text: str, *, stop_reason: str = "end_turn", tokens_in: int = 13, tokens_out: int = 5,
    model: str = "claude-test", thinking: str | None = None, cache_read: int | None = None,
    cache_write: int | None = None,
) -> Reply:
    """A message; `tokens_in` is Anthropic's `input_tokens` (the part not read from or written to the cache)."""
    content: list[dict] = [{"type": "text", "text": text}]
    if thinking is not None:
        content.insert(0, {"type": "thinking", "thinking": thinking, "signature": "test-signature"})
    usage: dict[str, Any] = {"input_tokens": tokens_in, "output_tokens": tokens_out}
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if cache_write is not None:
        usage["cache_creation_input_tokens"] = cache_write
    return Reply(body={
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    })


def error_reply(status: int, message: str = "scripted error", **headers: str) -> Reply:
    return Reply(status=status, body={"error": {"message": message, "type": "test_error"}},
                 headers=dict(headers))


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any
    arrived_s: float = field(default_factory=time.monotonic)  # when the server read it


class FakeLLMServer:
    """`with FakeLLMServer() as server:` ... `server.script = [...]`.

    When the script runs out, `default` answers (None -> 500).
    """

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.default: Reply | None = None
        self.requests: list[Request] = []
        self.in_flight = 0  # requests being answered now
        self.peak_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                with server._lock:
                    server.requests.append(
                        Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    reply = server.script.pop(0) if server.script else server.default
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                reply = reply or error_reply(500, "script exhausted")
                try:
                    if reply.delay_s:
                        time.sleep(reply.delay_s)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up: that is the test

            def log_message(self, *args: Any) -> None:
                pass  # keep test output clean

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # A short poll interval keeps shutdown (and so each test's teardown) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "FakeLLMServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


# --- fixtures shared by tests/test_llm_*.py (imported there by name) -------

import pytest  # noqa: E402  (kept below the server so the helper reads top-down)

_ENV_VARS = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL", "EVOKERNEL_OPENAI_ALLOW_NO_KEY", "EVOKERNEL_ANTHROPIC_ALLOW_NO_KEY",
    "EVOKERNEL_PRICES", "EVOKERNEL_LLM_MAX_ATTEMPTS", "EVOKERNEL_LLM_BACKOFF_S",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
)


@pytest.fixture
def llm_env(monkeypatch, tmp_path_factory):
    """No keys, no endpoints and no proxies from the developer's shell."""
    for name in _ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "tiktoken"))
    return monkeypatch


def local_llm(server: "FakeLLMServer", *specs: str, **options: Any):
    """`LLMOptions` for `specs` whose providers call the local server, as the CLI would build
    them from OPENAI_/ANTHROPIC_BASE_URL and a key (the library reads no environment)."""
    from evokernel.llm import LLMOptions, ProviderAccess

    access = {"openai": ProviderAccess(base_url=server.url + "/v1", api_key="sk-test-not-a-real-key-000000"),
              "anthropic": ProviderAccess(base_url=server.url, api_key="sk-ant-test-not-a-real-key-0000")}
    return LLMOptions.from_specs(list(specs), access=access, **options)


@pytest.fixture
def server(llm_env):
    with FakeLLMServer() as srv:
        yield srv


class FakeLog:
    """An in-memory `CallLog`: what a MemoryStore records, in lists."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.cache: dict[str, dict] = {}

    def log_llm_call(self, **fields: Any) -> int:
        self.calls.append({"id": len(self.calls) + 1, **fields})
        return len(self.calls)

    def llm_calls(self, *, run_id: Any = None, limit: int | None = None) -> list[dict]:
        # Oldest first, as MemoryStore.llm_calls lists them.
        rows = [c for c in self.calls if run_id is None or c["run_id"] == run_id]
        return rows[:limit] if limit else rows

    def cache_get(self, request_hash: str) -> dict | None:
        return self.cache.get(request_hash)

    def cache_put(self, request_hash: str, response: dict) -> None:
        self.cache[request_hash] = dict(response)
