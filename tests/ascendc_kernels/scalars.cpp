// Writes its scalar arguments, and the block layout, to GM for the loader tests.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void scalars_probe(GM_ADDR out, uint32_t a, int32_t b, float c, half d, int64_t e,
                                                    uint8_t f)
{
    GlobalTensor<float> outGm;
    outGm.SetGlobalBuffer((__gm__ float*)out, 8 + GetBlockNum());
    if (GetBlockIdx() == 0) {
        outGm.SetValue(0, static_cast<float>(a));
        outGm.SetValue(1, static_cast<float>(b));
        outGm.SetValue(2, c);
        outGm.SetValue(3, static_cast<float>(d));
        outGm.SetValue(4, static_cast<float>(e));
        outGm.SetValue(5, static_cast<float>(f));
        outGm.SetValue(6, static_cast<float>(GetBlockNum()));
    }
    outGm.SetValue(8 + GetBlockIdx(), static_cast<float>(GetBlockIdx()) + 0.5f);
}
