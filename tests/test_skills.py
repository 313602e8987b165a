"""The verified skill library through the loop: proposed after an improving step,
verified by re-timing, admitted or rejected, merged, selected for later tasks
(BM25 recall, then the rerank: an LLM call against the local stand-in server,
or stage values), and used first by the builtin policy.

The executor double times a kernel by what its source says (a block size, a
marker) and re-times the same way, optionally scaled so a speedup does not
reproduce: the loop's and the library's bookkeeping are the production path.
The re-timing itself, in a real worker, is tested in test_skills_retime.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import evokernel
from backends import Verdict
from backends._retime import RetimeReport
from evokernel import RunOptions
from evokernel.policies import get_policy
from evokernel.skills import (
    KIND,
    Action,
    Evidence,
    Improvement,
    Scope,
    SkillDraft,
    SkillLibrary,
    SkillOptions,
    SkillStatus,
    Verification,
    parse_rerank,
    parse_summary,
    skills_in,
)
from evokernel.skills._types import item_fields
from memory_store import MemoryStore

from executor_candidates import HONEST
from llm_server import llm_env, local_llm, openai_reply, server  # noqa: F401  (fixtures)
from loop_doubles import ScriptedExecutor, ok

CASES = Path(__file__).parent / "executor_cases"
ADD_RELU = CASES / "task_add_relu.py"
BIAS_SCALE = CASES / "task_bias_scale.py"
FAST = dict(trials=2, timeout_s=120, device="cpu", jobs=1)
REQUIRED = {"baseline_ms", "skill_ms", "speedup", "reruns", "latency_source"}


class TimedExecutor(ScriptedExecutor):
    """`evaluate` answers ok with `latency(source)`; `retime` re-times both kernels by the same
    rule, the candidate's latency multiplied by `reproduce` (above 1: the speedup fades)."""

    def __init__(self, latency, *, reproduce: float = 1.0):
        super().__init__(lambda source, n: ok(latency(source)))
        self.latency = latency
        self.reproduce = reproduce
        self.retimes: list[tuple[str, str, int]] = []

    def retime(self, task_path, baseline, candidate, *, backend="triton", options=None, rounds=3, timeout_s=None):
        self.retimes.append((baseline, candidate, rounds))
        b, c = self.latency(baseline), self.latency(candidate) * self.reproduce
        return RetimeReport(Verdict.OK, "scripted", b, c, b / c, tuple((b, c) for _ in range(rounds)),
                            "interpreted-cpu", "scripted re-timing")


def block_latency(source: str) -> float:
    """The builtin generator names its configuration in the kernel's docstring: 512-element blocks are fast."""
    return 4.0 if re.search(r"block_n=512\b", source) else 10.0


class Spy:
    """A policy wrapper that records every context it is shown."""

    def __init__(self, inner):
        self.inner, self.name, self.is_llm, self.contexts = inner, inner.name, inner.is_llm, []

    def propose(self, ctx):
        self.contexts.append(ctx)
        return self.inner.propose(ctx)


def run_tasks(tasks, policy, store, options, *, executor):
    return evokernel.run(tasks, options, policy=policy, store=store, executor=executor)


def traces(store, task_name):
    return [i for i in store.list_items(kinds=["trace"], limit=None, newest_first=False)
            if i.extra.get("task_name") == task_name]


def test_builtin_skill_proposed_verified_admitted_then_tried_first_on_a_later_task(tmp_path):
    ex = TimedExecutor(block_latency)
    with MemoryStore(tmp_path / "m.db") as store:
        first = run_tasks([ADD_RELU], get_policy(), store, RunOptions.of(budget=2, **FAST), executor=ex)
        assert first.tasks[0].statuses == ["ok", "ok"] and first.tasks[0].best_latency_ms == 4.0
        [skill] = skills_in(store)
        draft, refined = traces(store, "task_add_relu")
        assert skill.status is SkillStatus.ADMITTED and skill.source == "builtin"
        assert skill.hint == {"config_key": "config", "family": "elementwise", "set": {"block_n": 512},
                              "from": {"block_n": 1024}}
        assert "block_n 1024 -> 512" in skill.technique and "2.50x faster" in skill.technique
        assert "-\"\"\"Builtin-policy candidate" in skill.sketch  # the diff of the two kernels
        [evidence] = skill.evidence
        assert (evidence.before_item_id, evidence.after_item_id) == (draft.id, refined.id)
        assert (evidence.before_ms, evidence.after_ms) == (10.0, 4.0)
        item = store.get_item(skill.id)
        assert item.kind == KIND and item.status == "admitted" and item.parent_id == refined.id
        assert REQUIRED <= set(item.extra["verification"])
        assert item.extra["verification"]["speedup"] == pytest.approx(2.5)
        assert item.extra["verification"]["reruns"] == 3 and item.extra["verification"]["admitted"] is True
        assert [(b, c) for b, c, _ in ex.retimes] == [(draft.content, refined.content)]
        assert "When it applies:" in item.content and "Evidence: task_add_relu: 10 ms -> 4 ms" in item.content

        # A later task of the same family: the skill is recalled, and its change is the draft's first try.
        spy = Spy(get_policy())
        run_tasks([BIAS_SCALE], spy, store, RunOptions.of(budget=1, **FAST), executor=ex)
        assert [s.id for s in spy.contexts[0].skills] == [skill.id]
        assert all(m.kind != KIND for m in spy.contexts[0].memories), "skills have their own place, not the memories'"
        [bias] = traces(store, "task_bias_scale")
        assert bias.extra["config"]["block_n"] == 512 and bias.extra["config_from"] == f"skill {skill.id}"
        used = store.get_item(skill.id)
        assert used.visits_draft == 1 and used.q_draft > 0, "the skill's draft value learned from the step that used it"


