"""build_prompt: content per backend and stage, context without repeats, hardware facts, the token
budget by section priority, multi-turn conversations, and the cacheable prefix."""

from __future__ import annotations

import pytest
from llm_server import llm_env  # noqa: F401

from backends import HardwareFacts, TaskCost
from evokernel.llm import (
    Conversation,
    MemoryView,
    PromptInputs,
    StartPoint,
    TokenCounter,
    build_prompt,
    get_token_counter,
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
H200 = HardwareFacts("cuda:0", "NVIDIA H200", 132, 62914560, 150_000_000_000, 4300.0,
                     {"fp16": 720.0, "bf16": 700.0, "tf32": 360.0, "fp32": 52.0}, "test values", "2026-01-01T00:00:00Z")

KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)
'''
# The same kernel as written by another step: other comments and spacing.
KERNEL_REFORMATTED = KERNEL.replace("    row = tl.program_id(0)\n", "    row = tl.program_id(0)  # one row\n\n")
FASTER = KERNEL.replace("e / tl.sum(e, axis=0)", "e * (1.0 / tl.sum(e, axis=0))")


def _inputs(**kw) -> PromptInputs:
    base = dict(task_name="23_Softmax", task_source=TASK, backend="triton", stage="refine",
                memories=MEMORIES, feedback="max abs error 3.1e-02 at [17, 4095]", start_point=START)
    return PromptInputs(**(base | kw))


def test_prompt_contains_everything(llm_env):
    prompt = build_prompt(_inputs())
    user = prompt.user_text
    assert prompt.messages[0]["role"] == "user"
    assert "23_Softmax" in user and "torch.softmax(x, dim=-1)" in user
    # Every memory, shaped by kind.
    assert "Experience (success): Online softmax worked" in user
    assert "Kernel: Two-pass kernel\nResults: correct in 0.068 ms." in user
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
    user = prompt.user_text
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


def test_the_rule_set_is_stated_to_the_model(llm_env):
    strict = build_prompt(_inputs()).system
    kernelbench = build_prompt(_inputs(rules="kernelbench")).system
    assert "Rule set `strict`" in strict and "Rule set `kernelbench`" not in strict
    assert "Rule set `kernelbench`" in kernelbench and "Rule set `strict`" not in kernelbench
    for text in (strict, kernelbench):  # cheating is named under both
        assert "side streams" in text and "caching or reusing outputs" in text
    with pytest.raises(ValueError):
        build_prompt(_inputs(rules="lenient"))


def test_bad_backend_stage_and_missing_start_point(llm_env):
    with pytest.raises(ValueError):
        system_prompt("opencl", "draft")
    with pytest.raises(ValueError):
        system_prompt("triton", "polish")
    with pytest.raises(ValueError):
        build_prompt(_inputs(start_point=None))


# --- context without repeats ------------------------------------------------------


def test_no_kernel_source_twice(llm_env):
    """The start point's own trace, a reformatted copy of it from another run and the best kernel:
    the prompt holds the start point's code once and the best one as a diff."""
    memories = [
        MemoryView("trace", "softmax, step 1", KERNEL, status="ok", latency_ms=0.068, latency_iqr_ms=0.002,
                   latency_source="measured-gpu", value=0.4, id=1),
        MemoryView("trace", "softmax, step 4", KERNEL_REFORMATTED, status="ok", latency_ms=0.082,
                   latency_source="measured-gpu", value=0.2, id=4),
        MemoryView("trace", "softmax, step 6", FASTER, status="ok", latency_ms=0.061,
                   latency_source="measured-gpu", value=0.3, id=6),
        MemoryView("experience", "step 4", "softmax on triton, refine step: feasible (verdict: ok).", status="ok",
                   value=0.9, id=5, parent_id=4),
    ]
    start = StartPoint(KERNEL, latency_ms=0.068, latency_iqr_ms=0.002, timing_runs=100,
                       latency_source="measured-gpu", id=1)
    best = StartPoint(FASTER, latency_ms=0.061, latency_source="measured-gpu", id=6)
    prompt = build_prompt(_inputs(memories=memories, start_point=start, best=best, feedback=None))
    text = prompt.system + prompt.user_text
    assert text.count("def softmax_kernel") == 1 and prompt.user_text.count("@triton.jit") == 1
    assert "```diff" in text and "+    tl.store(out_ptr + row * n_cols + cols, e * (1.0 / tl.sum" in text
    # Every result the start point's code earned, and what their spread means.
    assert "Other results of this same code: ok in 0.082 ms" in text
    assert "(21% apart" in text and "timing noise" in text
    # An experience that says only "feasible" is not shown.
    assert "feasible (verdict: ok)" not in text
    report = prompt.report
    assert any("says only the verdict" in d for d in report.dropped)
    assert any("start point itself" in m for m in report.merged)
    assert report.included_memories == (0, 1, 2)


def test_identical_kernels_are_one_entry_with_every_result(llm_env):
    memories = [
        MemoryView("trace", "run A", KERNEL, status="ok", latency_ms=0.07, latency_source="measured-gpu", id=1),
        MemoryView("trace", "run B", KERNEL_REFORMATTED, status="ok", latency_ms=0.09,
                   latency_source="measured-gpu", id=2),
        MemoryView("experience", "run B", "Correct; 78% of copy bandwidth; registers 40.", status="ok", id=3,
                   parent_id=2),
    ]
    prompt = build_prompt(_inputs(stage="draft", start_point=None, memories=memories, feedback=None))
    user = prompt.user_text
    assert user.count("def softmax_kernel") == 1
    assert "Results: ok in 0.07 ms (measured-gpu); ok in 0.09 ms (measured-gpu)." in user
    assert "Verifier: Correct; 78% of copy bandwidth; registers 40." in user
    assert prompt.report.included_memories == (0, 1, 2)


# --- hardware and roofline ------------------------------------------------------------


def test_gpu_prompt_states_hardware_floor_and_start_point_position(llm_env):
    cost = TaskCost(min_bytes=268_435_456, flops=0, dtype="fp32")
    start = StartPoint(KERNEL, latency_ms=0.133, latency_iqr_ms=0.002, timing_runs=100,
                       latency_source="measured-gpu")
    user = build_prompt(_inputs(start_point=start, hardware=H200, cost=cost,
                                latency_source="measured-gpu")).user_text
    assert "NVIDIA H200, 132 SMs, L2 60 MiB" in user and "copy bandwidth 4300 GB/s" in user
    assert "fp16 720" in user and "fp32 52" in user
    assert "moves at least 268.4 MB" in user and "memory-bound" in user and "0.06243 ms at copy bandwidth" in user
    # 268.4 MB in 0.133 ms is 2018 GB/s: 47% of the copy bandwidth.
    assert "2018 GB/s of the minimum traffic, 47% of copy bandwidth" in user
    assert "median of 100 runs, IQR 0.002 ms" in user


def test_matmul_floor_and_fraction(llm_env):
    cost = TaskCost(min_bytes=3 * 4096 * 4096 * 2, flops=2 * 4096**3, dtype="fp16")
    start = StartPoint(KERNEL, latency_ms=0.5, latency_source="measured-gpu")
    user = build_prompt(_inputs(start_point=start, hardware=H200, cost=cost)).user_text
    assert "137.4 GFLOP of matmul/convolution work (fp16)" in user and "at the fp16 matmul rate" in user
    assert "274.9 TFLOP/s, 38% of the fp16 matmul rate" in user


def test_interpreted_latencies_are_labelled_not_speed(llm_env):
    start = StartPoint(KERNEL, latency_ms=41.0, latency_source="interpreted-cpu")
    user = build_prompt(_inputs(start_point=start, latency_source="interpreted-cpu",
                                cost=TaskCost(4096, 0, "fp32"))).user_text
    assert "not speed" in user and "41 ms in a CPU interpreter" in user
    assert "Against the roofline" not in user and "GB/s" not in user


# --- the token budget ----------------------------------------------------------------


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
    assert report.dropped[0].startswith("trace #12") and report.dropped[1].startswith("best_practice #13")
    user = prompt.user_text
    assert "Two-pass kernel" not in user and "Mask the tail" not in user
    assert "Online softmax worked" in user and "tl.max" in user


def test_budget_is_counted_on_the_whole_request(llm_env):
    counter = get_token_counter()
    prompt = build_prompt(_inputs(memories=[MemoryView("trace", f"k{i}", KERNEL.replace("row", f"r{i}"), value=i / 10,
                                                       id=i) for i in range(8)]), token_budget=1500)
    text = prompt.system + "".join(prompt.user_text for _ in [0])
    assert counter.count(text) <= prompt.report.tokens <= 1500
    assert prompt.report.sections["memories"] < 1500


def test_priority_memories_then_skills_then_api_notes(llm_env):
    notes = [MemoryView("api_note", "tl.exp", "tl.exp(x) is elementwise. " * 20, value=1.0)]
    skills = [MemoryView("skill", "online softmax", "Keep a running max and sum. " * 20, value=0.8)]
    memories = [MemoryView("experience", "e", "Masked loads fixed the tail. " * 20, status="ok", value=0.9, id=1)]
    base = build_prompt(_inputs(memories=[], feedback=None)).report.tokens
    prompt = build_prompt(_inputs(memories=memories, skills=skills, api_notes=notes, feedback=None),
                          token_budget=base + 250)
    dropped = prompt.report.dropped
    assert dropped[0].startswith("experience #1") and dropped[1].startswith("skill online softmax")
    assert "tl.exp(x) is elementwise." in prompt.user_text and prompt.report.tokens <= base + 250


def test_budget_shortens_feedback_after_memories(llm_env):
    feedback = "\n".join(f"line {i}: error detail" for i in range(400))
    base = build_prompt(_inputs(memories=[], feedback=None)).report.tokens
    prompt = build_prompt(_inputs(feedback=feedback), token_budget=base + 200)
    report = prompt.report
    assert set(report.trimmed_memories) == {0, 1, 2, 3}
    assert report.feedback_trimmed and report.tokens <= base + 200
    assert "the middle of the verifier feedback" in report.dropped
    user = prompt.user_text
    assert "line 0: error detail" in user and "line 399: error detail" in user
    assert "lines cut" in user


def test_task_and_start_point_are_never_cut(llm_env):
    prompt = build_prompt(_inputs(), token_budget=50)
    assert prompt.report.over_budget
    assert "torch.softmax" in prompt.user_text
    assert "class ModelNew: ..." in prompt.user_text


def test_estimate_counter_is_reported(llm_env):
    estimate = TokenCounter(name="estimate:chars/4", exact=False, _count=lambda t: len(t) // 4)
    report = build_prompt(_inputs(), counter=estimate).report
    assert report.counter == "estimate:chars/4" and not report.counter_exact
    assert any("estimate" in note for note in report.notes)


# --- the cacheable prefix --------------------------------------------------------------


def test_stable_prefix_is_first_and_marked(llm_env):
    one = build_prompt(_inputs(hardware=H200, feedback="first failure"))
    two = build_prompt(_inputs(hardware=H200, feedback="another failure", memories=MEMORIES[:1]))
    assert one.system == two.system
    (first_a, rest_a), (first_b, rest_b) = one.messages[0]["content"], two.messages[0]["content"]
    assert first_a == first_b and first_a["cache_control"] == {"type": "ephemeral"}
    assert "torch.softmax" in first_a["text"] and "NVIDIA H200" in first_a["text"]
    assert "cache_control" not in rest_a and rest_a["text"] != rest_b["text"]


# --- multi-turn -------------------------------------------------------------------------


def test_multi_turn_continues_one_conversation(llm_env):
    conv = Conversation()
    first = build_prompt(_inputs(stage="draft", start_point=None, feedback=None, memories=MEMORIES[:1]),
                         conversation=conv)
    answer = "Here it is.\n```python\n" + KERNEL + "```"
    conv.record(first, answer, KERNEL)
    # Next step: the draft is now the start point (retrieved as a trace too); new feedback; refreshed memories.
    start = StartPoint(KERNEL, latency_ms=0.07, latency_source="measured-gpu", id=1)
    memories = [MemoryView("trace", "this draft", KERNEL, status="ok", latency_ms=0.07, id=1),
                MemoryView("best_practice", "Vectorise", "Use BLOCK = next power of two.", value=0.3, id=2)]
    second = build_prompt(_inputs(start_point=start, memories=memories, feedback="correct; 0.07 ms"),
                          conversation=conv)
    roles = [m["role"] for m in second.messages]
    assert roles == ["user", "assistant", "user"]
    assert second.messages[1]["content"][0]["text"] == answer
    assert second.messages[1]["content"][0]["cache_control"] == {"type": "ephemeral"}
    new = second.user_text
    assert new.startswith("## Verifier report on your last answer") and "correct; 0.07 ms" in new
    assert "Use BLOCK = next power of two." in new  # retrieval refreshed
    assert "def softmax_kernel" not in new and "The code is your last answer" in new
    assert "torch.softmax" not in new  # the task is in the first turn, not repeated
    whole = "".join(m["content"][0]["text"] if isinstance(m["content"], list) else m["content"]
                    for m in second.messages)
    assert whole.count("def softmax_kernel") == 1
    assert second.report.turns == 2


def test_multi_turn_is_trimmed_to_the_budget(llm_env):
    conv = Conversation()
    prompt = build_prompt(_inputs(stage="draft", start_point=None, feedback=None, memories=[]), conversation=conv)
    for i in range(5):
        code = KERNEL.replace("row", f"row{i}")
        conv.record(prompt, f"Attempt {i}.\n```python\n{code}```\n" + "why " * 150, code)
        prompt = build_prompt(_inputs(stage="draft", start_point=None, feedback=f"wrong result {i}", memories=[]),
                              conversation=conv)
    full = prompt.report.tokens
    trimmed = build_prompt(_inputs(stage="draft", start_point=None, feedback="wrong result 5", memories=[]),
                           conversation=conv, token_budget=full - 600)
    report = trimmed.report
    assert report.tokens <= full - 600 and report.turns_dropped >= 2
    assert report.dropped[0] == "turn 2 of the conversation"
    texts = [m["content"][0]["text"] for m in trimmed.messages]
    assert "torch.softmax" in texts[0]  # the first turn, with the task, stays
    assert texts[-2].startswith("Attempt 4.")  # and the answer the report is about
    assert "left out to fit the token budget" in texts[-1]


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


def test_variants_of_the_start_point_are_diffs_and_empty_traces_are_left_out(llm_env):
    start = StartPoint(KERNEL, latency_ms=0.07, latency_source="measured-gpu", id=1)
    memories = [MemoryView("trace", "a variant", FASTER, status="wrong_result", id=2),
                MemoryView("trace", "no answer", "", status="compile_error", id=3),
                MemoryView("trace", "unrelated", "import torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n",
                           status="ok", latency_ms=1.0, id=4)]
    prompt = build_prompt(_inputs(start_point=start, memories=memories, feedback=None))
    user = prompt.user_text
    assert "### Kernel (a variant of the start point): a variant" in user and user.count("def softmax_kernel") == 1
    assert "Results: compile_error" not in user and "class ModelNew(torch.nn.Module)" in user
    assert any("produced no code" in d for d in prompt.report.dropped)
    assert prompt.report.included_memories == (0, 2)
