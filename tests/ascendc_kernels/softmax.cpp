// Row softmax, two ways.
// softmax_rows_{float,half}: any row length up to maxCols; one row at a time with
//   ReduceMax/ReduceSum (count form) and DataCopyPad for rows that are not a
//   whole number of 32-byte blocks.
// softmax_whole64: rows of exactly 64 floats (one 256-byte repeat), up to 32
//   rows per tile reduced at once with WholeReduceMax/WholeReduceSum.
#include "kernel_operator.h"
using namespace AscendC;

template <typename T>
class KernelSoftmaxRows {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint32_t rows, uint32_t cols)
    {
        uint32_t share = (rows + GetBlockNum() - 1) / GetBlockNum();
        uint32_t first = share * GetBlockIdx();
        myRows = first >= rows ? 0 : (rows - first < share ? rows - first : share);
        this->cols = cols;
        constexpr uint32_t perBlock = 32 / sizeof(T);
        colsAligned = (cols + perBlock - 1) / perBlock * perBlock;
        xGm.SetGlobalBuffer((__gm__ T*)x + first * cols, myRows * cols);
        yGm.SetGlobalBuffer((__gm__ T*)y + first * cols, myRows * cols);
        pipe.InitBuffer(inQ, 2, colsAligned * sizeof(T));
        pipe.InitBuffer(outQ, 2, colsAligned * sizeof(T));
        pipe.InitBuffer(reduceBuf, 32);
        uint32_t repeats = (cols * sizeof(T) + 255) / 256;
        pipe.InitBuffer(workBuf, (repeats * sizeof(T) + 31) / 32 * 32);
    }
    __aicore__ inline void Process()
    {
        for (uint32_t r = 0; r < myRows; ++r) {
            CopyIn(r);
            Compute();
            CopyOut(r);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t r)
    {
        LocalTensor<T> xl = inQ.AllocTensor<T>();
        DataCopyPad(xl, xGm[r * cols], DataCopyExtParams{1, static_cast<uint32_t>(cols * sizeof(T)), 0, 0, 0},
                    DataCopyPadExtParams<T>{false, 0, 0, 0});
        inQ.EnQue(xl);
    }
    __aicore__ inline void Compute()
    {
        LocalTensor<T> xl = inQ.DeQue<T>();
        LocalTensor<T> yl = outQ.AllocTensor<T>();
        LocalTensor<T> red = reduceBuf.Get<T>();
        LocalTensor<T> work = workBuf.Get<T>();
        ReduceMax(red, xl, work, cols);
        event_t vToS = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
        SetFlag<HardEvent::V_S>(vToS);
        WaitFlag<HardEvent::V_S>(vToS);
        T rowMax = red.GetValue(0);
        Adds(yl, xl, static_cast<T>(-static_cast<float>(rowMax)), cols);
        Exp(yl, yl, cols);
        ReduceSum(red, yl, work, cols);
        SetFlag<HardEvent::V_S>(vToS);
        WaitFlag<HardEvent::V_S>(vToS);
        float sum = static_cast<float>(red.GetValue(0));
        Muls(yl, yl, static_cast<T>(1.0f / sum), cols);
        outQ.EnQue(yl);
        inQ.FreeTensor(xl);
    }
    __aicore__ inline void CopyOut(uint32_t r)
    {
        LocalTensor<T> yl = outQ.DeQue<T>();
        DataCopyPad(yGm[r * cols], yl, DataCopyExtParams{1, static_cast<uint32_t>(cols * sizeof(T)), 0, 0, 0});
        outQ.FreeTensor(yl);
    }

    TPipe pipe;
    TQue<TPosition::VECIN, 2> inQ;
    TQue<TPosition::VECOUT, 2> outQ;
    TBuf<TPosition::VECCALC> reduceBuf, workBuf;
    GlobalTensor<T> xGm, yGm;
    uint32_t myRows = 0, cols = 0, colsAligned = 0;
};

extern "C" __global__ __aicore__ void softmax_rows_float(GM_ADDR x, GM_ADDR y, uint32_t rows, uint32_t cols)
{
    KernelSoftmaxRows<float> op;
    op.Init(x, y, rows, cols);
    op.Process();
}

extern "C" __global__ __aicore__ void softmax_rows_half(GM_ADDR x, GM_ADDR y, uint32_t rows, uint32_t cols)
{
    KernelSoftmaxRows<half> op;
    op.Init(x, y, rows, cols);
    op.Process();
}

constexpr uint32_t COLS = 64;
constexpr uint32_t TILE_ROWS = 32;

extern "C" __global__ __aicore__ void softmax_whole64(GM_ADDR x, GM_ADDR y, uint32_t rows)
{
    uint32_t share = (rows + GetBlockNum() - 1) / GetBlockNum();
    uint32_t first = share * GetBlockIdx();
    uint32_t myRows = first >= rows ? 0 : (rows - first < share ? rows - first : share);
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + first * COLS, myRows * COLS);
    yGm.SetGlobalBuffer((__gm__ float*)y + first * COLS, myRows * COLS);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    TBuf<TPosition::VECCALC> maxBuf, sumBuf;
    pipe.InitBuffer(inQ, 1, TILE_ROWS * COLS * sizeof(float));
    pipe.InitBuffer(maxBuf, TILE_ROWS * sizeof(float));
    pipe.InitBuffer(sumBuf, TILE_ROWS * sizeof(float));
    LocalTensor<float> maxes = maxBuf.Get<float>();
    LocalTensor<float> sums = sumBuf.Get<float>();
    for (uint32_t row = 0; row < myRows; row += TILE_ROWS) {
        uint32_t n = myRows - row < TILE_ROWS ? myRows - row : TILE_ROWS;
        LocalTensor<float> xl = inQ.AllocTensor<float>();
        DataCopy(xl, xGm[row * COLS], n * COLS);
        inQ.EnQue(xl);
        xl = inQ.DeQue<float>();
        WholeReduceMax(maxes, xl, COLS, n, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
        for (uint32_t r = 0; r < n; ++r) Adds(xl[r * COLS], xl[r * COLS], -maxes.GetValue(r), COLS);
        Exp(xl, xl, n * COLS);
        WholeReduceSum(sums, xl, COLS, n, 1, 1, 8);
        for (uint32_t r = 0; r < n; ++r) Muls(xl[r * COLS], xl[r * COLS], 1.0f / sums.GetValue(r), COLS);
        DataCopy(yGm[row * COLS], xl, n * COLS);
        inQ.FreeTensor(xl);
    }
}
