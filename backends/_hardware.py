"""What a kernel engineer looks at first: the device's measured limits and a task's minimum cost.

`HardwareFacts` are measured, not looked up: the device-to-device copy
bandwidth (bytes read plus written per second) and the matmul rate torch
reaches per dtype, timed by the project's one timing function. Measuring takes
a few seconds, so `hardware_facts` does it once per device (host, device index
and torch build) and keeps the answer in a JSON file; by default it measures
in a child process, so the caller never initialises CUDA itself.

`TaskCost` is the task's floor: the bytes its inputs, weights and outputs
hold (read once, written once) and the FLOPs of its matmuls and convolutions as torch's
`FlopCounterMode` counts them, both from a run on the meta device, so a
full-size task costs no memory and no time to measure.

Depends on torch only.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# Matmul sizes per dtype: large enough to reach the library's peak, small enough to take milliseconds.
_MATMUL_N = {"fp16": 8192, "bf16": 8192, "tf32": 8192, "fp32": 4096}
_COPY_BYTES = 1 << 30


@dataclasses.dataclass(frozen=True)
class HardwareFacts:
    device: str  # "cuda:0"
    device_name: str
    sm_count: int | None
    l2_bytes: int | None
    memory_bytes: int | None
    copy_gbps: float  # device-to-device copy: bytes read + written, per second, in GB (1e9)
    peak_tflops: dict[str, float]  # matmul rate torch reaches, per dtype ("fp16", "bf16", "tf32", "fp32")
    method: str  # how the numbers were measured
    measured_utc: str
    versions: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def is_gpu(self) -> bool:
        return self.device.startswith("cuda")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "HardwareFacts":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclasses.dataclass(frozen=True)
class TaskCost:
    """A task's floor at one size: what any correct kernel must move and compute."""

    min_bytes: int | None  # inputs and weights read once, outputs written once
    flops: int | None  # matmul/convolution FLOPs (FlopCounterMode); 0 for a memory-bound task
    dtype: str | None  # the floating dtype of the largest input ("fp32", "fp16", "bf16", ...)
    note: str = ""  # why a field is None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_DTYPE_NAMES = {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float64": "fp64"}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _device_info(device: str) -> dict[str, Any]:
    """What torch says about the device: name, SMs, L2, memory."""
    import torch

    dev = torch.device(device)
    if dev.type != "cuda":
        import platform

        return {"device_name": platform.processor() or platform.machine(), "sm_count": None, "l2_bytes": None,
                "memory_bytes": None}
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    return {"device_name": props.name, "sm_count": int(props.multi_processor_count),
            "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0) or None, "memory_bytes": int(props.total_memory)}


def measure_hardware(device: str = "cuda:0", *, copy_bytes: int = _COPY_BYTES,
                     matmul_n: dict[str, int] | None = None, reps: int = 20) -> HardwareFacts:
    """Measure `device` now (a few seconds on a GPU). On a CPU the same code runs,
    for tests; its numbers describe the CPU and are labelled by `device`."""
    import torch

    from ._timing import benchmark

    info = _device_info(device)
    dev = torch.device(device)
    n_elems = max(1, copy_bytes // 4)
    src = torch.empty(n_elems, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    # The copy and the matmuls are timed without the L2 flush: a copy of a buffer many
    # times the L2 streams from memory anyway, and a matmul's peak is compute-bound.
    copy = benchmark(lambda: dst.copy_(src), lambda: (), device=dev, reps=reps, warmup=3, flush_l2=False)
    copy_gbps = 2 * n_elems * 4 / (copy.median_ms * 1e-3) / 1e9
    del src, dst
    peaks: dict[str, float] = {}
    sizes = _MATMUL_N if matmul_n is None else matmul_n
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "fp32": torch.float32}
    tf32 = torch.backends.cuda.matmul.allow_tf32 if dev.type == "cuda" else None
    try:
        for name, n in sizes.items():
            if dev.type == "cuda":
                torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
            elif name == "tf32":
                continue  # no TF32 on a CPU
            a = torch.randn(n, n, device=dev).to(dtypes[name])
            b = torch.randn(n, n, device=dev).to(dtypes[name])
            t = benchmark(lambda: torch.mm(a, b), lambda: (), device=dev, reps=max(3, reps // 2), warmup=2,
                          flush_l2=False)
            peaks[name] = 2 * n**3 / (t.median_ms * 1e-3) / 1e12
    finally:
        if tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = tf32
    return HardwareFacts(
        device=device, device_name=info["device_name"], sm_count=info["sm_count"], l2_bytes=info["l2_bytes"],
        memory_bytes=info["memory_bytes"], copy_gbps=copy_gbps, peak_tflops=peaks,
        method=(f"median of {reps} copies of {copy_bytes} bytes (read + written); torch.mm of n x n per dtype "
                f"({', '.join(f'{k} n={v}' for k, v in sizes.items())}); backends.benchmark without L2 flush"),
        measured_utc=_now(),
        versions={"torch": torch.__version__, "cuda": str(torch.version.cuda)},
    )


def cache_key(device: str) -> str:
    """Which cache entry holds `device`: this host, the device index, the torch build.
    Computed without touching CUDA, so a cache hit costs no CUDA initialisation."""
    import socket

    import torch

    return f"{socket.gethostname()}|{device}|torch {torch.__version__}"


def hardware_facts(device: str, *, cache_path: str | os.PathLike | None, refresh: bool = False,
                   isolated: bool = True, timeout_s: float = 300.0,
                   measure: dict[str, Any] | None = None) -> HardwareFacts | None:
    """The facts of `device`, measured once and then read from `cache_path` (a JSON file of
    key -> facts). None on a device without CUDA or when the measurement fails.

    `isolated` measures in a child process (`python -m backends._hardware`), so the
    caller's process never initialises CUDA. `measure` passes sizes to
    `measure_hardware` and also allows a CPU device (for tests)."""
    if not device.startswith("cuda") and measure is None:
        return None
    cache = Path(cache_path) if cache_path else None
    key = cache_key(device)
    known = _read_cache(cache)
    if key in known and not refresh:
        return HardwareFacts.from_dict(known[key])
    facts = _measure_in_child(device, timeout_s, measure) if isolated else measure_hardware(device, **(measure or {}))
    if facts is not None:
        _write_cache(cache, key, facts)
    return facts


def _measure_in_child(device: str, timeout_s: float, measure: dict[str, Any] | None) -> HardwareFacts | None:
    cmd = [sys.executable, "-m", "backends._hardware", "--device", device]
    if measure is not None:
        cmd += ["--measure", json.dumps(measure)]
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    try:
        data = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return HardwareFacts.from_dict(data) if data else None


def _read_cache(cache: Path | None) -> dict[str, Any]:
    if cache is None or not cache.is_file():
        return {}
    try:
        data = json.loads(cache.read_text())
    except (OSError, ValueError):
        return {}  # a broken cache is only a cost: measure again
    return data if isinstance(data, dict) else {}


def _write_cache(cache: Path | None, key: str, facts: HardwareFacts) -> None:
    if cache is None:
        return
    data = _read_cache(cache)
    data[key] = facts.to_dict()
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, cache)
    except OSError:
        pass


def task_cost(path: str | os.PathLike, *, size: str = "full") -> TaskCost:
    """The task's minimum bytes and matmul FLOPs at `size`, from one run on the meta device."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from ._task import TaskError, load_task_module, task_size, tensor_bytes

    try:
        module = load_task_module(path, size=size)
    except TaskError as exc:
        return TaskCost(None, None, None, note=str(exc))
    try:
        with task_size(size), torch.device("meta"):
            init = list(module.get_init_inputs())
            model = module.Model(*init)
            inputs = list(module.get_inputs())
            weights = [*model.parameters(), *model.buffers()] if isinstance(model, torch.nn.Module) else []
            with FlopCounterMode(display=False) as counter:
                out = model(*inputs)
    except Exception as exc:  # no meta kernel, data-dependent shapes, a task that names a device
        return TaskCost(None, None, None, note=f"the meta run failed: {type(exc).__name__}: {exc}"[:300])
    tensors = [t for t in inputs if isinstance(t, torch.Tensor) and t.is_floating_point()]
    dtype = _DTYPE_NAMES.get(str(max(tensors, key=lambda t: t.numel()).dtype)) if tensors else None
    return TaskCost(min_bytes=tensor_bytes(inputs) + tensor_bytes(weights) + tensor_bytes(out),
                    flops=int(counter.get_total_flops()),
                    dtype=dtype)


def _main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Measure a device's copy bandwidth and matmul peak (JSON on stdout).")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--measure", default=None, help="JSON of measure_hardware's sizes (allows a CPU, for tests)")
    parser.add_argument("--cache", default=None, help="JSON file of measured devices: read, and updated after a measurement")
    parser.add_argument("--refresh", action="store_true", help="measure even when the cache knows the device")
    args = parser.parse_args(argv)
    measure = json.loads(args.measure) if args.measure else None
    if args.cache:
        facts = hardware_facts(args.device, cache_path=args.cache, refresh=args.refresh, isolated=False,
                               measure=measure)
    else:
        facts = measure_hardware(args.device, **(measure or {})) if args.device.startswith("cuda") or measure else None
    print(json.dumps(facts.to_dict() if facts else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
