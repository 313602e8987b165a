// The cube unit of a 910B AI Core (AIC), from the public Ascend C
// documentation of the matrix APIs, in our own words:
//
//   GM --DataCopy(Nd2NzParams)--> L1 (A1/B1) --LoadData--> L0A (A2) / L0B (B2)
//      --Mmad--> L0C (CO1) --Fixpipe--> GM
//
// Matrices live in 512-byte fractals. A fractal of the left matrix is
// 16 rows x C0 columns with C0 = 32 bytes / sizeof(T) (16 halves, 8 floats,
// 32 int8), of the right matrix C0 rows x 16 columns, of the result 16 x 16.
// Mmad reads A2 as "Zz" (fractals in row-major order, each row-major), B2 as
// "Zn" (fractals row-major, each column-major) and writes CO1 as "Nz"
// (fractals column-major, each row-major): element (i, j) of a result with
// M rows lies at (j / 16) * ceil16(M) * 16 + i * 16 + j % 16. With m == 1 the
// cube runs as GEMV and reads A2 as K consecutive elements.
#pragma once
#include "cast.h"
#include "sync.h"

namespace AscendC {

enum class CubeFormat : int32_t { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR };

// GM -> L1 with the row-major (ND) to fractal (NZ) conversion on the way.
struct Nd2NzParams {
    uint16_t ndNum = 1;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
    Nd2NzParams() = default;
    Nd2NzParams(uint16_t ndNumIn, uint16_t nValueIn, uint16_t dValueIn, uint16_t srcNdMatrixStrideIn,
                uint16_t srcDValueIn, uint16_t dstNzC0StrideIn, uint16_t dstNzNStrideIn, uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn) {}
};

struct LoadData2DParams {
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint8_t sid = 0;
    uint16_t dstGap = 0;
    bool ifTranspose = false;
    uint8_t addrMode = 0;
    LoadData2DParams() = default;
    LoadData2DParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint8_t sidIn,
                     uint16_t dstGapIn, bool ifTransposeIn, uint8_t addrModeIn)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), sid(sidIn),
          dstGap(dstGapIn), ifTranspose(ifTransposeIn), addrMode(addrModeIn) {}
};
using LoadData2dParams = LoadData2DParams;

struct LoadData2dTransposeParams {
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint8_t addrMode = 0;
    LoadData2dTransposeParams() = default;
    LoadData2dTransposeParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint16_t dstGapIn,
                              uint16_t dstFracGapIn, uint8_t addrModeIn = 0)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstFracGapIn), addrMode(addrModeIn) {}
};

struct MmadParams {
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;
    MmadParams() = default;
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, bool isBiasIn = false, int32_t fmOffsetIn = 0,
               bool enSsparseIn = false, bool enWinogradAIn = false, bool enWinogradBIn = false)
        : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn) {}
};

enum class QuantMode_t : int32_t { NoQuant = 0, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8,
                                   VREQ8 };
using QuantMode = QuantMode_t;

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };
struct FixpipeConfig {
    CO2Layout format;
    bool isToUB = false;
};
constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};

struct FixpipeParamsV220 {
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
    FixpipeParamsV220() = default;
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
};
using FixpipeParams = FixpipeParamsV220;

}  // namespace AscendC

