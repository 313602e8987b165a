// Vector cores exchanging data through GM: each block writes the sum of its
// slice, then block 0 adds the partial sums up. With SyncAll the partials are
// complete when block 0 reads them; without it block 0 may read too early.
#include "kernel_operator.h"
using namespace AscendC;

template <bool SYNC>
__aicore__ inline void TwoPhaseSum(GM_ADDR x, GM_ADDR partial, GM_ADDR out, uint32_t perBlock)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    TBuf<TPosition::VECCALC> work;
    pipe.InitBuffer(inQ, 1, perBlock * sizeof(float));
    pipe.InitBuffer(work, 256 * sizeof(float));
    GlobalTensor<float> xGm, partialGm, outGm;
    uint32_t blocks = GetBlockNum();
    xGm.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * perBlock, perBlock);
    partialGm.SetGlobalBuffer((__gm__ float*)partial, 8 * blocks);
    outGm.SetGlobalBuffer((__gm__ float*)out, 8);
    LocalTensor<float> t = inQ.AllocTensor<float>();
    DataCopy(t, xGm, perBlock);
    LocalTensor<float> w = work.Get<float>();
    ReduceSum(w, t, w[64], perBlock);
    Duplicate(w[8], w.GetValue(0), 8);
    DataCopy(partialGm[8 * GetBlockIdx()], w[8], 8);
    inQ.FreeTensor(t);
    if (SYNC) SyncAll();
    if (GetBlockIdx() == 0) {
        LocalTensor<float> all = inQ.AllocTensor<float>();
        DataCopy(all, partialGm, 8 * blocks);
        float total = 0;
        for (uint32_t b = 0; b < blocks; ++b) total += all.GetValue(8 * b);
        Duplicate(w, total, 8);
        DataCopy(outGm, w, 8);
        inQ.FreeTensor(all);
    }
}

extern "C" __global__ __aicore__ void sum_with_sync(GM_ADDR x, GM_ADDR partial, GM_ADDR out, uint32_t perBlock)
{
    TwoPhaseSum<true>(x, partial, out, perBlock);
}

extern "C" __global__ __aicore__ void sum_without_sync(GM_ADDR x, GM_ADDR partial, GM_ADDR out, uint32_t perBlock)
{
    TwoPhaseSum<false>(x, partial, out, perBlock);
}
