"""Tests for memory_store: values, retrieval, durability, concurrency, transfer."""

from __future__ import annotations

import io
import json
import math
import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from memory_store import (
    KINDS,
    Item,
    MemoryConfig,
    MemoryCorruptError,
    MemoryStore,
    MemoryStoreError,
    Retrieved,
    check_memory_file,
    default_memory_path,
    schema_sql,
)
from memory_store._schema import migration_names, migrations
from memory_store._retrieval import Candidate, postings_budget, prune_terms, query_terms, recency_floor, select

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def store(tmp_path):
    # alpha pinned: the tests below compute values by hand with it.
    s = MemoryStore(tmp_path / "memory.db", MemoryConfig(seed=0, alpha=0.3))
    yield s
    s.close()


def add(store: MemoryStore, key_text: str, **kw) -> int:
    fields = dict(kind="experience", task_key="t", backend="triton", content="c")
    fields.update(kw)
    return store.add_item(key_text=key_text, **fields)


def count(store: MemoryStore, table: str) -> int:
    return store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


# -- schema and basics ------------------------------------------------------


def test_creates_wal_file_with_migrations_and_reopens(tmp_path):
    path = tmp_path / "sub" / "m.db"
    with MemoryStore(path) as s:
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        first = s.stats()["migrations"]
        add(s, "softmax row")
    assert first == ["m001_initial", "m002_item_latency_source"] == migration_names()
    with MemoryStore(path) as s:  # reopening applies nothing twice
        assert s.stats()["migrations"] == first
        assert s.stats()["items"] == 1


def test_a_file_that_is_not_sqlite_is_a_clear_error(tmp_path):
    path = tmp_path / "notes.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(MemoryCorruptError, match=r"notes.db is damaged or not an EvoKernel memory .*evokernel memory check"):
        MemoryStore(path)
    assert path.read_bytes() == b"this is not a database" * 100, "the file is left as it was"


def test_a_damaged_page_is_a_clear_error_on_every_call(tmp_path):
    path = tmp_path / "bank.db"
    with MemoryStore(path) as s:
        for i in range(200):
            add(s, f"softmax row {i} " + "x" * 200)
        s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[len(data) // 2: len(data) // 2 + 4096] = bytes(4096)  # one page of zeros in the middle
    path.write_bytes(bytes(data))
    with pytest.raises(MemoryCorruptError, match="evokernel memory check"):
        with MemoryStore(path) as s:
            s.list_items(limit=None)
    report = check_memory_file(path)
    assert not report.ok and all(p.startswith("integrity:") for p in report.problems)


def test_check_memory_file_on_sound_foreign_and_missing_files(tmp_path):
    sound = tmp_path / "m.db"
    with MemoryStore(sound) as s:
        add(s, "softmax row")
    assert check_memory_file(sound).ok and check_memory_file(sound).migrations == tuple(migration_names())
    foreign = tmp_path / "other.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    problems = check_memory_file(foreign).problems
    assert any("table 'items' is missing" in p for p in problems)
    assert check_memory_file(tmp_path / "none.db").problems == ("no such file",)
    (tmp_path / "empty.db").write_bytes(b"")
    assert check_memory_file(tmp_path / "empty.db").problems == ("an empty file",)


def test_item_round_trip_and_defaults(store):
    run = store.start_run({"model": "m"})
    parent = add(store, "softmax row fp32", kind="trace", status="ok", latency_ms=1.5, run_id=run)
    child = add(
        store, "softmax row fp32 refined", kind="trace", stage="refine", status="ok", latency_ms=math.inf,
        parent_id=parent, feedback={"verdict": "ok"}, extra={"tokens": 3}, category="normalization", reward=0.25,
    )
    item = store.get_item(child)
    assert isinstance(item, Item)
    assert (item.parent_id, item.stage, item.category, item.reward) == (parent, "refine", "normalization", 0.25)
    assert item.feedback == {"verdict": "ok"} and item.extra == {"tokens": 3}
    assert item.latency_ms is None  # infinite latency (failure) is stored as "none"
    assert (item.q_draft, item.q_refine, item.visits_draft, item.visits_refine) == (0.0, 0.0, 0, 0)
    assert store.get_item(parent).run_id == run
    with pytest.raises(MemoryStoreError, match="unknown item id"):
        store.get_item(999)


def test_default_memory_path_from_the_environment_it_is_given(monkeypatch, tmp_path):
    home, xdg = str(tmp_path / "home"), str(tmp_path / "xdg")
    assert default_memory_path({"EVOKERNEL_HOME": home, "XDG_DATA_HOME": xdg}) == tmp_path / "home" / "memory.db"
    assert default_memory_path({"XDG_DATA_HOME": xdg}) == tmp_path / "xdg" / "evokernel" / "memory.db"
    monkeypatch.setenv("EVOKERNEL_HOME", home)  # the process's own environment is the caller's to pass
    assert default_memory_path().parts[-3:] == ("share", "evokernel", "memory.db")


def test_runs_start_and_finish(store):
    run = store.start_run({"alpha": 0.3})
    store.finish_run(run, "failed")
    assert store.runs()[0]["status"] == "failed" and store.runs()[0]["config"] == {"alpha": 0.3}
    with pytest.raises(MemoryStoreError, match="unknown run"):
        store.finish_run(42)


# -- bad input writes nothing ----------------------------------------------


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"kind": "recipe"}, "unknown kind 'recipe'"),
        ({"stage": "polish"}, "unknown stage 'polish'"),
        ({"key_text": "  "}, "key_text must not be empty"),
        ({"latency_ms": -1.0}, "latency_ms must be >= 0"),
        ({"reward": float("nan")}, "reward must not be NaN"),
        ({"feedback": {"x": object()}}, "feedback is not JSON-serialisable"),
        ({"parent_id": 77}, "unknown parent item id"),
        ({"run_id": 5}, "unknown run id"),
    ],
)
def test_bad_item_raises_and_writes_nothing(store, fields, message):
    base = dict(kind="trace", task_key="t", backend="triton", key_text="k", content="c")
    base.update(fields)
    with pytest.raises(MemoryStoreError, match=message):
        store.add_item(**base)
    assert count(store, "items") == 0
    assert count(store, "items_fts") == 0


