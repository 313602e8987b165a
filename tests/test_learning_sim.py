"""The learning simulation (benchmarks/learning_sim.py) at tiny sizes: properties that can fail."""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import learning_sim as sim  # noqa: E402

TINY = sim.World(families=2, tasks_per_family=6, items_per_family=10, budget=4)


def _mean_context_utility(record: sim.RunRecord) -> float:
    return statistics.fmean(s.context_utility for s in record.steps if s.context_utility is not None)


def test_memory_off_retrieves_nothing_and_memory_on_always_does():
    off = sim.simulate(TINY, sim.Method(), sim.Arm.OFF, seed=0)
    on = sim.simulate(TINY, sim.Method(), sim.Arm.VALUE, seed=0)
    assert len(off.steps) == len(on.steps) == 2 * 6 * 4
    assert all(s.context_utility is None for s in off.steps)
    assert all(s.context_utility is not None for s in on.steps)
    assert off.ranked_items["draft"] == 0  # no context: only start points are ever updated, never in drafting


def test_a_seed_is_one_world_and_a_run_repeats_exactly():
    first = sim.simulate(TINY, sim.Method(), sim.Arm.VALUE, seed=3)
    again = sim.simulate(TINY, sim.Method(), sim.Arm.VALUE, seed=3)
    other = sim.simulate(TINY, sim.Method(), sim.Arm.VALUE, seed=4)
    assert first.steps == again.steps and first.rank_correlation == again.rank_correlation
    assert first.steps != other.steps


def test_similarity_follows_utility_only_as_far_as_rho_says():
    """At rho = 1 the most similar items are the most useful; at rho = 0 similarity is no better than chance."""
    world = dataclasses.replace(TINY, rho=1.0)
    similar = [_mean_context_utility(sim.simulate(world, sim.Method(), sim.Arm.SIMILARITY, seed=s)) for s in range(2)]
    random_ = [_mean_context_utility(sim.simulate(world, sim.Method(), sim.Arm.RANDOM, seed=s)) for s in range(2)]
    assert all(a > b + 0.3 for a, b in zip(similar, random_)), (similar, random_)
    blind = dataclasses.replace(TINY, rho=0.0)
    similar0 = [_mean_context_utility(sim.simulate(blind, sim.Method(), sim.Arm.SIMILARITY, seed=s)) for s in range(2)]
    assert statistics.fmean(similar0) < statistics.fmean(similar) - 0.3


def test_values_rank_utility_when_items_decide_the_outcome():
    """No harmful items, similarity = utility (rho 1), outcomes that follow the context closely:
    the values the store learns rank the items' hidden utilities (0.44 to 0.60 on these seeds;
    values that learned nothing would give None, random ones about 0)."""
    world = sim.World(families=1, tasks_per_family=40, items_per_family=10, budget=3, rho=1.0, utility_mean=2.0,
                      beta=6.0, task_sd=0.0, draft_logit=-12.0, progress_penalty=0.0)
    records = [sim.simulate(world, sim.Method(), sim.Arm.RANDOM, seed=s) for s in range(3)]
    assert all(min(s.context_utility for s in r.steps) > 0 for r in records)  # no harmful item in any context
    assert all(r.ranked_items["draft"] >= 15 and r.ranked_items["refine"] >= 15 for r in records)
    correlations = [sim.headline_correlation(r) for r in records]
    assert min(correlations) > 0.3 and statistics.fmean(correlations) > 0.4, correlations


def test_a_step_that_follows_one_memory_credits_it_alone_when_told_to():
    """follows "one": the step's effect is one item's utility (the builtin following a remembered
    configuration); credit "followed" moves that item's value alone (the builtin names only it as
    used), "shared" every item of the context, as the LLM's prompt does; in the default world
    "followed" is "shared"."""
    world = dataclasses.replace(TINY, follows="one")
    shared = sim.simulate(world, sim.Method(credit="shared"), sim.Arm.VALUE, seed=0)
    followed = sim.simulate(world, sim.Method(credit="followed"), sim.Arm.VALUE, seed=0)
    assert shared.diagnostics["draft_items_credited_per_step"] == pytest.approx(5.0)
    assert followed.diagnostics["draft_items_credited_per_step"] <= 1.0  # one, or none once all were followed
    assert followed.diagnostics["draft_items_credited_per_step"] > 0.5
    default = sim.simulate(TINY, sim.Method(credit="followed"), sim.Arm.VALUE, seed=1)
    assert default.steps == sim.simulate(TINY, sim.Method(), sim.Arm.VALUE, seed=1).steps
    with pytest.raises(ValueError, match="follows"):
        sim.World(follows="two")


