"""Scale benchmark: fill a bank with realistic items, time inserts and retrieval.

The items imitate what a long run writes: traces holding 2-4 KB of Triton,
CUDA or Ascend C source, experiences, best practices and API notes, spread
over many tasks, backends and operator categories. Retrieval is timed
end to end through `MemoryStore.retrieve` (recall, selection and fetching the
chosen rows), interleaved with `record_step` so the values are live.
"""

from __future__ import annotations

import datetime
import os
import platform
import random
import sqlite3
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ._store import MemoryStore
from ._types import MemoryConfig, MemoryStoreError

Progress = Callable[[str, int, int], None]

_OPS = {
    "elementwise": ["Add", "Mul", "Sub", "Div", "Clamp", "Abs", "Sqrt", "Exp", "Log", "Where"],
    "activation": ["ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "LeakyReLU", "HardSwish", "Softplus", "ELU", "Mish"],
    "reduction": ["Sum", "Mean", "Max", "Min", "ArgMax", "ArgMin", "Prod", "CumSum", "Norm", "LogSumExp"],
    "normalization": ["Softmax", "LogSoftmax", "LayerNorm", "RMSNorm", "BatchNorm", "GroupNorm", "InstanceNorm", "L2Norm"],
    "matmul": ["Matmul", "BatchedMatmul", "GEMV", "MatmulBias", "MatmulTransposed", "LinearGELU", "SquareMatmul"],
    "convolution": ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose2d", "DepthwiseConv2d", "PointwiseConv"],
    "pooling": ["MaxPool1d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool", "MaxPool3d"],
    "loss": ["CrossEntropy", "MSELoss", "HingeLoss", "KLDiv", "HuberLoss", "CosineSimilarityLoss"],
    "attention": ["ScaledDotProductAttention", "FlashAttention", "CausalAttention", "RotaryEmbedding"],
    "fused": ["MatmulReLUAdd", "ConvBNReLU", "GEMMScaleSoftmax", "LayerNormGELU", "BiasDropoutAdd", "AddRMSNorm"],
}
_BACKENDS = (("triton", 0.45), ("cuda", 0.35), ("ascendc", 0.20))
_KINDS = (("trace", 0.60), ("experience", 0.30), ("best_practice", 0.05), ("api_note", 0.05))
_DTYPES = ("fp32", "fp16", "bf16")
_TECHNIQUES = (
    "vectorized loads", "tiling along rows", "shared memory staging", "warp shuffle reduction",
    "online softmax", "block size 1024", "double buffering", "autotuned num_warps", "persistent kernel",
    "operator fusion", "fused epilogue", "coalesced stores", "loop unrolling", "two pass reduction",
    "split k", "tensor cores", "swizzled grid", "unified buffer tiling", "queue depth two", "pipelined copy",
)
_VERDICTS = ("ok", "compiled", "compile_error", "runtime_error", "wrong_result", "timeout", "hack", "disallowed", "task_error")
_ERRORS = (
    "mismatch at index", "max abs diff", "undefined identifier", "illegal memory access",
    "unified buffer overflow", "DataCopy size not multiple of 32 bytes", "out of resources shared memory",
    "too many registers", "missing mask on load", "no such API",
)
_API = {
    "triton": ["tl.load", "tl.store", "tl.program_id", "tl.arange", "tl.dot", "tl.sum", "tl.max", "tl.exp", "tl.where", "tl.zeros"],
    "cuda": ["__shfl_down_sync", "__syncthreads", "atomicAdd", "cudaMemcpyAsync", "wmma::mma_sync", "__ldg", "blockIdx", "threadIdx"],
    "ascendc": ["DataCopy", "AllocTensor", "FreeTensor", "EnQue", "DeQue", "Add", "Mul", "Exp", "ReduceSum", "Duplicate", "GetBlockIdx"],
}

_TRITON = '''import torch
import triton
import triton.language as tl


@triton.jit
def {name}_kernel(x_ptr, y_ptr, out_ptr, n_rows, n_cols, stride_xm, stride_ym, stride_om,
                  BLOCK_SIZE: tl.constexpr, NUM_STAGES: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    x = tl.load(x_ptr + row * stride_xm + offsets, mask=mask, other={other})
    y = tl.load(y_ptr + row * stride_ym + offsets, mask=mask, other=0.0)
    acc = x.to(tl.float32) {op} y.to(tl.float32)
{body}
    tl.store(out_ptr + row * stride_om + offsets, acc, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        grid = (n_rows,)
        {name}_kernel[grid](x, y, out, n_rows, n_cols, x.stride(0), y.stride(0), out.stride(0),
                            BLOCK_SIZE={block}, NUM_STAGES={stages})
        return out
'''
_TRITON_LINE = "    acc = tl.where(mask, acc * {a} + {b}, acc)  # step {i}: {technique}\n"

_CUDA = '''#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void {name}_kernel(const float* __restrict__ x, const float* __restrict__ y,
                              float* __restrict__ out, int n_rows, int n_cols) {{
    int row = blockIdx.x;
    int tid = threadIdx.x;
    __shared__ float smem[{block}];
    float acc = {other};
    for (int col = tid; col < n_cols; col += blockDim.x) {{
        acc = acc {op} x[row * n_cols + col] * y[row * n_cols + col];
    }}
    smem[tid] = acc;
    __syncthreads();
{body}
    if (tid == 0) out[row] = smem[0];
}}

torch::Tensor {name}_forward(torch::Tensor x, torch::Tensor y) {{
    auto out = torch::empty({{x.size(0)}}, x.options());
    {name}_kernel<<<x.size(0), {block}>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                           out.data_ptr<float>(), x.size(0), x.size(1));
    return out;
}}
'''
_CUDA_LINE = "    if (tid < {a}) smem[tid] = smem[tid] {op} smem[tid + {a}];  // step {i}: {technique}\n    __syncthreads();\n"

_ASCENDC = '''#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t BUFFER_NUM = {stages};
constexpr int32_t TILE_LENGTH = {block};

class Kernel{name} {{
public:
    __aicore__ inline Kernel{name}() {{}}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t totalLength) {{
        blockLength = totalLength / GetBlockNum();
        xGm.SetGlobalBuffer((__gm__ float*)x + blockLength * GetBlockIdx(), blockLength);
        yGm.SetGlobalBuffer((__gm__ float*)y + blockLength * GetBlockIdx(), blockLength);
        zGm.SetGlobalBuffer((__gm__ float*)z + blockLength * GetBlockIdx(), blockLength);
        pipe.InitBuffer(inQueueX, BUFFER_NUM, TILE_LENGTH * sizeof(float));
        pipe.InitBuffer(outQueueZ, BUFFER_NUM, TILE_LENGTH * sizeof(float));
    }}
    __aicore__ inline void Process() {{
        for (int32_t i = 0; i < blockLength / TILE_LENGTH; i++) {{
            LocalTensor<float> xLocal = inQueueX.AllocTensor<float>();
            DataCopy(xLocal, xGm[i * TILE_LENGTH], TILE_LENGTH);
            inQueueX.EnQue(xLocal);
            xLocal = inQueueX.DeQue<float>();
            LocalTensor<float> zLocal = outQueueZ.AllocTensor<float>();
{body}
            outQueueZ.EnQue<float>(zLocal);
            inQueueX.FreeTensor(xLocal);
            zLocal = outQueueZ.DeQue<float>();
            DataCopy(zGm[i * TILE_LENGTH], zLocal, TILE_LENGTH);
            outQueueZ.FreeTensor(zLocal);
        }}
    }}
private:
    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQueueX;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQueueZ;
    GlobalTensor<float> xGm, yGm, zGm;
    uint32_t blockLength;
}};

extern "C" __global__ __aicore__ void {name}_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) {{
    Kernel{name} op;
    op.Init(x, y, z, n);
    op.Process();
}}
'''
_ASCENDC_LINE = "            Muls(zLocal, xLocal, (float){a}, TILE_LENGTH);  // step {i}: {technique}\n            Adds(zLocal, zLocal, (float){b}, TILE_LENGTH);\n"

_TEMPLATES = {"triton": (_TRITON, _TRITON_LINE), "cuda": (_CUDA, _CUDA_LINE), "ascendc": (_ASCENDC, _ASCENDC_LINE)}


def _weighted(rng: random.Random, table: tuple[tuple[str, float], ...]) -> str:
    x = rng.random()
    for value, weight in table:
        x -= weight
        if x < 0:
            return value
    return table[-1][0]


def _tasks(count: int, rng: random.Random) -> list[dict[str, str]]:
    ops = [(cat, op) for cat, names in _OPS.items() for op in names]
    tasks = []
    for i in range(count):
        category, op = ops[i % len(ops)]
        level = 1 + (i // len(ops)) % 3
        dtype = rng.choice(_DTYPES)
        shape = "x".join(str(rng.choice((128, 256, 512, 1024, 2048, 4096, 8192))) for _ in range(rng.choice((1, 2, 3))))
        tasks.append(
            {
                "task_key": f"L{level}/{i}_{op}",
                "op": op,
                "category": category,
                "description": f"{op} {category} {dtype} shape {shape} level {level}",
            }
        )
    return tasks


def _code(backend: str, name: str, rng: random.Random) -> str:
    template, line = _TEMPLATES[backend]
    # 2-4 KB per kernel: a fixed frame plus a variable number of body lines.
    target = rng.randint(2048, 4096)
    head = {"name": name, "block": rng.choice((128, 256, 512, 1024)), "stages": rng.choice((1, 2, 3, 4)),
            "other": rng.choice(("0.0", "-float('inf')", "1.0")), "op": rng.choice(("+", "*", "-"))}
    lines: list[str] = []
    size = len(template) + 200
    i = 0
    while size < target:
        text = line.format(a=rng.randint(1, 512), b=round(rng.random(), 4), i=i, op=head["op"], technique=rng.choice(_TECHNIQUES))
        lines.append(text)
        size += len(text)
        i += 1
    return template.format(body="".join(lines), **head)


def synthetic_items(count: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    """`count` plausible memory items over many tasks (about one per 200 items)."""
    tasks = _tasks(max(60, min(5000, count // 200)), rng)
    for _ in range(count):
        task = rng.choice(tasks)
        backend = _weighted(rng, _BACKENDS)
        kind = _weighted(rng, _KINDS)
        technique = ", ".join(rng.sample(_TECHNIQUES, 2))
        verdict = rng.choice(_VERDICTS)
        name = f"{task['op'].lower()}_{rng.randrange(1 << 16):04x}"
        item: dict[str, Any] = {
            "kind": kind, "task_key": task["task_key"], "backend": backend, "category": task["category"],
            "stage": rng.choice(("draft", "refine")),
        }
        if kind == "api_note":
            api = rng.choice(_API[backend])
            item.update(
                task_key=f"_api/{backend}", name=api,
                key_text=f"{api} {backend} API {task['category']} usage signature",
                content=f"{api}: signature, constraints and an example for {backend}.\n" + _code(backend, name, rng)[:1500],
            )
        elif kind == "experience":
            error = rng.choice(_ERRORS)
            item.update(
                key_text=f"{task['description']} {backend} experience {verdict} {technique}",
                content=f"Tried {technique} for {task['op']} on {backend}. Verifier: {verdict} ({error}). "
                "Why: " + rng.choice(_ERRORS) + ". Next time: " + rng.choice(_TECHNIQUES) + ".\n" + _code(backend, name, rng)[:1200],
                status=verdict, reward=1.0 if verdict in ("ok", "compiled") else -1.0,
                feedback={"verdict": verdict, "message": error},
            )
        else:
            feasible = verdict in ("ok", "compiled")
            item.update(
                key_text=f"{task['description']} {backend} {kind.replace('_', ' ')} {verdict} {technique}",
                content=_code(backend, name, rng),
                status=verdict,
                latency_ms=round(rng.lognormvariate(-1.5, 1.0), 4) if feasible else None,
                reward=1.0 if feasible else -1.0,
                feedback={"verdict": verdict, "compile_log": rng.choice(_ERRORS) if not feasible else ""},
            )
        yield item


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def environment() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gib = None
    try:
        mem_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    import numpy
    from importlib.metadata import version

    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "memory_gib": mem_gib,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "sqlite_utils": version("sqlite-utils"),
        "numpy": numpy.__version__,
    }


def run_bench(
    path: str | Path,
    *,
    items: int,
    queries: int = 500,
    warmup: int = 50,
    batch_size: int = 1000,
    seed: int = 0,
    config: MemoryConfig | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Fill a new bank at `path` with `items` items, then time retrieval.

    Refuses a path that already holds items: a benchmark must not pollute a
    real memory.
    """
    if items < 1 or queries < 1 or warmup < 0 or batch_size < 1:
        raise MemoryStoreError("items, queries and batch_size must be >= 1, warmup >= 0")
    rng = random.Random(seed)
    store = MemoryStore(path, config or MemoryConfig(seed=seed))
    try:
        if store.stats()["items"]:
            raise MemoryStoreError(f"{path} already holds items; the benchmark needs a new file")
        report = progress or (lambda phase, done, total: None)
        generated = synthetic_items(items, rng)
        insert_s = generate_s = 0.0
        done = 0
        while done < items:
            t0 = time.perf_counter()
            batch = [next(generated) for _ in range(min(batch_size, items - done))]
            t1 = time.perf_counter()
            store.add_items(batch)
            t2 = time.perf_counter()
            generate_s += t1 - t0
            insert_s += t2 - t1
            done += len(batch)
            report("insert", done, items)
        # Single-item inserts (one transaction each), as an agent makes them.
        single = [next(synthetic_items(1, rng)) for _ in range(200)]
        t0 = time.perf_counter()
        for fields in single:
            store.add_item(**fields)
        single_s = time.perf_counter() - t0

        tasks = _tasks(max(60, min(5000, items // 200)), random.Random(seed))
        run_id = store.start_run({"benchmark": "memory-scale", "items": items, "seed": seed})
        timings: list[float] = []
        cpu_timings: list[float] = []
        load_before = _loadavg()
        step_timings: list[float] = []
        pool_sizes: list[int] = []
        for i in range(warmup + queries):
            task = rng.choice(tasks)
            stage = rng.choice(("draft", "refine"))
            backends = rng.choice((["triton"], ["cuda"], ["ascendc"], ["ascendc", "triton"], None))
            kinds = rng.choice((None, None, ["trace", "experience"], ["best_practice"]))
            query = f"{task['description']} {' '.join(backends or [])} {rng.choice(_TECHNIQUES)}"
            c0, t0 = time.thread_time(), time.perf_counter()
            picks = store.retrieve(query, stage=stage, backends=backends, kinds=kinds, exclude_task_keys=[task["task_key"]], rng=rng)
            t1, c1 = time.perf_counter(), time.thread_time()
            store.record_step(
                run_id=run_id, task_key=task["task_key"], backend=(backends or ["triton"])[0], stage=stage,
                reward=rng.choice((1.0, -1.0)) if stage == "draft" else rng.uniform(-1.0, 1.0),
                context_item_ids=[p.item.id for p in picks],
            )
            t2 = time.perf_counter()
            if i >= warmup:
                timings.append((t1 - t0) * 1000.0)
                cpu_timings.append((c1 - c0) * 1000.0)
                step_timings.append((t2 - t1) * 1000.0)
                pool_sizes.append(len(picks))
            report("retrieve", i + 1, warmup + queries)
        store.finish_run(run_id)
        n = store.config.n
        return {
            "items": items,
            "insert_per_s": round(items / insert_s, 1),
            "insert_batch_size": batch_size,
            "insert_single_per_s": round(len(single) / single_s, 1),
            "generate_s": round(generate_s, 2),
            "retrieve_p50_ms": round(statistics.median(timings), 3),
            "retrieve_p99_ms": round(_percentile(timings, 0.99), 3),
            "retrieve_mean_ms": round(statistics.fmean(timings), 3),
            "retrieve_max_ms": round(max(timings), 3),
            # CPU time of the retrieving thread: what the wall numbers would be
            # on an idle machine (other processes share these cores).
            "retrieve_cpu_p50_ms": round(statistics.median(cpu_timings), 3),
            "retrieve_cpu_p99_ms": round(_percentile(cpu_timings, 0.99), 3),
            "load_average_1m": {"before_queries": load_before, "after_queries": _loadavg()},
            "retrieve_queries": queries,
            "retrieve_warmup": warmup,
            "retrieve_n": n,
            "retrieve_pool_k": store.config.pool_size(n, items),
            "retrieve_mean_returned": round(statistics.fmean(pool_sizes), 2),
            "record_step_p50_ms": round(statistics.median(step_timings), 3),
            "db_size_bytes": store.stats()["size_bytes"],
            "seed": seed,
            "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "environment": environment(),
        }
    finally:
        store.close()
