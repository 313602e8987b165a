"""Each rule the hardware punishes must fail on the CPU model with the right
kind and a message an LLM can act on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from backends.ascendc import AscendCCompileError, AscendCRuntimeError, load_inline

from session_tmp import session_basetemp

KERNELS = Path(__file__).parent / "ascendc_kernels"
HAZARDS = (KERNELS / "hazards.cpp").read_text()


def marker_line(entry: str, kind: str) -> int:
    """The line tagged '// HAZARD: <kind>' in the body of `entry` in hazards.cpp."""
    inside = False
    for number, line in enumerate(HAZARDS.splitlines(), start=1):
        inside = inside or f"void {entry}(" in line
        if inside and f"HAZARD: {kind}" in line:
            return number
    raise LookupError(entry)


@pytest.fixture(scope="module")
def hazards(tmp_path_factory):
    entries = re.findall(r"__aicore__ void (\w+)\(", HAZARDS)
    assert len(entries) == 13
    return load_inline(name="hazards", source=HAZARDS, functions=entries,
                       build_dir=session_basetemp(tmp_path_factory) / "evk_cache" / "ascendc")


def fail(hazards, entry, *, n=64, block_dim=2) -> AscendCRuntimeError:
    x, y = torch.zeros(n), torch.zeros(n)
    with pytest.raises(AscendCRuntimeError) as info:
        getattr(hazards, entry)(x, y, n, block_dim=block_dim)
    return info.value


@pytest.mark.parametrize(
    "entry, kind, phrases",
    [
        ("ub_overflow", "ub_overflow",
         ["262144 bytes", "196608 bytes", "line 12:", "line 13:", "VECOUT x 2 buffer(s) x 65536 bytes"]),
        ("datacopy_align", "datacopy_align", ["40 bytes", "not a multiple of 32 bytes", "DataCopyPad",
                                              "DataCopyExtParams{1, 40, 0, 0, 0}", "multiple of 8 elements"]),
        ("queue_empty", "queue_empty", ["DeQue<float>()", "queue is empty", "EnQue"]),
        ("queue_depth", "queue_depth", ["all its buffers are in use", "3 times without FreeTensor"]),
        ("gm_past_tensor", "gm_out_of_bounds", ["block 1", "past the end of tensor argument #0 'x' (256 bytes)"]),
        ("gm_past_global_buffer", "gm_out_of_bounds", ["elements [8, 9)", "SetGlobalBuffer length is 8 elements"]),
        ("ub_out_of_bounds", "ub_out_of_bounds", ["[0, 128)", "only 64 elements"]),
        ("use_after_free", "use_after_free", ["after FreeTensor"]),
        ("wait_without_set", "sync_deadlock", ["WaitFlag<HardEvent::MTE2_V>", "SetFlag"]),
        ("unaligned_operand", "ub_align", ["UB byte 12", "32-byte aligned"]),
        ("bad_repeat", "invalid_argument", ["mask=128", "1..64"]),
        ("overlapping_writes", "gm_write_race",
         ["blocks 0 and 1 write different values to element 0 of tensor argument #1 'y'", "same time"]),
    ],
)
def test_hazard_kind_and_message(hazards, entry, kind, phrases):
    error = fail(hazards, entry)
    assert error.kind == kind
    for phrase in phrases:
        assert phrase in error.message, (phrase, error.message)
    line = marker_line(entry, kind)
    code = HAZARDS.splitlines()[line - 1].split("//")[0].strip()
    assert f"line {line} `{code}`:" in error.message  # points at the offending call, quoted


def test_blocks_writing_identical_values_is_not_a_race(hazards):
    y = torch.zeros(64)
    hazards.redundant_writes(torch.zeros(64), y, 64, block_dim=4)
    assert torch.all(y == 3.0)


def test_ub_within_budget_is_fine(tmp_path):
    source = HAZARDS.replace("pipe.InitBuffer(outQ, 2, 65536);", "pipe.InitBuffer(outQ, 1, 65536);")
    ops = load_inline(name="ub_ok", source=source, functions=["ub_overflow"], build_dir=tmp_path)
    ops.ub_overflow(torch.zeros(8), torch.zeros(8), 8, block_dim=1)  # 196,608 bytes exactly
    assert ops.last_cost["slowest_block"]["ub_bytes"] == 196608


def test_error_is_structured(hazards):
    error = fail(hazards, "queue_empty")
    assert str(error).startswith("[queue_empty] queue_empty: block 0")
    assert isinstance(error, AscendCRuntimeError) and not isinstance(error, AscendCCompileError)


def test_unknown_apis_become_suggestions(tmp_path):
    with pytest.raises(AscendCCompileError) as info:
        load_inline(name="unknown", source=(KERNELS / "unknown_api.cpp").read_text(),
                    functions=["uses_unknown_apis"], build_dir=tmp_path)
    error = info.value
    assert error.kind == "unknown_api"
    assert set(error.unknown_names) == {"AscendC::AddRelu", "TQue::Deque", "AscendC::Select"}
    assert ("AscendC::AddRelu is not an Ascend C API known to the CPU model; nearest real ones: Relu, Add"
            in error.message)
    assert "TQue::Deque is not an Ascend C API known to the CPU model; nearest real ones: DeQue" in error.message
    assert "AscendC::Select is a real Ascend C API that the CPU model does not implement" in error.message
    assert "unknown.cpp:12:5: error" in error.message  # g++'s own words follow, with the build path removed
    assert str(tmp_path) not in error.message


def test_plain_compile_error_keeps_compiler_message(tmp_path):
    source = (KERNELS / "scalars.cpp").read_text().replace("outGm.SetValue(2, c);", "outGm.SetValue(2, c)")
    with pytest.raises(AscendCCompileError) as info:
        load_inline(name="typo", source=source, functions=["scalars_probe"], build_dir=tmp_path)
    assert info.value.kind == "compile_error"
    assert "expected ';'" in info.value.message
    assert not list(tmp_path.rglob("*.so"))  # a failed build leaves nothing the cache could pick up


def test_user_typo_is_not_called_an_api(tmp_path):
    source = (KERNELS / "scalars.cpp").read_text().replace("static_cast<float>(a));", "static_cast<float>(aa));")
    with pytest.raises(AscendCCompileError) as info:
        load_inline(name="typo2", source=source, functions=["scalars_probe"], build_dir=tmp_path)
    assert info.value.kind == "compile_error"
    assert "'aa' was not declared" in info.value.message
