// out = exp(-relu(x * alpha + beta)) + y, one tile at a time, with a TBuf for
// the intermediate; fp32 and fp16 entries. length must be a multiple of 32
// bytes per block (no tail handling here: add_tiled.cpp tests tails).
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

template <typename T>
class KernelFused {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR out, uint32_t length, uint32_t tile, float alpha,
                                float beta)
    {
        blockLength = length / GetBlockNum();
        tileLength = tile;
        this->alpha = alpha;
        this->beta = beta;
        xGm.SetGlobalBuffer((__gm__ T*)x + blockLength * GetBlockIdx(), blockLength);
        yGm.SetGlobalBuffer((__gm__ T*)y + blockLength * GetBlockIdx(), blockLength);
        outGm.SetGlobalBuffer((__gm__ T*)out + blockLength * GetBlockIdx(), blockLength);
        pipe.InitBuffer(inX, BUFFER_NUM, tile * sizeof(T));
        pipe.InitBuffer(inY, BUFFER_NUM, tile * sizeof(T));
        pipe.InitBuffer(outQ, BUFFER_NUM, tile * sizeof(T));
        pipe.InitBuffer(tmpBuf, tile * sizeof(T));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t i = 0; i < blockLength / tileLength; ++i) {
            LocalTensor<T> xl = inX.AllocTensor<T>();
            LocalTensor<T> yl = inY.AllocTensor<T>();
            DataCopy(xl, xGm[i * tileLength], tileLength);
            DataCopy(yl, yGm[i * tileLength], tileLength);
            inX.EnQue(xl);
            inY.EnQue(yl);

            xl = inX.DeQue<T>();
            yl = inY.DeQue<T>();
            LocalTensor<T> tmp = tmpBuf.Get<T>();
            LocalTensor<T> ol = outQ.AllocTensor<T>();
            Muls(tmp, xl, alpha, tileLength);
            Adds(tmp, tmp, beta, tileLength);
            Relu(tmp, tmp, tileLength);
            Muls(tmp, tmp, -1.0f, tileLength);
            Exp(tmp, tmp, tileLength);
            Add(ol, tmp, yl, tileLength);
            outQ.EnQue(ol);
            inX.FreeTensor(xl);
            inY.FreeTensor(yl);

            ol = outQ.DeQue<T>();
            DataCopy(outGm[i * tileLength], ol, tileLength);
            outQ.FreeTensor(ol);
        }
    }

private:
    TPipe pipe;
    TQue<TPosition::VECIN, BUFFER_NUM> inX, inY;
    TQue<TPosition::VECOUT, BUFFER_NUM> outQ;
    TBuf<TPosition::VECCALC> tmpBuf;
    GlobalTensor<T> xGm, yGm, outGm;
    uint32_t blockLength, tileLength;
    float alpha, beta;
};

extern "C" __global__ __aicore__ void fused_float(GM_ADDR x, GM_ADDR y, GM_ADDR out, uint32_t length, uint32_t tile,
                                                  float alpha, float beta)
{
    KernelFused<float> op;
    op.Init(x, y, out, length, tile, alpha, beta);
    op.Process();
}

extern "C" __global__ __aicore__ void fused_half(GM_ADDR x, GM_ADDR y, GM_ADDR out, uint32_t length, uint32_t tile,
                                                 float alpha, float beta)
{
    KernelFused<half> op;
    op.Init(x, y, out, length, tile, alpha, beta);
    op.Process();
}