def test_a_speedup_that_does_not_reproduce_is_rejected_kept_and_never_retrieved(tmp_path):
    ex = TimedExecutor(block_latency, reproduce=2.3)  # re-timed: 10 ms against 9.2 ms, 1.09x
    with MemoryStore(tmp_path / "m.db") as store:
        run_tasks([ADD_RELU], get_policy(), store, RunOptions.of(budget=2, **FAST), executor=ex)
        [rejected] = skills_in(store)
        assert rejected.status is SkillStatus.REJECTED and not rejected.verification.admitted
        assert rejected.verification.speedup == pytest.approx(10 / 9.2)
        assert "did not reproduce" in rejected.verification.reason
        spy = Spy(get_policy())
        run_tasks([BIAS_SCALE], spy, store, RunOptions.of(budget=1, **FAST), executor=ex)
        assert spy.contexts[0].skills == [] and all(m.kind != KIND for m in spy.contexts[0].memories)


def test_the_same_rejected_proposal_is_not_verified_again(tmp_path):
    ex = TimedExecutor(block_latency, reproduce=2.3)
    with MemoryStore(tmp_path / "m.db") as store:
        run_tasks([ADD_RELU], get_policy(), store, RunOptions.of(budget=2, **FAST), executor=ex)
        [rejected] = skills_in(store)
        draft, refined = traces(store, "task_add_relu")
        library = SkillLibrary(store, backend="triton", latency_source="interpreted-cpu", executor=ex)
        again = Improvement(
            task_key=draft.task_key, task_name="task_add_relu", task_source="", category="elementwise",
            backend="triton", stage="refine", before_item_id=draft.id, before_code=draft.content,
            before_extra=draft.extra, before_ms=10.0, after_code=refined.content, after_extra=refined.extra,
            after_key_text=refined.key_text, after_ms=4.0, latency_source="interpreted-cpu")
        learned = library.learn(again, task_path=str(ADD_RELU))
        assert learned.action is Action.SKIPPED and learned.duplicate_of == rejected.id
        assert len(ex.retimes) == 1, "no second re-timing"
        assert library.record(learned, trace_id=refined.id, run_id=None) is None
        assert len(skills_in(store)) == 1


def test_near_duplicates_merge_into_one_skill_with_both_evidence(tmp_path):
    ex = TimedExecutor(block_latency)
    with MemoryStore(tmp_path / "m.db") as store:
        run_tasks([ADD_RELU, BIAS_SCALE], get_policy(), store, RunOptions.of(budget=2, **FAST), executor=ex)
        [skill] = skills_in(store)
        assert [e.task_name for e in skill.evidence] == ["task_add_relu", "task_bias_scale"]
        assert all(REQUIRED <= set(e.verification) for e in skill.evidence)
        item = store.get_item(skill.id)
        assert item.extra["merged"] == 1 and "task_bias_scale: 10 ms -> 4 ms" in item.content
        # The second task's refine step used the skill first: its value moved.
        assert item.visits_refine == 1


def test_no_skills_option_proposes_and_selects_nothing(tmp_path):
    ex = TimedExecutor(block_latency)
    with MemoryStore(tmp_path / "m.db") as store:
        run_tasks([ADD_RELU], get_policy(), store, RunOptions.of(budget=2, skills=False, **FAST), executor=ex)
        assert skills_in(store) == [] and ex.retimes == []
    with MemoryStore(tmp_path / "off.db") as store:
        run_tasks([ADD_RELU], get_policy(), store, RunOptions.of(budget=2, memory_mode="off", **FAST), executor=ex)
        assert skills_in(store) == []


