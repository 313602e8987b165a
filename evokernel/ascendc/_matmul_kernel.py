"""The C++ of the builtin Ascend C matmul: one cube-core (AIC-only) kernel for
C = A @ B (or A @ B^T), batched, in fp16 (fp32 accumulation, rounded to fp16
on the way out) and fp32.

Each AI Core takes output tiles of baseM x baseN round robin. For one tile it
walks K in chunks of baseK: the A and B chunks go GM -> L1 with the ND -> NZ
conversion (A1/B1 queues of `bufNum` buffers, so with two the next chunk's
copy overlaps this chunk's work), L1 -> L0A/L0B with LoadData (the right
matrix transposed per fractal when it is not already K-major), and Mmad
accumulates into L0C; the finished tile leaves L0C with Fixpipe (NZ -> ND,
float -> half). Shapes, tiles and buffer depth are kernel arguments, so one
build serves every configuration the policy tries.
"""

from __future__ import annotations

__all__ = ["MATMUL_SOURCE", "ENTRY_F16", "ENTRY_F32"]

ENTRY_F16 = "evk_matmul_f16"
ENTRY_F32 = "evk_matmul_f32"

MATMUL_SOURCE = r'''#include "kernel_operator.h"
using namespace AscendC;

__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t Align16(uint32_t a) { return (a + 15) / 16 * 16; }

// How a float L0C tile leaves for a GM tensor of T.
template <typename T> struct OutQuant { static constexpr QuantMode_t mode = QuantMode_t::NoQuant; };
template <> struct OutQuant<half> { static constexpr QuantMode_t mode = QuantMode_t::F322F16; };

template <typename T>
class CubeMatmul {
    static constexpr uint32_t C0 = 32 / sizeof(T);     // elements per 32-byte row of a fractal
    static constexpr uint32_t FRAC = 512 / sizeof(T);  // elements per 512-byte fractal

public:
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c, uint32_t batch, uint32_t M, uint32_t N,
                                uint32_t K, uint32_t transB, uint32_t strideA, uint32_t strideB, uint32_t baseM,
                                uint32_t baseN, uint32_t baseK, uint32_t bufNum)
    {
        this->batch = batch; this->M = M; this->N = N; this->K = K; this->transB = transB;
        this->strideA = strideA; this->strideB = strideB;
        this->baseM = baseM; this->baseN = baseN; this->baseK = baseK;
        aGm.SetGlobalBuffer((__gm__ T*)a);
        bGm.SetGlobalBuffer((__gm__ T*)b);
        cGm.SetGlobalBuffer((__gm__ T*)c);
        uint32_t kPad = Align16(baseK), mPad = Align16(baseM), nPad = Align16(baseN);
        pipe.InitBuffer(inA1, bufNum, mPad * kPad * sizeof(T));
        pipe.InitBuffer(inB1, bufNum, kPad * nPad * sizeof(T));
        pipe.InitBuffer(inA2, bufNum, mPad * kPad * sizeof(T));
        pipe.InitBuffer(inB2, bufNum, kPad * nPad * sizeof(T));
        pipe.InitBuffer(outCO1, 1, mPad * nPad * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        uint32_t tilesM = CeilDiv(M, baseM), tilesN = CeilDiv(N, baseN);
        uint32_t tiles = batch * tilesM * tilesN;
        for (uint32_t t = GetBlockIdx(); t < tiles; t += GetBlockNum()) {
            uint32_t bi = t / (tilesM * tilesN), r = t % (tilesM * tilesN);
            uint32_t m0 = (r / tilesN) * baseM, n0 = (r % tilesN) * baseN;
            uint32_t mLen = M - m0 < baseM ? M - m0 : baseM;
            uint32_t nLen = N - n0 < baseN ? N - n0 : baseN;
            LocalTensor<float> acc = outCO1.AllocTensor<float>();
            for (uint32_t k0 = 0; k0 < K; k0 += baseK) {
                uint32_t kLen = K - k0 < baseK ? K - k0 : baseK;
                CopyIn(bi, m0, n0, k0, mLen, nLen, kLen);
                SplitLoad(mLen, nLen, kLen);
                Compute(acc, mLen, nLen, kLen, k0 == 0);
            }
            outCO1.EnQue(acc);
            CopyOut(bi, m0, n0, mLen, nLen);
        }
    }

private:
    // GM -> L1: both chunks in NZ fractals (A: ceil16(mLen) rows per C0-column strip).
    __aicore__ inline void CopyIn(uint32_t bi, uint32_t m0, uint32_t n0, uint32_t k0, uint32_t mLen, uint32_t nLen,
                                  uint32_t kLen)
    {
        LocalTensor<T> a1 = inA1.AllocTensor<T>();
        Nd2NzParams pa(1, mLen, kLen, 0, K, Align16(mLen), 1, 0);
        DataCopy(a1, aGm[bi * strideA + m0 * K + k0], pa);
        inA1.EnQue(a1);
        LocalTensor<T> b1 = inB1.AllocTensor<T>();
        if (transB) {
            // B^T stored N x K: its NZ fractals are already the K-major ones L0B wants
            Nd2NzParams pb(1, nLen, kLen, 0, K, Align16(nLen), 1, 0);
            DataCopy(b1, bGm[bi * strideB + n0 * K + k0], pb);
        } else if (sizeof(T) == 2) {
            // K x N: NZ fractals of 16 k-rows x 16 n, transposed one by one on the way to L0B
            Nd2NzParams pb(1, kLen, nLen, 0, N, Align16(kLen), 1, 0);
            DataCopy(b1, bGm[bi * strideB + k0 * N + n0], pb);
        } else {
            // float K x N: slabs of 16 k-rows, each an NZ of height 16, so that two neighbouring
            // 16 x 8 fractals form the 16 x 16 squares LoadDataWithTranspose turns around
            uint32_t squares = CeilDiv(nLen, 16), slabs = kLen / 16, tail = kLen % 16;
            if (slabs > 0) {
                Nd2NzParams pb(slabs, 16, nLen, 16 * N, N, 16, 1, squares * 256);
                DataCopy(b1, bGm[bi * strideB + k0 * N + n0], pb);
            }
            if (tail > 0) {
                Nd2NzParams pt(1, tail, nLen, 0, N, 16, 1, 0);
                DataCopy(b1[slabs * squares * 256], bGm[bi * strideB + (k0 + slabs * 16) * N + n0], pt);
            }
        }
        inB1.EnQue(b1);
    }

    // L1 -> L0A (Zz: the A strips re-ordered row of fractals by row) and L0B (Zn).
    __aicore__ inline void SplitLoad(uint32_t mLen, uint32_t nLen, uint32_t kLen)
    {
        uint32_t mf = CeilDiv(mLen, 16), nf = CeilDiv(nLen, 16), kf = CeilDiv(kLen, C0);
        LocalTensor<T> a1 = inA1.DeQue<T>();
        LocalTensor<T> a2 = inA2.AllocTensor<T>();
        for (uint32_t i = 0; i < mf; ++i) {
            LoadData2DParams p(0, kf, mf, 0, 0, false, 0);
            LoadData(a2[i * kf * FRAC], a1[i * FRAC], p);
        }
        inA1.FreeTensor(a1);
        inA2.EnQue(a2);
        LocalTensor<T> b1 = inB1.DeQue<T>();
        LocalTensor<T> b2 = inB2.AllocTensor<T>();
        if (transB) {
            for (uint32_t i = 0; i < kf; ++i) {
                LoadData2DParams p(0, nf, 1, 0, 0, false, 0);
                LoadData(b2[i * nf * FRAC], b1[i * nf * FRAC], p);
            }
        } else if (sizeof(T) == 2) {
            uint32_t kf16 = Align16(kLen) / 16;
            for (uint32_t i = 0; i < kf; ++i) {
                LoadData2DParams p(0, nf, kf16, 0, 0, true, 0);
                LoadData(b2[i * nf * FRAC], b1[i * FRAC], p);
            }
        } else {
            for (uint32_t s = 0; s < CeilDiv(kLen, 16); ++s) {
                LoadData2dTransposeParams p(0, nf, 1, 0, nf - 1);
                LoadDataWithTranspose(b2[2 * s * nf * FRAC], b1[s * nf * 2 * FRAC], p);
            }
        }
        inB1.FreeTensor(b1);
        inB2.EnQue(b2);
    }

    __aicore__ inline void Compute(LocalTensor<float>& acc, uint32_t mLen, uint32_t nLen, uint32_t kLen, bool first)
    {
        LocalTensor<T> a2 = inA2.DeQue<T>();
        LocalTensor<T> b2 = inB2.DeQue<T>();
        // m = 1 would switch the cube to GEMV, which reads L0A as a plain row: run it as two rows
        // (the second is never stored) so the fractal layout holds for every tile.
        MmadParams p(mLen < 2 ? 2 : mLen, nLen, kLen);
        p.cmatrixInitVal = first;
        Mmad(acc, a2, b2, p);
        inA2.FreeTensor(a2);
        inB2.FreeTensor(b2);
    }

    __aicore__ inline void CopyOut(uint32_t bi, uint32_t m0, uint32_t n0, uint32_t mLen, uint32_t nLen)
    {
        LocalTensor<float> acc = outCO1.DeQue<float>();
        FixpipeParamsV220 p(nLen, mLen, Align16(mLen < 2 ? 2 : mLen), N, false);
        p.quantPre = OutQuant<T>::mode;
        Fixpipe<T, float, CFG_ROW_MAJOR>(cGm[bi * M * N + m0 * N + n0], acc, p);
        outCO1.FreeTensor(acc);
    }

    TPipe pipe;
    TQue<TPosition::A1, 2> inA1;
    TQue<TPosition::B1, 2> inB1;
    TQue<TPosition::A2, 2> inA2;
    TQue<TPosition::B2, 2> inB2;
    TQue<TPosition::CO1, 1> outCO1;
    GlobalTensor<T> aGm, bGm, cGm;
    uint32_t batch = 1, M = 0, N = 0, K = 0, transB = 0, strideA = 0, strideB = 0;
    uint32_t baseM = 16, baseN = 16, baseK = 16;
};

'''
MATMUL_SOURCE += "".join(
    f'''
extern "C" __global__ __aicore__ void {name}(GM_ADDR a, GM_ADDR b, GM_ADDR c, uint32_t batch, uint32_t M,
                                             uint32_t N, uint32_t K, uint32_t transB, uint32_t strideA,
                                             uint32_t strideB, uint32_t baseM, uint32_t baseN, uint32_t baseK,
                                             uint32_t bufNum)
{{
    CubeMatmul<{ctype}> op;
    op.Init(a, b, c, batch, M, N, K, transB, strideA, strideB, baseM, baseN, baseK, bufNum);
    op.Process();
}}
''' for name, ctype in ((ENTRY_F16, "half"), (ENTRY_F32, "float")))


