"""Probe: a task's first convolution through cuDNN in the task's layout and channels-last, with TF32
allowed (torch's default) and with IEEE fp32 forced, timed and checked against float64.

Why: under kernelbench rules the library runs a pipeline's convolutions and our kernels the rest.
cuDNN takes a convolution with fewer than 16 input channels in IEEE fp32 FMAs in the task's layout
and in TF32 channels-last; torch.compile runs them channels-last (TF32, never checked), we keep the
task's layout because TF32 there is less accurate than the reference, and on the H100 20 level2
pipelines of that kind sit at 0.65-0.94x of torch.compile. Channels-last with TF32 switched off for
the call would keep the reference's accuracy: this measures whether it is also faster, before any
default changes.

For each chosen task: the model built with a fixed seed before its constructor, its first Conv/ConvTranspose module's input captured on the task's inputs, then that module timed
(backends/_timing.py: L2 flushed, median of --reps) in four variants: ``nchw`` and ``nhwc`` (input
and weight channels-last, the copy of the input timed apart as ``to_nhwc``) by ``tf32`` (flags as
torch sets them) and ``ieee`` (cudnn.allow_tf32 off). Each variant's output is compared with the
module run in float64 on the same values (max error over the reference's max magnitude) and with the
default variant's output under the executor's fp32 tolerance (share of elements past atol = rtol =
1e-4), and the cuDNN kernels each launches are named (torch.profiler). With --whole, eager and
torch.compile of the whole task too.

With --precision fp16 or bf16 the model and its floating inputs are cast as `bench --precision` casts
them; cuDNN's TF32 switch does not apply to half-precision convolutions, so only torch's flags are
timed (``nchw_tf32`` and ``nhwc_tf32``, named as in fp32 runs), and the float64 comparison runs on the
cast values. With --whole the kernels torch.compile's run launches are named too (``compile_kernels``):
how Inductor lays out the task's convolutions; and the input's channels-last copy is timed as
torch.compile writes it (``to_nhwc_compiled_ms``, beside torch's own ``to_nhwc_ms``).

A record is written to --out as soon as a task is done; a rerun skips tasks the file holds. Without
a GPU it runs on the CPU (wall clock, no cuDNN; a dry run of the script). Nothing from KernelBench
is stored: the checkout is an argument.

    python benchmarks/probes/conv_layout_precision.py KB/KernelBench --level 2 --tasks 57 87 67 --out FILE
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from backends import PRECISIONS, cast_model, cast_values, load_task_module  # noqa: E402
from backends._timing import benchmark  # noqa: E402
from probe_common import environment, task_files  # noqa: E402

CONV_TYPES = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d,
              torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)
TOLERANCE = 1e-4  # the executor's fp32 default (atol = rtol)


def _first_conv(model: torch.nn.Module, inputs: list) -> tuple[torch.nn.Module, torch.Tensor] | None:
    """The model's first convolution module to run, and the tensor it was called with."""
    seen: list[tuple[torch.nn.Module, torch.Tensor]] = []
    hooks = [m.register_forward_pre_hook(lambda mod, args: seen.append((mod, args[0])) if not seen else None)
             for m in model.modules() if isinstance(m, CONV_TYPES)]
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in hooks:
            h.remove()
    return seen[0] if seen else None


def _cudnn_mode(mode: str):
    """torch's flags as they are ("tf32"), or cuDNN's TF32 switched off as the builtin's drafts switch it
    off for such a call ("ieee": the same context manager, so the probe measures what they run)."""
    if mode == "tf32":
        return contextlib.nullcontext()
    cudnn = torch.backends.cudnn
    return cudnn.flags(enabled=cudnn.enabled, benchmark=cudnn.benchmark, deterministic=cudnn.deterministic,
                       allow_tf32=False)


def _kernels(call, device: str) -> list[str]:
    """Names of the device kernels one call launches (empty on the CPU)."""
    if not device.startswith("cuda"):
        return []
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    return sorted({e.key for e in prof.key_averages() if e.device_time_total > 0})


def _channels_last(dim: int) -> torch.memory_format | None:
    """The channels-last memory format of a tensor of this many dimensions (None below 4)."""
    return {4: torch.channels_last, 5: torch.channels_last_3d}.get(dim)


def _layout(t: torch.Tensor) -> torch.Tensor:
    fmt = _channels_last(t.dim())
    return t.contiguous(memory_format=fmt) if fmt is not None else t.contiguous()


def _layout_module(conv: torch.nn.Module) -> torch.nn.Module:
    clone = copy.deepcopy(conv)
    fmt = _channels_last(clone.weight.dim())
    return clone.to(memory_format=fmt) if fmt is not None else clone


