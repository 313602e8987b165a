"""Where a builtin level3 candidate spends its time, beside eager, on one GPU.

For each task file: the builtin's draft (kernelbench rules by default) and the reference
are built as the executor builds them (same seed, eval mode, the task's inputs); then

- latency with CUDA events (median of --reps forwards after a warm-up), eager and ours;
- host time per forward (perf_counter around the call, no synchronisation inside), which
  exceeds the GPU time when the forward is launch-bound;
- torch.profiler over a few forwards: GPU time per forward, kernel launches per forward,
  the top kernels by GPU time, and the CUDA streams the work ran on;
- the first call's wall time (Triton compiles the candidate's kernels then);
- the error on fresh inputs once later calls replay the forward's launch plan, and how many did;
- with --compile, torch.compile of the reference timed the same way, in the same process;
- with --harness-timing, each latency again with the executor's own protocol
  (backends._timing.benchmark: fresh input clones, L2 flush and a GPU spin before each run),
  as `*_harness_ms`, to tell a protocol effect from a process or machine effect;
- with --burn N, N processes spinning on the CPU while the task is probed, to see how much a
  busy host (a bench's other jobs) slows a launch-bound forward.

One JSON record per task is appended to --out as it finishes (restartable: tasks already in
the file are skipped). Progress on stderr.

    python benchmarks/probes/level3_profile.py KB/level3/10_ResNet101.py ... --out prof.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import torch

from backends._task import import_file
from evokernel.builtin import Unsupported, analyze, default_config, generate


def _to(x, device):
    return x.to(device) if isinstance(x, torch.Tensor) else x


def _max_abs_err(got, want) -> float:
    """The largest absolute difference between two outputs (a tensor, or a tuple or list of them)."""
    pairs = zip(got if isinstance(got, (tuple, list)) else [got], want if isinstance(want, (tuple, list)) else [want])
    return max(float((a.float() - b.float()).abs().max()) for a, b in pairs)


def _latency(fn, reps: int) -> float:
    # Not backends._timing.benchmark: its GPU spin keeps the host's launch time out of the interval,
    # and the host's launch time is what this probe looks for.
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _host_ms(fn, reps: int) -> float:
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
        torch.cuda.synchronize()
    return statistics.median(times)


def _profile(fn, calls: int) -> dict:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    by_name: dict[str, float] = defaultdict(float)
    count = 0
    streams: set = set()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            by_name[event.name[:90]] += event.device_time_total if hasattr(event, "device_time_total") else event.cuda_time_total
            count += 1
    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if results is not None:  # the stream of every device activity (torch.profiler's own events lack it)
        for e in results.events():
            if e.device_type() == torch.autograd.DeviceType.CUDA:
                streams.add(int(e.device_resource_id()))
    total = sum(by_name.values())
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:12]
    return {"gpu_ms_per_call": total / calls / 1e3, "kernels_per_call": count / calls,
            "top": [(name, round(us / calls / 1e3, 4)) for name, us in top], "streams": sorted(map(str, streams))}


def _harness_ms(fn, reps: int, device: torch.device) -> float:
    from backends._timing import benchmark

    return benchmark(lambda: fn(), lambda: (), device=device, reps=reps, warmup=3).median_ms


def probe(task_file: Path, rules: str, reps: int, device: torch.device, cprofile: bool = False,
          compile_too: bool = False, harness_timing: bool = False) -> dict:
    record: dict = {"task": task_file.stem, "rules": rules}
    t0 = time.perf_counter()
    plan = analyze(str(task_file), rules)
    if isinstance(plan, Unsupported):
        record["unsupported"] = plan.reason
        return record
    source = generate(plan, default_config(plan))
    record.update(family=plan.family, stages=len(plan.stages), source_chars=len(source),
                  plan_s=round(time.perf_counter() - t0, 2))
    task = import_file(task_file, "task")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    cand = import_file(Path(f.name), "cand")
    init = task.get_init_inputs()
    torch.manual_seed(0)
    ref = task.Model(*init).to(device).eval()
    torch.manual_seed(0)
    new = cand.ModelNew(*init).to(device).eval()
    torch.manual_seed(1)
    inputs = [_to(x, device) for x in task.get_inputs()]
    with torch.no_grad():
        eager = lambda: ref(*inputs)  # noqa: E731
        ours = lambda: new(*inputs)  # noqa: E731
        t1 = time.perf_counter()
        out = ours()
        torch.cuda.synchronize()
        record["first_call_s"] = round(time.perf_counter() - t1, 2)
        expected = eager()
        record["max_abs_err"] = _max_abs_err(out, expected)
        for fn in (eager, ours, eager, ours):
            fn()
        torch.cuda.synchronize()
        record["eager_ms"] = _latency(eager, reps)
        record["ours_ms"] = _latency(ours, reps)
        record["eager_host_ms"] = _host_ms(eager, reps)
        record["ours_host_ms"] = _host_ms(ours, reps)
        if harness_timing:
            record["eager_harness_ms"] = _harness_ms(eager, reps, device)
            record["ours_harness_ms"] = _harness_ms(ours, reps, device)
        record["eager_profile"] = _profile(eager, 3)
        record["ours_profile"] = _profile(ours, 3)
        # by now later calls replay the forward's launch plan (evokernel/builtin/_launch_plan.py):
        # checked against eager on inputs it has not seen
        torch.manual_seed(2)
        fresh = [_to(x, device) for x in task.get_inputs()]
        record["max_abs_err_fresh_inputs"] = _max_abs_err(new(*fresh), ref(*fresh))
        plans = getattr(new, "_evokernel_launch_plans", None)
        if plans is not None:
            record["plan_replays"] = plans.replays
            record["plan_not_made"] = sorted({str(why) for why in plans.why.values()})
        if cprofile:
            record["ours_host_functions"] = _host_functions(ours, 10)
        if compile_too:
            compiled_ref = torch.compile(ref)
            t2 = time.perf_counter()
            compiled = lambda: compiled_ref(*inputs)  # noqa: E731
            compiled()
            torch.cuda.synchronize()
            record["compile_first_call_s"] = round(time.perf_counter() - t2, 2)
            for _ in range(3):
                compiled()
            record["compile_ms"] = _latency(compiled, reps)
            record["compile_host_ms"] = _host_ms(compiled, reps)
            if harness_timing:
                record["compile_harness_ms"] = _harness_ms(compiled, reps, device)
            record["compile_profile"] = _profile(compiled, 3)
    return record


def _host_functions(fn, calls: int) -> list:
    """The host functions a forward spends its time in (cProfile, own time), per call."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    torch.cuda.synchronize()
    stats = pstats.Stats(prof).stats
    rows = [(f"{Path(file).name}:{line}:{name}", ncalls / calls, tottime / calls * 1e3, cumtime / calls * 1e3)
            for (file, line, name), (_, ncalls, tottime, cumtime, _) in stats.items()]
    return [(where, round(n, 1), round(own, 4), round(cum, 4)) for where, n, own, cum in
            sorted(rows, key=lambda r: -r[2])[:30]]


