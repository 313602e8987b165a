"""Probe: how far from a float64 run the reference and kernels of each precision land, to set the
accuracy oracle's rule (backends/_compare.py: LESS_ACCURATE, AS_ACCURATE, SLACK).

For representative ops and shapes (matmuls on KernelBench's `torch.rand` and on normal inputs,
cancelling row sums, a GEMM followed by a cancelling sum, softmax, layer norm, a convolution, GELU)
it runs the reference in the task's fp32 on DEVICE and in float64, and computes the same output
the ways a kernel might: accumulated exactly (float64, rounded once), reordered in fp32 (tiles, split
K, lanes, a sequential scan, an algebraic rewrite, a one-pass variance), TF32-rounded operands,
fp16 and bf16 arithmetic and an fp16 accumulator. Each variant is judged by the executor's own
`compare` (tolerance 1e-4) with and without the float64 output (and each element's conditioning, both
from the executor's `Oracle`), and its RMS error against the float64 output is recorded beside the
reference's, relative to the output's RMS.

    python benchmarks/probes/accuracy_oracle.py [--device cpu|cuda] --out FILE.json
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
from typing import Callable

import torch

from backends._compare import (AS_ACCURATE, COND_SLACK, CONDITIONING_DRAWS, FEW_FLOOR_ROUNDOFF, FLOOR_ROUNDOFF,
                               LESS_ACCURATE, OUTLIER_RMS, ROOM_OF_VALUE, ROOM_OF_VALUE_RTOLS, SLACK,
                               TRUSTED_REFERENCE_ERROR, compare)
from backends._oracle import Oracle

Fn = Callable[..., torch.Tensor]


def tf32(t: torch.Tensor) -> torch.Tensor:
    """Round fp32 to TF32 (10 mantissa bits, to nearest even), as the tensor cores read it."""
    bits = t.contiguous().view(torch.int32)
    bits = (bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF
    return bits.view(torch.float32)


def low(dtype: torch.dtype, fn: Fn) -> Fn:
    """`fn` with its floating inputs cast to `dtype` and the output cast back to fp32."""
    return lambda *xs: fn(*(x.to(dtype) for x in xs)).float()


def exact(fn: Fn) -> Fn:
    """`fn` computed in float64 and rounded once to fp32: a kernel that accumulates exactly."""
    return lambda *xs: fn(*(x.double() for x in xs)).float()


def tiled_matmul(a: torch.Tensor, b: torch.Tensor, bk: int = 32) -> torch.Tensor:
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    for k in range(0, a.shape[1], bk):
        acc += a[:, k:k + bk] @ b[k:k + bk]
    return acc


def split_k(a: torch.Tensor, b: torch.Tensor, parts: int = 4) -> torch.Tensor:
    return sum(pa @ pb for pa, pb in zip(a.chunk(parts, 1), b.chunk(parts, 0)))


def lane_sum(x: torch.Tensor, lanes: int = 1024, acc_dtype: torch.dtype | None = None) -> torch.Tensor:
    """Row sums the way a one-block-per-row kernel makes them: `lanes` accumulators walk the row, then a tree."""
    acc = torch.zeros(x.shape[0], lanes, dtype=acc_dtype or x.dtype, device=x.device)
    for k in range(0, x.shape[1], lanes):
        acc += x[:, k:k + lanes].to(acc.dtype)
    return acc.sum(1).to(x.dtype)


def scan_sum(x: torch.Tensor) -> torch.Tensor:
    """Row sums accumulated one element at a time in fp32 (torch's CPU cumsum would accumulate in float64)."""
    acc = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
    for k in range(x.shape[1]):
        acc += x[:, k]
    return acc


def cancelling_rows(rows: int, cols: int, dev: torch.device) -> list[torch.Tensor]:
    """Terms of size ~100 whose row sums are ~1: each row's last term cancels the rest (in float64)."""
    x = torch.randn(rows, cols, device=dev, dtype=torch.float64) * 100
    x[:, -1] = -x[:, :-1].sum(1) + torch.randn(rows, device=dev, dtype=torch.float64)
    return [x.float()]


def split_tf32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """3xTF32: operands split into TF32 high and low parts, three tensor-core products (the builtin's fp32 GEMM)."""
    ah, bh = tf32(a), tf32(b)
    al, bl = tf32(a - ah), tf32(b - bh)
    return ah @ bl + al @ bh + ah @ bh


def layer_norm(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, x.shape[-1:])


def one_pass_layer_norm(x: torch.Tensor) -> torch.Tensor:
    """Honest but less stable: variance as E[x^2] - E[x]^2 in fp32."""
    mean = x.mean(-1, keepdim=True)
    var = (x * x).mean(-1, keepdim=True) - mean * mean
    return (x - mean) / torch.sqrt(var + 1e-5)


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)


def softmax_lanes(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x - x.max(-1, keepdim=True).values)
    return e / lane_sum(e, 256)[:, None]