def test_batch_with_missing_field_writes_nothing(store):
    good = dict(kind="trace", task_key="t", backend="triton", key_text="k", content="c")
    with pytest.raises(MemoryStoreError, match=r"item 1: missing required field\(s\) key_text"):
        store.add_items([good, {k: v for k, v in good.items() if k != "key_text"}, good])
    with pytest.raises(MemoryStoreError, match="item 0: unknown field"):
        store.add_items([{**good, "colour": "red"}])
    assert count(store, "items") == 0


def test_bad_step_raises_and_changes_nothing(store):
    run = store.start_run({})
    a = add(store, "a")
    with pytest.raises(MemoryStoreError, match="unknown item id"):
        store.record_step(run_id=run, task_key="t", backend="triton", stage="draft", reward=1.0, context_item_ids=[a, 99])
    with pytest.raises(MemoryStoreError, match="unknown stage"):
        store.record_step(run_id=run, task_key="t", backend="triton", stage="x", reward=1.0, context_item_ids=[a])
    with pytest.raises(MemoryStoreError, match="reward must be finite"):
        store.record_step(run_id=run, task_key="t", backend="triton", stage="draft", reward=math.inf, context_item_ids=[a])
    with pytest.raises(MemoryStoreError, match="unknown run"):
        store.record_step(run_id=run + 1, task_key="t", backend="triton", stage="draft", reward=1.0, context_item_ids=[a])
    assert store.steps() == []
    assert store.get_item(a).q_draft == 0.0 and store.get_item(a).visits_draft == 0
    assert store.reward_stats()["draft"]["count"] == 0


# -- values -----------------------------------------------------------------


def test_draft_values_follow_hand_computation(store):
    run = store.start_run({})
    a, b = add(store, "a"), add(store, "b")
    for reward, ctx in [(1.0, [a, b]), (-1.0, [a]), (1.0, [a])]:
        store.record_step(run_id=run, task_key="t", backend="triton", stage="draft", reward=reward, context_item_ids=ctx)
    # a: 0 -> 0.3 -> 0.3 + 0.3 * (-1 - 0.3) = -0.09 -> -0.09 + 0.3 * (1 + 0.09) = 0.237
    item_a, item_b = store.get_item(a), store.get_item(b)
    assert item_a.q_draft == pytest.approx(0.237, abs=1e-12)
    assert item_a.visits_draft == 3
    assert item_b.q_draft == pytest.approx(0.3) and item_b.visits_draft == 1
    assert (item_a.q_refine, item_a.visits_refine) == (0.0, 0)  # the other stage is untouched
    steps = store.steps(run_id=run)
    assert [s["reward"] for s in steps] == [1.0, -1.0, 1.0]
    assert steps[0]["normalized_reward"] is None and steps[0]["value_target"] == 1.0
    assert steps[0]["context_item_ids"] == [a, b]
    assert store.stats()["value_updates"] == 4


