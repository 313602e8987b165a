"""Probe (H200, one call): fp32 matmuls as IEEE `tl.dot`, Triton's own `tf32x3`, plain TF32, and 3xTF32
with the operands split into TF32 high and low parts before the GEMM (B kept K x N or stored N x K,
K-contiguous), against cuBLAS fp32 and TF32, on KernelBench-shaped products; each variant's time
(`triton.testing.do_bench`), its elements outside 1e-4 of cuBLAS's result and its largest error
against a float64 product. The accumulation here runs all of K on the tensor cores; see
matmul_3xtf32_accumulation.py for the fix of its error. Needs a CUDA GPU.

    python benchmarks/probes/matmul_precision.py [SHAPE ...] --out FILE.json
"""
import argparse, sys, json, torch, triton, triton.language as tl
from triton.testing import do_bench

torch.backends.cuda.matmul.allow_tf32 = False


@triton.jit
def _to_tf32(v):
    return ((v.to(tl.int32, bitcast=True) + 0x1000) & -8192).to(tl.float32, bitcast=True)


@triton.jit
def split_kernel(x_ptr, hi_ptr, lo_ptr, R, C, sxr, sxc, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    m = (r[:, None] < R) & (c[None, :] < C)
    x = tl.load(x_ptr + r[:, None].to(tl.int64) * sxr + c[None, :] * sxc, mask=m, other=0.0)
    hi = _to_tf32(x)
    lo = _to_tf32(x - hi)
    o = r[:, None].to(tl.int64) * C + c[None, :]
    tl.store(hi_ptr + o, hi, mask=m)
    tl.store(lo_ptr + o, lo, mask=m)


def split(x, transpose=False):
    """x (R, C) -> hi, lo contiguous (R, C), or (C, R) if transpose."""
    if transpose:
        x = x.t()
    R, C = x.shape
    hi = torch.empty((R, C), device=x.device, dtype=torch.float32)
    lo = torch.empty_like(hi)
    split_kernel[(triton.cdiv(R, 64), triton.cdiv(C, 64))](x, hi, lo, R, C, x.stride(0), x.stride(1), BR=64, BC=64, num_warps=4)
    return hi, lo


@triton.jit
def mm_kernel(a_ptr, al_ptr, b_ptr, bl_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr, MODE: tl.constexpr):
    pid = tl.program_id(0)
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
    ap = a_ptr + om[:, None] * sam + ok[None, :] * sak
    bp = b_ptr + ok[:, None] * sbk + on[None, :] * sbn
    alp = al_ptr + om[:, None] * sam + ok[None, :] * sak
    blp = bl_ptr + ok[:, None] * sbk + on[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        km = ok < K - k * BK
        a = tl.load(ap, mask=(om[:, None] < M) & km[None, :], other=0.0)
        b = tl.load(bp, mask=km[:, None] & (on[None, :] < N), other=0.0)
        if MODE == 0:
            acc += tl.dot(a, b, input_precision="ieee")
        elif MODE == 1:
            acc += tl.dot(a, b, input_precision="tf32x3")
        elif MODE == 2:
            al = tl.load(alp, mask=(om[:, None] < M) & km[None, :], other=0.0)
            bl = tl.load(blp, mask=km[:, None] & (on[None, :] < N), other=0.0)
            acc = tl.dot(al, b, acc, input_precision="tf32")
            acc = tl.dot(a, bl, acc, input_precision="tf32")
            acc = tl.dot(a, b, acc, input_precision="tf32")
        else:
            acc += tl.dot(a, b, input_precision="tf32")
        ap += BK * sak
        bp += BK * sbk
        alp += BK * sak
        blp += BK * sbk
    mask = (om[:, None] < M) & (on[None, :] < N)
    tl.store(c_ptr + om[:, None].to(tl.int64) * scm + on[None, :] * scn, acc, mask=mask)


def mm(a, b, mode, cfg, al=None, bl=None):
    """a (M,K) any strides, b (K,N) any strides."""
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device)
    BM, BN, BK, w, s = cfg
    al = a if al is None else al
    bl = b if bl is None else bl
    mm_kernel[(triton.cdiv(M, BM) * triton.cdiv(N, BN),)](a, al, b, bl, c, M, N, K, a.stride(0), a.stride(1),
                                                          b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                                          BM=BM, BN=BN, BK=BK, GM=8, MODE=mode, num_warps=w, num_stages=s)
    return c


CFGS = [(128, 128, 32, 8, 3), (128, 128, 32, 4, 3), (128, 128, 16, 8, 4), (128, 256, 16, 8, 3), (256, 128, 16, 8, 3),
        (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 128, 64, 8, 2), (64, 64, 32, 4, 4)]
PER_LABEL = {"ieee": [CFGS[0], CFGS[5]], "tf32x3": [CFGS[0], CFGS[2]], "tf32": [CFGS[0], CFGS[3]],
             "pre3_KN": [CFGS[0], CFGS[2], CFGS[3]]}
SHAPES = {  # name: (M, K, N, a_transposed, b_transposed, dist)
    "sq4096": (4096, 4096, 4096, False, False, "rand"),
    "t17_AxBT": (2048, 8192, 4096, False, True, "rand"),
    "t9_tall": (32768, 32, 32768, False, False, "rand"),
    "l2_76_linear": (1024, 8192, 8192, False, True, "randn"),
    "t8_irregular": (8205, 2949, 5921, False, False, "rand"),
}

parser = argparse.ArgumentParser()
parser.add_argument("shapes", nargs="*", choices=list(SHAPES), default=list(SHAPES))
parser.add_argument("--out", required=True)
args = parser.parse_args()
res = {"environment": {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                       "command": " ".join(["python", *sys.argv])}}
sel = args.shapes
for name in sel:
    M, K, N, at, bt, dist = SHAPES[name]
    gen = torch.rand if dist == "rand" else torch.randn
    A = (gen(K, M, device="cuda").t() if at else gen(M, K, device="cuda"))
    B = (gen(N, K, device="cuda").t() if bt else gen(K, N, device="cuda"))
    ref = torch.mm(A, B)
    exact = torch.mm(A.double(), B.double()) if M * N * K <= 2**37 else None
    r = {"cublas_fp32": do_bench(lambda: torch.mm(A, B))}
    torch.backends.cuda.matmul.allow_tf32 = True
    r["cublas_tf32"] = do_bench(lambda: torch.mm(A, B))
    torch.backends.cuda.matmul.allow_tf32 = False

    def err(c):
        allowed = 1e-4 + 1e-4 * ref.abs()
        bad = ((c - ref).abs() > allowed).sum().item()
        e = {"bad_vs_ref": bad}
        if exact is not None:
            e["maxerr_vs_exact"] = (c.double() - exact).abs().max().item()
        return e
    if exact is not None:
        r["cublas_maxerr_vs_exact"] = (ref.double() - exact).abs().max().item()
    # split costs
    ah, alo = split(A)
    bh, blo = split(B)  # (K,N) layout
    bth, btl = split(B, transpose=True)  # (N,K) contiguous
    r["split_a_ms"] = do_bench(lambda: split(A))
    r["split_b_ms"] = do_bench(lambda: split(B))
    r["split_bT_ms"] = do_bench(lambda: split(B, transpose=True))
    for cfg in CFGS:
        key = "x".join(map(str, cfg))
        for mode, label, args in ((0, "ieee", (A, B)), (1, "tf32x3", (A, B)),
                                  (2, "pre3_KN", (ah, bh, alo, blo)), (2, "pre3_NK", (ah, bth.t(), alo, btl.t())),
                                  (3, "tf32", (A, B))):
            if cfg not in PER_LABEL.get(label, CFGS):
                continue
            try:
                if mode == 2:
                    a_, b_, al_, bl_ = args
                    f = lambda: mm(a_, b_, 2, cfg, al_, bl_)
                else:
                    f = lambda: mm(args[0], args[1], mode, cfg)
                c = f()
                t = do_bench(f)
                r[f"{label}@{key}"] = {"ms": t, **err(c)}
            except Exception as ex:
                r[f"{label}@{key}"] = {"error": str(ex)[:120]}
    best = {}
    for k, v in r.items():
        if isinstance(v, dict) and "ms" in v:
            lab = k.split("@")[0]
            if lab not in best or v["ms"] < best[lab][1]:
                best[lab] = (k, v["ms"], v.get("bad_vs_ref"))
    r["best"] = best
    res[name] = r
    print(name, json.dumps({k: v for k, v in r.items() if not isinstance(v, dict) or k == "best"}), flush=True)
with open(args.out, "w") as f:
    json.dump(res, f, indent=1)
