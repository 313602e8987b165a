"""Tiled (batched) matmul with the pointwise epilogue fused before the store,
after Triton's matmul tutorial: grouped tile order for L2 reuse, masked K tail,
fp32 accumulation (IEEE products for fp32 operands, as cuBLAS computes them
unless torch's TF32 switch for matmuls is on).

Split-K (``config.split_k`` > 1, for long K and few output tiles): each program
reduces one slice of K into an fp32 partial, and a second kernel sums the
partials and applies the epilogue.

3xTF32 (``config.precision``): the operands are split into TF32 high and low
parts, in a pass before the GEMM where each operand element feeds many
products, or in registers as each K step's tiles are loaded where K is long
beside M and N (``_config.SPLIT_IN_REGISTERS_K``) or M or N is at most one tile
(``_config.SPLIT_IN_REGISTERS_SIDE``): on the H200 a 256 x 524288
x 256 product spent 0.84 ms in the split pass alone, against cuBLAS's 1.36 ms
for the whole product (benchmarks/results/matmul-3xtf32-accumulation-h200.json).
"""

from __future__ import annotations

import json

from ._config import SPLIT_IN_REGISTERS_K, SPLIT_IN_REGISTERS_SIDE, Config
from ._emit import TF32_ROUND, Emitter, StageCode, load_other, out_dtype_expr, scalar_sources, wrap_params
from ._gen_elementwise import SPAN_HELPER
from ._ir import Node, Plan

__all__ = ["generate_matmul", "EpilogueEmitter"]


class EpilogueEmitter(Emitter):
    """Pointwise ops on an accumulator tile [BLOCK_M, BLOCK_N]; operands are read at
    the tile's output positions through (b, m, n) strides; ``lin`` is the tile's
    linear index into the output (for index-dependent ops such as triu)."""

    def __init__(self, plan: Plan, anchor_id: int, lin: str = "lin"):
        super().__init__(plan)
        self.anchor_id = anchor_id
        self.used: list[str] = []
        self.iotas: list[Node] = []
        self.lin = lin

    def load_leaf(self, name: str, ctx: str) -> str:
        self.used.append(name)
        var = f"l_{name}"
        self.emit(f"{var} = tl.load({name}_ptr + pid_b * stride_{name}_b + offs_m[:, None] * stride_{name}_m "
                  f"+ offs_n[None, :] * stride_{name}_n, mask=mask, other={load_other(self.plan, name)})"
                  ".to(tl.float32)")
        return var

    def compute(self, node: Node, ctx: str) -> str:
        if node.id == self.anchor_id:
            return "acc"
        if node.op == "iota":
            self.iotas.append(node)
            var = f"v{node.id}"
            self.emit(f"{var} = (({self.lin} // iota{node.id}_div) % iota{node.id}_mod).to(tl.float32)")
            return var
        return super().compute(node, ctx)


# The main kernel's (BLOCK_M, BLOCK_N, num_warps, num_stages) Triton's autotuner times per shape after
# the configuration's own (BLOCK_K and the split-K slices stay the configuration's): KernelBench's
# 32768 x 32 x 32768 product spent 2.8 ms on 128 x 128 tiles, three times its output's write.
MAIN_TILES = ((128, 128, 8, 3), (128, 64, 4, 4), (64, 128, 4, 4), (64, 64, 4, 3))
# fp16/bf16 operands: half the shared memory a stage, so Hopper's wider warp-group tiles (Triton's
# own tutorial's 128 x 256 with 8 warps) fit with their pipeline stages
HALF_TILES = ((128, 256, 8, 3), (256, 128, 8, 3), *MAIN_TILES)

