"""The LLM path as a frontier model sees it, checked on the request bodies a local stand-in server
receives: no source twice, the token budget, the multi-turn transcript, Anthropic's cache_control,
reasoning parameters, costs with cached tokens, and a model ensemble."""

from __future__ import annotations

import json

import pytest
from llm_server import FakeLog, anthropic_reply, llm_env, openai_reply, server  # noqa: F401  (fixtures)

import llm_answers as A
from backends import HardwareFacts, LatencySource, TaskCost
from evokernel.llm import LLMOptions, ModelChoice, PriceTable, ProviderAccess, RetryPolicy, get_token_counter
from evokernel.loop import MemoryNote, StartPointView, StepContext
from evokernel.policies._llm import LLMPolicy

TASK = (
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x, y):\n"
    "        return torch.relu(x + y) * 2.0\n"
)
H200 = HardwareFacts("cuda:0", "NVIDIA H200", 132, 62914560, 150_000_000_000, 4300.0,
                     {"fp16": 720.0, "bf16": 700.0, "tf32": 360.0, "fp32": 52.0}, "test values", "2026-01-01T00:00:00Z")
COST = TaskCost(min_bytes=3 * 37 * 1000 * 4, flops=0, dtype="fp32")


def note(i: int, kind: str, content: str, **kw) -> MemoryNote:
    base = dict(id=i, kind=kind, task_key="k1", backend="triton", key_text=f"add_relu {kind} {i}", content=content,
                status="ok", latency_ms=0.05, value=0.5, extra={"task_name": "add_relu"},
                latency_source=LatencySource.MEASURED_GPU)
    return MemoryNote(**(base | kw))


def start_view(code: str = A.GOOD_FILE, **kw) -> StartPointView:
    base = dict(id=1, code=code, latency_ms=0.05, speedup_eager=2.0, speedup_compile=1.1,
                extra={}, latency_source=LatencySource.MEASURED_GPU)
    return StartPointView(**(base | kw))


def ctx(**kw):
    base = dict(task_name="add_relu", task_key="k1", task_path="", task_source=TASK, category="elementwise",
                backend="triton", stage="draft", step=1, memories=(), feedback=None, start_point=None,
                tried=frozenset(), run_id=None, api_notes=(), task_cost=COST, latency_source=LatencySource.MEASURED_GPU)
    return StepContext(**(base | kw))


def policy(server, llm_env, log=None, *, provider="openai", hardware=H200, **options):
    specs = options.pop("specs", [f"{provider}:test-model"])
    access = {"openai": ProviderAccess(base_url=server.url + "/v1"),
              "anthropic": ProviderAccess(base_url=server.url, api_key="sk-ant-test-0123456789")}
    p = LLMPolicy(LLMOptions.from_specs(specs, access=access, **options), log=log or FakeLog(), hardware=hardware)
    for client in p.clients:
        client.retry = RetryPolicy(max_attempts=1)
    return p


def sent_text(request) -> str:
    """Everything the model reads in one request: system prompt and every message."""
    body = request.body
    parts = []
    system = body.get("system")
    parts.append(system if isinstance(system, str) else "".join(b["text"] for b in system or []))
    for m in body["messages"]:
        c = m["content"]
        parts.append(c if isinstance(c, str) else "\n\n".join(b.get("text", "") for b in c))
    return "\n\n".join(parts)


def test_refine_request_shows_each_kernel_once_with_hardware(server, llm_env):
    server.script = [openai_reply("```python\n" + A.GOOD_FILE + "```")]
    faster = A.GOOD_FILE.replace("BLOCK=1024", "BLOCK=2048")
    memories = [
        note(1, "trace", A.GOOD_FILE),  # the start point's own trace
        note(2, "trace", A.GOOD_FILE.replace("    pid = tl.program_id(0)\n", "    pid = tl.program_id(0)  # one\n"),
             latency_ms=0.061),  # the same code from another run
        note(3, "experience", "add_relu on triton, refine step: feasible (verdict: ok).", extra={}),
        note(4, "trace", faster, latency_ms=0.04),  # the best kernel
    ]
    step = ctx(stage="refine", memories=memories, start_point=start_view(),
               best=start_view(faster, id=4, latency_ms=0.04), feedback="correct on 2 input sets")
    proposal = policy(server, llm_env).propose(step)
    assert proposal.error is None
    text = sent_text(server.requests[0])
    assert text.count("def add_relu_kernel") == 1, "no kernel source twice in one prompt"
    assert "```diff" in text and "+        add_relu_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=2048)" in text
    assert "feasible (verdict: ok)" not in text
    assert "NVIDIA H200, 132 SMs" in text and "copy bandwidth 4300 GB/s" in text
    assert "Other results of this same code: ok in 0.061 ms" in text
    recorded = proposal.extra["prompt"]
    assert any("says only the verdict" in d for d in recorded["dropped"])


