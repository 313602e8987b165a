"""The learning benchmark's bookkeeping (benchmarks/learning.py): the split by family,
attempts to within 5% of the best any arm found, the notes where memory made no
difference, and the value/success correlation replayed from a bank's steps."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from backends import load_task_module
from memory_store import MemoryConfig, MemoryStore

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import learning  # noqa: E402


def test_split_keeps_whole_families_apart():
    warm, held, families = learning.split(["learning_cpu"], ("activation", "reduction", "matmul"),
                                          ("pointwise", "normalization", "softmax", "fusion"), 2, 2)
    warm_fams = {learning.family_of(p) for p in warm}
    held_fams = {learning.family_of(p) for p in held}
    assert warm_fams == {"activation", "reduction", "matmul"} and held_fams.isdisjoint(warm_fams)
    assert {p.stem for p in held} == {"pw_abs_add", "pw_clamp_shift", "norm_layernorm", "sm_softmax", "fu_linear_gelu"}
    assert families["learning_cpu/pw_abs_add"] == "pointwise"
    with pytest.raises(SystemExit, match="both sides"):
        learning.split(["learning_cpu"], ("softmax",), ("softmax",), 1, 1)


def test_a_directory_of_kernelbench_files_splits_by_the_families_their_names_say(tmp_path):
    names = ["54_conv_standard_3D__square_input.py", "67_conv_standard_1D.py", "57_conv_transposed_2D__square.py",
             "5_ConvTranspose3d_Sum.py", "82_conv_depthwise_2D_square_input.py", "86_conv_depthwise_separable_2D.py",
             "1_Square_matrix_multiplication_.py", "23_Softmax.py", "41_Max_Pooling_1D.py", "19_ReLU.py",
             "37_FrobeniusNorm_.py", "92_cumsum_exclusive.py", "12_Gemm_Multiply_LeakyReLU.py"]
    for name in names:
        (tmp_path / name).write_text("import torch\n")  # no FAMILY or CATEGORY: the name decides
    owned = tmp_path / "own_task.py"
    owned.write_text('FAMILY = "conv_standard"\n')  # a file's own FAMILY still wins over its name
    warm, held, families = learning.split([str(tmp_path)], ("conv_standard",), ("conv_transposed", "conv_depthwise"),
                                          5, 5)
    assert {p.stem for p in warm} == {"54_conv_standard_3D__square_input", "67_conv_standard_1D", "own_task"}
    assert {p.stem for p in held} == {"57_conv_transposed_2D__square", "5_ConvTranspose3d_Sum",
                                      "82_conv_depthwise_2D_square_input", "86_conv_depthwise_separable_2D"}
    folder = tmp_path.name
    assert [families[f"{folder}/{n.removesuffix('.py')}"] for n in names[6:]] == [
        "matmul", "softmax", "pooling", "elementwise", "normalization", "scan", "matmul"]
    with pytest.raises(SystemExit, match="no task of family conv_3d in .*its families: conv_depthwise, conv_standard"):
        learning.split([str(tmp_path)], ("conv_standard",), ("conv_3d",), 1, 1)
    with pytest.raises(SystemExit, match="no suite 'nowhere'"):
        learning.split(["nowhere"], ("a",), ("b",), 1, 1)


@pytest.mark.parametrize("path", sorted((ROOT / "benchmarks" / "learning_cpu").glob("*.py")), ids=lambda p: p.stem)
def test_cpu_suite_tasks_load_at_small_size(path):
    module = load_task_module(path, size="small")
    assert module.SIZE == "small" and module.FAMILY and module.CATEGORY
    model = module.Model(*module.get_init_inputs())
    out = model(*module.get_inputs())
    assert out.numel() > 0


def test_held_out_lanes_copy_runs_each_task_alone_and_shared_runs_an_arms_tasks_in_one_memory():
    """copy: every (task, arm) its own memory, task by task with the arms in turn; shared: one lane an arm,
    its tasks in order in one memory, so what a task's steps teach the values reaches the next task."""
    arms = list(learning.ARMS[:2])
    paths = [Path("a.py"), Path("b.py")]
    copy = learning.held_out_lanes(arms, paths, "copy")
    assert [[(r.arm.name, r.path.stem, r.memory) for r in lane] for lane in copy] == [
        [("empty", "a", "empty-a.db")], [("warm", "a", "warm-a.db")],
        [("empty", "b", "empty-b.db")], [("warm", "b", "warm-b.db")]]
    shared = learning.held_out_lanes(arms, paths, "shared")
    assert [[(r.arm.name, r.path.stem, r.memory) for r in lane] for lane in shared] == [
        [("empty", "a", "empty.db"), ("empty", "b", "empty.db")], [("warm", "a", "warm.db"), ("warm", "b", "warm.db")]]
    with pytest.raises(ValueError, match="copy or shared"):
        learning.held_out_lanes(arms, paths, "pooled")


