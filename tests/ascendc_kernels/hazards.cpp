// One entry per hazard the CPU model must catch; each takes (x, y, n) and
// breaks exactly one rule. Lines are referred to by the tests through markers
// in comments ("HAZARD: <kind>").
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void ub_overflow(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 2> inQ;
    TQue<TPosition::VECOUT, 2> outQ;
    pipe.InitBuffer(inQ, 2, 65536);
    pipe.InitBuffer(outQ, 2, 65536);  // HAZARD: ub_overflow
}

extern "C" __global__ __aicore__ void datacopy_align(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, n);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    pipe.InitBuffer(inQ, 1, 1024);
    LocalTensor<float> xl = inQ.AllocTensor<float>();
    DataCopy(xl, xGm, 10);  // HAZARD: datacopy_align
}

extern "C" __global__ __aicore__ void queue_empty(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, n);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    pipe.InitBuffer(inQ, 1, 256);
    LocalTensor<float> xl = inQ.AllocTensor<float>();
    DataCopy(xl, xGm, 64);
    LocalTensor<float> again = inQ.DeQue<float>();  // HAZARD: queue_empty
}

extern "C" __global__ __aicore__ void queue_depth(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 2> inQ;
    pipe.InitBuffer(inQ, 2, 256);
    for (int i = 0; i < 3; ++i) {
        LocalTensor<float> t = inQ.AllocTensor<float>();  // HAZARD: queue_depth
        inQ.EnQue(t);
        t = inQ.DeQue<float>();
    }
}

extern "C" __global__ __aicore__ void gm_past_tensor(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    // Each block claims n elements but the tensor holds n in total.
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + n * GetBlockIdx(), n);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    pipe.InitBuffer(inQ, 1, n * sizeof(float));
    LocalTensor<float> xl = inQ.AllocTensor<float>();
    DataCopy(xl, xGm, n);  // HAZARD: gm_out_of_bounds
    inQ.FreeTensor(xl);
}

extern "C" __global__ __aicore__ void gm_past_global_buffer(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    GlobalTensor<float> yGm;
    yGm.SetGlobalBuffer((__gm__ float*)y, 8);
    yGm.SetValue(8, 1.0f);  // HAZARD: gm_out_of_bounds
}

extern "C" __global__ __aicore__ void ub_out_of_bounds(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    LocalTensor<float> t = buf.Get<float>();
    Adds(t, t, 1.0f, 128);  // HAZARD: ub_out_of_bounds
}

extern "C" __global__ __aicore__ void use_after_free(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(outQ, 1, 256);
    LocalTensor<float> t = outQ.AllocTensor<float>();
    Duplicate(t, 1.0f, 64);
    outQ.FreeTensor(t);
    Muls(t, t, 2.0f, 64);  // HAZARD: use_after_free
}

extern "C" __global__ __aicore__ void wait_without_set(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);  // HAZARD: sync_deadlock
}

extern "C" __global__ __aicore__ void unaligned_operand(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    LocalTensor<float> t = buf.Get<float>();
    Adds(t[3], t[3], 1.0f, 64);  // HAZARD: ub_align
}

extern "C" __global__ __aicore__ void bad_repeat(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    LocalTensor<float> t = buf.Get<float>();
    Add(t, t, t, 128, 1, {1, 1, 1, 8, 8, 8});  // HAZARD: invalid_argument
}

extern "C" __global__ __aicore__ void overlapping_writes(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    // Every block writes all of y (the per-block offset is missing), each with its own values.
    GlobalTensor<float> yGm;
    yGm.SetGlobalBuffer((__gm__ float*)y, n);
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(outQ, 1, n * sizeof(float));
    LocalTensor<float> t = outQ.AllocTensor<float>();
    Duplicate(t, static_cast<float>(GetBlockIdx()), n);
    outQ.EnQue(t);
    t = outQ.DeQue<float>();
    DataCopy(yGm, t, n);  // HAZARD: gm_write_race
    outQ.FreeTensor(t);
}

extern "C" __global__ __aicore__ void redundant_writes(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    // Every block writes the same values to all of y: wasteful, not wrong.
    GlobalTensor<float> yGm;
    yGm.SetGlobalBuffer((__gm__ float*)y, n);
    TPipe pipe;
    TBuf<> buf;
    pipe.InitBuffer(buf, n * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    Duplicate(t, 3.0f, n);
    DataCopy(yGm, t, n);
}