# --- the LLM's summary and rerank, against the local stand-in server ------------------------


def _admitted(store, title: str, technique: str, *, task_key="other-task", source="interpreted-cpu") -> int:
    scope = Scope(("softmax", "row reduction"), "rows of 1000 fp32", "triton", "rows")
    evidence = Evidence(task_key, task_key, None, None, 10.0, 5.0, source,
                        {"baseline_ms": 10.0, "skill_ms": 5.0, "speedup": 2.0, "reruns": 3, "latency_source": source})
    draft = SkillDraft(title, scope, technique, "x = tl.load(ptr + offs, mask=mask)", evidence, "llm")
    verification = Verification(10.0, 5.0, 2.0, 3, source, True, "reproduced", 1.2)
    fields = item_fields(draft, verification, status=SkillStatus.ADMITTED, category="elementwise",
                         evidence=evidence, run_id=None, stage="refine")
    return store.add_item(**fields)


def _answer(code: str) -> str:
    return "Here is the kernel.\n\n```python\n" + code.strip() + "\n```\n"


def test_llm_rerank_picks_and_orders_the_skills_that_go_into_the_prompt(tmp_path, server, monkeypatch):
    server.script = [openai_reply("3, 1"), openai_reply(_answer(HONEST["add_relu"][1]))]
    with MemoryStore(tmp_path / "m.db") as store:
        ids = [_admitted(store, "Fuse the add into the relu kernel", "Load x and y once and add relu add in registers."),
               _admitted(store, "Row softmax in one pass", "Keep the row max and sum in registers."),
               _admitted(store, "Wide blocks for elementwise add relu", "Use 4096-element blocks for add relu chains.")]
        run_tasks([ADD_RELU], get_policy(llm=local_llm(server, "openai:test-model"), log=store), store, RunOptions.of(budget=1, **FAST),
                  executor=ScriptedExecutor())
        rerank = json.dumps(server.requests[0].body)
        assert "You pick optimisation skills" in rerank
        assert all(t in rerank for t in ("Fuse the add", "Row softmax", "Wide blocks"))
        prompt = server.requests[1].body["messages"][-1]["content"]
        text = prompt if isinstance(prompt, str) else "\n".join(p["text"] for p in prompt)
        assert "## Skills: verified techniques from earlier tasks" in text
        listed = re.findall(r"^(\d+)\. (.+?) \(applies to", server.requests[0].body["messages"][-1]["content"], re.M)
        titles = {int(n): t for n, t in listed}
        assert sorted(titles.values()) == sorted(["Fuse the add into the relu kernel", "Row softmax in one pass",
                                                  "Wide blocks for elementwise add relu"])
        assert text.index(f"### Skill: {titles[3]}") < text.index(f"### Skill: {titles[1]}")
        assert f"### Skill: {titles[2]}" not in text
        chosen = {titles[3], titles[1]}
        calls = store.llm_calls()
        assert [c["prompt"].get("purpose") for c in calls] == ["skill-rerank", None]
        assert calls[0]["tokens_in"] == 11 and calls[0]["model"] == "test-model"
        visits = {store.get_item(i).key_text.splitlines()[0]: store.get_item(i).visits_draft for i in ids}
        assert visits == {t: int(t in chosen) for t in visits}, "the chosen skills were in the step's context"


def test_no_rerank_ranks_by_value_without_a_call(tmp_path, server, monkeypatch):
    server.default = openai_reply(_answer(HONEST["add_relu"][1]))
    with MemoryStore(tmp_path / "m.db") as store:
        _admitted(store, "Fuse the add into the relu kernel", "Load x and y once.")
        result = run_tasks([ADD_RELU], get_policy(llm=local_llm(server, "openai:test-model"), log=store), store,
                           RunOptions.of(budget=1, rerank=False, **FAST), executor=ScriptedExecutor())
        assert len(server.requests) == 1 and result.tasks[0].correct
        assert "## Skills: verified techniques" in json.dumps(server.requests[0].body)


