"""Answers as edits to the start point (evokernel/llm/_edits.py): a start point past half the answer's
tokens is asked for as SEARCH/REPLACE blocks, the blocks are applied in order to the start point's code,
and a block that matches nowhere or in several places is the step's error."""

from __future__ import annotations

import pytest
from llm_server import FakeLog, llm_env, openai_reply, server  # noqa: F401  (fixtures)

from executor_candidates import HONEST

from evokernel.llm import Edit, EditError, PromptInputs, RetryPolicy, StartPoint, apply_edits, build_prompt, find_edits
from evokernel.loop import StartPointView, StepContext
from evokernel.policies._llm import LLMPolicy

TASK = (
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x, y):\n"
    "        return torch.relu(x + y) * 2.0\n\n\ndef get_inputs():\n    return [torch.randn(37, 1000), torch.randn(37, 1000)]\n"
)
START = HONEST["add_relu"][1]  # the executor tests' honest add_relu candidate


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def test_blocks_are_found_in_order_and_applied_in_turn():
    answer = ("Two changes.\n" + block("    add_relu_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
                                       "    add_relu_kernel[(triton.cdiv(n, 4096),)](x, y, out, n, BLOCK=4096)\n")
              + "and\n" + block("    mask = offs < n_elements\n", "    mask = offs < n_elements  # the tail\n"))
    edits = find_edits(answer)
    assert [e.search.strip()[:15] for e in edits] == ["add_relu_kernel", "mask = offs < n"]
    out = apply_edits(START, edits)
    assert "BLOCK=4096" in out and "BLOCK=1024" not in out and "# the tail" in out
    assert out.count("\n") == START.count("\n")
    # an empty REPLACE deletes; an edit sees the file as the edits before it left it
    gone = apply_edits(START, [Edit("    mask = offs < n_elements\n", ""), Edit("mask=mask)\n    y", "mask=None)\n    y")])
    assert "mask = offs < n_elements" not in gone and "tl.load(x_ptr + offs, mask=None)" in gone
    assert find_edits("```python\nprint(1)\n```") == []


def test_a_block_that_matches_nowhere_or_twice_names_itself():
    with pytest.raises(EditError, match=r"edit block 2's SEARCH text \(starting 'x = tl.load\(x_ptr \+ offs, "
                                        r"mask=mask\)'\) matches nothing"):
        apply_edits(START, [Edit("    mask = offs < n_elements\n", "    mask = n_elements > offs\n"),
                            Edit("  x = tl.load(x_ptr + offs, mask=mask)\n  y", "")])  # wrong indentation
    with pytest.raises(EditError, match="edit block 1's .* matches 3 places .* include more lines"):
        apply_edits(START, [Edit("mask=mask", "mask=None")])
    with pytest.raises(EditError, match="block 1 has an empty SEARCH"):
        apply_edits(START, [Edit("\n", "x")])


def _inputs(code: str, stage: str = "refine") -> PromptInputs:
    return PromptInputs(task_name="add_relu", task_source=TASK, backend="triton", stage=stage, memories=[],
                        feedback=None, start_point=StartPoint(code=code, latency_ms=0.1) if stage == "refine" else None)


def test_a_start_point_past_half_the_answer_is_asked_for_as_edits():
    big = START + "".join(f"# padding line {i} of a long launch-plan runtime\n" for i in range(400))
    asked = build_prompt(_inputs(big), answer_tokens=2048)
    assert asked.report.answer_format == "edits" and asked.report.as_dict()["answer_format"] == "edits"
    assert "<<<<<<< SEARCH" in asked.user_text and "do not reply with the whole file" in asked.user_text
    assert "holding the whole file" not in asked.user_text
    for prompt in (build_prompt(_inputs(START), answer_tokens=2048),  # small: the whole file
                   build_prompt(_inputs(big)),  # no answer limit given
                   build_prompt(_inputs(big, stage="draft"), answer_tokens=2048)):  # nothing to edit
        assert prompt.report.answer_format == "file" and "<<<<<<< SEARCH" not in prompt.user_text


def _refine_ctx() -> StepContext:
    start = StartPointView(id=7, code=START, latency_ms=0.2, speedup_eager=None, speedup_compile=None, extra={})
    return StepContext(task_name="add_relu", task_key="k1", task_path="t.py", task_source=TASK,
                       category="elementwise", backend="triton", stage="refine", step=2, memories=(), feedback=None,
                       start_point=start, tried=frozenset(), run_id=None, api_notes=())


def _policy(server) -> LLMPolicy:
    policy = LLMPolicy("openai:test-model", log=FakeLog(), provider_options={"base_url": server.url + "/v1"})
    policy.client.retry = RetryPolicy(max_attempts=1)
    return policy


def test_the_policy_applies_an_answers_edits_to_its_start_point(server, llm_env):
    server.script = [openai_reply("<think>BLOCK 4096 is better</think>\nThe launch:\n" + block(
        "    add_relu_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
        "    add_relu_kernel[(triton.cdiv(n, 4096),)](x, y, out, n, BLOCK=4096)\n"))]
    proposal = _policy(server).propose(_refine_ctx())
    assert proposal.error is None, proposal.error
    assert proposal.source.strip() == START.replace("1024", "4096").strip()  # the parser trims the file's ends
    assert proposal.extra["parse"]["source"] == "edits" and proposal.extra["parse"]["outcome"] == "candidate"


def test_edits_that_do_not_apply_are_the_steps_feedback(server, llm_env):
    server.script = [openai_reply(block("    z = tl.load(z_ptr)\n", "    z = 0\n"))]
    proposal = _policy(server).propose(_refine_ctx())
    assert proposal.source is None
    assert proposal.error.startswith("Your edits were not applied: edit block 1's SEARCH text (starting "
                                     "'z = tl.load(z_ptr)') matches nothing")
    assert proposal.extra["parse"]["outcome"] == "bad_edit"


def test_an_answer_of_edits_cut_by_the_token_limit_applies_none_of_them(server, llm_env):
    """The whole blocks before a cut one are not the change the model meant: nothing runs, and the
    feedback says the answer was cut."""
    server.script = [openai_reply(block("    mask = offs < n_elements\n", "    mask = offs < n_elements  # tail\n")
                                  + "<<<<<<< SEARCH\n    x = tl.load(", finish_reason="length")]
    proposal = _policy(server).propose(_refine_ctx())
    assert proposal.source is None and proposal.extra["parse"]["outcome"] == "truncated"
    assert proposal.error.startswith("Your edits were cut off by the output-token limit after 1 whole block(s)")
