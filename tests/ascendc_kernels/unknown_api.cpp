// Calls three things the CPU model does not have: an invented vector op, a
// misspelt queue method, and a real Ascend C API the model does not implement.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void uses_unknown_apis(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    pipe.InitBuffer(inQ, 1, 256);
    LocalTensor<float> t = inQ.AllocTensor<float>();
    AddRelu(t, t, t, 64);
    LocalTensor<float> u = inQ.Deque<float>();
    AscendC::Select(t, t, t, 64);
}