def test_request_respects_the_token_budget(server, llm_env):
    server.script = [openai_reply("```python\n" + A.GOOD_FILE + "```")]
    memories = [note(i, "trace", A.GOOD_FILE.replace("add_relu_kernel", f"kernel_{i}"), value=i / 10)
                for i in range(10, 20)]
    budget = 2000
    proposal = policy(server, llm_env, context_tokens=budget).propose(ctx(memories=memories))
    counted = get_token_counter().count(sent_text(server.requests[0]))
    assert counted <= budget
    report = proposal.extra["prompt"]
    assert report["tokens"] <= budget and report["dropped"]
    # The lowest values went first, and only the memories shown are credited.
    assert report["dropped"][0].startswith("trace #10")
    assert set(proposal.used_memory_ids).isdisjoint({10})


def test_multi_turn_transcript(server, llm_env):
    first = "<think>\nplan the kernel\n</think>\nDraft:\n```python\n" + A.DRAFT_FILE + "```"
    second = "Fixed the scale.\n```python\n" + A.GOOD_FILE + "```"
    server.script = [openai_reply(first), openai_reply(second), openai_reply(second)]
    p = policy(server, llm_env, multi_turn=True)
    p.propose(ctx(step=1))
    p.propose(ctx(step=2, feedback="wrong_result: max abs error 1.9 at index [0, 3]"))
    p.propose(ctx(step=3, stage="refine", start_point=start_view(), feedback="correct; 0.05 ms",
                  memories=[note(1, "trace", A.GOOD_FILE)]))
    bodies = [r.body for r in server.requests]
    assert [m["role"] for m in bodies[0]["messages"]] == ["system", "user"]
    assert [m["role"] for m in bodies[1]["messages"]] == ["system", "user", "assistant", "user"]
    assert [m["role"] for m in bodies[2]["messages"]] == ["system", "user", "assistant", "user", "assistant", "user"]
    # The previous answer is the assistant turn (without its reasoning); the verifier's report is the next user turn.
    assert bodies[1]["messages"][2]["content"].startswith("Draft:") and "plan the kernel" not in json.dumps(bodies[1])
    assert bodies[1]["messages"][3]["content"].startswith("## Verifier report on your last answer")
    assert "max abs error 1.9 at index [0, 3]" in bodies[1]["messages"][3]["content"]
    # The start point is the last answer: named, not pasted again; the task stays in the first turn only.
    third = sent_text(server.requests[2])
    assert third.count("def add_relu_kernel") == 2  # the draft and the fix, once each
    assert "The code is your last answer" in bodies[2]["messages"][-1]["content"]
    assert third.count("torch.relu(x + y) * 2.0") == 1
    # Single-turn stays the default.
    server.script = [openai_reply(second), openai_reply(second)]
    single = policy(server, llm_env)
    single.propose(ctx(step=1))
    single.propose(ctx(step=2, feedback="x"))
    assert [m["role"] for m in server.requests[-1].body["messages"]] == ["system", "user"]


