"""Seeded inputs, drawn where they are used.

Two seedings, both reproducible from `EvalOptions.seed`:

- ours (the default): before trial t the host and device generators are
  seeded with `seed + 1 + t`, and `get_inputs()` runs with the evaluation
  device as torch's default device, so `torch.rand`/`torch.randn` draw on the
  device's own generator (CUDA's Philox on a GPU). A 6.4 GB input costs no host
  memory and a few milliseconds. On a GPU the values therefore differ from a
  CPU run with the same seed; they are the same on every run with the same
  seed, device type and torch version.
- KernelBench's (`kernelbench_seeding`): the trial seeds come from the host
  generator seeded with `seed` (KernelBench draws one `randint(0, 2**32 - 1)`
  per trial), and every random draw in `get_inputs()` takes its values from the
  host generator, element for element as one host call would produce them.
  The draw is made in chunks that are copied to the device as they come
  (`HostStream`), so host memory holds one chunk, not the tensor. The values
  are bit-identical to KernelBench's host draws; arithmetic that the task does
  on them afterwards runs on the device.

Chunking is exact because torch's CPU generator fills `uniform_`, `random_`
and `normal_` serially, element by element; `normal_` transforms groups of 16
and redraws the last 16 values when the length is not a multiple of 16, so
chunks are multiples of 16 and the last one is at least 16 long. The first use
in a process checks this on the torch that runs (`host_stream_exact`); where it
does not hold, draws fall back to whole host tensors, with a warning.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from ._precision import cast_values

# Elements per host draw: 64 MB of fp32, big enough that a chunk's Python
# overhead is nothing next to generating it.
HOST_CHUNK = 1 << 24


def seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def trial_seeds(seed: int, trials: int, kernelbench: bool) -> list[int]:
    """The seed of each correctness trial."""
    if not kernelbench:
        return [seed + 1 + t for t in range(trials)]
    gen = torch.Generator("cpu").manual_seed(seed)  # the same stream as manual_seed(seed) on the host
    return [int(torch.randint(0, 2**32 - 1, (1,), generator=gen, device="cpu").item()) for _ in range(trials)]


def to_device(x: Any, device: torch.device) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(to_device(v, device) for v in x)
    return x


def draw(fn: Callable[[], Any], device: torch.device, seed: int, *, host_stream: bool = False,
         precision: str = "fp32") -> list[Any]:
    """`fn()` (a task's get_inputs or get_input_groups) seeded with `seed`, its
    tensors made on `device`; any tensor the task placed elsewhere is moved.
    Under fp16 or bf16 its floating tensors are then cast (drawn as the task
    draws them, so the values are the fp32 draws rounded)."""
    seed_all(seed)
    with torch.device(device):
        if host_stream:
            with HostStream(device):
                values = list(fn())
        else:
            values = list(fn())
    return cast_values(to_device(values, device), precision)


# --- the host stream ---------------------------------------------------------------


def _chunks(n: int, chunk: int) -> list[tuple[int, int]]:
    """[start, end) spans of at most `chunk` elements, multiples of 16, the last >= 16 long."""
    chunk = max(16, chunk - chunk % 16)
    spans, start = [], 0
    while start < n:
        end = min(n, start + chunk)
        if 0 < n - end < 16:  # a short tail would take another path in normal_: fold it in
            end = n
        spans.append((start, end))
        start = end
    return spans


class HostStream(TorchFunctionMode):
    """Random draws take the host generator's values, made chunk by chunk on the
    host and copied into tensors on `device` (see the module docstring)."""

    def __init__(self, device: torch.device | str, chunk: int | None = None):
        super().__init__()
        self.device = torch.device(device)
        self.chunk = chunk or HOST_CHUNK
        self.exact = host_stream_exact()

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: D105
        kwargs = dict(kwargs or {})
        if kwargs.get("generator") is None and kwargs.get("out") is None:
            factory = _FACTORIES.get(func)
            if factory is not None:
                method, size, params, dtype, device = factory(args, kwargs)
                out = torch.empty(size, dtype=dtype, device=torch.device(device) if device is not None else self.device)
                self.fill(out, method, params, {})
                return out.requires_grad_() if kwargs.get("requires_grad") else out
            method = _METHODS.get(func)
            if method is not None and isinstance(args[0], torch.Tensor):
                self.fill(args[0], method, tuple(args[1:]), kwargs)
                return args[0]
        if func in _HOST_ONLY:
            return self._whole_on_host(func, args, kwargs)
        return func(*args, **kwargs)

    def fill(self, out: torch.Tensor, method: str, args: tuple, kwargs: dict) -> None:
        """Fill `out` with what `torch.empty(out.shape).<method>(*args, **kwargs)`
        gives on the host, holding at most two chunks there."""
        n = out.numel()
        if n == 0:
            return
        if not (self.exact and out.is_contiguous()):
            host = torch.empty_strided(out.shape, out.stride(), dtype=out.dtype, device="cpu")
            getattr(host, method)(*args, **kwargs)
            out.copy_(host)
            return
        flat = out.view(-1)
        if out.device.type == "cpu":
            for a, b in _chunks(n, self.chunk):
                getattr(flat[a:b], method)(*args, **kwargs)
            return
        # Two pinned buffers: the host draws the next chunk while the last one is copied.
        pinned = out.device.type == "cuda"
        size = min(self.chunk + 16, n)
        staging = [torch.empty(size, dtype=out.dtype, device="cpu", pin_memory=pinned) for _ in range(2)]
        done: list[Any] = [None, None]
        for i, (a, b) in enumerate(_chunks(n, self.chunk)):
            k = i % 2
            if done[k] is not None:
                done[k].synchronize()
            buf = staging[k][: b - a]
            getattr(buf, method)(*args, **kwargs)
            flat[a:b].copy_(buf, non_blocking=pinned)
            if pinned:
                done[k] = torch.cuda.Event()
                done[k].record()
        if pinned:
            torch.cuda.synchronize(out.device)

    def _whole_on_host(self, func, args: tuple, kwargs: dict) -> Any:
        """Draws that are not chunked (randperm, bernoulli, an explicit generator...):
        made whole on the host, as KernelBench makes them, then moved."""
        device = kwargs.pop("device", None)
        first = args[0] if args and isinstance(args[0], torch.Tensor) else None
        moved = tuple(a.cpu() if isinstance(a, torch.Tensor) else a for a in args)
        with torch.device("cpu"):
            result = func(*moved, **kwargs)
        if func in _INPLACE:
            if first is not None and first is not moved[0]:
                first.copy_(moved[0])
            return first
        target = torch.device(device) if device is not None else (first.device if first is not None else self.device)
        return result.to(target) if isinstance(result, torch.Tensor) else result


def _size(args: tuple, kwargs: dict) -> tuple[int, ...]:
    if "size" in kwargs:
        size = kwargs["size"]
    else:
        size = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) else args
    return tuple(int(s) for s in size)


def _low_high(values: list[Any], kwargs: dict) -> tuple[int, int]:
    """randint's (high) or (low, high), positional or by keyword."""
    if "high" in kwargs:
        return int(kwargs.get("low", values[0] if values else 0)), int(kwargs["high"])
    if "low" in kwargs:
        return int(kwargs["low"]), int(values[0])
    return (int(values[0]), int(values[1])) if len(values) >= 2 else (0, int(values[0]))


def _rand(args, kwargs):
    return "uniform_", _size(args, kwargs), (0.0, 1.0), kwargs.get("dtype"), kwargs.get("device")


def _randn(args, kwargs):
    return "normal_", _size(args, kwargs), (0.0, 1.0), kwargs.get("dtype"), kwargs.get("device")


def _randint(args, kwargs):
    sizes = [a for a in args if isinstance(a, (tuple, list, torch.Size))]
    size = tuple(int(s) for s in (kwargs["size"] if "size" in kwargs else sizes[0]))
    bounds = _low_high([a for a in args if not isinstance(a, (tuple, list, torch.Size))], kwargs)
    return "random_", size, bounds, kwargs.get("dtype") or torch.int64, kwargs.get("device")


def _like(method: str):
    def factory(args, kwargs):
        base = args[0]
        params = _low_high(list(args[1:]), kwargs) if method == "random_" else (0.0, 1.0)
        return method, tuple(base.shape), params, kwargs.get("dtype") or base.dtype, kwargs.get("device") or base.device

    return factory


# Draws made in chunks: torch.<name>(...) is torch.empty(...).<method>(...) on the host.
_FACTORIES: dict[Any, Callable] = {
    torch.rand: _rand,
    torch.randn: _randn,
    torch.randint: _randint,
    torch.rand_like: _like("uniform_"),
    torch.randn_like: _like("normal_"),
    torch.randint_like: _like("random_"),
}
_METHODS: dict[Any, str] = {torch.Tensor.uniform_: "uniform_", torch.Tensor.normal_: "normal_", torch.Tensor.random_: "random_"}
_INPLACE = frozenset({torch.Tensor.uniform_, torch.Tensor.normal_, torch.Tensor.random_, torch.Tensor.exponential_,
                      torch.Tensor.geometric_, torch.Tensor.cauchy_, torch.Tensor.log_normal_, torch.Tensor.bernoulli_})
_HOST_ONLY = frozenset({torch.randperm, torch.bernoulli, torch.multinomial, torch.normal, torch.poisson, *_FACTORIES, *_INPLACE})

_exact: dict[str, bool] = {}


def host_stream_exact() -> bool:
    """Whether chunked host draws equal whole ones on this torch (checked once, on small sizes).

    Host tensors by name: the first call comes inside the draw's `torch.device(cuda)` context."""
    if "ok" not in _exact:
        ok = True
        for n in (1000, 37, 16, 15):
            for method, params, dtype in (("uniform_", (0.0, 1.0), torch.float32), ("normal_", (0.0, 1.0), torch.float32),
                                          ("normal_", (0.5, 2.0), torch.float64), ("random_", (0, 7), torch.int64),
                                          ("uniform_", (-1.0, 1.0), torch.float16)):
                gen = torch.Generator().manual_seed(n)
                whole = getattr(torch.empty(n, dtype=dtype, device="cpu"), method)(*params, generator=gen)
                gen.manual_seed(n)
                parts = torch.empty(n, dtype=dtype, device="cpu")
                for a, b in _chunks(n, 48):
                    getattr(parts[a:b], method)(*params, generator=gen)
                ok = ok and torch.equal(whole, parts)
        _exact["ok"] = ok
    return _exact["ok"]


def sizes_of(fn: Callable[[], Any]) -> list[Any]:
    """`fn()` on the meta device: shapes and dtypes, no data, no generator used."""
    with torch.device("meta"):
        return list(fn())


__all__ = ["HOST_CHUNK", "HostStream", "draw", "host_stream_exact", "seed_all", "sizes_of", "to_device", "trial_seeds"]