namespace evk {

template <typename T>
constexpr uint32_t c0_of() { return kBlockBytes / sizeof(T); }
constexpr uint64_t kFractalBytes = 512;
inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

template <typename T>
inline void require_position(const AscendC::LocalTensor<T>& t, std::initializer_list<Phys> ok, const char* api,
                             const char* role, const std::string& fix, Site site) {
    t.check_live(site, api);
    for (Phys p : ok)
        if (phys(t) == p) return;
    hazard("wrong_position", std::string(api) + ": " + role + " is in " + t.where() + ". " + fix, site);
}

template <typename T>
inline void require_bytes(const AscendC::LocalTensor<T>& t, uint64_t bytes, const char* api, const char* role,
                          const std::string& why, Site site) {
    uint64_t have = static_cast<uint64_t>(t.size_) * sizeof(T);
    if (bytes > have)
        hazard("buffer_out_of_bounds",
               evk::fmt("%s reads or writes %llu bytes of %s, a LocalTensor<%s> of %llu bytes in ", api,
                        (unsigned long long)bytes, role, type_name<T>(), (unsigned long long)have) +
                   t.where() + ": " + why,
               site);
}

// One fractal, transposed in place into `out` (b16: 16x16).
template <typename T>
inline void transpose16(T* out, const T* in) {
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c) out[c * 16 + r] = in[r * 16 + c];
}

}  // namespace evk

namespace AscendC {

// ---- GM -> L1 with ND -> NZ ----------------------------------------------------
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p,
                     evk::Site site = evk::Site()) {
    const char* api = "DataCopy(GM->L1, Nd2NzParams)";
    evk::require_position(dst, {evk::Phys::L1}, api, "the destination",
                          "The ND -> NZ conversion writes L1: use a TQue<TPosition::A1> (left matrix) or B1 (right "
                          "matrix) tensor; vector data goes GM -> UB with DataCopy(dst, src, count)",
                          site);
    dst.check_aligned(site, api, "the destination");
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;  // a NOP, as on the hardware
    if (p.srcDValue < p.dValue || p.dstNzC0Stride == 0 || p.dstNzNStride == 0)
        evk::hazard("invalid_argument",
                    evk::fmt("%s with dValue=%u, srcDValue=%u, dstNzC0Stride=%u, dstNzNStride=%u: srcDValue (the "
                             "GM row length in elements) must be at least dValue, and the two NZ strides (in 32-byte "
                             "blocks) at least 1; for an M x K matrix use {1, M, K, 0, K, ceil16(M), 1, 0}",
                             api, p.dValue, p.srcDValue, p.dstNzC0Stride, p.dstNzNStride),
                    site);
    constexpr uint32_t C0 = evk::c0_of<T>();
    uint64_t cblocks = evk::ceil_div(p.dValue, C0);
    uint64_t last = 0;  // one past the last destination element written
    for (uint64_t i = 0; i < p.ndNum; ++i)
        for (uint64_t r = 0; r < p.nValue; ++r)
            for (uint64_t b = 0; b < cblocks; ++b)
                last = std::max<uint64_t>(last, i * p.dstNzMatrixStride + b * p.dstNzC0Stride * C0 +
                                                    r * p.dstNzNStride * C0 + C0);
    dst.check_span(0, last, site, api, "the destination");
    uint64_t src_last = (p.ndNum - 1) * static_cast<uint64_t>(p.srcNdMatrixStride) +
                        (p.nValue - 1) * static_cast<uint64_t>(p.srcDValue) + p.dValue;
    src.check_span(0, src_last, site, api);
    for (uint64_t i = 0; i < p.ndNum; ++i)
        for (uint64_t r = 0; r < p.nValue; ++r) {
            const T* row = src.data_ + i * p.srcNdMatrixStride + r * p.srcDValue;
            evk::gm_read(row, p.dValue * sizeof(T), sizeof(T), site);
            for (uint64_t b = 0; b < cblocks; ++b) {
                T* out = dst.data_ + i * p.dstNzMatrixStride + b * p.dstNzC0Stride * C0 + r * p.dstNzNStride * C0;
                for (uint32_t c = 0; c < C0; ++c) {
                    uint64_t col = b * C0 + c;
                    out[c] = col < p.dValue ? row[col] : static_cast<T>(0);  // rows padded to 32 bytes with 0
                }
            }
        }
    evk::core().gm_to_l1_bytes += static_cast<uint64_t>(p.ndNum) * p.nValue * p.dValue * sizeof(T);
    evk::core().l1_copies++;
}

