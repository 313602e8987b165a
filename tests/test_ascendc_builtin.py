"""The builtin Ascend C policy: templates that pass every input group of the
npu suite's elementwise and softmax tasks (fp16 included) on the CPU model,
an honest stop outside them, a configuration search, and Triton memories
used as a hint when porting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evokernel.ascendc import (AscendCBuiltinPolicy, AscendCConfig, TemplateError, config_from_triton, covers, generate,
                               neighbours)
from evokernel.builtin import analyze
from evokernel.cli import app
from evokernel.loop import MemoryNote, StartPointView, StepContext

from builtin_case import write_task
from session_tmp import session_basetemp

NPU = Path(__file__).resolve().parents[1] / "benchmarks" / "npu"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _small(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("EVOKERNEL_SIZE", "small")
    monkeypatch.setattr("backends._cache._root", session_basetemp(tmp_path_factory) / "evk-cache")
    # the CLI sets the process's build cache from EVOKERNEL_CACHE, as a user's shell would
    monkeypatch.setenv("EVOKERNEL_CACHE", str(session_basetemp(tmp_path_factory) / "evk-cache"))


def _ctx(task: str, *, stage="draft", memories=(), start=None, tried=frozenset()) -> StepContext:
    path = NPU / f"{task}.py"
    return StepContext(task_name=task, task_key=f"key-{task}", task_path=str(path), task_source=path.read_text(),
                       category="", backend="ascendc", stage=stage, step=1, memories=list(memories), feedback=None,
                       start_point=start, tried=tried, run_id=1)


def _triton_trace(task_key: str, config: dict, value: float = 0.5) -> MemoryNote:
    return MemoryNote(id=7, kind="trace", task_key=task_key, backend="triton", key_text="", content="",
                      status="ok", latency_ms=1.0, value=value, extra={"config": config, "policy": "builtin"})


def test_templates_write_a_complete_candidate():
    plan = analyze(str(NPU / "06_layer_norm.py"))
    source = generate(plan, AscendCConfig("rows", tile_bytes=8192, block_dim=16, buffer_num=1))
    compile(source, "candidate", "exec")
    for needed in ("from backends.ascendc import load_inline", "class ModelNew", "DataCopyPad", "ReduceSum",
                   "Rsqrt", 'extern "C" __global__ __aicore__ void', "TILE_BYTES=8192", "BUFFER_NUM=1",
                   "RoundMode::CAST_RINT"):
        assert needed in source, needed


def test_matmul_templates_write_a_cube_kernel_and_an_epilogue():
    plan = analyze(str(NPU / "10_matmul.py"))
    source = generate(plan, AscendCConfig("matmul", block_dim=16, buffer_num=2, base_m=64, base_n=128, base_k=128))
    compile(source, "candidate", "exec")
    for needed in ("Mmad(", "LoadData(", "Fixpipe<", "Nd2NzParams", "TQue<TPosition::A1, 2>", "BASE_M=64",
                   "_matmul_cube("):
        assert needed in source, needed
    assert config_from_triton({"family": "matmul", "block_m": 64, "block_n": 64, "block_k": 128}, "matmul", 1) \
        == AscendCConfig("matmul", block_dim=24, buffer_num=2, base_m=64, base_n=64, base_k=128)


@pytest.mark.parametrize("task, why", [("12_mean_dim0", "trailing dims")])
def test_stops_honestly_outside_the_templates(task, why):
    proposal = AscendCBuiltinPolicy().propose(_ctx(task))
    assert proposal.stop and proposal.source is None and why in proposal.error


def test_a_forward_returning_several_tensors_is_outside_the_templates(tmp_path):
    """The templates' forward returns one tensor: a plan of several outputs is refused, not truncated."""
    path = write_task(tmp_path, "two_outputs", """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def forward(self, x):
                return torch.relu(x), x.sum(1)


        def get_inputs():
            return [torch.randn(4, 6)]


        def get_init_inputs():
            return []
        """)
    plan = analyze(str(path))
    assert "several tensors" in covers(plan)
    with pytest.raises(TemplateError, match="several tensors"):
        generate(plan, AscendCConfig("elementwise"))


def test_a_triton_memory_of_the_same_family_sets_the_first_tile():
    policy = AscendCBuiltinPolicy()
    plain = policy.propose(_ctx("01_add_relu"))
    assert plain.extra["ascendc_config"]["tile_bytes"] == 16384 and "config_from" not in plain.extra
    hint = _triton_trace("key-01_add_relu", {"family": "elementwise", "block_n": 1024, "num_warps": 4})
    ported = policy.propose(_ctx("01_add_relu", memories=[hint]))
    assert ported.extra["ascendc_config"]["tile_bytes"] == 4096  # 1024 fp32 elements per Triton program
    assert ported.extra["config_from"] == "triton memory 7"
    other_family = _triton_trace("key-01_add_relu", {"family": "rows", "block_n": 1024, "block_m": 4})
    assert "config_from" not in policy.propose(_ctx("01_add_relu", memories=[other_family])).extra
    assert config_from_triton({"family": "rows", "one_pass": True, "block_m": 4}, "rows", 1024).tile_bytes == 16384


def test_refining_walks_the_start_points_neighbours():
    start_cfg = AscendCConfig("elementwise", tile_bytes=8192, block_dim=32, buffer_num=2)
    start = StartPointView(id=3, code="", latency_ms=0.01, speedup_eager=None, speedup_compile=None,
                           extra={"ascendc_config": start_cfg.to_dict()})
    tried = frozenset({"builtin-ascendc:" + json.dumps(start_cfg.to_dict(), sort_keys=True)})
    proposal = AscendCBuiltinPolicy().propose(_ctx("01_add_relu", stage="refine", start=start, tried=tried))
    assert AscendCConfig.from_dict(proposal.extra["ascendc_config"]) == neighbours(start_cfg)[0]


def test_run_solves_elementwise_softmax_layernorm_and_long_rows_end_to_end(tmp_path):
    """`evokernel run --backend ascendc --policy builtin`: every input group (several shapes, fp32
    and fp16) passes on the first attempt, with a modelled 910B latency; the second step refines.
    08_reduce_sum has rows of 40,001 elements, longer than the UB: the streamed multi-pass path."""
    tasks = [str(NPU / f"{t}.py") for t in ("01_add_relu", "04_softmax", "06_layer_norm", "08_reduce_sum")]
    res = runner.invoke(app, ["run", *tasks, "--backend", "ascendc", "--policy", "builtin", "--budget", "2",
                              "--memory", str(tmp_path / "m.db"), "--json"])
    assert res.exit_code == 0, res.stdout + res.stderr
    data = json.loads(res.stdout)
    for task in data["tasks"]:
        assert task["correct"] and task["first_correct_attempt"] == 1, task
        assert task["statuses"] == ["ok", "ok"]
        assert task["latency_source"] == "modelled-910b" and 0 < task["best_latency_ms"] < 0.1
