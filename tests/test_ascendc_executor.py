"""Ascend C through the executor and `evokernel eval`: an honest kernel is
verified with a modelled latency; a hazard is rejected with a message naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evokernel.cli import app

from session_tmp import session_basetemp

KERNELS = Path(__file__).parent / "ascendc_kernels"
TASK = Path(__file__).parent / "executor_cases" / "task_add_relu.py"

# relu(x + y) * 2 for fp32 with double-buffered queues, tiles of TILE elements
# (a multiple of 8 floats, so every DataCopy moves whole 32-byte blocks) and a
# padded copy for the tail.
KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t TILE = 1024;

class AddRelu {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) {
        uint32_t blocks = GetBlockNum();
        uint32_t per = (n + blocks - 1) / blocks;
        start = per * GetBlockIdx();
        count = start >= n ? 0 : (n - start < per ? n - start : per);
        xGm.SetGlobalBuffer((__gm__ float*)x + start, count);
        yGm.SetGlobalBuffer((__gm__ float*)y + start, count);
        zGm.SetGlobalBuffer((__gm__ float*)z + start, count);
        pipe.InitBuffer(inX, 2, TILE * sizeof(float));
        pipe.InitBuffer(inY, 2, TILE * sizeof(float));
        pipe.InitBuffer(outZ, 2, TILE * sizeof(float));
    }
    __aicore__ inline void Process() {
        for (uint32_t off = 0; off < count; off += TILE) {
            uint32_t len = count - off < TILE ? count - off : TILE;
            LocalTensor<float> x = inX.AllocTensor<float>();
            LocalTensor<float> y = inY.AllocTensor<float>();
            DataCopyExtParams params{1, static_cast<uint32_t>(len * sizeof(float)), 0, 0, 0};
            DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
            DataCopyPad(x, xGm[off], params, pad);
            DataCopyPad(y, yGm[off], params, pad);
            inX.EnQue(x);
            inY.EnQue(y);
            x = inX.DeQue<float>();
            y = inY.DeQue<float>();
            LocalTensor<float> z = outZ.AllocTensor<float>();
            Add(z, x, y, len);
            Relu(z, z, len);
            Muls(z, z, 2.0f, len);
            outZ.EnQue(z);
            inX.FreeTensor(x);
            inY.FreeTensor(y);
            z = outZ.DeQue<float>();
            DataCopyPad(zGm[off], z, params);
            outZ.FreeTensor(z);
        }
    }
private:
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> inX, inY;
    TQue<QuePosition::VECOUT, 2> outZ;
    GlobalTensor<float> xGm, yGm, zGm;
    uint32_t start = 0, count = 0;
};

extern "C" __global__ __aicore__ void add_relu(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) {
    AddRelu op;
    op.Init(x, y, z, n);
    op.Process();
}
"""

CANDIDATE = '''
import torch
import torch.nn as nn
from backends.ascendc import load_inline

KERNEL_SOURCE = r"""{source}"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ops = load_inline(name="add_relu", source=KERNEL_SOURCE, functions=["add_relu"])

    def forward(self, x, y):
        x = x.contiguous()
        y = y.contiguous()
        z = torch.empty_like(x)
        self.ops.add_relu(x, y, z, x.numel(), block_dim=8)
        return z
'''

runner = CliRunner()


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setattr("backends._cache._root", session_basetemp(tmp_path_factory) / "evk-cache")
    # `evokernel eval` sets the process's build cache from EVOKERNEL_CACHE, as a user's shell would
    monkeypatch.setenv("EVOKERNEL_CACHE", str(session_basetemp(tmp_path_factory) / "evk-cache"))


@pytest.fixture(scope="module")
def cli_worker(tmp_path_factory):
    """One worker for this module's `evokernel eval` runs (each would start its own), started under
    the same build cache as the tests' (_cache), so it builds there."""
    from backends import Executor

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("backends._cache._root", session_basetemp(tmp_path_factory) / "evk-cache")
        with Executor(device="cpu", timeout_s=300) as shared:
            yield shared


