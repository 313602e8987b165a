// Vector instructions on LocalTensors: the count form (calCount elements) and
// the repeat form (mask, repeatTimes, block and repeat strides).
#pragma once
#include <algorithm>
#include "copy.h"

namespace evk {

template <typename T> struct identity { using type = T; };
// The scalar operand of Adds/Muls/Duplicate... converts to the tensor type
// instead of taking part in deduction, so Muls(xHalf, xHalf, 0.5f, n) works.
template <typename T> using nd = typename identity<T>::type;

template <typename T>
constexpr bool is_float_v = std::is_floating_point<T>::value || std::is_same<T, AscendC::half>::value ||
                            std::is_same<T, AscendC::bfloat16_t>::value;

template <typename T>
inline void vec_operand(const AscendC::LocalTensor<T>& t, uint64_t count, Site site, const char* op, const char* role) {
    require_ub(t, op, role, site);
    t.check_span(0, count, site, op, role);
    t.check_aligned(site, op, role);
}

inline void check_count(int64_t count, const char* op, Site site) {
    if (count < 0)
        hazard("invalid_argument", evk::fmt("%s called with a negative calCount (%lld)", op, (long long)count), site);
}

// Which of the 256/sizeof(T) element slots of one repeat are active.
template <typename T>
struct RepeatMask {
    static constexpr uint64_t per_repeat = kRepeatBytes / sizeof(T);
    uint64_t bits[4] = {0, 0, 0, 0};
    uint64_t highest = 0;  // one past the highest active slot

