"""Mode detection and the CANN build plan. No CANN or NPU here: only the
generated files and commands are checked."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from backends.ascendc import detect_mode
from backends.ascendc._cann import build_plan, compile_check_plan, host_source, write_plan
from backends.ascendc._signature import parse_entries

KERNELS = Path(__file__).parent / "ascendc_kernels"


def fake_tool(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / name
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return tool


@pytest.fixture
def bare(monkeypatch, tmp_path):
    """No Ascend variables; PATH is a fresh directory for fake tools, then the system's."""
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "EVOKERNEL_ASCENDC_MODE"):
        monkeypatch.delenv(var, raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    if shutil.which("bisheng") or shutil.which("npu-smi"):
        pytest.skip("this machine has Ascend tools on its system PATH")
    return bin_dir


def test_cpu_model_without_cann(bare):
    found = detect_mode()
    assert found["mode"] == "cpu-model" and found["bisheng"] is None and not found["torch_npu"]


def test_cann_without_npu_is_cann_sim(bare, monkeypatch, tmp_path):
    home = tmp_path / "Ascend" / "latest"
    fake_tool(home / "compiler" / "ccec_compiler" / "bin", "bisheng")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    found = detect_mode()
    assert found["mode"] == "cann-sim"
    assert found["bisheng"].endswith("ccec_compiler/bin/bisheng")


def test_cann_and_npu_is_cann_npu(bare, monkeypatch, tmp_path):
    home = tmp_path / "Ascend"
    home.mkdir()
    fake_tool(bare, "bisheng")
    fake_tool(bare, "npu-smi")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    site = tmp_path / "site"
    (site / "torch_npu").mkdir(parents=True)
    (site / "torch_npu" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    found = detect_mode()
    assert found["mode"] == "cann-npu" and found["torch_npu"] and found["npu_smi"]
    assert "torch_npu" not in sys.modules  # detected, never imported


def test_mode_can_be_forced(bare, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_ASCENDC_MODE", "cann-sim")
    assert detect_mode()["mode"] == "cann-sim" and detect_mode()["forced"] == "cann-sim"
    monkeypatch.setenv("EVOKERNEL_ASCENDC_MODE", "gpu")
    with pytest.raises(ValueError, match="cpu-model"):
        detect_mode()


def test_direct_launch_build_plan(tmp_path):
    source = (KERNELS / "scalars.cpp").read_text()
    plan = build_plan("scalars", source, ["scalars_probe"], directory=tmp_path / "npu", ascend_home="/opt/Ascend")
    (cmd,) = plan.commands
    assert cmd[:3] == ["bisheng", "-xasc", "--npu-arch=dav-2201"]
    assert "-shared" in cmd and "-fPIC" in cmd and "scalars.asc" in cmd
    assert "-I/opt/Ascend/include" in cmd and "-L/opt/Ascend/lib64" in cmd and "-lascendcl" in cmd
    assert cmd[cmd.index("-o") + 1] == "libscalars_npu.so"
    unit = plan.files["scalars.asc"]
    assert '#include "scalars_kernel.asc.inc"' in unit and '#include "acl/acl.h"' in unit
    assert ('extern "C" int evk_launch_scalars_probe(uint32_t evk_block_dim, void* evk_stream, void* evk_p0, '
            "uint32_t evk_s1, int32_t evk_s2, float evk_s3, uint16_t evk_s4, int64_t evk_s5, uint8_t evk_s6)") in unit
    assert "scalars_probe<<<evk_block_dim, nullptr, evk_stream>>>(" in unit
    assert "std::memcpy(&evk_v4, &evk_s4, 2)" in unit  # half travels as its bits
    assert plan.files["scalars_kernel.asc.inc"] == source

    check = compile_check_plan(plan)
    assert "-c" in check and "-shared" not in check and not any(c.startswith("-l") for c in check)

    write_plan(plan)
    script = plan.directory / "build.sh"
    assert os.access(script, os.X_OK)
    assert " ".join(cmd) in script.read_text()
    assert (plan.directory / "scalars.asc").read_text() == unit


def test_host_source_casts_typed_gm_pointers():
    src = 'extern "C" __global__ __aicore__ void k(__gm__ half* x, GM_ADDR y, half alpha) {}'
    unit = host_source("k.inc", parse_entries(src, ["k"]))
    assert "k<<<evk_block_dim, nullptr, evk_stream>>>(reinterpret_cast<__gm__ half*>(evk_p0), " \
           "reinterpret_cast<GM_ADDR>(evk_p1), evk_v2);" in unit


def test_cann_module_docstring_is_honest():
    import backends.ascendc._cann as cann

    assert "NEVER RUN ON HARDWARE" in cann.__doc__


def test_compile_check_uses_bisheng_on_cann_sim(bare, monkeypatch, tmp_path):
    """On a CANN machine without an NPU the kernels run on the CPU model, but the
    real compiler's verdict is what the compile report says."""
    from backends._backend import LaunchLog
    from backends.ascendc import AscendCBackend, load_inline

    home = tmp_path / "Ascend"
    home.mkdir()
    bisheng = bare / "bisheng"
    bisheng.write_text("#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/args.txt\"\n"
                       "echo 'error: no member named Foo in namespace AscendC' >&2\nexit 1\n")
    bisheng.chmod(0o755)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    monkeypatch.setattr("backends._cache._root", tmp_path / "cache")
    backend = AscendCBackend()
    assert backend.mode()["mode"] == "cann-sim"
    log = LaunchLog()
    backend.install_hooks(log, compile_only=True)
    load_inline(name="scalars", source=(KERNELS / "scalars.cpp").read_text(), functions=["scalars_probe"],
                build_dir=tmp_path / "gxx", mode="cpu-model")
    report = backend.compile_check(object(), log)
    assert not report.ok and "bisheng (CANN) rejected scalars" in report.message
    assert "no member named Foo" in report.message
    args = (bare / "args.txt").read_text().split()
    assert args[:2] == ["-xasc", "--npu-arch=dav-2201"] and "-c" in args


def test_the_cann_path_builds_the_matmul_operator_too(tmp_path):
    """Direct launch of the cube kernel, and the msopgen-style project for CANN users (never run here)."""
    from backends.ascendc._cann import build_plan
    from evokernel.ascendc import matmul_operator_project
    from evokernel.ascendc._matmul_kernel import ENTRY_F16, ENTRY_F32, MATMUL_SOURCE

    plan = build_plan("matmul", MATMUL_SOURCE, [ENTRY_F16, ENTRY_F32], directory=tmp_path / "direct")
    unit = plan.files["matmul.asc"]
    assert f"{ENTRY_F16}<<<evk_block_dim, nullptr, evk_stream>>>" in unit and "--npu-arch=dav-2201" in plan.commands[0]

    project = matmul_operator_project("float16")
    root = project.write(tmp_path / "MatmulCustom")
    files = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert files == {"matmul_custom.json", "op_host/matmul_custom_tiling.h", "op_host/matmul_custom.cpp",
                     "op_kernel/matmul_custom.cpp", "README.md"}
    op = json.loads((root / "matmul_custom.json").read_text())[0]
    assert op["op"] == "MatmulCustom" and [d["name"] for d in op["input_desc"]] == ["a", "b"]
    assert op["output_desc"][0]["type"] == ["float16"]
    tiling_h = (root / "op_host/matmul_custom_tiling.h").read_text()
    for field in ("M", "N", "K", "baseM", "bufNum"):
        assert f"TILING_DATA_FIELD_DEF(uint32_t, {field});" in tiling_h
    host = (root / "op_host/matmul_custom.cpp").read_text()
    assert "tiling.set_baseN(static_cast<uint32_t>(256));" in host and 'AddConfig("ascend910b")' in host
    kernel = (root / "op_kernel/matmul_custom.cpp").read_text()
    assert "GET_TILING_DATA(t, tiling);" in kernel and f"__aicore__ inline void {ENTRY_F16}_body(" in kernel
    assert f"{ENTRY_F16}_body(a, b, c, t.batch, t.M" in kernel
    assert all("NEVER RUN" in text for name, text in project.files.items() if not name.endswith(".json"))