TILES_HELPER = '''def _gemm_tiles(configs, named_args, **kwargs):
    """The main kernel's tiles the autotuner times: the configuration's own alone on the CPU (Triton's
    interpreter), else each with its pipeline stages trimmed to the GPU's shared memory (a
    convolution's: those no wider than twice its group's output channels, and the configuration's)."""
    device = next((v.device for v in named_args.values() if getattr(v, "is_cuda", False)), None)
    if device is None:
        return configs[:1]
    room = getattr(torch.cuda.get_device_properties(device), "shared_memory_per_block_optin", 101376)
    parts = 2 if "TERMS" in kwargs or kwargs.get("SPLIT3") else 1  # 3xTF32: high and low parts
    # a stage holds a tile of each operand, at the operands' width (the first tensor argument's)
    width = next((v.element_size() for v in named_args.values() if hasattr(v, "element_size")), 4)
    if "COUT_G" in named_args:
        configs = [c for k, c in enumerate(configs) if k == 0 or c.kwargs["BLOCK_N"] < 2 * max(16, named_args["COUT_G"])]
    out = []
    for c in configs:
        stage = (c.kwargs["BLOCK_M"] + c.kwargs["BLOCK_N"]) * kwargs["BLOCK_K"] * width * parts
        out.append(triton.Config(c.kwargs, num_warps=c.num_warps,
                                 num_stages=max(1, min(c.num_stages, (room - 4096) // stage))))
    return out
'''


def autotune_lines(config: Config, tiles=MAIN_TILES, key=("M", "N", "k_tiles")) -> list[str]:
    """A GEMM kernel's autotune decorator: the configuration's (BLOCK_M, BLOCK_N, num_warps,
    num_stages) first, then ``tiles``; ``key``, the arguments a choice is remembered by."""
    tiles = [(config.block_m, config.block_n, config.num_warps, config.num_stages), *tiles]
    group = f', "GROUP_M": {config.group_m}' if config.family == "matmul" else ""
    listed = ", ".join(f'triton.Config({{"BLOCK_M": {bm}, "BLOCK_N": {bn}{group}}}, '
                       f'num_warps={w}, num_stages={st})' for bm, bn, w, st in dict.fromkeys(tiles))
    return ["@triton.autotune(",
            f"    configs=[{listed}],",
            f"    key={json.dumps(list(key))},",
            '    prune_configs_by={"early_config_prune": lambda configs, named_args, **kwargs: '
            '_gemm_tiles(configs, named_args, **kwargs)},',
            ")"]


_TILE = """\
    pid = tl.program_id(0)
    pid_b = tl.program_id(1)
    pid_k = tl.program_id(2)
    if IDX64:
        pid_b = pid_b.to(tl.int64)
    # grouped ordering: GROUP_M row-tiles share their B columns in L2
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if IDX64:
        offs_m = offs_m.to(tl.int64)
        offs_n = offs_n.to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
"""

_LOOP_IEEE = """\
    # this program's slice of K, in BLOCK_K steps
    k_lo = pid_k * k_tiles
    k_hi = tl.minimum(k_lo + k_tiles, tl.cdiv(K, BLOCK_K))
    lhs_ptrs = lhs_ptr + pid_b * stride_lhs_b + offs_m[:, None] * stride_lhs_m + (k_lo * BLOCK_K + offs_k[None, :]) * stride_lhs_k
    rhs_ptrs = rhs_ptr + pid_b * stride_rhs_b + (k_lo * BLOCK_K + offs_k[:, None]) * stride_rhs_k + offs_n[None, :] * stride_rhs_n
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_lo, k_hi):
        k_mask = offs_k < K - k * BLOCK_K
        lhs_tile = tl.load(lhs_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
        rhs_tile = tl.load(rhs_ptrs, mask=k_mask[:, None] & (offs_n[None, :] < N), other=0.0)
        if SPLIT3:
            # 3xTF32 with the split in registers (the parts _tf32_split makes), a fresh product a K step
            acc += _dot_3xtf32(lhs_tile, rhs_tile)
        elif FP32_DOT:
            acc += tl.dot(lhs_tile, rhs_tile, input_precision=PRECISION)
        else:
            acc += tl.dot(lhs_tile, rhs_tile)
        lhs_ptrs += BLOCK_K * stride_lhs_k
        rhs_ptrs += BLOCK_K * stride_rhs_k
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
"""