def test_refine_rewards_are_normalised_before_the_update_when_asked(tmp_path):
    store = MemoryStore(tmp_path / "m.db", MemoryConfig(normalized_stages=("refine",), alpha=0.3))
    run = store.start_run({})
    start, ctx = add(store, "start", kind="trace"), add(store, "ctx")
    # The start point also sits in the context: one memory, one update.
    store.record_step(run_id=run, task_key="t", backend="triton", stage="refine", reward=0.5, context_item_ids=[ctx, start], start_point_id=start)
    store.record_step(run_id=run, task_key="t", backend="triton", stage="refine", reward=-1.0, context_item_ids=[ctx])
    # PopArt by hand: mean, second moment start at 0 and 1, momentum 0.99.
    m1, s1 = 0.01 * 0.5, 0.99 + 0.01 * 0.25
    n1 = (0.5 - m1) / max(0.1, math.sqrt(s1 - m1 * m1))
    m2, s2 = 0.99 * m1 + 0.01 * -1.0, 0.99 * s1 + 0.01 * 1.0
    n2 = (-1.0 - m2) / max(0.1, math.sqrt(s2 - m2 * m2))
    q_start = 0.3 * n1
    q_ctx = q_start + 0.3 * (n2 - q_start)
    steps = store.steps()
    assert steps[0]["normalized_reward"] == pytest.approx(n1, rel=1e-12)
    assert steps[1]["normalized_reward"] == pytest.approx(n2, rel=1e-12)
    assert steps[0]["updated_item_count"] == 2
    assert store.get_item(start).q_refine == pytest.approx(q_start, rel=1e-12)
    assert store.get_item(start).visits_refine == 1
    assert store.get_item(ctx).q_refine == pytest.approx(q_ctx, rel=1e-12)
    assert store.reward_stats()["refine"]["count"] == 2
    store.close()


def test_rewards_are_not_normalised_by_default_so_a_value_does_not_depend_on_when(store):
    """The same outcomes give the same value early and late in a bank's life: a running mean
    that moves as the memory improves would have credited the late item less."""
    run = store.start_run({})
    early, late = add(store, "early"), add(store, "late")
    for _ in range(3):
        store.record_step(run_id=run, task_key="t", backend="triton", stage="refine", reward=1.0, context_item_ids=[early])
    for _ in range(40):
        store.record_step(run_id=run, task_key="t", backend="triton", stage="refine", reward=1.0, context_item_ids=[])
    for _ in range(3):
        store.record_step(run_id=run, task_key="t", backend="triton", stage="refine", reward=1.0, context_item_ids=[late])
    assert store.steps()[0]["normalized_reward"] is None and store.steps()[0]["value_target"] == 1.0
    assert store.get_item(late).q_refine == store.get_item(early).q_refine == pytest.approx(1 - 0.7 ** 3)
    with MemoryStore(store.path.parent / "popart.db", MemoryConfig(normalized_stages=("refine",), alpha=0.3)) as popart:
        run = popart.start_run({})
        early, late = add(popart, "early"), add(popart, "late")
        for ids in [[early]] * 3 + [[]] * 40 + [[late]] * 3:
            popart.record_step(run_id=run, task_key="t", backend="triton", stage="refine", reward=1.0, context_item_ids=ids)
        assert popart.get_item(late).q_refine < popart.get_item(early).q_refine - 0.1


def test_sigma_floor_bounds_normalised_rewards(tmp_path):
    config = MemoryConfig(reward_momentum=0.0, reward_sigma_floor=0.5, normalized_stages=("refine",))
    with MemoryStore(tmp_path / "m.db", config) as s:
        run, a = s.start_run({}), add(s, "a")
        s.record_step(run_id=run, task_key="t", backend="triton", stage="refine", reward=0.8, context_item_ids=[a])
        # momentum 0: mean 0.8, variance 0, so sigma is the floor and r_norm = 0.
        assert s.steps()[0]["normalized_reward"] == 0.0


def test_recompute_from_steps_equals_incremental(store):
    rng = random.Random(7)
    run = store.start_run({})
    ids = [add(store, f"item {i}") for i in range(12)]
    for _ in range(150):
        stage = rng.choice(("draft", "refine"))
        store.record_step(
            run_id=run, task_key="t", backend="triton", stage=stage,
            reward=rng.choice((1.0, -1.0)) if stage == "draft" else rng.uniform(-1, 1),
            context_item_ids=rng.sample(ids, rng.randint(0, 5)),
            start_point_id=rng.choice([None, *ids]) if stage == "refine" else None,
        )
    snapshot = {i: store.get_item(i) for i in ids}
    store.conn.execute("UPDATE items SET q_draft = 9, q_refine = 9, visits_draft = 0, visits_refine = 0")
    store.recompute_values()
    for i in ids:
        now, before = store.get_item(i), snapshot[i]
        assert (now.q_draft, now.q_refine, now.visits_draft, now.visits_refine) == (
            before.q_draft, before.q_refine, before.visits_draft, before.visits_refine
        )  # exact, not approximate
    what_if = store.values_from_steps(alpha=0.05)
    store.recompute_values(alpha=0.05)
    assert any(store.get_item(i).q_draft != snapshot[i].q_draft for i in ids)
    assert all(store.get_item(i).q_refine == what_if[i].q_refine for i in ids)


# -- retrieval --------------------------------------------------------------


def test_query_sanitising_keeps_only_safe_terms():
    terms = query_terms('Softmax(x, dim=-1) "AND" NEAR/3 col:x* OR a_b; 4096', limit=32)
    assert terms == ["softmax", "dim", "col", "4096"]
    assert query_terms("a b c d e f", limit=2) == []  # single letters carry nothing
    assert prune_terms({"rare": 3, "mid": 40, "common": 5000, "absent": 0}, budget=50) == ["rare", "mid"]
    assert prune_terms({"common": 5000}, budget=50) == ["common"]  # never empty if anything matches


