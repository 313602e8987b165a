"""Probe (H200, one call): 3xTF32 fp32 matmuls with the operands split into TF32 high and low parts,
K-contiguous and K zero-padded, before the GEMM; accumulating all of K on the tensor cores (ACC 0)
against a fresh accumulator per K step added in IEEE fp32 (ACC 1), over tile configurations, on
KernelBench-shaped products (split-K for the long-K one); time, elements outside 1e-4 of cuBLAS's
result and of the float64 product (cuBLAS's own count beside it), largest error. CH > 1 (several K
steps a fresh accumulator) needs more shared memory than an H200 has. Needs a CUDA GPU.

    python benchmarks/probes/matmul_3xtf32_accumulation.py [SHAPE ...] --out FILE.json
"""
import argparse, sys, json, os, torch, triton, triton.language as tl
from triton.testing import do_bench

torch.backends.cuda.matmul.allow_tf32 = False


@triton.jit
def _to_tf32(v):
    return ((v.to(tl.int32, bitcast=True) + 0x1000) & -8192).to(tl.float32, bitcast=True)


@triton.jit
def split_kernel(x_ptr, hi_ptr, lo_ptr, R, C, Cp, sxr, sxc, BR: tl.constexpr, BC: tl.constexpr):
    # x (R, C) strided -> hi, lo (R, Cp) contiguous, zero past C
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    m = (r[:, None] < R) & (c[None, :] < C)
    x = tl.load(x_ptr + r[:, None].to(tl.int64) * sxr + c[None, :] * sxc, mask=m, other=0.0)
    hi = _to_tf32(x)
    d = x - hi
    lo = _to_tf32(tl.where(d == d, d, 0.0))
    o = r[:, None].to(tl.int64) * Cp + c[None, :]
    mo = (r[:, None] < R) & (c[None, :] < Cp)
    tl.store(hi_ptr + o, hi, mask=mo)
    tl.store(lo_ptr + o, lo, mask=mo)


def split(x, kpad):
    """x (R, K) any strides -> hi, lo (R, Kp) contiguous, Kp = K rounded up to kpad."""
    R, C = x.shape
    Cp = triton.cdiv(C, kpad) * kpad
    hi = torch.empty((R, Cp), device=x.device, dtype=torch.float32)
    lo = torch.empty_like(hi)
    split_kernel[(triton.cdiv(R, 64), triton.cdiv(Cp, 64))](x, hi, lo, R, C, Cp, x.stride(0), x.stride(1), BR=64, BC=64, num_warps=4)
    return hi, lo