_LOOP_TF32X3 = """\
    # the operands were split before the GEMM into TF32 high and low parts (_tf32_split), K-contiguous
    # and zero-padded to Kp, a multiple of BLOCK_K: no masks in the loop; rows past M or N re-read a
    # valid row, and their results are masked at the store
    rows_a = offs_m % M
    cols_b = offs_n % N
    k_lo = pid_k * k_tiles
    k_hi = tl.minimum(k_lo + k_tiles, Kp // BLOCK_K)
    a_off = pid_b * stride_split_a + rows_a[:, None] * Kp + (k_lo * BLOCK_K + offs_k[None, :])
    b_off = pid_b * stride_split_b + cols_b[:, None] * Kp + (k_lo * BLOCK_K + offs_k[None, :])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_lo, k_hi):
        a_hi = tl.load(a_hi_ptr + a_off)
        b_hi = tl.load(b_hi_ptr + b_off)
        if TERMS == 3:
            # hi*hi + hi*lo + lo*hi: fp32 products to within the dropped lo*lo term, on the tensor cores
            a_lo = tl.load(a_lo_ptr + a_off)
            b_lo = tl.load(b_lo_ptr + b_off)
            part = tl.dot(a_lo, tl.trans(b_hi), input_precision="tf32")
            part = tl.dot(a_hi, tl.trans(b_lo), part, input_precision="tf32")
            part = tl.dot(a_hi, tl.trans(b_hi), part, input_precision="tf32")
            # a fresh accumulator per K step, added in IEEE fp32: the tensor cores truncate as they
            # accumulate, and accumulating all of K on them gave 10x cuBLAS's error on the H200
            acc += part
        else:  # torch's TF32 switch is on: the reference's products are TF32 too
            acc += tl.dot(a_hi, tl.trans(b_hi), input_precision="tf32")
        a_off += BLOCK_K
        b_off += BLOCK_K
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
"""

_SPLIT_SUM = """\
    pid = tl.program_id(0)
    pid_b = tl.program_id(1)
    if IDX64:
        pid_b = pid_b.to(tl.int64)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if IDX64:
        offs_m = offs_m.to(tl.int64)
        offs_n = offs_n.to(tl.int64)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    part_ptrs = part_ptr + pid_b * M * N + offs_m[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for s in range(0, n_split):
        acc += tl.load(part_ptrs + s * split_stride, mask=mask, other=0.0)
"""


def _epilogue(plan: Plan, anchor_id: int):
    em = EpilogueEmitter(plan, anchor_id)
    result = em.value(plan.output)
    return em, result, list(dict.fromkeys(em.used)), list(dict.fromkeys(em.iotas))


def _store(result: str) -> str:
    return (f"    tl.store(out_ptr + pid_b * stride_out_b + offs_m[:, None] * stride_out_m "
            f"+ offs_n[None, :] * stride_out_n, {result}.to(out_ptr.dtype.element_ty), mask=mask)")


# One pass over an operand (batch, R, K) of any strides into contiguous rows padded with zeros to Cp
# columns: as it is (half-precision operands, HALF_PAD_HELPER), or split into TF32 parts (3xTF32)
K_PADDED_KERNEL = '''@triton.jit
def _k_padded_kernel(x_ptr, hi_ptr, lo_ptr, R, C, Cp, stride_x_b, stride_x_r, stride_x_c,
                     SPLIT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid_b = tl.program_id(2).to(tl.int64)
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    r64 = r.to(tl.int64)
    # 64-bit offsets throughout: a transposed operand's column stride is its row count
    x = tl.load(x_ptr + pid_b * stride_x_b + r64[:, None] * stride_x_r + c[None, :].to(tl.int64) * stride_x_c,
                mask=(r[:, None] < R) & (c[None, :] < C), other=0.0)
    out = (pid_b * R + r64[:, None]) * Cp + c[None, :]
    keep = (r[:, None] < R) & (c[None, :] < Cp)
    if SPLIT:
        x = x.to(tl.float32)
        hi = _to_tf32(x)
        rest = x - hi
        # an infinite x leaves inf - inf: its low part is 0, so its products stay infinite
        lo = _to_tf32(tl.where(rest == rest, rest, 0.0))
        tl.store(hi_ptr + out, hi, mask=keep)
        tl.store(lo_ptr + out, lo, mask=keep)
    else:
        tl.store(hi_ptr + out, x, mask=keep)
'''