def launch_overhead(reps: int = 2000) -> dict:
    """Host microseconds of one Triton launch by its JIT entry, with few and with many arguments,
    and of torch.empty: what a stage of a generated forward pays before its kernel runs."""
    import triton
    import triton.language as tl

    @triton.jit
    def few(x, y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)

    @triton.jit
    def many(x, a, b, c, d, y, n, s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15, s16,
             s17, s18, s19, BLOCK: tl.constexpr, K0: tl.constexpr, K1: tl.constexpr, K2: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)

    x = torch.randn(4096, device="cuda")
    y = torch.empty_like(x)
    vecs = [torch.randn(64, device="cuda") for _ in range(4)]
    out = {}

    def timed(label, call):
        for _ in range(20):
            call()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            call()
        out[label] = round((time.perf_counter() - t0) / reps * 1e6, 2)
        torch.cuda.synchronize()

    timed("triton_4_args_us", lambda: few[(4,)](x, y, 4096, BLOCK=1024))
    strides = list(range(1, 21))
    timed("triton_31_args_us", lambda: many[(4,)](x, *vecs, y, 4096, *strides, BLOCK=1024, K0=3, K1=2, K2=1))
    timed("torch_empty_us", lambda: torch.empty((10, 32, 112, 112), device="cuda"))
    timed("torch_relu_us", lambda: torch.relu(x))
    v = torch.randn(32, device="cuda")
    timed("view_us", lambda: v.view(-1, 1, 1))
    timed("expand_stride_us", lambda: v.view(-1, 1, 1).expand(10, 32, 112, 112).stride())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*", type=Path)
    ap.add_argument("--rules", default="kernelbench")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cprofile", action="store_true", help="also the host functions a forward spends its time in")
    ap.add_argument("--compile", action="store_true", help="also torch.compile of the reference, timed the same way")
    ap.add_argument("--harness-timing", action="store_true",
                    help="also each latency with the executor's protocol (flush, spin, clones)")
    ap.add_argument("--burn", type=int, default=0, metavar="N", help="N CPU-spinning processes while probing")
    ap.add_argument("--launch-overhead", action="store_true", help="first, a record of Triton's and torch's launch costs")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("level3_profile: no GPU here; this probe times CUDA kernels", file=sys.stderr)
        return 2
    done = set()
    if args.out.exists():
        done = {json.loads(line)["task"] for line in args.out.read_text().splitlines() if line.strip()}
    device = torch.device("cuda")
    if args.launch_overhead and "launch-overhead" not in done:
        with args.out.open("a") as f:
            f.write(json.dumps({"task": "launch-overhead", **launch_overhead()}) + "\n")
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burn)]
    try:
        _probe_all(args, done, device)
    finally:
        for b in burners:
            b.kill()
    return 0


def _probe_all(args, done: set, device: torch.device) -> None:
    for task_file in args.tasks:
        if task_file.stem in done:
            continue
        print(f"level3_profile: {task_file.stem} ...", file=sys.stderr, flush=True)
        try:
            record = probe(task_file, args.rules, args.reps, device, args.cprofile, args.compile, args.harness_timing)
            record["burn"] = args.burn
        except Exception as exc:  # a probe: one task's failure is recorded, the rest still run
            record = {"task": task_file.stem, "error": f"{type(exc).__name__}: {str(exc)[:400]}"}
        with args.out.open("a") as f:
            f.write(json.dumps(record) + "\n")
        short = {k: record.get(k) for k in ("stages", "first_call_s", "eager_ms", "ours_ms", "eager_host_ms",
                                            "ours_host_ms", "compile_ms", "eager_harness_ms", "ours_harness_ms",
                                            "compile_harness_ms", "max_abs_err", "max_abs_err_fresh_inputs", "plan_replays",
                                            "plan_not_made", "error", "unsupported")}
        print(f"level3_profile: {task_file.stem} {short}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