def probe_task(path: Path, device: str, reps: int, whole: bool, precision: str = "fp32") -> dict:
    task = load_task_module(path)
    torch.manual_seed(42)
    model = cast_model(task.Model(*cast_values(list(task.get_init_inputs()), precision)), precision).to(device).eval()
    torch.manual_seed(43)
    inputs = [t.to(device) if isinstance(t, torch.Tensor) else t for t in cast_values(list(task.get_inputs()), precision)]
    found = _first_conv(model, inputs)
    if found is None:
        return {"status": "no convolution"}
    conv, x = found
    x = x.detach().clone()
    record: dict = {"module": repr(conv), "input_shape": list(x.shape), "dtype": str(x.dtype).removeprefix("torch."),
                    "status": "ok"}
    dtype = x.dtype
    modes = ("tf32", "ieee") if dtype == torch.float32 else ("tf32",)  # TF32 is an fp32 switch
    with torch.no_grad():
        exact = conv.double()(x.double())
        conv.to(dtype)
        scale = exact.abs().max().item() or 1.0
        conv_cl = _layout_module(conv)
        x_cl = _layout(x)
        variants = {"nchw": (conv, x), "nhwc": (conv_cl, x_cl)}
        default_out = None
        for layout, (module, arg) in variants.items():
            for mode in modes:
                with _cudnn_mode(mode):
                    tf32_flag = torch.backends.cudnn.allow_tf32  # what cuDNN was told, inside the context
                    out = module(arg)
                    timing = benchmark(module, lambda: (arg,), device=device, reps=reps, warmup=3)
                    kernels = _kernels(lambda: module(arg), device)
                if default_out is None:
                    default_out = out  # the task's layout with torch's flags: what the reference runs
                past = ((out - default_out).abs() > TOLERANCE + TOLERANCE * default_out.abs()).float().mean().item()
                record[f"{layout}_{mode}"] = {
                    "ms": timing.median_ms, "iqr_ms": timing.iqr_ms, "kernels": kernels, "cudnn_allow_tf32": tf32_flag,
                    "error_vs_float64": (out.double() - exact).abs().max().item() / scale,
                    "share_past_tolerance_vs_default": past,
                    "output_channels_last": out.dim() >= 4 and out.is_contiguous(memory_format=_channels_last(out.dim())),
                }
                del out
        record["to_nhwc_ms"] = benchmark(_layout, lambda: (x,), device=device, reps=reps, warmup=3).median_ms
        if whole:
            record["eager_ms"] = benchmark(model, lambda: tuple(inputs), device=device, reps=reps, warmup=3).median_ms
            compiled = torch.compile(model)
            record["compile_ms"] = benchmark(compiled, lambda: tuple(inputs), device=device, reps=reps,
                                             warmup=3).median_ms
            record["compile_kernels"] = _kernels(lambda: compiled(*inputs), device)
            # the same layout copy as Inductor writes it (a tiled Triton kernel), against torch's copy above
            record["to_nhwc_compiled_ms"] = benchmark(torch.compile(_layout), lambda: (x,), device=device, reps=reps,
                                                      warmup=3).median_ms
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernelbench", type=Path, help="KernelBench's KernelBench/ folder (level1/, level2/, ...)")
    ap.add_argument("--level", default="2")
    ap.add_argument("--tasks", nargs="+", required=True, help="task numbers or file stems")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--whole", action="store_true", help="also time eager and torch.compile of the whole task")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--precision", choices=PRECISIONS, default="fp32",
                    help="the model and floating inputs cast, as bench --precision")
    args = ap.parse_args(argv)
    files = task_files(args.kernelbench / f"level{args.level}", args.tasks)
    doc = json.loads(args.out.read_text()) if args.out.exists() else {"environment": environment(args.device),
                                                                      "command": " ".join(sys.argv), "records": {}}
    for path in files:
        if path.stem in doc["records"]:
            continue
        t0 = time.time()
        try:
            record = probe_task(path, args.device, args.reps, args.whole, args.precision)
        except Exception as e:  # failures as data: the next task still runs
            record = {"status": f"error: {type(e).__name__}: {str(e)[:300]}"}
        doc["records"][path.stem] = record
        args.out.write_text(json.dumps(doc, indent=1))
        line = "  ".join(f"{k} {v['ms']:.3f}" for k, v in record.items() if isinstance(v, dict) and "ms" in v)
        print(f"{path.stem}: {record['status']}  {line}  ({time.time() - t0:.0f} s)", file=sys.stderr)
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
