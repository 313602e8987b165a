"""load_inline: arguments, scalars, the compile cache, the launch hook, the
candidate format, and the executor's AscendCBackend."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from backends._backend import Backend, LaunchLog, get_backend
from backends.ascendc import (
    AscendCBackend,
    AscendCCompileError,
    AscendCRuntimeError,
    build_records,
    load_inline,
    set_launch_hook,
)
from backends.ascendc._build import cache_root

from session_tmp import session_basetemp

KERNELS = Path(__file__).parent / "ascendc_kernels"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return session_basetemp(tmp_path_factory) / "evk_cache" / "ascendc"


@pytest.fixture(scope="module")
def probe(cache):
    return load_inline(name="scalars", source=(KERNELS / "scalars.cpp").read_text(), functions="scalars_probe",
                       build_dir=cache)


@pytest.fixture(autouse=True)
def no_hook():
    yield
    set_launch_hook(None)


def test_scalars_reach_the_kernel_with_their_c_types(probe):
    out = torch.zeros(8 + 5)
    probe.scalars_probe(out, 4_000_000_000, -7, 1.25, 0.333, -(2**40), 255, block_dim=5)
    assert out[:7].tolist() == pytest.approx([4e9, -7, 1.25, 0.33301, -(2.0**40), 255, 5], rel=1e-4)
    assert out[8:].tolist() == [0.5, 1.5, 2.5, 3.5, 4.5]  # every block ran, with its own index


def test_numpy_and_one_element_tensor_scalars(probe):
    import numpy as np

    out = torch.zeros(9)
    probe.scalars_probe(out, np.uint32(7), torch.tensor(-3), np.float32(0.5), torch.tensor(2.0), 9, True,
                        block_dim=1)
    assert out[:6].tolist() == [7, -3, 0.5, 2.0, 9, 1]


@pytest.mark.parametrize(
    "args, kwargs, phrase",
    [
        ((torch.zeros(9), 1, 2, 3.0, 1.0, 5, 6), {}, "block_dim must be an int"),
        ((torch.zeros(9), 1, 2, 3.0, 1.0, 5), {"block_dim": 1}, "takes 7 arguments"),
        ((torch.zeros(9), -1, 2, 3.0, 1.0, 5, 6), {"block_dim": 1}, "does not fit parameter 'a' of type uint32_t"),
        ((torch.zeros(9), 1, 2**31, 3.0, 1.0, 5, 6), {"block_dim": 1}, "parameter 'b' of type int32_t"),
        ((torch.zeros(9), 1.5, 2, 3.0, 1.0, 5, 6), {"block_dim": 1}, "parameter 'a' is uint32_t; got float"),
        ((torch.zeros(9), 1, 2, "x", 1.0, 5, 6), {"block_dim": 1}, "parameter 'c' is float; got str"),
        ((torch.zeros(18)[::2], 1, 2, 3.0, 1.0, 5, 6), {"block_dim": 1}, "not contiguous"),
        ((3, 1, 2, 3.0, 1.0, 5, 6), {"block_dim": 1}, "is a GM tensor"),
        ((torch.zeros(9), 1, 2, 3.0, 1.0, 5, 6), {"block_dim": 0}, "block_dim must be an int in 1..65535"),
    ],
)
def test_bad_arguments_are_explained(probe, args, kwargs, phrase):
    with pytest.raises((AscendCRuntimeError, TypeError)) as info:
        probe.scalars_probe(*args, **kwargs)
    if isinstance(info.value, AscendCRuntimeError):
        assert info.value.kind == "bad_argument"
    else:  # block_dim left out: Python's own message names it
        assert "block_dim" in str(info.value)
        return
    assert phrase in info.value.message


def test_compile_cache_hit(cache, probe):
    again = load_inline(name="scalars", source=(KERNELS / "scalars.cpp").read_text(), functions=["scalars_probe"],
                        build_dir=cache)
    assert again.cache_hit and again.library_path == probe.library_path
    assert again.compile_seconds < 1.0
    assert (probe.build_dir / "build.log").exists() and (probe.build_dir / "scalars.cpp").exists()


def test_cache_root_follows_the_process_build_cache(monkeypatch, tmp_path):
    from backends import use_build_cache

    monkeypatch.setattr("backends._cache._root", None)
    use_build_cache(tmp_path)
    assert cache_root() == tmp_path / "ascendc"
    monkeypatch.setenv("EVOKERNEL_CACHE", str(tmp_path / "elsewhere"))  # the CLI's to read, not the library's
    use_build_cache(None)
    assert cache_root() == Path.home() / ".cache" / "evokernel" / "ascendc"


def test_entry_signature_problems_are_compile_errors():
    with pytest.raises(AscendCCompileError) as info:
        load_inline(name="nope", source="void f() {}", functions=["add_custom"])
    assert info.value.kind == "unsupported_signature" and "add_custom" in info.value.message
    src = 'extern "C" __global__ __aicore__ void k(GM_ADDR x, AddTiling tiling) {}'
    with pytest.raises(AscendCCompileError, match="separate scalar parameters"):
        load_inline(name="nope", source=src, functions=["k"])


def test_launch_hook_sees_every_launch_with_its_cost(probe):
    seen = []
    set_launch_hook(lambda **info: seen.append(info))
    probe.scalars_probe(torch.zeros(10), 1, 2, 3.0, 4.0, 5, 6, block_dim=2)
    (info,) = seen
    assert info["kind"] == "ascendc" and info["name"] == "scalars_probe" and info["block_dim"] == 2
    assert info["cost"]["source"] == "modelled-910b" and info["cost"]["latency_us"] > 0


CANDIDATE = '''
import torch
import torch.nn as nn
from backends.ascendc import load_inline

KERNEL_SOURCE = r"""{source}"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ops = load_inline(name="add_tiled", source=KERNEL_SOURCE, functions=["add_half", "add_float"])

    def forward(self, x, y):
        z = torch.empty_like(x)
        self.ops.add_float(x, y, z, x.numel(), 1024, 2, block_dim=8)
        return z