def test_recall_cost_controls():
    assert postings_budget(2000, None, 0.35) == 2000  # unfiltered: every posting is scored
    assert postings_budget(2000, 1.0, 0.35) < 2000  # a filter that passes all only adds probes
    assert postings_budget(2000, 0.01, 0.35) == int(2000 / 0.36)  # selective filters widen, boundedly
    assert recency_floor(1000, 100, 200) == 0
    assert recency_floor(1_000_000, 40_000, 2_000) == 950_000  # the newest 5% hold about 2,000 postings


def test_deep_bank_scores_only_the_newest_matches(tmp_path):
    cfg = MemoryConfig(recall_budget=20, recall_topup_factor=1)
    with MemoryStore(tmp_path / "m.db", cfg) as s:
        s.add_items([dict(kind="trace", task_key=f"t{i}", backend="triton", key_text=f"softmax v{i}", content="") for i in range(100)])
        res = s.retrieve("softmax", stage="draft", n=5, pool_size=10, mode="similarity")
        # 100 postings, budget 20: only ids above 100 - 20 are scored.
        assert len(res) == 5 and min(r.item.id for r in res) > 80


def _bank_before_latency_source(path: Path) -> None:
    """A bank as the version before m002 wrote it: the first migration only, the label in extra_json."""
    import sqlite_utils

    db = sqlite_utils.Database(path)
    migrations.apply(db, stop_before="m002_item_latency_source")
    db["runs"].insert({"id": 1, "started_utc": "t", "config_json": "{}", "status": "done"})
    for i, (extra, latency) in enumerate([({"latency_source": "measured-gpu"}, 1.0), ({}, None)], 1):
        db["items"].insert({
            "id": i, "uid": f"u{i}", "kind": "trace", "task_key": "t", "backend": "triton", "category": "", "stage": "draft",
            "name": "", "latency_ms": latency, "q_draft": 0.0, "q_refine": 0.0, "visits_draft": 0, "visits_refine": 0,
            "q_draft_init": 0.0, "q_refine_init": 0.0, "visits_draft_init": 0, "visits_refine_init": 0, "created_utc": "t",
            "run_id": 1, "key_text": f"softmax {i}", "feedback_json": "{}", "extra_json": json.dumps(extra), "content": "",
        })
    db.conn.commit()
    db.close()


def test_an_older_bank_is_sound_and_gains_the_latency_source_column_from_its_json(tmp_path):
    path = tmp_path / "old.db"
    _bank_before_latency_source(path)
    report = check_memory_file(path)
    assert report.ok, report.problems
    assert report.migrations == ("m001_initial",) and "m002_item_latency_source will be applied" in report.notes[0]
    with MemoryStore(path) as s:
        assert {i.id: i.latency_source for i in s.list_items(limit=None)} == {1: "measured-gpu", 2: None}
        assert s.stats()["migrations"] == migration_names()
    assert check_memory_file(path).ok and check_memory_file(path).notes == ()


def test_the_latency_source_is_a_column_that_export_and_import_carry(tmp_path):
    with MemoryStore(tmp_path / "a.db") as a:
        add(a, "softmax timed", kind="trace", latency_ms=2.0, latency_source="interpreted-cpu")
        buf = io.StringIO()
        a.export_jsonl(buf)
    line = json.loads(buf.getvalue().splitlines()[1])
    assert line["latency_source"] == "interpreted-cpu" and "latency_source" not in line["extra"]
    older = {**line, "uid": "older", "id": 2, "extra": {"latency_source": "measured-gpu"}}
    del older["latency_source"]  # an export written before the column: the label in extra
    text = buf.getvalue() + json.dumps(older) + "\n"
    with MemoryStore(tmp_path / "b.db") as b:
        b.import_jsonl(io.StringIO(text))
        assert sorted(i.latency_source for i in b.list_items(limit=None)) == ["interpreted-cpu", "measured-gpu"]


def test_schema_sql_is_generated_from_migrations():
    sql = schema_sql()
    for table in ("items", "steps", "reward_stats", "runs", "llm_calls", "llm_cache", "embeddings", "_sqlite_migrations"):
        assert f'CREATE TABLE "{table}"' in sql, table
    assert "USING fts5" in sql and "items_fts_update AFTER UPDATE OF key_text" in sql


def test_hostile_query_text_does_not_break_fts(store):
    add(store, "softmax row reduction")
    for query in ['"', "*", "AND OR NOT", "col:", "(((", "softmax\" OR x:(", "NEAR(a b)"]:
        store.retrieve(query, stage="draft")  # no sqlite3.OperationalError