// ---- L1 (or GM) -> L0A/L0B -------------------------------------------------------
namespace detail {
template <typename T>
inline void check_load_dst(const LocalTensor<T>& dst, const char* api, bool from_b1, bool from_a1, evk::Site site) {
    evk::require_position(dst, {evk::Phys::L0A, evk::Phys::L0B}, api, "the destination",
                          "LoadData fills L0A (TPosition::A2, the left matrix) or L0B (TPosition::B2, the right "
                          "matrix); L1 is filled from GM with DataCopy(a1, aGm, Nd2NzParams{...})",
                          site);
    evk::Phys d = evk::phys(dst);
    if ((from_a1 && d != evk::Phys::L0A) || (from_b1 && d != evk::Phys::L0B))
        evk::hazard("wrong_position",
                    std::string(api) + " from " + (from_a1 ? "A1" : "B1") + " into " + dst.where() +
                        ": the left matrix goes A1 -> A2 (L0A) and the right matrix B1 -> B2 (L0B). Load the "
                        "right matrix from a TQue<TPosition::B1> into a TQue<TPosition::B2> tensor (and the left "
                        "from A1 into A2)",
                    site);
    dst.check_aligned(site, api, "the destination", evk::kFractalBytes);
}
}  // namespace detail

template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p,
                     evk::Site site = evk::Site()) {
    const char* api = "LoadData(L1->L0, LoadData2DParams)";
    evk::require_position(src, {evk::Phys::L1}, api, "the source",
                          "LoadData reads L1 (TPosition::A1/B1) or a GlobalTensor; copy GM into an A1/B1 queue "
                          "first with DataCopy(a1, aGm, Nd2NzParams{...})",
                          site);
    bool a1 = src.position_ == TPosition::A1, b1 = src.position_ == TPosition::B1;
    detail::check_load_dst(dst, api, b1, a1, site);
    src.check_aligned(site, api, "the source");
    if (p.ifTranspose && sizeof(T) != 2)
        evk::hazard("invalid_argument",
                    evk::fmt("%s with ifTranspose=true on %s: the fractal transpose of LoadData works on 16-bit "
                             "types only; transpose 32-bit data with LoadDataWithTranspose(dst, src, "
                             "LoadData2dTransposeParams{...})",
                             api, evk::type_name<T>()),
                    site);
    if (p.addrMode != 0)
        evk::hazard("invalid_argument", std::string(api) + ": addrMode must be 0 on the L1 -> L0 path", site);
    if (p.repeatTimes == 0) return;
    constexpr uint64_t F = evk::kFractalBytes / sizeof(T);
    uint64_t src_end = (static_cast<uint64_t>(p.startIndex) + (p.repeatTimes - 1) * uint64_t(p.srcStride) + 1) * F;
    uint64_t dst_end = ((p.repeatTimes - 1) * (1 + uint64_t(p.dstGap)) + 1) * F;
    evk::require_bytes(src, src_end * sizeof(T), api, "the source",
                       evk::fmt("fractal %llu (startIndex %u + %u repeats x srcStride %u) is past its end",
                                (unsigned long long)(src_end / F - 1), p.startIndex, p.repeatTimes - 1, p.srcStride),
                       site);
    evk::require_bytes(dst, dst_end * sizeof(T), api, "the destination",
                       evk::fmt("%u fractals of 512 bytes (dstGap %u) do not fit", p.repeatTimes, p.dstGap), site);
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        const T* in = src.data_ + (p.startIndex + r * p.srcStride) * F;
        T* out = dst.data_ + r * (1 + p.dstGap) * F;
        if (p.ifTranspose) evk::transpose16(out, in);
        else std::memcpy(out, in, evk::kFractalBytes);
    }
    evk::core().l1_to_l0_bytes += p.repeatTimes * evk::kFractalBytes;
    evk::core().loaddata_calls++;
}