def test_spearman_uses_average_ranks_and_refuses_degenerate_input():
    assert sim.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert sim.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert sim.spearman([1, 1, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486832980505138)
    assert sim.spearman([1, 2], [1, 2]) is None
    assert sim.spearman([1, 1, 1], [1, 2, 3]) is None


def test_world_rejects_bad_settings_in_one_line():
    with pytest.raises(ValueError, match="rho"):
        sim.World(rho=1.5)
    with pytest.raises(ValueError, match="headroom"):
        sim.World(headroom=1.0)


def test_results_file_schema(tmp_path):
    world = sim.World(families=1, tasks_per_family=2, items_per_family=6, budget=2)
    records, summary = sim.experiment(world, sim.Method(), [0, 1], [0.3])
    data = sim.results(records, summary, world, sim.Method(), [0, 1], [0.3], sim.environment("cmd", 1.0, 1))
    out = tmp_path / "sim.json"
    out.write_text(json.dumps(data))
    loaded = json.loads(out.read_text())
    assert loaded["kind"] == sim.KIND
    assert set(loaded["summary"]) >= {"rank_correlation", "value_minus_similarity_points", "rho", "seeds", "goals"}
    assert loaded["summary"]["rho"] == 0.3
    cell = loaded["cells"]["arms"]["rho=0.3"]
    assert set(cell) == {a.value for a in sim.Arm}
    assert len(cell["value"]["success_by_quarter"]) == sim.QUARTERS and cell["value"]["seeds"] == [0, 1]
    diff = loaded["differences"]["rho=0.3"]["value-minus-similarity"]
    assert diff["mean_points"] == loaded["summary"]["value_minus_similarity_points"]
    assert len(diff["per_seed"]) == 2
    assert {"alpha", "epsilon", "mix", "before", "undo", "beta"} <= set(loaded["cells"])
    assert set(loaded["cells"]["before"]["as built before"]) == {a.value for a in sim.Arm}
    assert loaded["environment"]["command"] == "cmd" and "versions" in loaded["environment"]
    assert "generative model" in loaded["model"] and loaded["world"]["rho"] == world.rho
    # Each value rule tried, beside the method as built, paired by seed with the similarity arm.
    rules = loaded["value_rules"]
    assert set(rules) == {"as built", *(name for name, _ in sim.VALUE_RULE_VARIANTS)}
    assert rules["as built"]["rho=0.3"]["rank_correlation_minus_as_built"] in (0.0, None)
    assert len(rules["credit=joint"]["rho=0.3"]["value_minus_similarity"]["per_seed"]) == 2
    assert "rank_correlation_posterior_ceiling" in loaded["summary"]
    assert set(cell["value"]["diagnostics"]) >= {"draft_visits_median", "refine_value_visits_correlation",
                                                 "refine_items_credited_per_step"}


def test_recorded_refinements_reads_a_learning_result(tmp_path):
    def attempt(step, stage, latency, reward):
        return {"step": step, "stage": stage, "status": "ok", "latency_ms": latency, "reward": reward}

    log = [attempt(1, "draft", 1.0, 1.0), attempt(2, "refine", 0.5, 0.46), attempt(3, "refine", 0.8, -0.46),
           attempt(4, "refine", 0.6, -0.18)]
    result = {"tasks": {"warm": {"t": {"attempt_log": log}}}}
    path = tmp_path / "learning.json"
    path.write_text(json.dumps(result))
    arm = sim.recorded_refinements(path)["arms"]["warm"]
    assert arm["new_best_rate_by_refine_step"] == {"2": 1.0, "3": 0.0, "4": 0.0}
    assert arm["refine_steps"] == 3
    # The item's value rises with the first refinement's success, then the later steps fail: it
    # carries its highest value into the failures, so value and success anti-correlate.
    assert arm["value_success_correlation"]["tanh_normalised"] < 0


def test_posterior_mode_ranks_utilities_when_the_steps_say_enough_and_keeps_the_prior_otherwise():
    """One item per context and 60 steps each: the exact model's posterior ranks the hidden
    utilities (a sign error or a step that never moved would not); with five items per context
    and three steps each it cannot, which is why the simulation reports it beside the values."""
    world = sim.World(beta=3.0)
    rng = sim._rng("posterior-test")
    utility = {i: rng.gauss(0.3, 1.0) for i in range(12)}

    def steps(per_context: int, per_item: int) -> list:
        out = []
        for k in range(per_item * len(utility) // per_context):
            context = tuple(rng.sample(sorted(utility), per_context))
            u_bar = statistics.fmean(utility[i] for i in context)
            success = rng.random() < sim._sigmoid(-0.5 + world.beta * u_bar)
            out.append(sim._Evidence("draft", context, (-0.5,), success))
        return out

    rich = sim.posterior_mode(steps(1, 60), world, 0.3)
    assert sim.spearman([rich[i] for i in utility], list(utility.values())) > 0.8
    poor = sim.posterior_mode(steps(5, 3), world, 0.3)
    assert sim.spearman([poor[i] for i in utility], list(utility.values())) < 0.8
    assert sim.posterior_mode([], world, 0.3) == {}


def test_value_rules_reach_the_store_as_its_own_update(tmp_path):
    """The what-if rules go through record_step: joint credit moves every item by alpha times the
    step's error against the items' mean value; a sample-mean step makes a first visit the reward."""
    from memory_store import MemoryConfig, MemoryStore

    with MemoryStore(tmp_path / "m.db", MemoryConfig(alpha=0.1, seed=0)) as store:
        run = store.start_run({})
        a, b = store.add_items([dict(kind="experience", task_key="t", backend="sim", key_text=k, content=k)
                                for k in ("a", "b")])
        store.record_step(run_id=run, task_key="t", backend="sim", stage="draft", reward=1.0, context_item_ids=[a])
        store.record_step(run_id=run, task_key="t", backend="sim", stage="draft", reward=-1.0, context_item_ids=[b])
        qa, qb = (store.get_item(i).q_draft for i in (a, b))  # 0.1 and -0.1
        joint = sim._item_targets(store, "draft", [a, b], 1.0, sim.Method(credit="joint"))
        for item_id, target in joint:
            store.record_step(run_id=run, task_key="t", backend="sim", stage="draft", reward=target,
                              context_item_ids=[item_id])
        mean_q = (qa + qb) / 2
        assert store.get_item(a).q_draft == pytest.approx(qa + 0.1 * (1.0 - mean_q))
        assert store.get_item(b).q_draft == pytest.approx(qb + 0.1 * (1.0 - mean_q))
        assert store.get_item(a).visits_draft == 2
        (c,) = store.add_items([dict(kind="experience", task_key="t", backend="sim", key_text="c", content="c")])
        ((item_id, target),) = sim._item_targets(store, "refine", [c], -1.0, sim.Method(step_size="sample_mean"))
        store.record_step(run_id=run, task_key="t", backend="sim", stage="refine", reward=target, context_item_ids=[c])
        assert store.get_item(c).q_refine == pytest.approx(-1.0)


def test_baselines_subtract_the_mean_of_the_earlier_rewards():
    stage = sim._Baseline("stage")
    assert [stage.advantage(r, "draft", 1) for r in (1.0, -1.0, 1.0)] == [1.0, -2.0, 1.0]
    assert stage.advantage(1.0, "refine", 1) == 1.0  # per stage
    position = sim._Baseline("position")
    assert position.advantage(1.0, "refine", 1) == 1.0 and position.advantage(-1.0, "refine", 2) == -1.0
    assert position.advantage(1.0, "refine", 1) == 0.0
    assert sim._Baseline("none").advantage(0.5, "draft", 3) == 0.5
    with pytest.raises(ValueError, match="credit"):
        sim.Method(credit="leave-one-out")


def test_groups_run_alone_and_an_unknown_one_is_named(tmp_path):
    world = sim.World(families=1, tasks_per_family=2, items_per_family=6, budget=2)
    specs = sim.plan(world, sim.Method(), [0, 1], [0.3], ["context_size", "horizon"])
    assert {s.group for s in specs} == {"context_size", "horizon"}
    assert {s.method.n for s in specs if s.group == "context_size"} == {1, 2, 3}
    assert {s.world.tasks_per_family for s in specs if s.group == "horizon"} == {sim.HORIZON * 2}
    with pytest.raises(ValueError, match="no such group: nope"):
        sim.plan(world, sim.Method(), [0], [0.3], ["nope"])
    records, summary = sim.experiment(world, sim.Method(), [0, 1], [0.3], groups=["horizon"])
    data = sim.results(records, summary, world, sim.Method(), [0, 1], [0.3], sim.environment("cmd", 1.0, 1))
    assert set(data["cells"]) == {"horizon"} and data["rules"]["groups"] == ["horizon"]
    assert data["summary"]["rank_correlation"] is None  # no arms group, no headline
    diff = data["sweep_differences"]["horizon"]["tasks_per_family=8"]
    assert len(diff["per_seed"]) == 2
    with pytest.raises(SystemExit) as exit_:  # the command says so in one line, before any run
        sim.main(["--groups", "nope", "--out", str(tmp_path / "x.json")])
    assert exit_.value.code == 2 and not (tmp_path / "x.json").exists()
