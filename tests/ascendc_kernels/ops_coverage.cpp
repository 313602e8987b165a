// Single-block probes of the less common APIs, each writing its result to GM.
#include "kernel_operator.h"
using namespace AscendC;

// Cast float -> half (round to nearest, floor), float -> int32 (floor, round), half -> float.
extern "C" __global__ __aicore__ void cast_probe(GM_ADDR x, GM_ADDR toHalf, GM_ADDR toHalfFloor, GM_ADDR toIntFloor,
                                                 GM_ADDR toIntRound, GM_ADDR back, uint32_t n)
{
    GlobalTensor<float> xGm, backGm;
    GlobalTensor<half> hGm, hfGm;
    GlobalTensor<int32_t> ifGm, irGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, n);
    hGm.SetGlobalBuffer((__gm__ half*)toHalf, n);
    hfGm.SetGlobalBuffer((__gm__ half*)toHalfFloor, n);
    ifGm.SetGlobalBuffer((__gm__ int32_t*)toIntFloor, n);
    irGm.SetGlobalBuffer((__gm__ int32_t*)toIntRound, n);
    backGm.SetGlobalBuffer((__gm__ float*)back, n);
    TPipe pipe;
    TBuf<> fb, hb, ib;
    pipe.InitBuffer(fb, n * sizeof(float));
    pipe.InitBuffer(hb, n * sizeof(half));
    pipe.InitBuffer(ib, n * sizeof(int32_t));
    LocalTensor<float> f = fb.Get<float>();
    LocalTensor<half> h = hb.Get<half>();
    LocalTensor<int32_t> i = ib.Get<int32_t>();
    DataCopy(f, xGm, n);
    Cast(h, f, RoundMode::CAST_NONE, n);
    DataCopy(hGm, h, n);
    Cast(h, f, RoundMode::CAST_FLOOR, n);
    DataCopy(hfGm, h, n);
    Cast(i, f, RoundMode::CAST_FLOOR, n);
    DataCopy(ifGm, i, n);
    Cast(i, f, RoundMode::CAST_ROUND, n);
    DataCopy(irGm, i, n);
    Cast(h, f, RoundMode::CAST_NONE, n);
    Cast(f, h, RoundMode::CAST_NONE, n);
    DataCopy(backGm, f, n);
}

// out[0..3] = max, index of max, min, index of min over n floats (ReduceMax/Min
// with calIndex); out[8 + 2r], out[9 + 2r] = value/index pairs of WholeReduceMax
// per 64-float row; out[8 + 2 * rows + r] = WholeReduceMin values only.
extern "C" __global__ __aicore__ void reduce_probe(GM_ADDR x, GM_ADDR out, uint32_t n)
{
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, n);
    outGm.SetGlobalBuffer((__gm__ float*)out, 8 + 3 * (n / 64));
    TPipe pipe;
    TBuf<> xb, rb, wb, pb;
    pipe.InitBuffer(xb, n * sizeof(float));
    pipe.InitBuffer(rb, 32);
    pipe.InitBuffer(wb, 256);
    pipe.InitBuffer(pb, 2 * (n / 64) * sizeof(float));
    LocalTensor<float> xl = xb.Get<float>(), red = rb.Get<float>(), work = wb.Get<float>(), pairs = pb.Get<float>();
    DataCopy(xl, xGm, n);
    ReduceMax(red, xl, work, n, true);
    outGm.SetValue(0, red.GetValue(0));
    float bits = red.GetValue(1);
    uint32_t index;
    std::memcpy(&index, &bits, 4);
    outGm.SetValue(1, static_cast<float>(index));
    ReduceMin(red, xl, work, n, true);
    outGm.SetValue(2, red.GetValue(0));
    bits = red.GetValue(1);
    std::memcpy(&index, &bits, 4);
    outGm.SetValue(3, static_cast<float>(index));
    uint32_t rows = n / 64;
    WholeReduceMax(pairs, xl, 64, rows, 1, 1, 8);
    for (uint32_t r = 0; r < rows; ++r) {
        outGm.SetValue(8 + 2 * r, pairs.GetValue(2 * r));
        bits = pairs.GetValue(2 * r + 1);
        std::memcpy(&index, &bits, 4);
        outGm.SetValue(9 + 2 * r, static_cast<float>(index));
    }
    WholeReduceMin(pairs, xl, 64, rows, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
    for (uint32_t r = 0; r < rows; ++r) outGm.SetValue(8 + 2 * rows + r, pairs.GetValue(r));
}

// A rows x cols (cols not a multiple of 8) float matrix: copy each row into its
// own 32-byte-aligned UB row with DataCopyPad (padding -1 on the right), add 1,
// write back with DataCopyPad; also a strided DataCopy of the first 8 columns
// of every row of an 8-aligned matrix `m` (rows x 16) into `firstCols`, and a
// repeat-form Duplicate that writes 2.0 into the first 8 lanes of each repeat.
extern "C" __global__ __aicore__ void copy_probe(GM_ADDR a, GM_ADDR aOut, GM_ADDR padded, GM_ADDR m,
                                                 GM_ADDR firstCols, GM_ADDR dup, uint32_t rows, uint32_t cols)
{
    uint32_t colsAligned = (cols + 7) / 8 * 8;
    GlobalTensor<float> aGm, aOutGm, paddedGm, mGm, fcGm, dupGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, rows * cols);
    aOutGm.SetGlobalBuffer((__gm__ float*)aOut, rows * cols);
    paddedGm.SetGlobalBuffer((__gm__ float*)padded, rows * colsAligned);
    mGm.SetGlobalBuffer((__gm__ float*)m, rows * 16);
    fcGm.SetGlobalBuffer((__gm__ float*)firstCols, rows * 8);
    dupGm.SetGlobalBuffer((__gm__ float*)dup, 128);
    TPipe pipe;
    TBuf<> ab, mb, db;
    pipe.InitBuffer(ab, rows * colsAligned * sizeof(float));
    pipe.InitBuffer(mb, rows * 8 * sizeof(float));
    pipe.InitBuffer(db, 128 * sizeof(float));
    LocalTensor<float> al = ab.Get<float>(), ml = mb.Get<float>(), dl = db.Get<float>();

    uint8_t right = static_cast<uint8_t>(colsAligned - cols);
    DataCopyPad(al, aGm, DataCopyExtParams{static_cast<uint16_t>(rows), static_cast<uint32_t>(cols * 4), 0, 0, 0},
                DataCopyPadExtParams<float>{true, 0, right, -1.0f});
    DataCopy(paddedGm, al, rows * colsAligned);
    Adds(al, al, 1.0f, rows * colsAligned);
    DataCopyPad(aOutGm, al, DataCopyExtParams{static_cast<uint16_t>(rows), static_cast<uint32_t>(cols * 4), 0, 0, 0});

    DataCopyParams strided;
    strided.blockCount = static_cast<uint16_t>(rows);
    strided.blockLen = 1;   // one 32-byte block = 8 floats
    strided.srcStride = 1;  // skip the other 8 floats of each GM row
    strided.dstStride = 0;
    DataCopy(ml, mGm, strided);
    DataCopy(fcGm, ml, rows * 8);

    Duplicate(dl, 0.0f, 128);
    Duplicate(dl, 2.0f, 8, 2, 1, 8);
    DataCopy(dupGm, dl, 128);
}
