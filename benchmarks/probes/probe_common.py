"""What the probes share: picking KernelBench task files by number or name, and the
environment a probe's results record."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def task_files(level_dir: Path, wanted: list[str]) -> list[Path]:
    """The level's files whose name is, or starts with ``<number>_`` for, each wanted entry."""
    files = sorted(level_dir.glob("*.py"))
    out = []
    for want in wanted:
        match = [f for f in files if f.stem == want or f.stem.startswith(f"{want}_")]
        if not match:
            raise SystemExit(f"no task {want!r} in {level_dir}")
        out += [f for f in match if f not in out]
    return out


def environment(device: str) -> dict:
    import torch
    import triton

    from evokernel.bench._runner import _git_commit

    return {"device": device, "device_name": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu",
            "torch": torch.__version__, "triton": triton.__version__,
            "tf32_cudnn": torch.backends.cudnn.allow_tf32, "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
            # a copy without .git (the device machines): the commit written into _archive_commit.txt; git's
            # own lookup would find whatever repository lies above the copy
            "git_commit": _git_commit(ROOT)}