    static RepeatMask counted(uint64_t n, const char* op, Site site) {
        if (n == 0 || n > per_repeat)
            hazard("invalid_argument",
                   evk::fmt("%s mask=%llu: in the repeat form the mask counts the active elements of one repeat "
                            "and must be 1..%llu for %s (256 bytes per repeat)",
                            op, (unsigned long long)n, (unsigned long long)per_repeat, type_name<T>()),
                   site);
        RepeatMask m;
        for (uint64_t j = 0; j < n; ++j) m.bits[j / 64] |= 1ull << (j % 64);
        m.highest = n;
        return m;
    }
    static RepeatMask bitwise(const uint64_t* words, const char* op, Site site) {
        RepeatMask m;
        uint64_t nwords = per_repeat >= 128 ? 2 : 1;
        for (uint64_t w = 0; w < nwords; ++w) m.bits[w] = words[w];
        for (uint64_t j = 0; j < per_repeat && j < 128; ++j)
            if (m.on(j)) m.highest = j + 1;
        if (m.highest == 0)
            hazard("invalid_argument", std::string(op) + " bit mask selects no element", site);
        return m;
    }
    bool on(uint64_t j) const { return (bits[j / 64] >> (j % 64)) & 1ull; }
};

template <typename T>
inline uint64_t repeat_index(uint64_t r, uint64_t j, uint64_t blk_stride, uint64_t rep_stride) {
    constexpr uint64_t per_block = kBlockBytes / sizeof(T);
    return r * rep_stride * per_block + (j / per_block) * blk_stride * per_block + j % per_block;
}

template <typename T>
inline void repeat_operand(const AscendC::LocalTensor<T>& t, const RepeatMask<T>& m, uint64_t repeats,
                           uint64_t blk_stride, uint64_t rep_stride, Site site, const char* op, const char* role) {
    require_ub(t, op, role, site);
    if (repeats == 0) return;
    uint64_t last = repeat_index<T>(repeats - 1, m.highest - 1, blk_stride, rep_stride);
    t.check_span(0, last + 1, site, op, role);
    t.check_aligned(site, op, role);
}

inline void check_repeats(uint64_t repeats, const char* op, Site site) {
    if (repeats > kMaxRepeat)
        hazard("invalid_argument",
               evk::fmt("%s repeatTimes=%llu exceeds the 255 repeats one instruction can do; split it into several "
                        "calls",
                        op, (unsigned long long)repeats),
               site);
}

template <typename T, typename F>
inline void binary_count(const char* op, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a,
                         const AscendC::LocalTensor<T>& b, int64_t n, Site site, F f) {
    check_count(n, op, site);
    vec_operand(dst, n, site, op, "dst");
    vec_operand(a, n, site, op, "src0");
    vec_operand(b, n, site, op, "src1");
    for (int64_t i = 0; i < n; ++i) dst.data_[i] = static_cast<T>(f(acc_t<T>(a.data_[i]), acc_t<T>(b.data_[i])));
    count_vector_elems(op, sizeof(T), n);
}

template <typename T, typename F>
inline void unary_count(const char* op, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a,
                        int64_t n, Site site, F f) {
    check_count(n, op, site);
    vec_operand(dst, n, site, op, "dst");
    vec_operand(a, n, site, op, "src");
    for (int64_t i = 0; i < n; ++i) dst.data_[i] = static_cast<T>(f(acc_t<T>(a.data_[i])));
    count_vector_elems(op, sizeof(T), n);
}

template <typename T, typename F>
inline void binary_repeat(const char* op, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a,
                          const AscendC::LocalTensor<T>& b, const RepeatMask<T>& m, uint64_t repeats,
                          const uint64_t s[6], Site site, F f) {
    check_repeats(repeats, op, site);
    repeat_operand(dst, m, repeats, s[0], s[3], site, op, "dst");
    repeat_operand(a, m, repeats, s[1], s[4], site, op, "src0");
    repeat_operand(b, m, repeats, s[2], s[5], site, op, "src1");
    for (uint64_t r = 0; r < repeats; ++r)
        for (uint64_t j = 0; j < m.highest; ++j)
            if (m.on(j)) {
                T x = a.data_[repeat_index<T>(r, j, s[1], s[4])];
                T y = b.data_[repeat_index<T>(r, j, s[2], s[5])];
                dst.data_[repeat_index<T>(r, j, s[0], s[3])] = static_cast<T>(f(acc_t<T>(x), acc_t<T>(y)));
            }
    count_vector(op, sizeof(T), repeats ? repeats : 1, 1);
}

template <typename T, typename F>
inline void unary_repeat(const char* op, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a,
                         const RepeatMask<T>& m, uint64_t repeats, const uint64_t s[4], Site site, F f) {
    check_repeats(repeats, op, site);
    repeat_operand(dst, m, repeats, s[0], s[2], site, op, "dst");
    repeat_operand(a, m, repeats, s[1], s[3], site, op, "src");
    for (uint64_t r = 0; r < repeats; ++r)
        for (uint64_t j = 0; j < m.highest; ++j)
            if (m.on(j)) {
                T x = a.data_[repeat_index<T>(r, j, s[1], s[3])];
                dst.data_[repeat_index<T>(r, j, s[0], s[2])] = static_cast<T>(f(acc_t<T>(x)));
            }
    count_vector(op, sizeof(T), repeats ? repeats : 1, 1);
}

template <typename T>
inline T safe_div(T a, T b) {
    if constexpr (std::is_integral<T>::value) return b == 0 ? T(0) : a / b;
    else return a / b;
}

}  // namespace evk

