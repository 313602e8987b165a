"""Which rung of the Ascend C ladder this machine stands on (backends/ascendc/README.md)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

MODES = ("cann-npu", "cann-sim", "cpu-model")
FORCE_ENV = "EVOKERNEL_ASCENDC_MODE"


def _find_bisheng(home: str | None) -> str | None:
    found = shutil.which("bisheng")
    if found or not home:
        return found
    for candidate in ("compiler/ccec_compiler/bin/bisheng", "tools/ccec_compiler/bin/bisheng"):
        path = Path(home) / candidate
        if path.is_file():
            return str(path)
    return None


def detect_mode() -> dict[str, Any]:
    """{'mode': 'cann-npu' | 'cann-sim' | 'cpu-model', 'can_run': bool, ...details}.

    cann-npu needs CANN (ASCEND_HOME_PATH and bisheng) and an NPU (npu-smi and an
    importable torch_npu); cann-sim is CANN without an NPU (kernels compile with
    bisheng but run on the CPU model); otherwise cpu-model. `EVOKERNEL_ASCENDC_MODE`
    forces a mode (for example cpu-model on an NPU machine)."""
    home = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")
    bisheng = _find_bisheng(home)
    npu_smi = shutil.which("npu-smi")
    torch_npu = importlib.util.find_spec("torch_npu") is not None  # found, not imported: it is heavy
    cxx = shutil.which(os.environ.get("CXX") or "g++")
    has_cann = bool(home and bisheng)
    has_npu = bool(npu_smi and torch_npu)
    mode = "cann-npu" if has_cann and has_npu else "cann-sim" if has_cann else "cpu-model"
    forced = os.environ.get(FORCE_ENV, "").strip() or None
    if forced:
        if forced not in MODES:
            raise ValueError(f"{FORCE_ENV}={forced!r}: use one of {', '.join(MODES)}")
        mode = forced
    can_run = mode == "cann-npu" or cxx is not None
    reason = {
        "cann-npu": "CANN and an NPU found: real build with bisheng and NPU timing",
        "cann-sim": "CANN found without an NPU: bisheng compile checks, execution on the CPU model",
        "cpu-model": "no CANN: kernels run on EvoKernel's CPU model; latency is modelled (910B)",
    }[mode]
    return {
        "mode": mode,
        "can_run": can_run,
        "detail": reason,
        "forced": forced,
        "ascend_home_path": home,
        "bisheng": bisheng,
        "npu_smi": npu_smi,
        "torch_npu": torch_npu,
        "cxx": cxx,
    }