def _row(latencies, first_correct=1, configs=None):
    log = [{"step": n, "stage": "draft" if n == 1 else "refine", "status": "ok", "latency_ms": lat, "reward": 1.0,
            "config": (configs or [None] * len(latencies))[n - 1], "config_from": None, "skills_used": []}
           for n, lat in enumerate(latencies, 1)]
    best = min(x for x in latencies if x is not None)
    return {"task": "t", "correct": True, "stopped": None, "attempts": len(latencies),
            "first_correct_attempt": first_correct, "best_latency_ms": best, "attempt_log": log}


def test_summary_counts_attempts_to_within_five_percent_of_the_best_any_arm_found():
    rows = {"empty": {"t": _row([10.0, 12.0, 9.0], configs=["a", "b", "c"])},
            "warm": {"t": _row([8.6, 8.0, 9.0], configs=["c", "a", "b"])}}
    metrics, notes = learning.summarise(rows)
    assert rows["empty"]["t"]["best_latency_any_arm_ms"] == 8.0
    assert rows["warm"]["t"]["attempts_to_within_5pct"] == 2 and rows["empty"]["t"]["attempts_to_within_5pct"] is None
    assert metrics["warm"]["geomean_best_latency_vs_empty"] == pytest.approx(8.0 / 9.0)
    assert any("memory cannot lower this number" in n for n in notes)
    assert any(n.startswith("t [warm]: the same first draft") and "0.89x of the empty arm's" in n for n in notes)
    same = {"empty": {"t": _row([10.0, 9.0], configs=["a", "b"])}, "warm": {"t": _row([10.0, 9.5], configs=["a", "b"])}}
    _, notes = learning.summarise(same)
    assert any(n.startswith("t [warm]: memory made no difference") and "no retrieved experience or skill" in n
               for n in notes)


def test_a_task_no_refinement_improved_past_the_timing_tie_is_named():
    # 0.3% faster than the first draft: noise, in both arms (the learning rerun's norm tasks)
    flat = {"empty": {"t": _row([10.0, 9.97, 10.1], configs=["a", "b", "c"])},
            "warm": {"t": _row([10.0, 10.2, 9.98], configs=["a", "c", "b"])}}
    _, notes = learning.summarise(flat)
    assert any(n.startswith("t: in no arm did a refinement beat its first draft") for n in notes)
    # one arm's refinement 2% faster: the task has headroom
    flat["warm"]["t"] = _row([10.0, 9.8], configs=["a", "c"])
    _, notes = learning.summarise(flat)
    assert not any("no headroom" in n for n in notes)


def test_each_arm_best_is_re_timed_against_the_empty_arms_in_one_worker():
    from backends import Verdict
    from backends._retime import RetimeReport

    class Retimer:
        calls = []

        def retime(self, path, baseline, candidate, *, options=None, rounds=3, **_):
            self.calls.append((baseline, candidate, rounds))
            return RetimeReport(Verdict.OK, "", 10.0, 4.0, 2.5, ((10.0, 4.0),) * rounds, "interpreted-cpu")

    rows = {"empty": {"t": {}}, "warm": {"t": {}}, "warm-no-skills": {"t": {}}}
    sources = {("empty", "t"): "A", ("warm", "t"): "B", ("warm-no-skills", "t"): "A"}
    ex = Retimer()
    learning.retime_bests(rows, sources, {"t": Path("t.py")}, ex, None)
    assert ex.calls == [("A", "B", 3)], "the same kernel is not re-timed against itself"
    assert rows["warm"]["t"]["best_vs_empty_retimed"] == pytest.approx(0.4)
    assert rows["empty"]["t"]["best_vs_empty_retimed"] == 1.0 and rows["warm-no-skills"]["t"]["best_vs_empty_retimed"] == 1.0


def test_value_pairs_are_replayed_to_the_values_before_each_step(tmp_path):
    with MemoryStore(tmp_path / "m.db", MemoryConfig(alpha=0.3)) as store:  # the values below are computed with 0.3
        run = store.start_run({})
        good = store.add_item(kind="experience", task_key="a", backend="triton", key_text="good", content="g")
        bad = store.add_item(kind="best_practice", task_key="a", backend="triton", key_text="bad", content="b")
        for _ in range(3):
            store.record_step(run_id=run, task_key="a", backend="triton", stage="draft", reward=1.0, context_item_ids=[good])
            store.record_step(run_id=run, task_key="a", backend="triton", stage="draft", reward=-1.0, context_item_ids=[bad])
        pairs = learning._value_pairs(store, run)
    assert [p["value"] for p in pairs if p["kind"] == "experience"] == pytest.approx([0.0, 0.3, 0.51])
    assert [p["success"] for p in pairs if p["kind"] == "best_practice"] == [False] * 3
    corr = learning.correlation(pairs)
    assert corr["all"]["n"] == 6 and corr["all"]["r"] > 0.5
    assert corr["kind:best_practice"]["success_rate_by_value_sign"]["negative"]["success_rate"] == 0.0