template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const LoadData2DParams& p,
                     evk::Site site = evk::Site()) {
    const char* api = "LoadData(GM->L0, LoadData2DParams)";
    detail::check_load_dst(dst, api, false, false, site);
    if (p.ifTranspose)
        evk::hazard("invalid_argument",
                    std::string(api) + ": ifTranspose works only from L1 (A1/B1); load into L1 first", site);
    if (p.repeatTimes == 0) return;
    constexpr uint64_t F = evk::kFractalBytes / sizeof(T);
    uint64_t dst_end = ((p.repeatTimes - 1) * (1 + uint64_t(p.dstGap)) + 1) * F;
    evk::require_bytes(dst, dst_end * sizeof(T), api, "the destination",
                       evk::fmt("%u fractals of 512 bytes (dstGap %u) do not fit", p.repeatTimes, p.dstGap), site);
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        uint64_t first = (p.startIndex + r * p.srcStride) * F;
        src.check_span(first, F, site, api);
        evk::gm_read(src.data_ + first, evk::kFractalBytes, sizeof(T), site);
        std::memcpy(dst.data_ + r * (1 + p.dstGap) * F, src.data_ + first, evk::kFractalBytes);
    }
    evk::core().gm_to_l0_bytes += p.repeatTimes * evk::kFractalBytes;
    evk::core().loaddata_calls++;
}

// L1 -> L0 with each square of fractals transposed. b16: one 16x16 fractal per
// repeat. b32: two consecutive 16x8 fractals [f0 | f1] form a 16x16 square S,
// written out as S^T split by columns into two 16x8 fractals, the second one
// (1 + dstFracGap) fractals after the first; repeats are (1 + dstGap)
// fractals apart. (Our reading of the documentation's figures.)
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                  const LoadData2dTransposeParams& p, evk::Site site = evk::Site()) {
    const char* api = "LoadDataWithTranspose";
    evk::require_position(src, {evk::Phys::L1}, api, "the source", "it reads L1 (TPosition::A1/B1)", site);
    bool a1 = src.position_ == TPosition::A1, b1 = src.position_ == TPosition::B1;
    detail::check_load_dst(dst, api, b1, a1, site);
    src.check_aligned(site, api, "the source");
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "LoadDataWithTranspose is modelled for 16- and 32-bit types");
    if (p.repeatTimes == 0) return;
    constexpr uint64_t F = evk::kFractalBytes / sizeof(T);
    constexpr uint64_t per = sizeof(T) == 2 ? 1 : 2;  // fractals per square
    uint64_t src_end = (p.startIndex + (p.repeatTimes - 1) * uint64_t(p.srcStride) + 1) * per * F;
    uint64_t dst_end = ((p.repeatTimes - 1) * (1 + uint64_t(p.dstGap)) + (per == 2 ? 2 + p.dstFracGap : 1)) * F;
    evk::require_bytes(src, src_end * sizeof(T), api, "the source", "the squares run past its end", site);
    evk::require_bytes(dst, dst_end * sizeof(T), api, "the destination", "the transposed fractals do not fit",
                       site);
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        const T* in = src.data_ + (p.startIndex + r * p.srcStride) * per * F;
        T* out = dst.data_ + r * (1 + p.dstGap) * F;
        if (per == 1) {
            evk::transpose16(out, in);
            continue;
        }
        T* out1 = out + (1 + p.dstFracGap) * F;
        for (int i = 0; i < 16; ++i)      // row of S^T = column of S
            for (int j = 0; j < 16; ++j) {  // column of S^T = row of S
                T v = i < 8 ? in[j * 8 + i] : in[F + j * 8 + (i - 8)];
                if (j < 8) out[i * 8 + j] = v;
                else out1[i * 8 + (j - 8)] = v;
            }
    }
    evk::core().l1_to_l0_bytes += p.repeatTimes * per * evk::kFractalBytes;
    evk::core().loaddata_calls++;
}

// ---- Mmad ------------------------------------------------------------------------
}  // namespace AscendC