namespace AscendC {

struct BinaryRepeatParams {
    uint8_t dstBlkStride = 1, src0BlkStride = 1, src1BlkStride = 1;
    uint16_t dstRepStride = 8, src0RepStride = 8, src1RepStride = 8;
    BinaryRepeatParams() = default;
    BinaryRepeatParams(uint8_t dstBlk, uint8_t src0Blk, uint8_t src1Blk, uint16_t dstRep, uint16_t src0Rep,
                       uint16_t src1Rep)
        : dstBlkStride(dstBlk), src0BlkStride(src0Blk), src1BlkStride(src1Blk), dstRepStride(dstRep),
          src0RepStride(src0Rep), src1RepStride(src1Rep) {}
};

struct UnaryRepeatParams {
    uint16_t dstBlkStride = 1, srcBlkStride = 1;
    uint16_t dstRepStride = 8, srcRepStride = 8;
    UnaryRepeatParams() = default;
    UnaryRepeatParams(uint16_t dstBlk, uint16_t srcBlk, uint16_t dstRep, uint16_t srcRep)
        : dstBlkStride(dstBlk), srcBlkStride(srcBlk), dstRepStride(dstRep), srcRepStride(srcRep) {}
};

#define EVK_BINARY_OP(NAME, EXPR)                                                                                  \
    template <typename T, bool isSetMask = true>                                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,            \
                     const int32_t& calCount, evk::Site site = evk::Site()) {                                      \
        evk::binary_count(#NAME, dst, src0, src1, calCount, site, [](evk::acc_t<T> a, evk::acc_t<T> b) { return EXPR; }); \
    }                                                                                                              \
    template <typename T, bool isSetMask = true>                                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,            \
                     uint64_t mask, uint8_t repeatTimes, const BinaryRepeatParams& p, evk::Site site = evk::Site()) { \
        const uint64_t s[6] = {p.dstBlkStride, p.src0BlkStride, p.src1BlkStride,                                   \
                               p.dstRepStride, p.src0RepStride, p.src1RepStride};                                  \
        evk::binary_repeat(#NAME, dst, src0, src1, evk::RepeatMask<T>::counted(mask, #NAME, site), repeatTimes, s, \
                           site, [](evk::acc_t<T> a, evk::acc_t<T> b) { return EXPR; });                           \
    }                                                                                                              \
    template <typename T, bool isSetMask = true>                                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,            \
                     const uint64_t mask[], uint8_t repeatTimes, const BinaryRepeatParams& p,                      \
                     evk::Site site = evk::Site()) {                                                               \
        const uint64_t s[6] = {p.dstBlkStride, p.src0BlkStride, p.src1BlkStride,                                   \
                               p.dstRepStride, p.src0RepStride, p.src1RepStride};                                  \
        evk::binary_repeat(#NAME, dst, src0, src1, evk::RepeatMask<T>::bitwise(mask, #NAME, site), repeatTimes, s, \
                           site, [](evk::acc_t<T> a, evk::acc_t<T> b) { return EXPR; });                           \
    }

EVK_BINARY_OP(Add, a + b)
EVK_BINARY_OP(Sub, a - b)
EVK_BINARY_OP(Mul, a * b)
EVK_BINARY_OP(Div, evk::safe_div(a, b))
EVK_BINARY_OP(Max, (a > b ? a : b))
EVK_BINARY_OP(Min, (a < b ? a : b))
#undef EVK_BINARY_OP

#define EVK_UNARY_OP(NAME, FLOAT_ONLY, EXPR)                                                                        \
    template <typename T, bool isSetMask = true>                                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& calCount,                \
                     evk::Site site = evk::Site()) {                                                               \
        static_assert(!FLOAT_ONLY || evk::is_float_v<T>, #NAME " supports half and float tensors only");           \
        evk::unary_count(#NAME, dst, src, calCount, site, [](evk::acc_t<T> a) { return EXPR; });                   \
    }                                                                                                              \
    template <typename T, bool isSetMask = true>                                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask, uint8_t repeatTimes,     \
                     const UnaryRepeatParams& p, evk::Site site = evk::Site()) {                                   \
        static_assert(!FLOAT_ONLY || evk::is_float_v<T>, #NAME " supports half and float tensors only");           \
        const uint64_t s[4] = {p.dstBlkStride, p.srcBlkStride, p.dstRepStride, p.srcRepStride};                    \
        evk::unary_repeat(#NAME, dst, src, evk::RepeatMask<T>::counted(mask, #NAME, site), repeatTimes, s, site,   \
                          [](evk::acc_t<T> a) { return EXPR; });                                                   \
    }                                                                                                              \
    template <typename T, bool isSetMask = true>                                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],                  \
                     uint8_t repeatTimes, const UnaryRepeatParams& p, evk::Site site = evk::Site()) {              \
        static_assert(!FLOAT_ONLY || evk::is_float_v<T>, #NAME " supports half and float tensors only");           \
        const uint64_t s[4] = {p.dstBlkStride, p.srcBlkStride, p.dstRepStride, p.srcRepStride};                    \
        evk::unary_repeat(#NAME, dst, src, evk::RepeatMask<T>::bitwise(mask, #NAME, site), repeatTimes, s, site,   \
                          [](evk::acc_t<T> a) { return EXPR; });                                                   \
    }

EVK_UNARY_OP(Exp, true, std::exp(a))
EVK_UNARY_OP(Ln, true, std::log(a))
EVK_UNARY_OP(Sqrt, true, std::sqrt(a))
EVK_UNARY_OP(Rsqrt, true, 1 / std::sqrt(a))
EVK_UNARY_OP(Reciprocal, true, 1 / a)
EVK_UNARY_OP(Abs, false, (a < 0 ? -a : a))
EVK_UNARY_OP(Relu, false, (a > 0 ? a : decltype(a)(0)))
#undef EVK_UNARY_OP

#define EVK_SCALAR_OP(NAME, EXPR)                                                                                  \
    template <typename T, bool isSetMask = true>                                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const evk::nd<T>& scalarValue,          \
                     const int32_t& calCount, evk::Site site = evk::Site()) {                                      \
        evk::acc_t<T> s = evk::acc_t<T>(scalarValue);                                                              \
        evk::unary_count(#NAME, dst, src, calCount, site, [s](evk::acc_t<T> a) { return EXPR; });                  \
    }                                                                                                              \
    template <typename T, bool isSetMask = true>                                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const evk::nd<T>& scalarValue,          \
                     uint64_t mask, uint8_t repeatTimes, const UnaryRepeatParams& p, evk::Site site = evk::Site()) { \
        evk::acc_t<T> s = evk::acc_t<T>(scalarValue);                                                              \
        const uint64_t st[4] = {p.dstBlkStride, p.srcBlkStride, p.dstRepStride, p.srcRepStride};                   \
        evk::unary_repeat(#NAME, dst, src, evk::RepeatMask<T>::counted(mask, #NAME, site), repeatTimes, st, site,  \
                          [s](evk::acc_t<T> a) { return EXPR; });                                                  \
    }                                                                                                              \
    template <typename T, bool isSetMask = true>                                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const evk::nd<T>& scalarValue,          \
                     const uint64_t mask[], uint8_t repeatTimes, const UnaryRepeatParams& p,                       \
                     evk::Site site = evk::Site()) {                                                               \
        evk::acc_t<T> s = evk::acc_t<T>(scalarValue);                                                              \
        const uint64_t st[4] = {p.dstBlkStride, p.srcBlkStride, p.dstRepStride, p.srcRepStride};                   \
        evk::unary_repeat(#NAME, dst, src, evk::RepeatMask<T>::bitwise(mask, #NAME, site), repeatTimes, st, site,  \
                          [s](evk::acc_t<T> a) { return EXPR; });                                                  \
    }

