// Honest MIX kernels (cube and vector work in one launch).
//
// matmul_bias_relu: out = relu(a @ b + bias) for a (M x K, half), b (K x N, half),
// bias (N, float), out (M x N, float), M a multiple of 16, K and N at most 64.
// The AIC of each AI Core computes 16-row tiles into a two-slot GM workspace
// and signals its AIVs; the AIVs (8 rows each) add the bias, apply ReLU, write
// out and signal the slot free again: synchronisation in both directions.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t TILE_M = 16;

extern "C" __global__ __aicore__ void matmul_bias_relu(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR work,
                                                       GM_ADDR out, uint32_t M, uint32_t N, uint32_t K)
{
    uint32_t tiles = M / TILE_M;
    uint32_t nPad = (N + 15) / 16 * 16, kPad = (K + 15) / 16 * 16;
    GlobalTensor<float> workGm;
    workGm.SetGlobalBuffer((__gm__ float*)work + GetBlockIdx() / GetTaskRation() * 2 * TILE_M * N, 2 * TILE_M * N);
    uint32_t group = GetBlockIdx() / GetTaskRation();
    TPipe pipe;
    if ASCEND_IS_AIC {
        TQue<TPosition::A1, 1> a1q;
        TQue<TPosition::B1, 1> b1q;
        TQue<TPosition::A2, 1> a2q;
        TQue<TPosition::B2, 1> b2q;
        TQue<TPosition::CO1, 1> cq;
        pipe.InitBuffer(a1q, 1, TILE_M * kPad * sizeof(half));
        pipe.InitBuffer(b1q, 1, kPad * nPad * sizeof(half));
        pipe.InitBuffer(a2q, 1, TILE_M * kPad * sizeof(half));
        pipe.InitBuffer(b2q, 1, kPad * nPad * sizeof(half));
        pipe.InitBuffer(cq, 1, TILE_M * nPad * sizeof(float));
        GlobalTensor<half> aGm, bGm;
        aGm.SetGlobalBuffer((__gm__ half*)a, M * K);
        bGm.SetGlobalBuffer((__gm__ half*)b, K * N);
        // B once: K x N into NZ, transposed fractal by fractal into L0B (Zn)
        LocalTensor<half> b1 = b1q.AllocTensor<half>();
        DataCopy(b1, bGm, Nd2NzParams(1, K, N, 0, N, kPad, 1, 0));
        LocalTensor<half> b2 = b2q.AllocTensor<half>();
        uint32_t kf = kPad / 16, nf = nPad / 16;
        for (uint32_t i = 0; i < kf; ++i) LoadData(b2[i * nf * 256], b1[i * 256], LoadData2DParams(0, nf, kf, 0, 0, true, 0));
        uint32_t used = 0;
        for (uint32_t t = group; t < tiles; t += GetBlockNum(), ++used) {
            if (used >= 2) CrossCoreWaitFlag(1);  // the AIVs are done with this slot
            LocalTensor<half> a1 = a1q.AllocTensor<half>();
            DataCopy(a1, aGm[t * TILE_M * K], Nd2NzParams(1, TILE_M, K, 0, K, TILE_M, 1, 0));
            LocalTensor<half> a2 = a2q.AllocTensor<half>();
            LoadData(a2, a1, LoadData2DParams(0, kf, 1, 0, 0, false, 0));
            LocalTensor<float> c = cq.AllocTensor<float>();
            Mmad(c, a2, b2, MmadParams(TILE_M, N, K));
            FixpipeParamsV220 fp(N, TILE_M, TILE_M, N, false);
            Fixpipe<float, float, CFG_ROW_MAJOR>(workGm[(used % 2) * TILE_M * N], c, fp);
            CrossCoreSetFlag<2, PIPE_FIX>(0);
            a1q.FreeTensor(a1);
            a2q.FreeTensor(a2);
            cq.FreeTensor(c);
        }
    }
    if ASCEND_IS_AIV {
        uint32_t rows = TILE_M / 2, sub = GetSubBlockIdx();
        TQue<TPosition::VECIN, 1> inQ;
        TQue<TPosition::VECOUT, 1> outQ;
        TBuf<TPosition::VECCALC> biasBuf;
        pipe.InitBuffer(inQ, 1, rows * nPad * sizeof(float));
        pipe.InitBuffer(outQ, 1, rows * nPad * sizeof(float));
        pipe.InitBuffer(biasBuf, nPad * sizeof(float));
        GlobalTensor<float> biasGm, outGm;
        biasGm.SetGlobalBuffer((__gm__ float*)bias, N);
        outGm.SetGlobalBuffer((__gm__ float*)out, M * N);
        LocalTensor<float> bv = biasBuf.Get<float>();
        DataCopyPad(bv, biasGm, DataCopyExtParams(1, N * sizeof(float), 0, 0, 0), DataCopyPadExtParams<float>(false, 0, 0, 0));
        uint32_t used = 0;
        for (uint32_t t = group; t < tiles; t += GetBlockNum(), ++used) {
            CrossCoreWaitFlag(0);
            LocalTensor<float> x = inQ.AllocTensor<float>();
            DataCopyPad(x, workGm[(used % 2) * TILE_M * N + sub * rows * N],
                        DataCopyExtParams(rows, N * sizeof(float), 0, (nPad - (N + 7) / 8 * 8) / 8, 0),
                        DataCopyPadExtParams<float>(false, 0, 0, 0));
            inQ.EnQue(x);
            x = inQ.DeQue<float>();
            CrossCoreSetFlag<2, PIPE_MTE2>(1);  // the slot may be overwritten
            LocalTensor<float> y = outQ.AllocTensor<float>();
            for (uint32_t r = 0; r < rows; ++r) {
                Add(y[r * nPad], x[r * nPad], bv, N);
                Relu(y[r * nPad], y[r * nPad], N);
            }
            outQ.EnQue(y);
            inQ.FreeTensor(x);
            y = outQ.DeQue<float>();
            DataCopyPad(outGm[(t * TILE_M + sub * rows) * N], y,
                        DataCopyExtParams(rows, N * sizeof(float), (nPad - (N + 7) / 8 * 8) / 8, 0, 0));
            outQ.FreeTensor(y);
        }
    }
}