namespace evk {

template <typename D, typename A, typename B>
inline void check_mmad_types(Site site) {
    using AscendC::bfloat16_t;
    using AscendC::half;
    constexpr bool ok = (std::is_same<A, half>::value && std::is_same<B, half>::value && std::is_same<D, float>::value) ||
                        (std::is_same<A, bfloat16_t>::value && std::is_same<B, bfloat16_t>::value &&
                         std::is_same<D, float>::value) ||
                        (std::is_same<A, float>::value && std::is_same<B, float>::value && std::is_same<D, float>::value) ||
                        (std::is_same<A, int8_t>::value && std::is_same<B, int8_t>::value &&
                         std::is_same<D, int32_t>::value);
    if (!ok)
        hazard("invalid_argument",
               evk::fmt("Mmad(%s L0C, %s A2, %s B2): the 910B cube multiplies half x half, bfloat16_t x bfloat16_t "
                        "or float x float into a float L0C tensor, and int8_t x int8_t into int32_t",
                        type_name<D>(), type_name<A>(), type_name<B>()),
               site);
}

template <typename D, typename A, typename B, typename V>
inline void mmad(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<A>& fm,
                 const AscendC::LocalTensor<B>& filter, const AscendC::LocalTensor<V>* bias,
                 const AscendC::MmadParams& p, Site site) {
    const char* api = "Mmad";
    require_position(dst, {Phys::L0C}, api, "the result (dst)",
                     "Mmad writes L0C: use a TQue<TPosition::CO1> tensor, then Fixpipe it to GM", site);
    require_position(fm, {Phys::L0A}, api, "the left matrix (fm)",
                     "Mmad reads the left matrix from L0A: LoadData it from A1 into a TQue<TPosition::A2> tensor",
                     site);
    require_position(filter, {Phys::L0B}, api, "the right matrix (filter)",
                     "Mmad reads the right matrix from L0B: LoadData it from B1 into a TQue<TPosition::B2> tensor",
                     site);
    check_mmad_types<D, A, B>(site);
    fm.check_aligned(site, api, "the left matrix (fm)", kFractalBytes);
    filter.check_aligned(site, api, "the right matrix (filter)", kFractalBytes);
    dst.check_aligned(site, api, "the result (dst)", 256 * sizeof(D));
    if (p.m > 4095 || p.n > 4095 || p.k > 4095)
        hazard("invalid_argument",
               evk::fmt("Mmad m=%u n=%u k=%u: each is at most 4095; split the work into several Mmad calls (one per "
                        "base block, accumulating over K with cmatrixInitVal=false)",
                        p.m, p.n, p.k),
               site);
    if (p.m == 0 || p.n == 0 || p.k == 0) return;  // not executed, as on the hardware
    constexpr uint64_t C0 = c0_of<A>();
    const uint64_t m = p.m, n = p.n, k = p.k;
    const uint64_t mf = ceil_div(m, 16), nf = ceil_div(n, 16);
    const uint64_t kf = (sizeof(A) == 4 && p.kDirectionAlign) ? 2 * ceil_div(k, 16) : ceil_div(k, C0);
    const bool gemv = m == 1;
    const uint64_t a_bytes = gemv ? k * sizeof(A) : mf * kf * kFractalBytes;
    require_bytes(fm, a_bytes, api, "the left matrix (fm)",
                  gemv ? evk::fmt("with m=1 the cube runs as GEMV and reads k=%llu consecutive elements",
                                  (unsigned long long)k)
                       : evk::fmt("m=%llu, k=%llu need %llu x %llu fractals of 16 x %llu", (unsigned long long)m,
                                  (unsigned long long)k, (unsigned long long)mf, (unsigned long long)kf,
                                  (unsigned long long)C0),
                  site);
    require_bytes(filter, kf * nf * kFractalBytes, api, "the right matrix (filter)",
                  evk::fmt("k=%llu, n=%llu need %llu x %llu fractals of %llu x 16", (unsigned long long)k,
                           (unsigned long long)n, (unsigned long long)kf, (unsigned long long)nf,
                           (unsigned long long)C0),
                  site);
    require_bytes(dst, nf * mf * 256 * sizeof(D), api, "the result (dst)",
                  evk::fmt("m=%llu, n=%llu need %llu x %llu result fractals of 16 x 16 x %u bytes",
                           (unsigned long long)m, (unsigned long long)n, (unsigned long long)mf,
                           (unsigned long long)nf, (unsigned)sizeof(D)),
                  site);
    const uint64_t mpad = mf * 16;
    std::vector<acc_t<D>> bias_row;
    if (bias) {
        require_position(*bias, {Phys::BT, Phys::L0C}, api, "the bias",
                         "the bias of Mmad lives in the bias table (TPosition::C2, filled from C1 with DataCopy) or "
                         "in L0C (TPosition::CO1)",
                         site);
        bias->check_aligned(site, api, "the bias", 64);
        bias->check_span(0, n, site, api, "the bias");
        bias_row.resize(n);
        for (uint64_t j = 0; j < n; ++j) bias_row[j] = static_cast<acc_t<D>>(bias->data_[j]);
    }
    const bool accumulate = !bias && (p.isBias || !p.cmatrixInitVal);
    for (uint64_t i = 0; i < m; ++i)
        for (uint64_t j = 0; j < n; ++j) {
            D& c = dst.data_[(j / 16) * mpad * 16 + i * 16 + j % 16];
            double acc = bias ? static_cast<double>(bias_row[j]) : accumulate ? static_cast<double>(c) : 0.0;
            float facc = static_cast<float>(acc);
            for (uint64_t kk = 0; kk < k; ++kk) {
                A a = gemv ? fm.data_[kk] : fm.data_[((i / 16) * kf + kk / C0) * (kFractalBytes / sizeof(A)) +
                                                     (i % 16) * C0 + kk % C0];
                B b = filter.data_[((kk / C0) * nf + j / 16) * (kFractalBytes / sizeof(B)) + (j % 16) * C0 + kk % C0];
                if constexpr (std::is_integral<D>::value) acc += static_cast<double>(a) * static_cast<double>(b);
                else facc += static_cast<float>(a) * static_cast<float>(b);
            }
            if constexpr (std::is_integral<D>::value) c = static_cast<D>(acc);
            else c = static_cast<D>(facc);
        }
    // One fractal triple (16 x 16 x C0) per cycle: 4096 half MACs, 2048 float MACs or 8192 int8 MACs.
    core().mmad_cycles += mf * nf * kf;
    core().mmad_calls++;
}

}  // namespace evk