EVK_SCALAR_OP(Adds, a + s)
EVK_SCALAR_OP(Muls, a * s)
EVK_SCALAR_OP(Maxs, (a > s ? a : s))
EVK_SCALAR_OP(Mins, (a < s ? a : s))
EVK_SCALAR_OP(LeakyRelu, (a >= 0 ? a : a * s))
#undef EVK_SCALAR_OP

// dst = src * scalar + dst
template <typename T, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const evk::nd<T>& scalarValue,
                 const int32_t& calCount, evk::Site site = evk::Site()) {
    evk::acc_t<T> s = evk::acc_t<T>(scalarValue);
    evk::binary_count("Axpy", dst, src, dst, calCount, site,
                      [s](evk::acc_t<T> a, evk::acc_t<T> d) { return a * s + d; });
}

// ---- Duplicate -------------------------------------------------------------------
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const evk::nd<T>& scalarValue, const int32_t& calCount,
                      evk::Site site = evk::Site()) {
    evk::check_count(calCount, "Duplicate", site);
    evk::vec_operand(dst, calCount, site, "Duplicate", "dst");
    for (int32_t i = 0; i < calCount; ++i) dst.data_[i] = scalarValue;
    evk::count_vector_elems("Duplicate", sizeof(T), calCount);
}

template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const evk::nd<T>& scalarValue, uint64_t mask, const uint8_t repeatTimes,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride, evk::Site site = evk::Site()) {
    evk::RepeatMask<T> m = evk::RepeatMask<T>::counted(mask, "Duplicate", site);
    evk::check_repeats(repeatTimes, "Duplicate", site);
    evk::repeat_operand(dst, m, repeatTimes, dstBlockStride, dstRepeatStride, site, "Duplicate", "dst");
    for (uint64_t r = 0; r < repeatTimes; ++r)
        for (uint64_t j = 0; j < m.highest; ++j)
            if (m.on(j)) dst.data_[evk::repeat_index<T>(r, j, dstBlockStride, dstRepeatStride)] = scalarValue;
    evk::count_vector("Duplicate", sizeof(T), repeatTimes ? repeatTimes : 1, 1);
}

}  // namespace AscendC
