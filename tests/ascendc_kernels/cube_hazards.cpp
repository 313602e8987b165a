// Cube-unit hazards: each entry breaks one rule on purpose. The line with the
// broken call carries a `HAZARD: <kind>` tag (tests/test_ascendc_cube.py).
// Entries take (x, y, n); x and y are GM float buffers of at least 4096 elements.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t T16 = 16 * 16;  // one half fractal

extern "C" __global__ __aicore__ void l1_overflow(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    if ASCEND_IS_AIC {
        TPipe pipe;
        TQue<TPosition::A1, 2> a1;
        TQue<TPosition::B1, 2> b1;
        pipe.InitBuffer(a1, 2, 128 * 1024);
        pipe.InitBuffer(b1, 2, 160 * 1024);  // HAZARD: l1_overflow
    }
}

extern "C" __global__ __aicore__ void l0a_overflow(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    if ASCEND_IS_AIC {
        TPipe pipe;
        TQue<TPosition::A2, 2> a2;
        pipe.InitBuffer(a2, 2, 40 * 1024);  // HAZARD: l0a_overflow
    }
}

extern "C" __global__ __aicore__ void l0c_overflow(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    if ASCEND_IS_AIC {
        TPipe pipe;
        TQue<TPosition::CO1, 2> c;
        pipe.InitBuffer(c, 2, 128 * 160 * sizeof(float));  // HAZARD: l0c_overflow
    }
}

// Shared set-up: a 32 x 32 half matrix from x into A1 and B1, L0A/L0B/L0C buffers.
struct Cube {
    TPipe pipe;
    TQue<TPosition::A1, 1> a1q;
    TQue<TPosition::B1, 1> b1q;
    TQue<TPosition::A2, 1> a2q;
    TQue<TPosition::B2, 1> b2q;
    TQue<TPosition::CO1, 1> cq;
    GlobalTensor<half> xGm;
    GlobalTensor<float> yGm;
    LocalTensor<half> a1, b1, a2, b2;
    LocalTensor<float> c;
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y)
    {
        xGm.SetGlobalBuffer((__gm__ half*)x, 32 * 32);
        yGm.SetGlobalBuffer((__gm__ float*)y, 32 * 32);
        pipe.InitBuffer(a1q, 1, 32 * 32 * sizeof(half));
        pipe.InitBuffer(b1q, 1, 32 * 32 * sizeof(half));
        pipe.InitBuffer(a2q, 1, 32 * 32 * sizeof(half));
        pipe.InitBuffer(b2q, 1, 32 * 32 * sizeof(half));
        pipe.InitBuffer(cq, 1, 32 * 32 * sizeof(float));
        a1 = a1q.AllocTensor<half>();
        b1 = b1q.AllocTensor<half>();
        a2 = a2q.AllocTensor<half>();
        b2 = b2q.AllocTensor<half>();
        c = cq.AllocTensor<float>();
        Nd2NzParams p(1, 32, 32, 0, 32, 32, 1, 0);
        DataCopy(a1, xGm, p);
        DataCopy(b1, xGm, p);
    }
};

extern "C" __global__ __aicore__ void mmad_from_l1(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    if ASCEND_IS_AIC {
        Cube k;
        k.Init(x, y);
        Mmad(k.c, k.a1, k.b2, MmadParams(32, 32, 32));  // HAZARD: wrong_position
    }
}

extern "C" __global__ __aicore__ void load_a1_into_b2(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    if ASCEND_IS_AIC {
        Cube k;
        k.Init(x, y);
        LoadData(k.b2, k.a1, LoadData2DParams(0, 4, 1, 0, 0, true, 0));  // HAZARD: wrong_position
    }
}

extern "C" __global__ __aicore__ void datacopy_into_l0a(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    if ASCEND_IS_AIC {
        Cube k;
        k.Init(x, y);
        DataCopy(k.a2, k.xGm, 256);  // HAZARD: wrong_position
    }
}

extern "C" __global__ __aicore__ void unaligned_l0a(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    if ASCEND_IS_AIC {
        Cube k;
        k.Init(x, y);
        LoadData(k.a2[16], k.a1, LoadData2DParams(0, 2, 2, 0, 0, false, 0));  // HAZARD: cube_align
    }
}

extern "C" __global__ __aicore__ void mmad_past_l0a(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    if ASCEND_IS_AIC {
        Cube k;
        k.Init(x, y);
        Mmad(k.c, k.a2, k.b2, MmadParams(32, 16, 48));  // HAZARD: buffer_out_of_bounds
    }
}

extern "C" __global__ __aicore__ void mmad_half_result(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    if ASCEND_IS_AIC {
        Cube k;
        k.Init(x, y);
        LocalTensor<half> ch = k.c.ReinterpretCast<half>();
        Mmad(ch, k.a2, k.b2, MmadParams(32, 32, 32));  // HAZARD: invalid_argument
    }
}

extern "C" __global__ __aicore__ void fixpipe_without_quant(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    if ASCEND_IS_AIC {
        Cube k;
        k.Init(x, y);
        FixpipeParamsV220 p(32, 32, 32, 32, false);
        Fixpipe<half, float, CFG_ROW_MAJOR>(k.xGm, k.c, p);  // HAZARD: invalid_argument
    }
}

extern "C" __global__ __aicore__ void vector_core_cube_queue(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    TPipe pipe;
    TQue<TPosition::A1, 1> a1;
    pipe.InitBuffer(a1, 1, 1024);  // HAZARD: core_type
}

// The AIC multiplies and writes C to y; the AIVs read y back without waiting.
extern "C" __global__ __aicore__ void missing_cross_core_sync(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    if ASCEND_IS_AIC {
        Cube k;
        k.Init(x, y);
        for (uint32_t i = 0; i < 2; ++i) LoadData(k.a2[i * 2 * T16], k.a1[i * T16], LoadData2DParams(0, 2, 2, 0, 0, false, 0));
        for (uint32_t i = 0; i < 2; ++i) LoadData(k.b2[i * 2 * T16], k.b1[i * T16], LoadData2DParams(0, 2, 2, 0, 0, true, 0));
        Mmad(k.c, k.a2, k.b2, MmadParams(32, 32, 32));
        FixpipeParamsV220 p(32, 32, 32, 32, false);
        Fixpipe<float, float, CFG_ROW_MAJOR>(k.yGm, k.c, p);
    }
    if ASCEND_IS_AIV {
        TPipe pipe;
        TQue<TPosition::VECIN, 1> q;
        pipe.InitBuffer(q, 1, 512 * sizeof(float));
        GlobalTensor<float> yGm;
        yGm.SetGlobalBuffer((__gm__ float*)y + GetSubBlockIdx() * 512, 512);
        LocalTensor<float> t = q.AllocTensor<float>();
        DataCopy(t, yGm, 512);  // HAZARD: cross_core_race
        q.FreeTensor(t);
    }
}

extern "C" __global__ __aicore__ void wait_for_nobody(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    if ASCEND_IS_AIC {
        Cube k;
        k.Init(x, y);
    }
    if ASCEND_IS_AIV {
        TPipe pipe;
        TQue<TPosition::VECIN, 1> q;
        pipe.InitBuffer(q, 1, 1024);
        CrossCoreWaitFlag(3);  // HAZARD: sync_deadlock
    }
}