TF32_SPLIT_HELPER = '''def _tf32_split(x, kp):
    """x (batch, R, K), any strides: its TF32 rounding and the TF32 rounding of the rest, as
    contiguous fp32 (batch, R, kp) tensors, zero past K (hi + lo is x to 22 of its 24 bits)."""
    batch, r, k = x.shape
    hi = torch.empty((batch, r, kp), dtype=torch.float32, device=x.device)
    lo = torch.empty_like(hi)
    if hi.numel():
        _k_padded_kernel[(triton.cdiv(r, 64), triton.cdiv(kp, 64), batch)](
            x, hi, lo, r, k, kp, *x.stride(), SPLIT=True, BLOCK_R=64, BLOCK_C=64, num_warps=4)
    return hi, lo


def _split_stages(stages, block_m, block_n, block_k, device):
    """Pipeline stages that fit the GPU's shared memory: each holds four fp32 operand tiles."""
    if device.type != "cuda":
        return stages
    room = getattr(torch.cuda.get_device_properties(device), "shared_memory_per_block_optin", 101376)
    return max(1, min(stages, (room - 4096) // ((block_m + block_n) * block_k * 8)))
'''


# fp16/bf16 operands whose rows are not 16-byte aligned (K or N not a multiple of 8 elements): the GEMM
# cannot load them 16 bytes at a time. In KernelBench level1's bf16 run at d45a525 on an H100,
# 8_Matmul_with_irregular_shapes (8205 x 2949 @ 2949 x 5921) ran at 0.17x of cuBLAS, where the aligned
# GEMMs of that run are at 0.64-0.88x. Both operands are copied K-contiguous, K padded with zeros to whole
# BLOCK_K steps (which add nothing), so every operand load is aligned and unmasked along K; the copies
# read and write each operand once, small beside a GEMM whose sides are both HALF_PAD_SIDE or more.
HALF_PAD_SIDE = 256
HALF_PAD_HELPER = '''def _k_padded(x, kp):
    """x (batch, R, K), any strides, as a contiguous (batch, R, kp) tensor, zero past K."""
    batch, r, k = x.shape
    y = torch.empty((batch, r, kp), dtype=x.dtype, device=x.device)
    if y.numel():
        _k_padded_kernel[(triton.cdiv(r, 64), triton.cdiv(kp, 64), batch)](
            x, y, y, r, k, kp, *x.stride(), SPLIT=False, BLOCK_R=64, BLOCK_C=64, num_warps=4)
    return y
'''


