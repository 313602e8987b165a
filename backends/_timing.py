"""The one timing protocol. Every latency in the project comes from here.

GPU: warm-up runs, then `reps` timed runs; before each, fresh input clones and
an L2 flush (a write of twice the L2) and a short GPU spin queued ahead of the
start event, then
CUDA events around the call alone and a device-wide synchronize after it. The median and IQR are reported and
the raw samples kept. CPU: wall clock around each call (interpreted kernels),
labelled as such by the caller; never compared with GPU numbers.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any, Callable

import torch


@dataclasses.dataclass
class Timing:
    median_ms: float
    iqr_ms: float
    samples_ms: list[float]
    method: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _quartiles(samples: list[float]) -> tuple[float, float, float]:
    if len(samples) < 4:
        m = statistics.median(samples)
        return m, m, m
    q1, q2, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return q1, q2, q3


_flush_buffers: dict[int, torch.Tensor] = {}
_SPIN_CYCLES = 200_000  # about 0.1 ms at an H200's 1.98 GHz: longer than a Python launch path


def l2_flush_bytes(device: torch.device) -> int:
    """Bytes of the L2 flush buffer on `device`: twice its L2."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    l2 = getattr(torch.cuda.get_device_properties(index), "L2_cache_size", 0) or 64 * 2**20
    return 2 * l2 // 4 * 4


def _l2_flush_buffer(device: torch.device) -> torch.Tensor:
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _flush_buffers:
        _flush_buffers[index] = torch.empty(l2_flush_bytes(device) // 4, dtype=torch.int32, device=device)
    return _flush_buffers[index]


def benchmark(
    fn: Callable[..., Any],
    make_args: Callable[[], tuple[Any, ...]],
    *,
    device: torch.device | str,
    reps: int = 100,
    warmup: int = 10,
    flush_l2: bool = True,
) -> Timing:
    """Time `fn(*make_args())`; `make_args` is called before every run (fresh clones)."""
    device = torch.device(device)
    if device.type == "cuda":
        return _benchmark_cuda(fn, make_args, device, reps, warmup, flush_l2)
    return _benchmark_wall(fn, make_args, reps, warmup)


def _benchmark_cuda(fn, make_args, device, reps, warmup, flush_l2) -> Timing:
    flush = _l2_flush_buffer(device) if flush_l2 else None
    with torch.no_grad():
        for _ in range(warmup):
            fn(*make_args())
        torch.cuda.synchronize(device)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            # No sync between the clones, the flush and the start event: the GPU
            # is still busy with them while Python launches the candidate, so the
            # interval measures the kernels, not the host's launch latency.
            args = make_args()
            if flush is not None:
                flush.zero_()
            if hasattr(torch.cuda, "_sleep"):
                # A short GPU spin keeps the device busy while the host launches
                # a short kernel, so its launch latency stays outside the interval.
                torch.cuda._sleep(_SPIN_CYCLES)
            starts[i].record()
            fn(*args)
            ends[i].record()
            torch.cuda.synchronize(device)
            del args
    samples = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    q1, q2, q3 = _quartiles(samples)
    method = f"cuda-events, {warmup} warm-up + {reps} timed runs, " + (
        "L2 flushed (2x L2 write) before each" if flush_l2 else "no L2 flush"
    ) + ", fresh input clones, device sync after each"
    return Timing(q2, q3 - q1, samples, method)


def _benchmark_wall(fn, make_args, reps, warmup) -> Timing:
    with torch.no_grad():
        for _ in range(warmup):
            fn(*make_args())
        samples = []
        for _ in range(reps):
            args = make_args()
            t0 = time.perf_counter()
            fn(*args)
            samples.append((time.perf_counter() - t0) * 1e3)
    q1, q2, q3 = _quartiles(samples)
    return Timing(q2, q3 - q1, samples, f"wall clock on CPU, {warmup} warm-up + {reps} runs")


def copy_bandwidth_gbps(device: torch.device | str, nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth (bytes read + written) for roofline flags."""
    device = torch.device(device)
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    t = benchmark(lambda: dst.copy_(src), lambda: (), device=device, reps=20, warmup=3, flush_l2=False)
    return 2 * nbytes / (t.median_ms * 1e-3) / 1e9