def test_anthropic_cache_control_and_thinking(server, llm_env):
    server.script = [anthropic_reply("```python\n" + A.GOOD_FILE + "```", thinking="one pass is enough",
                                     tokens_in=100, cache_read=1500, cache_write=0, tokens_out=700)]
    log = FakeLog()
    p = policy(server, llm_env, log, provider="anthropic", thinking_tokens=4096, max_tokens=8000)
    p.client.prices = PriceTable({"test-model": (3.0, 15.0, 0.30, 3.75)})
    proposal = p.propose(ctx())
    body = server.requests[0].body
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    first, rest = body["messages"][0]["content"]
    assert first["cache_control"] == {"type": "ephemeral"} and "torch.relu(x + y)" in first["text"]
    assert "NVIDIA H200" in first["text"] and "cache_control" not in rest
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["max_tokens"] == 8000 + 4096 and "temperature" not in body
    assert proposal.source == A.GOOD_FILE
    # Cached tokens in the cost: 100 plain at $3, 1500 read at $0.30, 700 out at $15 per million.
    row = log.calls[0]
    assert row["tokens_in"] == 1600 and row["prompt"]["cached_tokens_in"] == 1500
    assert row["cost_usd"] == pytest.approx((100 * 3.0 + 1500 * 0.30 + 700 * 15.0) / 1e6)
    assert row["prompt"]["reasoning"] == "one pass is enough"


def test_openai_reasoning_effort_cache_key_and_cached_cost(server, llm_env):
    server.script = [openai_reply("```python\n" + A.GOOD_FILE + "```", tokens_in=2000, cached_tokens=1536,
                                  tokens_out=900, reasoning_tokens=600) for _ in range(2)]
    log = FakeLog()
    p = policy(server, llm_env, log, reasoning_effort="high",
               **{"provider_options": {"openai": {"prompt_cache_key": True}}})
    p.client.prices = PriceTable({"test-model": (1.25, 10.0, 0.125)})
    p.propose(ctx(step=1, feedback="first"))
    p.propose(ctx(step=2, feedback="second, different"))
    one, two = (r.body for r in server.requests)
    assert one["reasoning_effort"] == "high" and "temperature" not in one
    # The stable prefix is identical and first, and so is the routing key built from it.
    assert one["messages"][0] == two["messages"][0]
    assert one["messages"][1]["content"][:400] == two["messages"][1]["content"][:400]
    assert one["prompt_cache_key"] == two["prompt_cache_key"]
    row = log.calls[0]
    assert row["prompt"]["cached_tokens_in"] == 1536 and row["prompt"]["reasoning_tokens"] == 600
    assert row["cost_usd"] == pytest.approx((464 * 1.25 + 1536 * 0.125 + 900 * 10.0) / 1e6)


def test_model_ensemble_logs_each_call_with_its_model(server, llm_env):
    server.default = openai_reply("```python\n" + A.GOOD_FILE + "```")
    log = FakeLog()
    p = policy(server, llm_env, log, specs=["openai:model-a@3", "openai:model-b@1"])
    assert p.name == "ensemble(openai:model-a@3, openai:model-b@1)"
    proposals = [p.propose(ctx(step=i)) for i in range(1, 21)]
    sent = [r.body["model"] for r in server.requests]
    assert set(sent) == {"model-a", "model-b"} and sent.count("model-a") > sent.count("model-b")
    assert [row["model"] for row in log.calls] == sent
    assert [pr.extra["model"] for pr in proposals] == [f"openai:{m}" for m in sent]
    # Seeded by task and step: the same step draws the same model again.
    again = policy(server, llm_env, FakeLog(), specs=["openai:model-a@3", "openai:model-b@1"])
    assert [again._pick(ctx(step=i))[1].model for i in range(1, 21)] == sent


def test_options_are_checked():
    with pytest.raises(ValueError):
        LLMOptions.from_specs(["openai:gpt-5"], reasoning_effort="extreme")
    with pytest.raises(ValueError):
        LLMOptions.from_specs(["anthropic:claude-sonnet-4-5"], thinking_tokens=100)
    with pytest.raises(ValueError):
        ModelChoice.parse("openai:gpt-5@0")
    with pytest.raises(ValueError):
        ModelChoice.parse("gpt-5")
    assert ModelChoice.parse("openai:org/model@v2") == ModelChoice("openai:org/model@v2", 1.0)
    assert ModelChoice.parse("openai:gpt-5@0.25") == ModelChoice("openai:gpt-5", 0.25)