def _eval(tmp_path, kernel: str, worker):
    """`evokernel eval` on `worker`: the Executor(...) the command makes is recorded with its
    arguments and hands out the shared one, which the command's `with` leaves open."""
    import backends
    from loop_doubles import executor_handing_out

    Shared, made = executor_handing_out(worker)
    cand = tmp_path / "cand.py"
    cand.write_text(CANDIDATE.format(source=kernel))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backends, "Executor", Shared)
        res = runner.invoke(app, ["eval", str(TASK), str(cand), "--backend", "ascendc", "--json", "--trials", "2"])
    assert made == [{"device": "cpu", "timeout_s": 300.0}], "the command makes one executor, on the CPU"
    return res, json.loads(res.stdout.strip().splitlines()[-1])


def test_honest_ascendc_kernel_verifies_with_modelled_latency(tmp_path, cli_worker):
    res, data = _eval(tmp_path, KERNEL, cli_worker)
    assert res.exit_code == 0, data["feedback"]
    assert data["status"] == "ok"
    assert data["latency_source"] == "modelled-910b"
    # 37,000 fp32 elements on 8 cores: microseconds on a 910B, not the CPU's milliseconds
    assert 0 < data["latency_ms"] < 0.1


@pytest.mark.parametrize(
    "change, kind",
    [
        (("constexpr int32_t TILE = 1024;", "constexpr int32_t TILE = 20000;"), "Unified Buffer"),
        (("            inX.EnQue(x);\n", ""), "DeQue"),
        (("Relu(z, z, len);", "ReluFast(z, z, len);"), "ReluFast"),
    ],
)
def test_ascendc_hazard_rejected_with_its_name(tmp_path, cli_worker, change, kind):
    kernel = KERNEL.replace(*change)
    assert kernel != KERNEL
    res, data = _eval(tmp_path, kernel, cli_worker)
    assert res.exit_code == 1
    assert data["status"] in ("compile_error", "runtime_error")
    assert kind in data["message"] + data["feedback"]


# ---- builds isolated by content: one extension name, two sources ------------------------------------------------

SAME_NAME = CANDIDATE.replace('name="add_relu"', 'name="fast_kernel"')
WRONG = KERNEL.replace("Add(z, x, y, len);", "Sub(z, x, y, len);")


def _verdicts_for_same_name(executor_factory, concurrently: bool) -> dict[str, str]:
    """The honest and the wrong kernel, both built as "fast_kernel", each with its own verdict."""
    import threading

    from backends import EvalOptions

    sources = {"honest": SAME_NAME.format(source=KERNEL), "wrong": SAME_NAME.format(source=WRONG)}
    verdicts: dict[str, str] = {}
    options = EvalOptions(trials=1)
    if not concurrently:
        with executor_factory() as ex:  # one reused worker process evaluates both, one after the other
            for label in ("honest", "wrong", "honest"):
                verdicts[label] = ex.evaluate(TASK, sources[label], backend="ascendc", options=options).status.value
        return verdicts

    def run(label: str) -> None:
        with executor_factory() as ex:  # a worker process each, building at the same time
            verdicts[label] = ex.evaluate(TASK, sources[label], backend="ascendc", options=options).status.value

    threads = [threading.Thread(target=run, args=(label,)) for label in sources]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return verdicts


@pytest.mark.slow
@pytest.mark.parametrize("concurrently", [False, True], ids=["serial", "concurrent"])
def test_same_extension_name_different_sources_get_their_own_verdicts(tmp_path, monkeypatch, concurrently):
    from backends import Executor

    monkeypatch.setattr("backends._cache._root", tmp_path / "cache")  # nothing built yet: both compile now
    verdicts = _verdicts_for_same_name(lambda: Executor(device="cpu", timeout_s=300), concurrently)
    assert verdicts == {"honest": "ok", "wrong": "wrong_result"}
    builds = sorted(p.name for p in (tmp_path / "cache" / "ascendc").iterdir() if p.is_dir())
    assert len(builds) == 2 and all(b.startswith("fast_kernel-") for b in builds)  # a directory per source