namespace AscendC {

template <typename T, typename U, typename S>
inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                 const MmadParams& mmadParams, evk::Site site = evk::Site()) {
    evk::mmad<T, U, S, float>(dst, fm, filter, nullptr, mmadParams, site);
}

template <typename T, typename U, typename S, typename V>
inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                 const LocalTensor<V>& bias, const MmadParams& mmadParams, evk::Site site = evk::Site()) {
    evk::mmad<T, U, S, V>(dst, fm, filter, &bias, mmadParams, site);
}

// ---- L0C -> GM -----------------------------------------------------------------
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p,
                    evk::Site site = evk::Site()) {
    const char* api = "Fixpipe(CO1->GM)";
    evk::require_position(src, {evk::Phys::L0C}, api, "the source",
                          "Fixpipe moves Mmad results out of L0C (TPosition::CO1); UB data goes to GM with "
                          "DataCopy(dstGm, ubLocal, count)",
                          site);
    src.check_aligned(site, api, "the source", 64);
    using QM = QuantMode_t;
    constexpr bool f32 = std::is_same<U, float>::value, i32 = std::is_same<U, int32_t>::value;
    bool ok = (p.quantPre == QM::NoQuant && std::is_same<T, U>::value && (f32 || i32)) ||
              (p.quantPre == QM::F322F16 && f32 && std::is_same<T, half>::value) ||
              (p.quantPre == QM::F322BF16 && f32 && std::is_same<T, bfloat16_t>::value);
    if (!ok) {
        std::string want = std::is_same<T, half>::value       ? "quantPre = QuantMode_t::F322F16"
                           : std::is_same<T, bfloat16_t>::value ? "quantPre = QuantMode_t::F322BF16"
                                                                : "quantPre = QuantMode_t::NoQuant";
        evk::hazard("invalid_argument",
                    evk::fmt("Fixpipe from a %s L0C tensor to a %s GM tensor with quantPre=%d: ", evk::type_name<U>(),
                             evk::type_name<T>(), static_cast<int>(p.quantPre)) +
                        "a float result goes out as float with NoQuant, as half with F322F16, as bfloat16_t with "
                        "F322BF16 (the scalar/vector quantisation modes are not modelled); set " + want,
                    site);
    }
    if (p.nSize == 0 || p.mSize == 0 || p.ndNum == 0) return;
    const bool nd = config.format == CO2Layout::ROW_MAJOR;
    if (!nd && p.nSize % 16 != 0)
        evk::hazard("invalid_argument",
                    evk::fmt("%s with CFG_NZ and nSize=%u: an NZ output needs nSize to be a multiple of 16", api,
                             p.nSize),
                    site);
    if (p.srcStride < p.mSize && p.nSize > 16)
        evk::hazard("invalid_argument",
                    evk::fmt("%s srcStride=%u is less than mSize=%u: srcStride is the distance between the 16-column "
                             "strips of the NZ result in 16-element units, ceil16(M) for an Mmad with M rows",
                             api, p.srcStride, p.mSize),
                    site);
    if (nd && p.dstStride < p.nSize)
        evk::hazard("invalid_argument",
                    evk::fmt("%s dstStride=%u is less than nSize=%u: with CFG_ROW_MAJOR dstStride is the GM row "
                             "length in elements (N of the output matrix)",
                             api, p.dstStride, p.nSize),
                    site);
    const uint64_t strips = evk::ceil_div(p.nSize, 16);
    const uint64_t src_need = (p.ndNum - 1) * uint64_t(p.srcNdStride) * 256 +
                              (strips - 1) * uint64_t(p.srcStride) * 16 + (p.mSize - 1) * 16 + 16;
    src.check_span(0, src_need, site, api, "the source");
    std::vector<T> row(p.nSize);
    for (uint64_t d = 0; d < p.ndNum; ++d)
        for (uint64_t i = 0; i < p.mSize; ++i) {
            for (uint64_t j = 0; j < p.nSize; ++j) {
                U v = src.data_[d * p.srcNdStride * 256 + (j / 16) * p.srcStride * 16 + i * 16 + j % 16];
                evk::acc_t<U> x = static_cast<evk::acc_t<U>>(v);
                if (p.reluEn && x < 0) x = 0;
                if constexpr (std::is_same<T, half>::value) row[j] = evk::convert<half>(float(x), RoundMode::CAST_RINT);
                else row[j] = static_cast<T>(x);
            }
            if (nd) {
                uint64_t at = d * p.dstNdStride + i * p.dstStride;
                dst.check_span(at, p.nSize, site, api);
                evk::gm_store(dst.data_ + at, row.data(), p.nSize, site);
            } else {
                for (uint64_t s = 0; s < strips; ++s) {
                    uint64_t at = s * p.dstStride * (evk::kBlockBytes / sizeof(T)) + i * 16;
                    dst.check_span(at, 16, site, api);
                    evk::gm_store(dst.data_ + at, row.data() + s * 16, 16, site);
                }
            }
        }
    evk::core().fixpipe_bytes += uint64_t(p.ndNum) * p.mSize * p.nSize * sizeof(T);
    evk::core().fixpipe_calls++;
}

}  // namespace AscendC