def generate_matmul(plan: Plan, config: Config, tag: str = "") -> StageCode:
    """``config.precision == "3xtf32"``: the operands are split into TF32 high and low parts before
    the GEMM and the products run on the tensor cores (three TF32 products per pair, fp32 to
    within the lo*lo term); otherwise fp32 products on the FMA units (IEEE), as cuBLAS computes
    them, or TF32 where torch's TF32 switch for matmuls is on."""
    mm = plan.node(plan.matmul_id)
    a_name, b_name = mm.args[0].value, mm.args[1].value
    names = [leaf.name for leaf in plan.leaves]
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]
    em, result, epi, iotas = _epilogue(plan, mm.id)
    lin = ["    lin = (pid_b * M + offs_m[:, None]) * N + offs_n[None, :]"] if iotas else []
    iota_params = [p for n in iotas for p in (f"iota{n.id}_div", f"iota{n.id}_mod")]
    split = config.precision == "3xtf32"
    operand_dtypes = {leaf.spec.dtype for leaf in plan.leaves if leaf.name in (a_name, b_name)}
    half = bool(operand_dtypes) and operand_dtypes <= {"float16", "bfloat16"}

    epi_strides = [f"stride_{n}_{d}" for n in epi for d in "bmn"] + ["stride_out_b", "stride_out_m", "stride_out_n"]
    em2, result2, epi2, iotas2 = _epilogue(plan, mm.id)
    sum_name = f"_splitk_sum_kernel{tag}"

    def gemm(pre_split: bool, suffix: str) -> list[str]:
        """The main kernel (epilogue fused) and the split-K partial kernel of one operand form:
        TF32 parts split before the GEMM, or the operands themselves."""
        if pre_split:
            operands = ["a_hi_ptr", "a_lo_ptr", "b_hi_ptr", "b_lo_ptr"]
            strides = ["stride_split_a", "stride_split_b"]
            k_param, loop = "Kp", _LOOP_TF32X3
            modes = "    GROUP_M: tl.constexpr, TERMS: tl.constexpr, IDX64: tl.constexpr,"
        else:
            operands = ["lhs_ptr", "rhs_ptr"]
            strides = ["stride_lhs_b", "stride_lhs_m", "stride_lhs_k", "stride_rhs_b", "stride_rhs_k", "stride_rhs_n"]
            k_param, loop = "K", _LOOP_IEEE
            modes = ("    GROUP_M: tl.constexpr, FP32_DOT: tl.constexpr, PRECISION: tl.constexpr, SPLIT3: tl.constexpr,"
                     " IDX64: tl.constexpr,")
        params = (operands + [f"{n}_ptr" for n in epi] + ["out_ptr"] + scalars
                  + ["M", "N", k_param, "k_tiles"] + strides + epi_strides + iota_params)
        consts = ["    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,", modes]
        mainloop = (_TILE + loop).rstrip("\n")
        tiles = HALF_TILES if half and not pre_split else MAIN_TILES
        k = [*autotune_lines(config, tiles), "@triton.jit", f"def _matmul_kernel{suffix}{tag}(", *wrap_params(params),
             *consts, "):", mainloop, *lin]
        if em.lines:
            k.append("    # fused epilogue, in fp32 registers")
        k += em.lines
        k.append(_store(result))
        # split-K: partial products to an fp32 buffer, then sum + epilogue
        pk = ["@triton.jit", f"def _matmul_partial_kernel{suffix}{tag}(",
              *wrap_params(operands + ["out_ptr", "M", "N", k_param, "k_tiles"] + strides
                           + ["stride_out_b", "stride_out_m", "stride_out_n", "split_stride"]),
              *consts, "):", mainloop,
              "    out_ptr += pid_k * split_stride",
              _store("acc")]
        return ["\n".join(k) + "\n", "\n".join(pk) + "\n"]

    kernels = gemm(False, "")
    if split:
        kernels += gemm(True, "_presplit")
    sk = ["@triton.jit", f"def {sum_name}(",
          *wrap_params(["part_ptr"] + [f"{n}_ptr" for n in epi2] + ["out_ptr"] + scalars
                       + ["M", "N", "n_split", "split_stride"] + epi_strides + iota_params),
          "    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, IDX64: tl.constexpr,", "):",
          _SPLIT_SUM.rstrip("\n"), *lin, *em2.lines, _store(result2)]
    kernels.append("\n".join(sk) + "\n")

    c = config
    entry = f"fused_matmul{tag}"
    l = [f"def {entry}({', '.join(names + scalars)}):",
         f"    lhs, rhs = {a_name}, {b_name}",
         "    M, K = lhs.shape[-2], lhs.shape[-1]",
         "    N = rhs.shape[-1]",
         "    batch = _broadcast_shapes(lhs.shape[:-2], rhs.shape[:-2])",
         "    out_shape = batch + (M, N)",
         f"    out = torch.empty(out_shape, dtype={out_dtype_expr(plan)}, device=lhs.device)",
         "    if out.numel() == 0:",
         "        return out",
         "    # a reshape that copies (a broadcast operand's batch) is a recorded host step: a launch",
         "    # plan's replay makes the copy again (evokernel/builtin/_launch_plan.py)",
         "    if rhs.dim() == 2:",
         "        # a shared right operand: fold the left operand's batch dims into M",
         "        lhs_3d = _reshape(lhs, 1, -1, K)",
         "        rhs_3d = rhs.unsqueeze(0)",
         "    else:",
         "        lhs_3d = _reshape(lhs.expand(batch + (M, K)), -1, M, K)",
         "        rhs_3d = _reshape(rhs.expand(batch + (K, N)), -1, K, N)",
         "    n_batch, rows = lhs_3d.shape[0], lhs_3d.shape[1]",
         "    out_3d = out.view(n_batch, rows, N)"]
    for n in epi:
        l.append(f"    {n}_3d = _reshape({n}.expand(out_shape), n_batch, rows, N)")
    iota_vals = []
    for node in iotas:
        back = len(node.shape) - node.attr("dim")
        iota_vals += [f"_prod(out_shape[len(out_shape) - {back} + 1:])", f"out_shape[len(out_shape) - {back}]"]
    iota_text = "".join(f"{v}, " for v in iota_vals)
    ptrs = "".join(f"{n}_3d, " for n in epi)
    epi_stride_lists = " + ".join(f"list({t}_3d.stride())" for t in epi + ["out"])
    operands_as_they_are = [
        "idx64 = _needs_i64(lhs_3d, rhs_3d, out_3d)",
        "operands = [lhs_3d, rhs_3d]",
        "k_size, split_strides = K, list(lhs_3d.stride()) + list(rhs_3d.stride())",
        f"k_steps = triton.cdiv(K, {c.block_k})",
        "main_kernel, partial_kernel = " + f"_matmul_kernel{tag}, _matmul_partial_kernel{tag}"]
    if split:
        l.append(f"    if K >= {SPLIT_IN_REGISTERS_K} * max(rows, N) or min(rows, N) <= {SPLIT_IN_REGISTERS_SIDE}:")
        l.append("        # K long beside M and N, or one operand read by a single tile row or column: the operands")
        l.append("        # split in registers as their tiles load")
        l += [f"        {line}" for line in operands_as_they_are]
        l += ["        tf32 = lhs.is_cuda and torch.backends.cuda.matmul.allow_tf32  # the reference's products are TF32",
              "        modes = dict(FP32_DOT=True, PRECISION='tf32', SPLIT3=not tf32)",
              f"        stages = _split_stages({c.num_stages}, {c.block_m}, {c.block_n}, {c.block_k}, lhs.device)",
              "    else:",
              "        # K-contiguous TF32 parts, K padded to whole BLOCK_K steps: the tensor cores' operand layout",
              f"        kp = triton.cdiv(K, {c.block_k}) * {c.block_k}",
              "        a_hi, a_lo = _tf32_split(lhs_3d, kp)",
              "        b_hi, b_lo = _tf32_split(rhs_3d.transpose(1, 2), kp)",
              "        idx64 = _needs_i64(a_hi, b_hi, out_3d)",
              "        operands = [a_hi, a_lo, b_hi, b_lo]",
              "        k_size, split_strides = kp, [a_hi.stride(0), b_hi.stride(0)]",
              f"        k_steps = kp // {c.block_k}",
              f"        main_kernel, partial_kernel = _matmul_kernel_presplit{tag}, _matmul_partial_kernel_presplit{tag}",
              "        modes = dict(TERMS=1 if lhs.is_cuda and torch.backends.cuda.matmul.allow_tf32 else 3)",
              f"        stages = _split_stages({c.num_stages}, {c.block_m}, {c.block_n}, {c.block_k}, lhs.device)"]
    else:
        l += [f"    {line}" for line in operands_as_they_are]
        if half:
            l += [f"    if (K % 8 or N % 8) and min(rows, N) >= {HALF_PAD_SIDE}:",
                  "        # rows not 16-byte aligned: both operands K-contiguous, K padded with zeros to whole steps",
                  f"        kp = triton.cdiv(K, {c.block_k}) * {c.block_k}",
                  "        lhs_p, rhs_p = _k_padded(lhs_3d, kp), _k_padded(rhs_3d.transpose(1, 2), kp).transpose(1, 2)",
                  "        idx64 = _needs_i64(lhs_p, rhs_p, out_3d)",
                  "        operands = [lhs_p, rhs_p]",
                  "        k_size, split_strides = kp, list(lhs_p.stride()) + list(rhs_p.stride())",
                  f"        k_steps = kp // {c.block_k}"]
        l += ["    # fp32 operands: IEEE products, as cuBLAS gives unless torch's TF32 switch is on",
              "    precision = 'tf32' if lhs.is_cuda and torch.backends.cuda.matmul.allow_tf32 else 'ieee'",
              "    modes = dict(FP32_DOT=lhs.dtype == torch.float32, PRECISION=precision, SPLIT3=False)",
              f"    stages = {c.num_stages}"]
    l += [f"    n_split = max(1, min({c.split_k}, k_steps // 4))",
          "    k_tiles = triton.cdiv(k_steps, n_split)",
          "    n_split = triton.cdiv(k_steps, k_tiles)",
          f"    tiles = triton.cdiv(rows, {c.block_m}) * triton.cdiv(N, {c.block_n})",
          "    if n_split > 1:",
          "        part = torch.empty((n_split, n_batch, rows, N), dtype=torch.float32, device=lhs.device)",
          "        split_stride = n_batch * rows * N",
          "        partial_kernel[(tiles, n_batch, n_split)](",
          "            *operands, part, rows, N, k_size, k_tiles, *split_strides, *part.stride()[1:], split_stride,",
          f"            BLOCK_M={c.block_m}, BLOCK_N={c.block_n}, BLOCK_K={c.block_k}, GROUP_M={c.group_m},",
          f"            IDX64=idx64, num_warps={c.num_warps}, num_stages=stages, **modes,",
          "        )",
          f"        {sum_name}[(triton.cdiv(rows, 32) * triton.cdiv(N, 128), n_batch)](",
          f"            part, {ptrs}out_3d, {''.join(s + ', ' for s in scalars)}rows, N, n_split, split_stride,",
          f"            *({epi_stride_lists}), {iota_text}",
          "            BLOCK_M=32, BLOCK_N=128, IDX64=idx64, num_warps=4,",
          "        )",
          "        return out",
          "    # the tile (and so the grid) is the autotuner's",
          "    grid = lambda meta: (triton.cdiv(rows, meta['BLOCK_M']) * triton.cdiv(N, meta['BLOCK_N']), n_batch, 1)",
          "    main_kernel[grid](",
          f"        *operands, {ptrs}out_3d, {''.join(s + ', ' for s in scalars)}rows, N, k_size, k_steps,",
          f"        *(split_strides + {epi_stride_lists}), {iota_text}",
          f"        BLOCK_K={c.block_k}, IDX64=idx64, **modes,",
          "    )",
          "    return out"]
    launcher = "\n".join(l) + "\n"
    padded = ((TF32_SPLIT_HELPER,) if split else ()) + ((HALF_PAD_HELPER,) if half and not split else ())
    helpers = (SPAN_HELPER, TF32_ROUND, TILES_HELPER) + ((K_PADDED_KERNEL,) if padded else ()) + padded
    return StageCode(kernels=tuple(kernels), launcher=launcher, entry=entry, helpers=helpers)