def test_retrieval_spans_tasks_and_filters(store):
    own = add(store, "softmax row fp32 reduction", task_key="softmax")
    other = add(store, "rmsnorm row fp32 reduction", task_key="rmsnorm")
    cuda = add(store, "softmax row reduction warp shuffle", task_key="logsoftmax", backend="cuda")
    asc = add(store, "softmax row reduction unified buffer", task_key="softmax_npu", backend="ascendc")
    note = add(store, "softmax reduce api", task_key="_api", kind="api_note", backend="ascendc")

    ids = lambda res: {r.item.id for r in res}  # noqa: E731
    everything = store.retrieve("softmax row reduction", stage="draft", n=10, epsilon=0.0)
    assert ids(everything) == {own, other, cuda, asc, note}
    assert ids(store.retrieve("softmax row reduction", stage="draft", n=10, exclude_task_keys=["softmax"])) == {other, cuda, asc, note}
    assert ids(store.retrieve("softmax reduction", stage="draft", n=10, backends=["ascendc", "triton"])) == {own, other, asc, note}
    assert ids(store.retrieve("softmax reduction", stage="draft", n=10, kinds=["api_note"])) == {note}
    assert ids(store.retrieve("reduction", stage="draft", n=10, only_task_key="rmsnorm")) == {other}
    with pytest.raises(MemoryStoreError, match="unknown kind"):
        store.retrieve("x", stage="draft", kinds=["recipe"])
    with pytest.raises(MemoryStoreError, match="backends must be a list"):
        store.retrieve("x", stage="draft", backends="triton")  # type: ignore[arg-type]
    with pytest.raises(MemoryStoreError, match="unknown mode"):
        store.retrieve("x", stage="draft", mode="random")


def test_query_without_matches_falls_back_to_newest_filtered(store):
    first = add(store, "softmax", backend="cuda")
    second = add(store, "layernorm", backend="cuda")
    add(store, "matmul", backend="triton")
    res = store.retrieve("gelu tanh approximation", stage="draft", n=5, backends=["cuda"], epsilon=0.0)
    assert [r.item.id for r in res] == [first, second] and all(r.similarity == 0.0 for r in res)


def test_recall_pool_grows_with_bank_size():
    cfg = MemoryConfig()
    assert cfg.recall_lambda(10) == 2.0
    assert cfg.recall_lambda(10_000) == pytest.approx(4.0)
    assert cfg.recall_lambda(1_000_000) == pytest.approx(8.0)
    assert cfg.recall_lambda(10**12) == 16.0
    assert cfg.pool_size(5, 100_000) == 30
    with pytest.raises(MemoryStoreError, match="alpha"):
        MemoryConfig(alpha=0.0)


def test_three_selection_rules_differ_on_a_known_pool():
    pool = [Candidate(1, 3.0, -1.0), Candidate(2, 2.0, 0.5), Candidate(3, 1.0, 1.0)]
    pick = lambda mode: select(pool, n=1, mode=mode, epsilon=0.0, mix_weight=0.5, rng=random.Random(0))[0]  # noqa: E731
    assert pick("similarity").candidate.item_id == 1
    assert pick("value").candidate.item_id == 3
    # z(sim) = (1.22, 0, -1.22), z(Q) = (-1.37, 0.39, 0.98): the mix prefers 2.
    assert pick("mix").candidate.item_id == 2
    assert pick("mix").score == pytest.approx(0.5 * (0.0 + (0.5 - 1 / 6) / np.std([-1.0, 0.5, 1.0])))


def test_modes_differ_in_the_store(store):
    run = store.start_run({})
    close = add(store, "softmax softmax softmax row reduction")
    mid = add(store, "softmax row reduction")
    far = add(store, "softmax tiling matmul epilogue")
    for item_id, reward in ((close, -1.0), (mid, 0.5), (far, 1.0)):
        for _ in range(3):
            store.record_step(run_id=run, task_key="x", backend="triton", stage="draft", reward=reward, context_item_ids=[item_id])
    # pool_size=3: all three reach selection (the default pool for n=1 is 2).
    top = lambda mode: store.retrieve("softmax row reduction", stage="draft", n=1, mode=mode, epsilon=0.0, pool_size=3)[0]  # noqa: E731
    by_sim = store.retrieve("softmax row reduction", stage="draft", n=3, mode="similarity")
    assert [r.item.id for r in by_sim][0] in (close, mid) and by_sim[-1].item.id == far
    assert top("value").item.id == far
    assert top("similarity").item.id != far
    picked = {top(m).item.id for m in ("value", "mix", "similarity")}
    assert len(picked) >= 2
    # The refine stage ranks by q_refine, all 0 here: value then falls back to similarity.
    assert store.retrieve("softmax row reduction", stage="refine", n=1, epsilon=0.0, pool_size=3)[0].item.id == by_sim[0].item.id