@triton.jit
def mm3_kernel(ah_ptr, al_ptr, bh_ptr, bl_ptr, c_ptr, M, N, Kp, k_tiles, scm, scn, sc_split,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr, ACC: tl.constexpr,
               CH: tl.constexpr):
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    npm = tl.cdiv(M, BM)
    npn = tl.cdiv(N, BN)
    g = GM * npn
    gid = pid // g
    fm = gid * GM
    gs = min(npm - fm, GM)
    pm = fm + ((pid % g) % gs)
    pn = (pid % g) // gs
    om = pm * BM + tl.arange(0, BM)
    on = pn * BN + tl.arange(0, BN)
    ok = tl.arange(0, BK)
    am = (om % M).to(tl.int64)
    bn = (on % N).to(tl.int64)
    k0 = pid_k * k_tiles * BK
    a_off = am[:, None] * Kp + (k0 + ok[None, :])
    b_off = bn[:, None] * Kp + (k0 + ok[None, :])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kc in range(0, k_tiles // CH):
        if ACC == 0:
            t = acc
        else:
            t = tl.zeros((BM, BN), dtype=tl.float32)
        for kk in tl.static_range(CH):
            a = tl.load(ah_ptr + a_off)
            b = tl.load(bh_ptr + b_off)
            a_l = tl.load(al_ptr + a_off)
            b_l = tl.load(bl_ptr + b_off)
            t = tl.dot(a_l, tl.trans(b), t, input_precision="tf32")
            t = tl.dot(a, tl.trans(b_l), t, input_precision="tf32")
            t = tl.dot(a, tl.trans(b), t, input_precision="tf32")
            a_off += BK
            b_off += BK
        if ACC == 0:
            acc = t
        else:
            acc += t
    mask = (om[:, None] < M) & (on[None, :] < N)
    tl.store(c_ptr + pid_k * sc_split + om[:, None].to(tl.int64) * scm + on[None, :] * scn, acc, mask=mask)


def mm3(sp, M, N, cfg, acc_mode, splits=1):
    ah, al, bh, bl = sp
    Kp = ah.shape[1]
    BM, BN, BK, w, s, CH = cfg
    steps = Kp // BK
    k_tiles = triton.cdiv(steps, splits)
    k_tiles = triton.cdiv(k_tiles, CH) * CH
    splits = triton.cdiv(steps, k_tiles)
    assert splits * k_tiles == steps, (steps, k_tiles, splits)
    c = torch.empty((splits, M, N), device=ah.device)
    mm3_kernel[(triton.cdiv(M, BM) * triton.cdiv(N, BN), splits)](ah, al, bh, bl, c, M, N, Kp, k_tiles, N, 1, M * N,
                                                                 BM=BM, BN=BN, BK=BK, GM=8, ACC=acc_mode, CH=CH,
                                                                 num_warps=w, num_stages=s)
    return c[0] if splits == 1 else c.sum(0)


CFGS = [(128, 128, 32, 8, 3, 1), (128, 256, 16, 8, 3, 1), (128, 256, 32, 8, 2, 1), (256, 128, 32, 8, 2, 1),
        (128, 128, 16, 8, 4, 1), (128, 256, 16, 8, 3, 2), (128, 256, 16, 8, 3, 4), (128, 128, 32, 8, 3, 2),
        (128, 256, 16, 8, 4, 1), (64, 128, 32, 4, 4, 1), (128, 64, 32, 4, 4, 1)]
SHAPES = {  # name: (M, K, N, a_transposed, b_transposed, dist, splits)
    "sq4096": (4096, 4096, 4096, False, False, "rand", 1),
    "sq4096_randn": (4096, 4096, 4096, False, False, "randn", 1),
    "t17_AxBT": (2048, 8192, 4096, False, True, "rand", 1),
    "t2": (2048, 8192, 4096, False, False, "rand", 1),
    "t9_tall": (32768, 32, 32768, False, False, "rand", 1),
    "t8_irregular": (8205, 2949, 5921, False, False, "rand", 1),
    "t6_largeK": (256, 524288, 256, False, False, "rand", 64),
    "l2_76_linear": (1024, 8192, 8192, False, True, "randn", 1),
}

parser = argparse.ArgumentParser()
parser.add_argument("shapes", nargs="*", choices=list(SHAPES), default=list(SHAPES))
parser.add_argument("--out", required=True)
args = parser.parse_args()
res = {"environment": {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                       "command": " ".join(["python", *sys.argv])}}
sel = args.shapes
for name in sel:
    M, K, N, at, bt, dist, splits = SHAPES[name]
    gen = torch.rand if dist == "rand" else torch.randn
    torch.manual_seed(0)
    A = (gen(K, M, device="cuda").t() if at else gen(M, K, device="cuda"))
    B = (gen(N, K, device="cuda").t() if bt else gen(K, N, device="cuda"))
    ref = torch.mm(A, B)
    exact = torch.mm(A.double(), B.double())
    r = {"cublas_fp32": do_bench(lambda: torch.mm(A, B)), "cublas_err": (ref.double() - exact).abs().max().item(),
         "scale": exact.abs().max().item()}

    def err(c):
        allowed = 1e-4 + 1e-4 * ref.abs()
        bad = ((c - ref).abs() > allowed).sum().item()
        allowed_x = 1e-4 + 1e-4 * exact.abs()
        return {"bad_vs_ref": bad, "cublas_bad_vs_exact": ((ref.double() - exact).abs() > allowed_x).sum().item(),
                "bad_vs_exact": ((c.double() - exact).abs() > allowed_x).sum().item(),
                "maxerr": (c.double() - exact).abs().max().item()}
    sp_cache = {}

    def get_split(kpad):
        if kpad not in sp_cache:
            ah, al = split(A, kpad)
            bh, bl = split(B.t(), kpad)
            sp_cache.clear()
            sp_cache[kpad] = (ah, al, bh, bl)
        return sp_cache[kpad]
    get_split(32)
    r["split_ms"] = do_bench(lambda: (split(A, 32), split(B.t(), 32)))
    for cfg in CFGS:
        key = "x".join(map(str, cfg))
        for acc_mode in (0, 1):
            if acc_mode == 0 and cfg not in (CFGS[0], CFGS[1]):
                continue
            try:
                sp = get_split(cfg[2] * cfg[5])
                f = lambda: mm3(sp, M, N, cfg, acc_mode, splits)
                c = f()
                t = do_bench(f)
                r[f"acc{acc_mode}@{key}"] = {"ms": t, **err(c)}
            except Exception as ex:
                r[f"acc{acc_mode}@{key}"] = {"error": str(ex)[:150]}
            print(name, key, acc_mode, r[f"acc{acc_mode}@{key}"], flush=True)
    res[name] = r
    print(name, {k: v for k, v in r.items() if not isinstance(v, dict)}, flush=True)
    del A, B, ref, exact, sp_cache
    torch.cuda.empty_cache()
with open(args.out, "w") as f:
    json.dump(res, f, indent=1)