def test_llm_summarises_an_improving_step_into_a_verified_skill(tmp_path, server, monkeypatch):
    slow = HONEST["add_relu"][1]
    fast = slow.replace("cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)", "cdiv(n, 2048),)](x, y, out, n, BLOCK=2048)")
    assert fast != slow
    summary = {"title": "Mark the fast path", "applies_to": {"operators": ["add relu"], "shapes": "any"},
               "technique": "The faster kernel launches fewer programs.", "sketch": "grid = (triton.cdiv(n, 1024),)"}
    server.script = [openai_reply(_answer(slow)), openai_reply(_answer(fast)),
                     openai_reply("```json\n" + json.dumps(summary) + "\n```", tokens_in=50, tokens_out=20)]
    ex = TimedExecutor(lambda source: 2.0 if "BLOCK=2048" in source else 10.0)
    with MemoryStore(tmp_path / "m.db") as store:
        result = run_tasks([ADD_RELU], get_policy(llm=local_llm(server, "openai:test-model"), log=store), store,
                           RunOptions.of(budget=2, **FAST), executor=ex)
        [skill] = skills_in(store)
        assert skill.admitted and skill.source == "llm" and skill.title == "Mark the fast path"
        assert skill.scope.operators == ("add relu",) and skill.hint is None
        calls = store.llm_calls()
        assert [c["prompt"].get("purpose") for c in calls] == [None, None, "skill-summary"]
        item = store.get_item(skill.id)
        assert item.extra["call_id"] == calls[2]["id"] and item.extra["tokens_in"] == 50
        assert "Before (10 ms" in calls[2]["prompt"]["messages"][0]["content"]
        # The summary call is part of the step's accounting, like the proposal's.
        assert result.tasks[0].tokens_in == 11 + 11 + 50
        # A later task: the skill is recalled, the rerank keeps it, and it is in the prompt's skills section.
        server.script = [openai_reply("1"), openai_reply(_answer(fast))]
        run_tasks([BIAS_SCALE], get_policy(llm=local_llm(server, "openai:test-model"), log=store), store, RunOptions.of(budget=1, **FAST),
                  executor=ex)
        assert "Mark the fast path" in server.requests[-2].body["messages"][-1]["content"]
        prompt = json.dumps(server.requests[-1].body)
        assert "## Skills: verified techniques from earlier tasks" in prompt and "### Skill: Mark the fast path" in prompt
        assert store.get_item(skill.id).visits_draft == 1


def test_parsers_read_what_models_write():
    assert parse_rerank("<think>2 looks best</think>3, 1", 3, 2) == [2, 0]
    assert parse_rerank("Skills 2 and 2 then 7", 3, 3) == [1]
    assert parse_rerank("None of these apply.", 3, 3) == []
    assert parse_rerank("I cannot tell.", 3, 3) is None
    assert parse_summary('Sure: {"title": "T", "technique": "W"}')["title"] == "T"
    assert parse_summary('{"title": "", "technique": "W"}') is None
    assert parse_summary("no json") is None


class OneRetime:
    def __init__(self, rounds):
        self.rounds = rounds

    def retime(self, task_path, baseline, candidate, *, backend="triton", options=None, rounds=3, timeout_s=None):
        ratios = sorted(b / c for b, c in self.rounds)
        return RetimeReport(Verdict.OK, "scripted", 10.0, 10.0 / ratios[1], ratios[1], tuple(self.rounds),
                            "measured-gpu", "scripted")


def test_admission_needs_the_speedup_in_every_alternation():
    from evokernel.skills import verify

    kwargs = dict(backend="triton", eval_options=None, options=SkillOptions())
    lucky = verify(OneRetime([(12.0, 10.0), (13.0, 10.0), (10.0, 10.0)]), "t.py", "a", "b", **kwargs)
    assert lucky.speedup == pytest.approx(1.2) and not lucky.admitted and "2 of 3 alternations" in lucky.reason
    steady = verify(OneRetime([(12.5, 10.0), (13.0, 10.0), (12.2, 10.0)]), "t.py", "a", "b", **kwargs)
    assert steady.admitted and "lowest 1.22x" in steady.reason and steady.reruns == 3


def test_a_skill_change_applies_only_the_way_its_evidence_went():
    from evokernel.policies._search import _agrees

    assert _agrees({"block_m": 1}, {"block_m": 2}, {"block_m": 1})
    assert not _agrees({"block_m": 4}, {"block_m": 2}, {"block_m": 1}), "1 -> 2 was faster says nothing for 4 -> 2"
    assert _agrees({"block_n": 512}, {"block_n": 2048}, {"block_n": 1024})
    assert not _agrees({"block_n": 2048}, {"block_n": 2048}, {"block_n": 1024}), "nothing to change"
    assert _agrees({"one_pass": True}, {"one_pass": False}, {"one_pass": True})
    assert not _agrees({"one_pass": False, "block_m": 1}, {"one_pass": True, "block_m": 2}, {"one_pass": True, "block_m": 1})


def test_options_are_checked():
    with pytest.raises(ValueError, match="at least 3 alternations"):
        SkillOptions(reruns=2)
    with pytest.raises(ValueError, match="above 1"):
        SkillOptions(min_speedup=1.0)