def test_epsilon_greedy_explores_at_its_rate():
    pool = [Candidate(i, 1.0, float(i)) for i in range(10)]
    rng = random.Random(123)
    trials = 4000
    picks = [select(pool, n=1, mode="value", epsilon=0.2, mix_weight=0.5, rng=rng)[0] for _ in range(trials)]
    explored = sum(p.explored for p in picks)
    # Binomial(4000, 0.2): sd = 25; 5 sd either side.
    assert abs(explored - 0.2 * trials) < 125
    assert all(p.candidate.item_id == 9 for p in picks if not p.explored)
    assert all(p.candidate.item_id != 9 for p in picks if p.explored)
    never = [select(pool, n=3, mode="value", epsilon=0.0, mix_weight=0.5, rng=rng) for _ in range(50)]
    assert all([p.candidate.item_id for p in ps] == [9, 8, 7] for ps in never)


def test_store_exploration_rate_and_determinism(store):
    run = store.start_run({})
    ids = [add(store, f"softmax variant {i}") for i in range(8)]
    best = ids[3]
    store.record_step(run_id=run, task_key="t", backend="triton", stage="draft", reward=1.0, context_item_ids=[best])
    results = [
        store.retrieve("softmax variant", stage="draft", n=1, epsilon=0.25, pool_size=8, rng=random.Random(s))[0]
        for s in range(600)
    ]
    rate = sum(r.explored for r in results) / len(results)
    assert 0.25 - 0.07 < rate < 0.25 + 0.07  # sd about 0.018
    assert all(r.item.id == best for r in results if not r.explored)
    again = lambda seed: [r.item.id for r in store.retrieve("softmax variant", stage="draft", n=4, epsilon=0.5, rng=random.Random(seed))]  # noqa: E731
    assert again(5) == again(5)
    assert len({tuple(again(s)) for s in range(20)}) > 1


def test_retrieval_as_of_a_snapshot_sees_older_items_and_its_own_task(store):
    old = add(store, "softmax row fp32", task_key="a")
    snapshot = store.last_item_id()
    newer_other = add(store, "softmax row fp32 newer", task_key="b")
    newer_own = add(store, "softmax row fp32 mine", task_key="c")
    everything = {r.item.id for r in store.retrieve("softmax row", stage="draft", n=10, epsilon=0.0)}
    assert everything == {old, newer_other, newer_own}
    seen = {r.item.id for r in store.retrieve("softmax row", stage="draft", n=10, epsilon=0.0,
                                             as_of=snapshot, as_of_task_key="c")}
    assert seen == {old, newer_own}
    assert store.last_item_id() == newer_own


def test_retrieved_carries_similarity_and_stage_value(store):
    run = store.start_run({})
    a = add(store, "softmax row")
    store.record_step(run_id=run, task_key="t", backend="triton", stage="refine", reward=1.0, context_item_ids=[a])
    res = store.retrieve("softmax", stage="refine", n=1)
    assert isinstance(res[0], Retrieved)
    assert res[0].value == store.get_item(a).q_refine != 0.0
    assert res[0].similarity > 0


def test_api_notes_by_exact_name(store):
    dc = add(store, "DataCopy(dst, src, count): GM to UB copy", kind="api_note", backend="ascendc", task_key="_api")
    add(store, "DataCopyPad: padded copy", kind="api_note", backend="ascendc", task_key="_api")
    enq = add(store, "queue push", kind="api_note", backend="ascendc", task_key="_api", name="EnQue")
    add(store, "DataCopy for cuda?", kind="api_note", backend="cuda", task_key="_api")
    assert [i.id for i in store.api_notes_by_name(["EnQue", "DataCopy", "Missing"], "ascendc")] == [enq, dc]
    assert store.api_notes_by_name([], "ascendc") == []


def test_feasible_and_best_items(store):
    add(store, "k", kind="trace", task_key="s", status="wrong_result", latency_ms=0.1)
    slow = add(store, "k", kind="trace", task_key="s", status="ok", latency_ms=2.0)
    fast = add(store, "k", kind="trace", task_key="s", status="ok", latency_ms=0.5)
    untimed = add(store, "k", kind="trace", task_key="s", status="compiled")
    add(store, "k", kind="experience", task_key="s", status="ok", latency_ms=0.01)
    add(store, "k", kind="trace", task_key="s", backend="cuda", status="ok", latency_ms=0.01)
    feasible = ("ok", "compiled")
    assert [i.id for i in store.feasible_items("s", "triton", statuses=feasible)] == [fast, slow, untimed]
    assert [i.id for i in store.feasible_items("s", "triton", statuses=["ok"])] == [fast, slow]
    assert store.best_item("s", "triton", statuses=feasible).id == fast
    assert store.best_item("nothing", "triton", statuses=feasible) is None


# -- LLM log and cache ----------------------------------------------------


