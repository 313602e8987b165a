"""build_prompt: content per backend and stage, and trimming to a token budget."""

from __future__ import annotations

import pytest
from llm_server import llm_env  # noqa: F401

from evokernel.llm import (
    MemoryView,
    PromptInputs,
    StartPoint,
    TokenCounter,
    build_prompt,
    system_prompt,
)

TASK = (
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
    "    def forward(self, x):\n        return torch.softmax(x, dim=-1)\n"
)
MEMORIES = [
    MemoryView("experience", "Online softmax worked", "One pass with running max.",
               status="success", value=0.9, id=11),
    MemoryView("trace", "Two-pass kernel", "import triton\n# kernel body", status="correct",
               latency_ms=0.068, value=-0.5, id=12),
    MemoryView("best_practice", "Mask the tail", "Always mask the last block.", value=0.1, id=13),
    MemoryView("api_note", "tl.max", "tl.max(x, axis=0) reduces a block.", value=0.5, id=14),
]
START = StartPoint(
    code="import triton\nclass ModelNew: ...", latency_ms=0.133, speedup_eager=3.36,
    speedup_compile=0.98, facts=["memory-bound: 94% of copy bandwidth", "grid of 8192 programs"],
)


def _inputs(**kw) -> PromptInputs:
    base = dict(task_name="23_Softmax", task_source=TASK, backend="triton", stage="refine",
                memories=MEMORIES, feedback="max abs error 3.1e-02 at [17, 4095]", start_point=START)
    return PromptInputs(**(base | kw))


def test_prompt_contains_everything(llm_env):
    prompt = build_prompt(_inputs())
    user = prompt.messages[0]["content"]
    assert prompt.messages[0]["role"] == "user"
    assert "23_Softmax" in user and "torch.softmax(x, dim=-1)" in user
    # Every memory, shaped by kind.
    assert "Experience (success): Online softmax worked" in user
    assert "Kernel: Two-pass kernel (outcome: correct, latency 0.068 ms)" in user
    assert "Best practice: Mask the tail" in user and "API note: tl.max" in user
    assert "```python\nimport triton\n# kernel body" in user
    assert "max abs error 3.1e-02" in user
    assert "0.133 ms" in user and "3.36x" in user and "0.98x" in user
    assert "memory-bound: 94% of copy bandwidth" in user and "class ModelNew: ..." in user
    assert prompt.report.included_memories == (0, 1, 2, 3)
    assert prompt.report.included_ids(_inputs()) == [11, 12, 13, 14]
    assert not prompt.report.trimmed_memories and prompt.report.tokens > 0


def test_draft_prompt_without_start_point(llm_env):
    prompt = build_prompt(_inputs(stage="draft", start_point=None, feedback=None, memories=[]))
    user = prompt.messages[0]["content"]
    assert "Start point" not in user and "Verifier feedback" not in user and "Memory" not in user
    assert "Correctness first" in prompt.system


@pytest.mark.parametrize(
    "backend, needles",
    [
        ("triton", ["@triton.jit", "tl.constexpr"]),
        ("cuda", ["load_inline", "__global__"]),
        ("ascendc", ["from backends.ascendc import load_inline", "kernel_operator.h",
                     'extern "C" __global__ __aicore__', "block_dim=N", "KERNEL_SOURCE"]),
    ],
)
def test_system_prompt_per_backend(backend, needles):
    text = system_prompt(backend, "draft")
    for needle in [*needles, "class ModelNew(nn.Module)", "try/except", "```python"]:
        assert needle in text


def test_bad_backend_stage_and_missing_start_point(llm_env):
    with pytest.raises(ValueError):
        system_prompt("opencl", "draft")
    with pytest.raises(ValueError):
        system_prompt("triton", "polish")
    with pytest.raises(ValueError):
        build_prompt(_inputs(start_point=None))


def test_budget_trims_lowest_value_memories_first(llm_env):
    big = [MemoryView(m.kind, m.title, m.content + "\n" + "detail " * 150, status=m.status,
                      latency_ms=m.latency_ms, value=m.value, id=m.id) for m in MEMORIES]
    full = build_prompt(_inputs(memories=big)).report.tokens
    without_two = build_prompt(_inputs(memories=[big[0], big[3]])).report.tokens
    prompt = build_prompt(_inputs(memories=big), token_budget=(full + without_two) // 2 - 80)
    report = prompt.report
    # Values: 0.9, -0.5, 0.1, 0.5 -> drop -0.5 (index 1), then 0.1 (index 2).
    assert report.trimmed_memories == (1, 2)
    assert report.included_memories == (0, 3)
    assert report.tokens <= report.token_budget and not report.over_budget
    user = prompt.messages[0]["content"]
    assert "Two-pass kernel" not in user and "Mask the tail" not in user
    assert "Online softmax worked" in user and "tl.max" in user
    assert any("lowest-value" in note for note in report.notes)


def test_budget_shortens_feedback_after_memories(llm_env):
    feedback = "\n".join(f"line {i}: error detail" for i in range(400))
    base = build_prompt(_inputs(memories=[], feedback=None)).report.tokens
    prompt = build_prompt(_inputs(feedback=feedback), token_budget=base + 200)
    report = prompt.report
    assert report.trimmed_memories == (1, 2, 3, 0)
    assert report.feedback_trimmed and report.tokens <= base + 200
    user = prompt.messages[0]["content"]
    assert "line 0: error detail" in user and "line 399: error detail" in user
    assert "lines cut" in user


def test_task_and_start_point_are_never_cut(llm_env):
    prompt = build_prompt(_inputs(), token_budget=50)
    assert prompt.report.over_budget
    assert "torch.softmax" in prompt.messages[0]["content"]
    assert "class ModelNew: ..." in prompt.messages[0]["content"]


def test_estimate_counter_is_reported(llm_env):
    estimate = TokenCounter(name="estimate:chars/4", exact=False, _count=lambda t: len(t) // 4)
    report = build_prompt(_inputs(), counter=estimate).report
    assert report.counter == "estimate:chars/4" and not report.counter_exact
    assert any("estimate" in note for note in report.notes)


class ToyBackend:
    """A plugin backend that brings its own prompt rules."""

    name = "toy"
    language = "toy-lang"
    title = "Toy Accelerator"
    prompt_rules = "Toy rules:\n- Every kernel is decorated with `@toy.kernel`.\n"
    kernel_marker = r"@toy\.kernel"


def test_plugin_backend_brings_its_rules(llm_env, monkeypatch):
    import backends._backend as registry
    from evokernel.llm._prompts import backend_prompt_facts

    known = registry._entry_points()
    monkeypatch.setattr(registry, "_entry_points", lambda: {**known, "toy": "test_llm_prompts:ToyBackend"})
    backend_prompt_facts.cache_clear()
    try:
        prompt = build_prompt(_inputs(backend="toy", stage="draft", start_point=None))
        assert "Toy Accelerator kernels" in prompt.system and "`@toy.kernel`" in prompt.system
        assert "Triton rules" not in prompt.system
    finally:
        backend_prompt_facts.cache_clear()
