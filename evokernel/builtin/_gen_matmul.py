"""Tiled (batched) matmul with the pointwise epilogue fused before the store,
after Triton's matmul tutorial: grouped tile order for L2 reuse, masked K tail,
fp32 accumulation (IEEE products for fp32 operands)."""

from __future__ import annotations

from ._config import Config
from ._emit import HELPERS, Emitter, header, model_class, out_dtype_expr, scalar_sources, wrap_params
from ._ir import Node, Plan

__all__ = ["generate_matmul"]


class _EpilogueEmitter(Emitter):
    def __init__(self, plan: Plan):
        super().__init__(plan)
        self.used: list[str] = []

    def load_leaf(self, name: str, ctx: str) -> str:
        self.used.append(name)
        var = f"l_{name}"
        self.emit(f"{var} = tl.load({name}_ptr + pid_b * stride_{name}_b + offs_m[:, None] * stride_{name}_m "
                  f"+ offs_n[None, :] * stride_{name}_n, mask=mask, other=0.0).to(tl.float32)")
        return var

    def compute(self, node: Node, ctx: str) -> str:
        if node.op == "matmul":
            return "acc"
        return super().compute(node, ctx)


_MAINLOOP = """\
    pid = tl.program_id(0)
    pid_b = tl.program_id(1)
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
    offs_k = tl.arange(0, BLOCK_K)
    lhs_ptrs = lhs_ptr + pid_b * stride_lhs_b + offs_m[:, None] * stride_lhs_m + offs_k[None, :] * stride_lhs_k
    rhs_ptrs = rhs_ptr + pid_b * stride_rhs_b + offs_k[:, None] * stride_rhs_k + offs_n[None, :] * stride_rhs_n
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_mask = offs_k < K - k * BLOCK_K
        lhs_tile = tl.load(lhs_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
        rhs_tile = tl.load(rhs_ptrs, mask=k_mask[:, None] & (offs_n[None, :] < N), other=0.0)
        if FP32_DOT:
            acc += tl.dot(lhs_tile, rhs_tile, input_precision="ieee")
        else:
            acc += tl.dot(lhs_tile, rhs_tile)
        lhs_ptrs += BLOCK_K * stride_lhs_k
        rhs_ptrs += BLOCK_K * stride_rhs_k
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
"""


def generate_matmul(plan: Plan, config: Config) -> str:
    mm = plan.node(plan.matmul_id)
    a_name, b_name = mm.args[0].value, mm.args[1].value
    names = [leaf.name for leaf in plan.leaves]
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]

    em = _EpilogueEmitter(plan)
    result = em.value(plan.output)
    epi = list(dict.fromkeys(em.used))

    strides = ["stride_lhs_b", "stride_lhs_m", "stride_lhs_k", "stride_rhs_b", "stride_rhs_k", "stride_rhs_n"]
    strides += [f"stride_{n}_{d}" for n in epi for d in "bmn"] + ["stride_out_b", "stride_out_m", "stride_out_n"]
    params = ["lhs_ptr", "rhs_ptr"] + [f"{n}_ptr" for n in epi] + ["out_ptr"] + scalars + ["M", "N", "K"] + strides
    k = ["@triton.jit",
         "def _matmul_epilogue_kernel(",
         *wrap_params(params),
         "    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,",
         "    GROUP_M: tl.constexpr, FP32_DOT: tl.constexpr,",
         "):",
         _MAINLOOP.rstrip("\n")]
    if em.lines:
        k.append("    # fused epilogue, in fp32 registers")
    k += em.lines
    k.append(f"    tl.store(out_ptr + pid_b * stride_out_b + offs_m[:, None] * stride_out_m "
             f"+ offs_n[None, :] * stride_out_n, {result}.to(out_ptr.dtype.element_ty), mask=mask)")
    kernel = "\n".join(k) + "\n"

    c = config
    l = [f"def fused_matmul({', '.join(names + scalars)}):",
         f"    lhs, rhs = {a_name}, {b_name}",
         "    M, K = lhs.shape[-2], lhs.shape[-1]",
         "    N = rhs.shape[-1]",
         "    batch = _broadcast_shapes(lhs.shape[:-2], rhs.shape[:-2])",
         "    out_shape = batch + (M, N)",
         f"    out = torch.empty(out_shape, dtype={out_dtype_expr(plan)}, device=lhs.device)",
         "    if out.numel() == 0:",
         "        return out",
         "    if rhs.dim() == 2:",
         "        # a shared right operand: fold the left operand's batch dims into M",
         "        lhs_3d = lhs.reshape(1, -1, K)",
         "        rhs_3d = rhs.unsqueeze(0)",
         "    else:",
         "        lhs_3d = lhs.expand(batch + (M, K)).reshape(-1, M, K)",
         "        rhs_3d = rhs.expand(batch + (K, N)).reshape(-1, K, N)",
         "    n_batch, rows = lhs_3d.shape[0], lhs_3d.shape[1]",
         "    out_3d = out.view(n_batch, rows, N)"]
    for n in epi:
        l.append(f"    {n}_3d = {n}.expand(out_shape).reshape(n_batch, rows, N)")
    ptrs = "".join(f"{n}_3d, " for n in epi)
    stride_lists = " + ".join(f"list({t}_3d.stride())" for t in ["lhs", "rhs"] + epi + ["out"])
    l += [f"    grid = (triton.cdiv(rows, {c.block_m}) * triton.cdiv(N, {c.block_n}), n_batch)",
          "    _matmul_epilogue_kernel[grid](",
          f"        lhs_3d, rhs_3d, {ptrs}out_3d, {''.join(s + ', ' for s in scalars)}rows, N, K,",
          f"        *({stride_lists}),",
          f"        BLOCK_M={c.block_m}, BLOCK_N={c.block_n}, BLOCK_K={c.block_k}, GROUP_M={c.group_m},",
          "        FP32_DOT=lhs.dtype == torch.float32,",
          f"        num_warps={c.num_warps}, num_stages={c.num_stages},",
          "    )",
          "    return out"]
    launcher = "\n".join(l) + "\n"
    return "\n\n".join([header(plan, config.text()), kernel, HELPERS.strip() + "\n", launcher,
                        model_class(plan, "fused_matmul")])
