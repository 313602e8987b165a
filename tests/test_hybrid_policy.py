"""The builtin policy and an LLM together (evokernel/policies/_hybrid.py): the builtin drafts
where it covers the task and spends no tokens, the LLM refines from the builtin's kernel past
the builtin's tries, an uncovered task goes to the LLM, and `builtin_first=False` turns it off.
The LLM is a local stand-in server; the executor is scripted (verdicts are not the point)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evokernel
from evokernel import RunOptions
from evokernel.loop import StartPointView, StepContext
from evokernel.policies import HybridPolicy
from evokernel.policies._hybrid import DEFAULT_BUILTIN_TRIES
from memory_store import MemoryStore

from executor_candidates import HONEST
from llm_server import llm_env, local_llm, openai_reply, server  # noqa: F401  (fixtures)
from loop_doubles import ScriptedExecutor

CASES = Path(__file__).parent / "executor_cases"
ADD_RELU = CASES / "task_add_relu.py"
DROPOUT = CASES / "task_dropout_train.py"  # random in training mode: outside the builtin's families
FAST = dict(trials=2, device="cpu", jobs=1, skills=False)
LLM_KERNEL = HONEST["add_relu"][1].strip()


def run_with_llm(server, store, tasks, **options):
    server.default = openai_reply("```python\n" + LLM_KERNEL + "\n```\n", tokens_in=100, tokens_out=40)
    opts = RunOptions.of(llm=local_llm(server, "openai:test-model"), **FAST, **options)
    return evokernel.run(tasks, opts, store=store, executor=ScriptedExecutor())


def traces(store):
    return store.list_items(kinds=["trace"], limit=None, newest_first=False)


def prompt_text(request) -> str:
    return "\n".join(m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
                     for m in request.body["messages"])


def test_builtin_drafts_and_the_llm_refines_from_its_kernel(tmp_path, server):
    with MemoryStore(tmp_path / "m.db") as store:
        result = run_with_llm(server, store, [ADD_RELU], budget=DEFAULT_BUILTIN_TRIES + 1)
        items, steps = traces(store), store.steps(result.run_id)
    assert result.policy == "builtin+openai:test-model" and result.policy_is_llm
    builtin, llm = items[:DEFAULT_BUILTIN_TRIES], items[DEFAULT_BUILTIN_TRIES:]
    assert [i.extra["proposer"] for i in builtin] == ["builtin"] * DEFAULT_BUILTIN_TRIES
    assert [i.extra["tokens_in"] for i in builtin] == [0] * DEFAULT_BUILTIN_TRIES
    assert builtin[0].stage == "draft" and [i.stage for i in builtin[1:]] == ["refine"] * (DEFAULT_BUILTIN_TRIES - 1)
    assert all(i.extra["fingerprint"].startswith("builtin:") for i in builtin)
    # One call, for the step after the builtin's tries, refining from a builtin kernel the prompt holds.
    assert len(server.requests) == 1
    assert [i.extra["proposer"] for i in llm] == ["llm"] and llm[0].stage == "refine" and llm[0].content.strip() == LLM_KERNEL
    start = store_item(tmp_path, steps[-1]["start_point_id"])
    assert start.extra["proposer"] == "builtin"
    assert start.content.strip() in prompt_text(server.requests[0])
    assert result.tasks[0].tokens_in == 100 and result.tasks[0].tokens_out == 40


def store_item(tmp_path, item_id):
    with MemoryStore(tmp_path / "m.db") as store:
        return store.get_item(item_id)


def test_an_uncovered_task_goes_to_the_llm_from_its_first_draft(tmp_path, server):
    with MemoryStore(tmp_path / "m.db") as store:
        run_with_llm(server, store, [DROPOUT], budget=1)
        (item,) = traces(store)
    assert len(server.requests) == 1
    assert item.extra["proposer"] == "llm" and item.stage == "draft" and item.content.strip() == LLM_KERNEL
    assert "outside the builtin policy's families" in item.extra["builtin_stopped"]


def test_the_switch_and_independent_samples_leave_the_llm_alone(tmp_path, server):
    with MemoryStore(tmp_path / "off.db") as store:
        off = run_with_llm(server, store, [ADD_RELU], budget=1, builtin_first=False)
    with MemoryStore(tmp_path / "pass.db") as store:
        sampled = run_with_llm(server, store, [ADD_RELU], budget=1, independent_samples=True, memory_mode="off")
    assert off.policy == sampled.policy == "openai:test-model"
    assert len(server.requests) == 2  # each drafted by the LLM


class _Stub:
    def __init__(self, name, *, stop=False):
        self.name, self.stop, self.seen = name, stop, []

    def propose(self, ctx):
        from evokernel.loop import Proposal

        self.seen.append(ctx.step)
        if self.stop:
            return Proposal(None, stop=True, error="searched all 3 configurations")
        return Proposal(f"# by {self.name}", fingerprint=f"{self.name}:{ctx.step}")


def _ctx(stage, tried=(), start_fingerprint=None, step=1):
    start = None if start_fingerprint is None else StartPointView(
        id=1, code="# start", latency_ms=1.0, speedup_eager=None, speedup_compile=None,
        extra={"fingerprint": start_fingerprint})
    return StepContext(task_name="t", task_key="k", task_path="t.py", task_source="", category="", backend="triton",
                       stage=stage, step=step, memories=(), feedback=None, start_point=start, tried=frozenset(tried),
                       run_id=1)


@pytest.mark.parametrize("ctx, who", [
    (_ctx("draft"), "builtin"),
    (_ctx("refine", ["builtin:a"], start_fingerprint="builtin:a"), "builtin"),
    # the builtin cannot refine an LLM's kernel: its search moves its own configuration
    (_ctx("refine", ["builtin:a", ""], start_fingerprint=""), "llm"),
    # past its tries (this run's and earlier runs' builtin kernels of the task)
    (_ctx("refine", ["builtin:a", "builtin:b"], start_fingerprint="builtin:b"), "llm"),
    (_ctx("draft", ["builtin:a", "builtin:b"]), "llm"),
])
def test_whose_turn_comes_from_the_context(ctx, who):
    builtin, llm = _Stub("builtin"), _Stub("llm")
    proposal = HybridPolicy(builtin, llm, builtin_tries=2).propose(ctx)
    assert proposal.extra["proposer"] == who and proposal.source == f"# by {who}"


def test_a_builtin_that_stops_hands_the_step_to_the_llm():
    llm = _Stub("llm")
    proposal = HybridPolicy(_Stub("builtin", stop=True), llm).propose(_ctx("draft"))
    assert not proposal.stop and proposal.source == "# by llm"
    assert proposal.extra["builtin_stopped"] == "searched all 3 configurations"
    with pytest.raises(ValueError, match="builtin_tries must be at least 1"):
        HybridPolicy(_Stub("builtin"), llm, builtin_tries=0)