// The high-level Matmul API from the vector cores: each AIV takes a block of
// rows, runs the matmul block by block (Iterate + GetTensorC into UB) and
// applies LeakyReLU before writing out. a (M x K half), b (K x N half),
// out (M x N float); M a multiple of 2 * baseM (16), N a multiple of 16, at most 64.
// A block in UB is rows x N at a pitch of N rounded up to 32 bytes.
extern "C" __global__ __aicore__ void matmul_api_leaky(GM_ADDR a, GM_ADDR b, GM_ADDR out, uint32_t M, uint32_t N,
                                                       uint32_t K, float slope)
{
    using AT = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    Matmul<AT, AT, CT, CT> mm;
    TCubeTiling tiling;
    tiling.usedCoreNum = 1;
    tiling.M = M; tiling.N = N; tiling.Ka = K; tiling.Kb = K;
    uint32_t cores = GetBlockNum() * GetTaskRation();
    uint32_t rowsPer = M / cores;
    tiling.singleCoreM = rowsPer; tiling.singleCoreN = N; tiling.singleCoreK = K;
    tiling.baseM = 16; tiling.baseN = (N + 15) / 16 * 16; tiling.baseK = 64;
    tiling.stepM = 1; tiling.stepN = 1; tiling.stepKa = 1; tiling.stepKb = 1;
    tiling.depthA1 = 2; tiling.depthB1 = 2; tiling.dbL0A = 2; tiling.dbL0B = 2;
    TPipe pipe;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);
    TQue<TPosition::VECIN, 1> cQ;
    pipe.InitBuffer(cQ, 1, 16 * tiling.baseN * sizeof(float));
    GlobalTensor<half> aGm, bGm;
    GlobalTensor<float> outGm;
    uint32_t row0 = GetBlockIdx() * rowsPer;
    aGm.SetGlobalBuffer((__gm__ half*)a + row0 * K, rowsPer * K);
    bGm.SetGlobalBuffer((__gm__ half*)b, K * N);
    outGm.SetGlobalBuffer((__gm__ float*)out + row0 * N, rowsPer * N);
    mm.SetTensorA(aGm);
    mm.SetTensorB(bGm);
    uint32_t block = 0;
    while (mm.Iterate()) {
        LocalTensor<float> c = cQ.AllocTensor<float>();
        mm.GetTensorC(c);
        LeakyRelu(c, c, slope, 16 * tiling.baseN);
        cQ.EnQue(c);
        c = cQ.DeQue<float>();
        DataCopyPad(outGm[block * 16 * N], c, DataCopyExtParams(16, N * sizeof(float), 0, 0, 0));
        cQ.FreeTensor(c);
        ++block;
    }
    mm.End();
}
