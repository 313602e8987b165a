"""Ascend C API notes: one for every API the CPU model implements, seeded
idempotently, and found by exact name when the verifier names an API."""

from __future__ import annotations

from pathlib import Path

from backends import EvalResult, Verdict
from backends.ascendc import API_NAMES
from evokernel.ascendc import API_NOTES, api_names_in, seed_api_notes
import evokernel
from evokernel.loop import Proposal, RunOptions
from memory_store import MemoryStore

from loop_doubles import ScriptedExecutor

TASK = Path(__file__).parent / "executor_cases" / "task_add_relu.py"
UNKNOWN = ("AscendC::ReluFast is not an Ascend C API known to the CPU model; "
           "nearest real ones: Relu, LeakyRelu")


def test_every_modelled_api_has_a_note_in_own_words():
    names = {n.name for n in API_NOTES}
    assert not [n for n in API_NAMES if n not in names]
    for concept in ("queue_protocol", "ub_overflow", "datacopy_align", "double_buffering", "tiling", "repeat_params"):
        assert concept in names
    for note in API_NOTES:
        assert "Example:" in note.body, note.name
        assert note.content.startswith(f"{note.name}: ")


def test_seeding_is_idempotent(tmp_path):
    with MemoryStore(tmp_path / "m.db") as store:
        assert seed_api_notes(store) == len(API_NOTES)
        assert seed_api_notes(store) == 0
        items = store.list_items(kinds=["api_note"], backends=["ascendc"], limit=None)
        assert len(items) == len(API_NOTES)
        (relu,) = store.api_notes_by_name(["Relu"], "ascendc")
        assert relu.category == "vector" and "Relu(dst, src, calCount)" in relu.content
        found = store.retrieve("DataCopy 32 bytes alignment tail", stage="draft", n=3, kinds=["api_note"],
                               backends=["ascendc"], categories=["concept"], mode="similarity")
        assert "datacopy_align" in [r.item.name for r in found]


def test_names_are_read_from_errors_and_code():
    assert api_names_in(UNKNOWN) == ["Relu", "LeakyRelu"]
    assert api_names_in("[ub_overflow] InitBuffer calls ask for 300000 bytes") == ["ub_overflow", "InitBuffer"]
    assert api_names_in(None) == []


class _Recording:
    name = "recording"
    is_llm = False

    def __init__(self):
        self.contexts = []

    def propose(self, ctx):
        self.contexts.append(ctx)
        return Proposal("# an Ascend C candidate", fingerprint=f"c{ctx.step}")


def _unknown_api_executor() -> ScriptedExecutor:
    """Answers every candidate with the CPU model's unknown-API verdict (no build needed)."""
    return ScriptedExecutor(lambda source, n: EvalResult(Verdict.COMPILE_ERROR, UNKNOWN, feedback=UNKNOWN, device="cpu"))


def _run(tmp_path, mode):
    policy = _Recording()
    with MemoryStore(tmp_path / f"{mode}.db") as store:
        evokernel.run([TASK], RunOptions.of(backend="ascendc", budget=2, memory_mode=mode, baselines=False, device="cpu"),
                      policy=policy, store=store, executor=_unknown_api_executor())
    return policy.contexts


def test_unknown_api_error_brings_the_real_apis_note_into_the_next_step(tmp_path):
    _first, second = _run(tmp_path, "value")
    names = [n.key_text.split(":")[0] for n in second.api_notes]
    assert names[:2] == ["Relu", "LeakyRelu"], names
    relu = second.api_notes[0]
    assert relu.kind == "api_note" and relu.backend == "ascendc" and "Relu(dst, src, calCount)" in relu.content
    assert all(m.kind != "api_note" for m in second.memories), "notes are not value-selected memories"


def test_no_notes_without_memory(tmp_path):
    assert all(not ctx.api_notes for ctx in _run(tmp_path, "off"))
