"""How a latency was obtained is a `backends.LatencySource` (issue 32, item 2): an enum
whose labels are what stored JSON and the memory's `latency_source` column hold; and the
policy sees each memory's and the start point's stored verdict as a typed `EvalResult`."""

from __future__ import annotations

from pathlib import Path

import pytest

import evokernel
from backends import EvalResult, LatencySource, Verdict
from evokernel import RunOptions
from memory_store import MemoryStore

from executor_candidates import HONEST
from loop_doubles import RecordingPolicy, ScriptedExecutor, ok

ADD_RELU = Path(__file__).parent / "executor_cases" / "task_add_relu.py"
CPU = dict(device="cpu", trials=1, jobs=1, skills=False)


def test_labels_round_trip_and_say_what_they_are():
    result = EvalResult(Verdict.OK, latency_ms=1.0, latency_source="measured-gpu")  # a label, as JSON holds it
    assert result.latency_source is LatencySource.MEASURED_GPU
    assert result.to_dict()["latency_source"] == "measured-gpu"
    assert EvalResult.from_dict(result.to_dict()).latency_source is LatencySource.MEASURED_GPU
    assert f"{LatencySource.INTERPRETED_CPU}" == "interpreted-cpu"
    assert [s for s in LatencySource if s.measured] == [LatencySource.MEASURED_GPU, LatencySource.MEASURED_NPU]
    assert LatencySource.INTERPRETED_CPU.interpreted and LatencySource.MODELLED_910B.modelled
    with pytest.raises(ValueError):
        EvalResult(Verdict.OK, latency_source="stopwatch")  # not a label any latency can be compared under


def _run(memory: Path, latency: float, source: LatencySource, *, budget: int = 1, policy=None):
    return evokernel.run([ADD_RELU], RunOptions.of(budget=budget, resume=False, **CPU),
                         policy=policy or RecordingPolicy(HONEST["add_relu"][1]),
                         executor=ScriptedExecutor(lambda s, n: ok(latency, source=source.value)), memory=memory)


def test_a_step_stores_its_latency_source_in_the_column_and_runs_compare_only_within_one(tmp_path):
    memory = tmp_path / "m.db"
    _run(memory, 5.0, LatencySource.MEASURED_GPU)  # as a GPU run stores its steps
    with MemoryStore(memory) as store:
        items = store.list_items(limit=None)
    assert {(i.kind, i.latency_source) for i in items} == {("trace", "measured-gpu"), ("experience", "measured-gpu")}
    assert all("latency_source" not in i.extra for i in items), "one place: the column"
    # This run is on the CPU (interpreted-cpu): it does not start from the faster GPU kernel ...
    cpu = _run(memory, 9.0, LatencySource.INTERPRETED_CPU).tasks[0]
    assert cpu.started_from_item_id is None and cpu.first_latency_ms == 9.0
    assert cpu.latency_source is LatencySource.INTERPRETED_CPU
    # ... and the next CPU run starts from the CPU kernel, not the GPU's 5 ms one.
    again = _run(memory, 8.0, LatencySource.INTERPRETED_CPU).tasks[0]
    with MemoryStore(memory) as store:
        assert store.get_item(again.started_from_item_id).latency_source == "interpreted-cpu"
    assert again.first_latency_ms == 9.0 and again.best_latency_ms == 8.0


def test_the_policy_sees_stored_verdicts_as_typed_results(tmp_path):
    policy = RecordingPolicy(HONEST["add_relu"][1], HONEST["add_relu"][1] + "\n# again\n")
    _run(tmp_path / "m.db", 2.0, LatencySource.INTERPRETED_CPU, budget=2, policy=policy)
    refine = policy.contexts[1]
    start = refine.start_point
    assert refine.stage == "refine" and start is not None
    assert isinstance(start.result, EvalResult) and start.result.status is Verdict.OK
    assert start.result.latency_samples_ms == [2.0, 2.0, 2.0] and start.latency_source is LatencySource.INTERPRETED_CPU
    traces = [m for m in refine.memories if m.kind == "trace"]
    assert traces and all(isinstance(m.result, EvalResult) and m.result.latency_ms == 2.0 for m in traces)
    assert refine.latency_source is LatencySource.INTERPRETED_CPU