def gemm_div_sum(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """KernelBench level2 14's shape of computation: (x @ W.T / 2).sum(1) * 1.5, a cancelling sum."""
    return (x @ w.t() / 2).sum(1, keepdim=True) * 1.5


def gemm_div_sum_rewritten(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The fused kernel's algebra: sum W's rows first, then one matrix-vector product."""
    return (x @ w.sum(0)[:, None]) * 0.75


def conv(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.conv2d(x, w, padding=1)


def conv_im2col(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    n, c, h, wd = x.shape
    cols = torch.nn.functional.unfold(x, 3, padding=1)  # (n, c*9, h*w)
    out = tiled_matmul(w.reshape(w.shape[0], -1), cols.transpose(0, 1).reshape(c * 9, -1), 16)
    return out.reshape(w.shape[0], n, h, wd).transpose(0, 1)


def mse(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.mse_loss(a, b)


def mse_lanes(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """One output from many: squared differences summed by 1024 lanes, then a tree, then divided."""
    d = (a - b).reshape(1, -1)
    return lane_sum(d * d, 1024)[0] / d.numel()


def gelu(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x)


def gelu_erfc(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * torch.erfc(-x * 0.7071067811865476)


def _tf32_inputs(fn: Fn) -> Fn:
    return lambda *xs: fn(*(tf32(x) for x in xs))


def cases(dev: torch.device) -> dict[str, tuple[Fn, Callable[[], list[torch.Tensor]], dict[str, Fn]]]:
    """name -> (reference op, input draw, {variant: kernel})."""
    def draw(*shapes, kind="randn", scale=1.0):
        return lambda: [getattr(torch, kind)(*s, device=dev) * scale for s in shapes]

    mm = lambda a, b: a @ b  # noqa: E731
    matmul_variants = {"tiled fp32 (BK=32)": tiled_matmul, "split-K fp32 (4 parts)": split_k,
                       "3xTF32 operands": split_tf32, "TF32 operands": _tf32_inputs(mm), "fp16 operands": low(torch.float16, mm),
                       "bf16 operands": low(torch.bfloat16, mm)}
    sum_variants = {"lanes fp32 (1024)": lane_sum, "sequential fp32": scan_sum,
                    "fp16 accumulator": lambda x: lane_sum(x, 1024, torch.float16),
                    "fp16 compute": low(torch.float16, lambda x: x.sum(1))}
    return {
        "matmul rand 128x64x128": (mm, draw((128, 64), (64, 128), kind="rand"), matmul_variants),
        "matmul rand 128x4096x128": (mm, draw((128, 4096), (4096, 128), kind="rand"), matmul_variants),
        "matmul rand 64x32768x64": (mm, draw((64, 32768), (32768, 64), kind="rand"), matmul_variants),
        "matmul randn 128x1024x128": (mm, draw((128, 1024), (1024, 128)), matmul_variants),
        "row sum randn 256x16384 (zero-mean)": (lambda x: x.sum(1), draw((256, 16384)), sum_variants),
        "row sum 512x8192, terms ~100, sums ~1 (cancelling)": (lambda x: x.sum(1), lambda: cancelling_rows(512, 8192, dev),
                                                               sum_variants),
        "gemm/2 sum *1.5 rand x randn W 256x1024x8192": (gemm_div_sum, lambda: [torch.rand(256, 1024, device=dev),
                                                                                 torch.randn(8192, 1024, device=dev) * 0.03],
                                                         {"W rows summed first fp32": gemm_div_sum_rewritten,
                                                          "TF32 operands": _tf32_inputs(gemm_div_sum),
                                                          "fp16 operands": low(torch.float16, gemm_div_sum)}),
        "softmax randn 256x4096": (softmax, draw((256, 4096)), {"lanes fp32 sum": softmax_lanes,
                                                                 "fp16 compute": low(torch.float16, softmax),
                                                                 "bf16 compute": low(torch.bfloat16, softmax)}),
        "layer norm randn 256x1024": (layer_norm, draw((256, 1024)), {"one-pass variance fp32": one_pass_layer_norm,
                                                                      "fp16 compute": low(torch.float16, layer_norm)}),
        "layer norm randn+3 256x1024": (layer_norm, lambda: [torch.randn(256, 1024, device=dev) + 3],
                                        {"one-pass variance fp32": one_pass_layer_norm,
                                         "fp16 compute": low(torch.float16, layer_norm)}),
        "conv2d 3x3 randn 8x32x32x32 -> 64": (conv, draw((8, 32, 32, 32), (64, 32, 3, 3)),
                                              {"im2col tiled fp32": conv_im2col, "TF32 operands": _tf32_inputs(conv),
                                               "fp16 compute": low(torch.float16, conv)}),
        "mse loss rand 128x4096 (one output)": (mse, draw((128, 4096), (128, 4096), kind="rand"),
                                                {"lanes fp32 (1024)": mse_lanes, "fp16 compute": low(torch.float16, mse)}),
        "mean randn 1x65536 (one output, cancelling)": (lambda x: x.mean(), draw((1, 65536)),
                                                        {"lanes fp32 (1024)": lambda x: lane_sum(x, 1024)[0] / x.numel(),
                                                         "fp16 compute": low(torch.float16, lambda x: x.mean())}),
        "gelu randn 1M": (gelu, draw((1 << 20,)), {"erfc form fp32": gelu_erfc, "fp16 compute": low(torch.float16, gelu),
                                                   "bf16 compute": low(torch.bfloat16, gelu)}),
    }


class _AsModule(torch.nn.Module):
    """A case's function as the module the executor's oracle widens and perturbs."""

    def __init__(self, fn: Fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(*xs)


def judge(ref: torch.Tensor, out: torch.Tensor, x64: torch.Tensor, conditioning: Callable | None = None) -> dict:
    plain = compare(ref, out)
    oracle = compare(ref, out, exact=x64, conditioning=conditioning)
    return {"error": oracle.candidate_error, "tolerance_only": plain.ok, "with_oracle": oracle.ok,
            "by_accuracy": oracle.by_accuracy, "elements_past_tolerance": _past(ref, out)}


def _past(ref: torch.Tensor, out: torch.Tensor) -> int:
    return int((~((out.double() - ref.double()).abs() <= 1e-4 + 1e-4 * ref.double().abs())).sum())


SEEDS = 8


def _measure(fn: Fn, draw: Callable[[], list[torch.Tensor]], variants: dict[str, Fn], seed: int) -> dict:
    torch.manual_seed(seed)
    inputs = draw()
    with torch.no_grad():
        ref = fn(*inputs)
        # the executor's own oracle: the float64 run, and each element's conditioning when a verdict needs it
        oracle = Oracle(_AsModule(fn), ref.device)
        x64 = oracle.exact(inputs, ref)
        conditioning = oracle.conditioning(inputs, ref, x64)
        row = {"reference": compare(ref, ref, exact=x64).reference_error, "variants": {}}
        for vname, vfn in {"fp64 accumulation": exact(fn), **variants}.items():
            v = judge(ref, vfn(*inputs), x64, conditioning)
            v["times_reference"] = v["error"] / row["reference"] if row["reference"] else float("inf")
            row["variants"][vname] = v
    return row


def _worst(runs: list[dict]) -> dict:
    """Over seeds: the largest error and ratio, and a verdict that held on every seed or not."""
    return {"error": max(r["error"] for r in runs), "times_reference": max(r["times_reference"] for r in runs),
            "tolerance_only": all(r["tolerance_only"] for r in runs), "with_oracle": all(r["with_oracle"] for r in runs),
            "with_oracle_seeds_passed": sum(r["with_oracle"] for r in runs), "by_accuracy": any(r["by_accuracy"] for r in runs),
            "elements_past_tolerance": max(r["elements_past_tolerance"] for r in runs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    dev = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's default: the fp32 matmul reference is IEEE
    results: dict = {"environment": {
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"CPU ({platform.processor() or platform.machine()})",
        "torch": torch.__version__, "python": platform.python_version(),
        "command": "python benchmarks/probes/accuracy_oracle.py " + " ".join(sys.argv[1:]),
        "rule": {"LESS_ACCURATE": LESS_ACCURATE, "AS_ACCURATE": AS_ACCURATE, "SLACK": SLACK,
                 "COND_SLACK": COND_SLACK, "CONDITIONING_DRAWS": CONDITIONING_DRAWS, "ROOM_OF_VALUE": ROOM_OF_VALUE,
                 "ROOM_OF_VALUE_RTOLS": ROOM_OF_VALUE_RTOLS,
                 "FLOOR_ROUNDOFF": FLOOR_ROUNDOFF, "FEW_FLOOR_ROUNDOFF": FEW_FLOOR_ROUNDOFF, "OUTLIER_RMS": OUTLIER_RMS,
                 "TRUSTED_REFERENCE_ERROR": TRUSTED_REFERENCE_ERROR},
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "errors": "RMS of (output - float64 output) over RMS of the float64 output"}}
    for name, (fn, draw, variants) in cases(dev).items():
        # One-output cases are one sample of each error: several seeds show their spread.
        seeds = range(SEEDS) if "one output" in name else range(1)
        rows = [_measure(fn, draw, variants, seed) for seed in seeds]
        row = rows[0] if len(rows) == 1 else {"seeds": len(rows), "reference": [r["reference"] for r in rows],
                                               "variants": {v: _worst([r["variants"][v] for r in rows]) for v in rows[0]["variants"]}}
        results[name] = row
        print(name, f"reference {row['reference']}", file=sys.stderr)
        for vname, v in row["variants"].items():
            print(f"    {vname:28s} {v['error']:.3g} ({v['times_reference']:.2f}x)  tolerance {v['tolerance_only']!s:5} "
                  f"oracle {v['with_oracle']!s:5} past {v['elements_past_tolerance']}", file=sys.stderr)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