'''


def import_candidate(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def candidate_file(tmp_path, cache, monkeypatch) -> Path:
    monkeypatch.setattr("backends._cache._root", cache.parent)  # share the build with the other test modules
    path = tmp_path / "candidate.py"
    path.write_text(CANDIDATE.format(source=(KERNELS / "add_tiled.cpp").read_text()))
    return path


def test_backend_runs_a_candidate_and_records_its_launches(candidate_file):
    backend = get_backend("ascendc")
    assert isinstance(backend, AscendCBackend) and isinstance(backend, Backend)
    assert backend.mode()["mode"] == "cpu-model" and backend.mode()["can_run"]
    assert backend.latency_source("cpu") == "modelled-910b"
    assert backend.static_problems(candidate_file.read_text()) == []

    log = LaunchLog()
    paused_during_launch = []
    record = log.record
    log.record = lambda *a, **k: (paused_during_launch.append(log.paused), record(*a, **k))  # type: ignore[method-assign]
    backend.install_hooks(log, compile_only=False)
    module = import_candidate(candidate_file, "evk_test_candidate_run")
    x, y = torch.randn(10_000), torch.randn(10_000)
    torch.testing.assert_close(module.ModelNew()(x, y), x + y)

    assert [(e["kind"], e["name"], e["block_dim"]) for e in log.launches] == [("ascendc", "add_float", 8)]
    assert paused_during_launch == [1] and log.paused == 0
    report = backend.compile_check(module, log)
    assert report.ok
    kernels = {k.name: k for k in report.kernels}
    assert set(kernels) == {"add_float", "add_half"}
    assert kernels["add_float"].shared_bytes == 3 * 2 * 1024 * 4  # UB bytes per core of the launched kernel
    assert kernels["add_half"].shared_bytes is None  # never launched


def test_compile_check_builds_sources_when_nothing_ran(candidate_file):
    backend = AscendCBackend()
    log = LaunchLog()
    backend.install_hooks(log, compile_only=True)
    module = import_candidate(candidate_file, "evk_test_candidate_compile")
    assert build_records() == []
    report = backend.compile_check(module, log)
    assert report.ok and {k.name for k in report.kernels} == {"add_half", "add_float"}


def test_compile_check_reports_unknown_api(tmp_path, monkeypatch):
    monkeypatch.setattr("backends._cache._root", tmp_path)
    path = tmp_path / "bad.py"
    path.write_text(CANDIDATE.format(source=(KERNELS / "add_tiled.cpp").read_text().replace("Add(z", "AddV(z")))
    backend = AscendCBackend()
    backend.install_hooks(LaunchLog(), compile_only=True)
    report = backend.compile_check(import_candidate(path, "evk_test_candidate_bad"), LaunchLog())
    assert not report.ok and "AscendC::AddV is not an Ascend C API known to the CPU model" in report.message


def test_static_problems():
    backend = AscendCBackend()
    assert len(backend.static_problems("import torch\nclass ModelNew: pass\n")) == 2
    no_loader = 'SRC = "__global__ __aicore__ void k() {}"\nfrom torch.utils.cpp_extension import load_inline\n'
    (problem,) = backend.static_problems(no_loader + "load_inline()\n")
    assert "from backends.ascendc import load_inline" in problem
    commented = '// __aicore__\nfrom backends.ascendc import load_inline\nload_inline()\n'
    assert any("__aicore__" in p for p in backend.static_problems(commented.replace("//", "#")))
