// z = x + y over a flat tensor, split across blocks and tiles, with a tail that
// is not a multiple of the tile nor of 32 bytes (copied with DataCopyPad).
// bufferNum = 2 double-buffers the queues; 1 runs each tile start to finish.
#include "kernel_operator.h"
using namespace AscendC;

template <typename T>
class KernelAdd {
public:
    __aicore__ inline KernelAdd() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t totalLength, uint32_t tileLength,
                                uint32_t bufferNum)
    {
        // Whole 32-byte blocks per core; the last core takes what is left.
        constexpr uint32_t perBlock = 32 / sizeof(T);
        uint32_t share = (totalLength + GetBlockNum() - 1) / GetBlockNum();
        share = (share + perBlock - 1) / perBlock * perBlock;
        uint32_t start = share * GetBlockIdx();
        blockLength = start >= totalLength ? 0 : (totalLength - start < share ? totalLength - start : share);
        this->tileLength = tileLength;
        xGm.SetGlobalBuffer((__gm__ T*)x + start, blockLength);
        yGm.SetGlobalBuffer((__gm__ T*)y + start, blockLength);
        zGm.SetGlobalBuffer((__gm__ T*)z + start, blockLength);
        pipe.InitBuffer(inQueueX, bufferNum, tileLength * sizeof(T));
        pipe.InitBuffer(inQueueY, bufferNum, tileLength * sizeof(T));
        pipe.InitBuffer(outQueueZ, bufferNum, tileLength * sizeof(T));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t offset = 0; offset < blockLength; offset += tileLength) {
            uint32_t len = blockLength - offset < tileLength ? blockLength - offset : tileLength;
            CopyIn(offset, len);
            Compute(len);
            CopyOut(offset, len);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t offset, uint32_t len)
    {
        LocalTensor<T> xLocal = inQueueX.AllocTensor<T>();
        LocalTensor<T> yLocal = inQueueY.AllocTensor<T>();
        if ((len * sizeof(T)) % 32 == 0) {
            DataCopy(xLocal, xGm[offset], len);
            DataCopy(yLocal, yGm[offset], len);
        } else {
            DataCopyExtParams params{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0};
            DataCopyPadExtParams<T> pad{false, 0, 0, 0};
            DataCopyPad(xLocal, xGm[offset], params, pad);
            DataCopyPad(yLocal, yGm[offset], params, pad);
        }
        inQueueX.EnQue(xLocal);
        inQueueY.EnQue(yLocal);
    }
    __aicore__ inline void Compute(uint32_t len)
    {
        LocalTensor<T> xLocal = inQueueX.DeQue<T>();
        LocalTensor<T> yLocal = inQueueY.DeQue<T>();
        LocalTensor<T> zLocal = outQueueZ.AllocTensor<T>();
        Add(zLocal, xLocal, yLocal, len);
        outQueueZ.EnQue<T>(zLocal);
        inQueueX.FreeTensor(xLocal);
        inQueueY.FreeTensor(yLocal);
    }
    __aicore__ inline void CopyOut(uint32_t offset, uint32_t len)
    {
        LocalTensor<T> zLocal = outQueueZ.DeQue<T>();
        if ((len * sizeof(T)) % 32 == 0) {
            DataCopy(zGm[offset], zLocal, len);
        } else {
            DataCopyPad(zGm[offset], zLocal, DataCopyExtParams{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0});
        }
        outQueueZ.FreeTensor(zLocal);
    }

    TPipe pipe;
    TQue<QuePosition::VECIN, 2> inQueueX, inQueueY;
    TQue<QuePosition::VECOUT, 2> outQueueZ;
    GlobalTensor<T> xGm, yGm, zGm;
    uint32_t blockLength = 0;
    uint32_t tileLength = 0;
};

extern "C" __global__ __aicore__ void add_half(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t totalLength,
                                               uint32_t tileLength, uint32_t bufferNum)
{
    KernelAdd<half> op;
    op.Init(x, y, z, totalLength, tileLength, bufferNum);
    op.Process();
}

extern "C" __global__ __aicore__ void add_float(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t totalLength,
                                                uint32_t tileLength, uint32_t bufferNum)
{
    KernelAdd<float> op;
    op.Init(x, y, z, totalLength, tileLength, bufferNum);
    op.Process();
}