def test_llm_calls_and_cache(store):
    run = store.start_run({})
    first = store.log_llm_call(provider="openai", model="m", prompt={"messages": [1]}, response_text="hi",
                               tokens_in=10, tokens_out=2, cost_usd=0.01, latency_ms=120.0, run_id=run)
    store.log_llm_call(provider="openai", model="m", prompt={}, response_text="", tokens_in=1, tokens_out=0,
                       cost_usd=None, latency_ms=5.0, error="timeout")
    calls = store.llm_calls(run_id=run)
    assert [c["id"] for c in calls] == [first] and calls[0]["prompt"] == {"messages": [1]}
    assert len(store.llm_calls(limit=1)) == 1 and len(store.llm_calls()) == 2
    with pytest.raises(MemoryStoreError, match="tokens_in"):
        store.log_llm_call(provider="p", model="m", prompt={}, response_text="", tokens_in=-1, tokens_out=0, cost_usd=None, latency_ms=1.0)
    assert store.cache_get("h") is None
    store.cache_put("h", {"text": "a"})
    store.cache_put("h", {"text": "b"})
    assert store.cache_get("h") == {"text": "b"}
    stats = store.stats()
    assert stats["llm_calls"] == 2 and stats["llm_cost_usd"] == pytest.approx(0.01)


def test_stats_has_the_documented_keys(store):
    add(store, "a", task_key="x")
    add(store, "b", task_key="y", kind="trace")
    stats = store.stats()
    assert {"items", "tasks", "by_kind", "value_updates", "runs", "steps"} <= set(stats)
    assert (stats["items"], stats["tasks"], stats["by_kind"]) == (2, 2, {"experience": 1, "trace": 1})


# -- dense seam ---------------------------------------------------------------


class HashEmbedder:
    """Bag of words hashed into 64 dims: enough to test the seam, no model."""

    model_id = "test-hash-64"

    def embed(self, texts):
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in query_terms(text, limit=64):
                out[row, hash(word) % 64] += 1.0
        return out


def test_dense_retrieval_through_an_embedder(store):
    soft = add(store, "softmax row reduction")
    add(store, "matmul tiling epilogue")
    conv = add(store, "conv2d im2col", backend="cuda")
    emb = HashEmbedder()
    assert store.embed_items(emb) == 3
    assert store.embed_items(emb) == 0  # only missing vectors are computed
    blob = store.conn.execute("SELECT vector, dim FROM embeddings WHERE item_id = ?", (soft,)).fetchone()
    assert blob[1] == 64 and len(blob[0]) == 64 * 4  # float32
    res = store.retrieve("softmax reduction", stage="draft", n=1, embedder=emb, epsilon=0.0, mode="similarity")
    assert res[0].item.id == soft and 0 < res[0].similarity <= 1.0
    res = store.retrieve("conv2d", stage="draft", n=3, embedder=emb, backends=["cuda"])
    assert [r.item.id for r in res] == [conv]


# -- export / import --------------------------------------------------------------


def _populated(path: Path) -> tuple[MemoryStore, dict[str, int]]:
    s = MemoryStore(path)
    run = s.start_run({})
    draft = add(s, "softmax draft", kind="trace", status="ok", latency_ms=3.0, feedback={"v": "ok"})
    refined = add(s, "softmax refined", kind="trace", stage="refine", status="ok", latency_ms=1.0, parent_id=draft)
    note = add(s, "DataCopy: copy", kind="api_note", backend="ascendc", task_key="_api")
    s.record_step(run_id=run, task_key="t", backend="triton", stage="refine", reward=0.7, context_item_ids=[note], start_point_id=draft, result_item_id=refined)
    return s, {"draft": draft, "refined": refined, "note": note}


def test_export_import_round_trip_remaps_ids(tmp_path):
    src, ids = _populated(tmp_path / "src.db")
    buf = io.StringIO()
    assert src.export_jsonl(buf) == 3
    dst = MemoryStore(tmp_path / "dst.db")
    add(dst, "already here")  # shifts the ids
    report = dst.import_jsonl_report(io.StringIO(buf.getvalue()))
    assert (report.imported, report.skipped) == (3, 0)
    by_uid = {i.uid: i for i in dst.list_items(limit=None)}
    for old_id in ids.values():
        old = src.get_item(old_id)
        new = by_uid[old.uid]
        assert new.id != old.id
        for field in ("kind", "task_key", "backend", "stage", "key_text", "content", "feedback", "status",
                      "latency_ms", "q_draft", "q_refine", "visits_draft", "visits_refine", "name", "created_utc"):
            assert getattr(new, field) == getattr(old, field), field
    refined_new = by_uid[src.get_item(ids["refined"]).uid]
    assert refined_new.parent_id == by_uid[src.get_item(ids["draft"]).uid].id
    # Importing again merges: nothing duplicated.
    assert dst.import_jsonl(io.StringIO(buf.getvalue())) == 0
    # Carried values are start values: replaying the target's own (empty) history keeps them.
    before = {i.id: (i.q_refine, i.visits_refine) for i in dst.list_items(limit=None)}
    dst.recompute_values()
    assert {i.id: (i.q_refine, i.visits_refine) for i in dst.list_items(limit=None)} == before
    assert dst.api_notes_by_name(["DataCopy"], "ascendc")
    src.close()
    dst.close()