def matmul_operator_project(dtype: str = "float16"):
    """The builtin matmul as an msopgen-style CANN operator (`MatmulCustom`, C = A @ B for 2-D
    row-major A (M x K) and B (K x N)), with a host tiling of the same base blocks the CPU
    model's launcher starts from. Never run: see backends/ascendc/_msopgen.py."""
    from backends.ascendc import OpSpec, TensorArg, msopgen_project

    entry, (bm, bn, bk) = (ENTRY_F16, (128, 256, 64)) if dtype == "float16" else (ENTRY_F32, (128, 128, 64))
    m, n, k = "in0.GetDim(0)", "in1.GetDim(1)", "in0.GetDim(1)"
    op = OpSpec("MatmulCustom", inputs=(TensorArg("a", (dtype,)), TensorArg("b", (dtype,))),
                outputs=(TensorArg("c", (dtype,)),), output_shapes=(f"{{{m}, {n}}}",),
                block_dim=f"std::min<int64_t>(24, (({m} + {bm - 1}) / {bm}) * (({n} + {bn - 1}) / {bn}))")
    tiling = {"batch": "1", "M": m, "N": n, "K": k, "transB": "0", "strideA": f"{m} * {k}",
              "strideB": f"{k} * {n}", "baseM": str(bm), "baseN": str(bn), "baseK": str(bk), "bufNum": "2"}
    return msopgen_project(op, MATMUL_SOURCE, entry, tiling)
