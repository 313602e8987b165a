"""Own-kernel share: how much of the candidate's GPU time its own kernels did.

One warm forward call runs under torch.profiler with CUDA activity. Every
device activity in it (kernels, copies, fills) is either one of the
candidate's own kernels, named by the backend's launch records (a Triton
`@triton.jit` function, a `__global__` function of a CUDA extension), or a
library's (cuBLAS, cuDNN, PyTorch's own elementwise kernels, allocator
fills). The share is own time over all device time: 1.0 for a candidate
that does everything itself, near 0 for one that calls cuBLAS and adds a
token epilogue. KernelGYM (Dr.Kernel) measures the same coverage and
discounts samples below 0.3; under `--rules kernelbench`, `--min-own-share`
turns a low share into a `disallowed` verdict ("lazy").

The same profile shows which streams the kernels ran on: the harness
brackets the call with two marker kernels on its own stream, so work queued
on any other stream (a side stream created natively in C++, where the
Python-level guard cannot see it) is found and is cheating.

Off the GPU there is no device time to share out: the share is None.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Iterable

import torch

MARKER = "spin_kernel"  # torch.cuda._sleep's kernel: the harness's stream marker


@dataclasses.dataclass(frozen=True)
class DeviceActivity:
    name: str
    duration_us: float
    stream: int | None = None


@dataclasses.dataclass(frozen=True)
class ShareReport:
    own_us: float
    library_us: float
    own_kernels: tuple[str, ...]
    library_kernels: tuple[str, ...]  # the largest library activities, by time
    side_streams: int  # device activities on a stream other than the harness's
    slowest: str = ""  # the device activity (own or library, by name) with the most time in the call
    slowest_us: float = 0.0

    @property
    def slowest_share(self) -> float | None:
        total = self.own_us + self.library_us
        return self.slowest_us / total if total > 0 and self.slowest else None

    @property
    def share(self) -> float | None:
        total = self.own_us + self.library_us
        return self.own_us / total if total > 0 else None

    def describe(self) -> str:
        share = self.share
        text = "no device activity was recorded" if share is None else (
            f"own kernels did {100 * share:.1f}% of the GPU time ({self.own_us:.1f} of {self.own_us + self.library_us:.1f} us)")
        if self.library_kernels:
            text += "; library kernels: " + ", ".join(self.library_kernels)
        if self.slowest_share is not None:
            text += f"; slowest kernel: {self.slowest} ({100 * self.slowest_share:.1f}% of the GPU time)"
        return text


def kernel_identifiers(device_name: str) -> set[str]:
    """Identifiers a profiler kernel name can match: 'void ns::k<float>(float*)' -> {'k', 'ns::k', ...}."""
    head = device_name.split("(", 1)[0]
    head = re.sub(r"<.*", "", head)  # template arguments
    ids = set(re.findall(r"[A-Za-z_]\w*", head))
    ids.discard("void")
    return ids


def is_own(device_name: str, own_names: Iterable[str]) -> bool:
    ids = kernel_identifiers(device_name)
    return any(n in ids or n == device_name for n in own_names)


def _time_by(activities: Iterable[DeviceActivity], key: Callable[[DeviceActivity], str]) -> dict[str, float]:
    """Device time summed per key."""
    out: dict[str, float] = {}
    for a in activities:
        out[key(a)] = out.get(key(a), 0.0) + a.duration_us
    return out


def split_activities(activities: Iterable[DeviceActivity], own_names: set[str]) -> ShareReport:
    acts = list(activities)
    marker_streams = {a.stream for a in acts if MARKER in a.name}
    acts = [a for a in acts if MARKER not in a.name]
    own = [a for a in acts if is_own(a.name, own_names)]
    lib = [a for a in acts if not is_own(a.name, own_names)]
    side = sum(1 for a in acts if marker_streams and a.stream is not None and a.stream not in marker_streams)
    by_name = _time_by(lib, lambda a: a.name)
    top = sorted(by_name, key=lambda n: -by_name[n])[:3]
    # all activities by short name: a kernel launched by several stages adds up
    every = _time_by(acts, lambda a: a.name.split("(")[0][:80])
    slowest = max(every, key=every.get, default="")
    return ShareReport(
        own_us=sum(a.duration_us for a in own),
        library_us=sum(a.duration_us for a in lib),
        own_kernels=tuple(sorted({a.name.split("(")[0] for a in own})),
        library_kernels=tuple(n.split("(")[0][:80] for n in top),
        side_streams=side,
        slowest=slowest,
        slowest_us=every.get(slowest, 0.0),
    )


def _activities(prof: Any) -> list[DeviceActivity]:
    """Device activities of a finished torch.profiler run, across torch versions."""
    found: list[DeviceActivity] = []
    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if results is not None:
        from torch.autograd import DeviceType

        for e in results.events():
            if e.device_type() != DeviceType.CUDA:
                continue
            stream = None
            try:
                stream = int(e.device_resource_id())
            except (AttributeError, RuntimeError, TypeError, ValueError):
                pass
            found.append(DeviceActivity(e.name(), e.duration_ns() / 1000.0, stream))
        return found
    for e in prof.events():  # older profilers: device time per event, no stream
        t = getattr(e, "device_time", None) or getattr(e, "cuda_time", 0.0)
        if str(getattr(e, "device_type", "")).endswith("CUDA") and t:
            found.append(DeviceActivity(e.name, float(t)))
    return found


def measure(call: Callable[[], Any], own_names: Callable[[], set[str]], device: torch.device) -> ShareReport | None:
    """Profile one call of `call` (already warm) and split its device time; None off the GPU."""
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.cuda._sleep(100)
        call()
        torch.cuda._sleep(100)
        torch.cuda.synchronize()
    return split_activities(_activities(prof), own_names())


__all__ = ["DeviceActivity", "ShareReport", "is_own", "kernel_identifiers", "measure", "split_activities"]