def test_corrupt_export_line_names_the_line_and_writes_nothing(tmp_path):
    src, _ = _populated(tmp_path / "src.db")
    buf = io.StringIO()
    src.export_jsonl(buf)
    lines = buf.getvalue().splitlines()
    dst = MemoryStore(tmp_path / "dst.db")
    corrupt = lines[:3] + ['{"type": "item", "id": 9, "kind": '] + lines[3:]
    with pytest.raises(MemoryStoreError, match="line 4: not valid JSON"):
        dst.import_jsonl(io.StringIO("\n".join(corrupt)))
    bad_kind = lines[:2] + [lines[2].replace('"kind": "trace"', '"kind": "recipe"')] + lines[3:]
    with pytest.raises(MemoryStoreError, match="line 3: unknown kind 'recipe'"):
        dst.import_jsonl(io.StringIO("\n".join(bad_kind)))
    record = json.loads(lines[1])
    del record["q_draft"]
    with pytest.raises(MemoryStoreError, match="line 2: missing required field q_draft"):
        dst.import_jsonl(io.StringIO("\n".join([lines[0], json.dumps(record)] + lines[2:])))
    with pytest.raises(MemoryStoreError, match="line 1: not an evokernel memory export"):
        dst.import_jsonl(io.StringIO("\n".join(lines[1:])))
    assert count(dst, "items") == 0 and count(dst, "items_fts") == 0
    src.close()
    dst.close()


# -- durability and concurrency ---------------------------------------------------


def _writer(path: str, worker: int, items: int) -> None:
    with MemoryStore(path, MemoryConfig(busy_timeout_s=60)) as s:
        run = s.start_run({"worker": worker})
        for i in range(items):
            item = s.add_item(kind="trace", task_key=f"w{worker}", backend="triton", key_text=f"softmax worker {worker} item {i}", content="x" * 100)
            s.record_step(run_id=run, task_key=f"w{worker}", backend="triton", stage="draft", reward=1.0, context_item_ids=[item])
            s.retrieve("softmax", stage="draft", n=2)


def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "shared.db")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 40)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    with MemoryStore(path) as s:
        stats = s.stats()
        assert (stats["items"], stats["steps"], stats["runs"], stats["value_updates"]) == (160, 160, 4, 160)
        assert all(len(s.list_items(task_key=f"w{w}", limit=None)) == 40 for w in range(4))
        assert s.integrity_check() == []
        values = s.values_from_steps()
        alpha = MemoryConfig().alpha
        assert all(values[i.id].q_draft == i.q_draft == pytest.approx(alpha) for i in s.list_items(limit=None))


_KILL_WRITER = textwrap.dedent(
    """
    import sys
    from memory_store import MemoryStore
    s = MemoryStore(sys.argv[1])
    run = s.start_run({})
    i = 0
    while True:
        ids = s.add_items([dict(kind="trace", task_key="k", backend="triton", key_text=f"kernel {i} {j}",
                                content="y" * 3000) for j in range(20)])
        s.record_step(run_id=run, task_key="k", backend="triton", stage="draft", reward=1.0, context_item_ids=ids[:3])
        print(" ".join(map(str, ids)), flush=True)  # printed only once committed
        i += 1
    """
)


def test_sigkill_mid_write_keeps_file_intact_and_commits(tmp_path):
    path = tmp_path / "killed.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILL_WRITER, str(path)], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    committed: list[int] = []
    deadline = time.monotonic() + 60
    while len(committed) < 400 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        committed.extend(int(x) for x in line.split())
    proc.send_signal(signal.SIGKILL)  # most likely mid-transaction: it writes nonstop
    proc.wait()
    proc.stdout.close()
    assert len(committed) >= 400
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()
    with MemoryStore(path) as s:
        assert s.integrity_check() == []
        present = {r[0] for r in s.conn.execute("SELECT id FROM items")}
        assert set(committed) <= present
        # Whole batches only: every item is searchable and every step complete.
        assert len(present) % 20 == 0
        assert count(s, "steps") * 20 >= len(present) - 20
        assert len(s.retrieve("kernel", stage="draft", n=3)) == 3


def test_transaction_groups_calls_atomically(store):
    run = store.start_run({})
    with pytest.raises(RuntimeError):
        with store.transaction():
            item = add(store, "inside")
            store.record_step(run_id=run, task_key="t", backend="triton", stage="draft", reward=1.0, context_item_ids=[item])
            raise RuntimeError("executor crashed")
    assert count(store, "items") == 0 and store.steps() == []
    with store.transaction():
        item = add(store, "inside")
        store.record_step(run_id=run, task_key="t", backend="triton", stage="draft", reward=1.0, context_item_ids=[item])
    assert store.get_item(item).visits_draft == 1


def test_kinds_constant_matches_schema_contract():
    assert KINDS == ("api_note", "experience", "trace", "best_practice")
