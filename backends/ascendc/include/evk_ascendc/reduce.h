// ReduceSum/Max/Min (count form) and WholeReduceSum/Max/Min (repeat form).
#pragma once
#include "vector.h"

namespace evk {
template <typename T>
inline void store_index(const AscendC::LocalTensor<T>& dst, uint32_t at, uint32_t index) {
    if constexpr (sizeof(T) == 4) {
        std::memcpy(&dst.data_[at], &index, 4);
    } else if constexpr (sizeof(T) == 2) {
        uint16_t i16 = static_cast<uint16_t>(index);
        std::memcpy(&dst.data_[at], &i16, 2);
    } else {
        dst.data_[at] = static_cast<T>(index);
    }
}

// Count-form ReduceSum/ReduceMax/ReduceMin: dst[0] gets the result (and
// dst[1] the index for Max/Min with calIndex). workLocal must hold at least
// one element per repeat of the first level.
template <typename T>
inline void reduce_count(const char* op, int kind, const AscendC::LocalTensor<T>& dst,
                         const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<T>& work, int64_t n,
                         bool with_index, Site site) {
    check_count(n, op, site);
    if (n == 0) hazard("invalid_argument", std::string(op) + " with calCount 0", site);
    vec_operand(src, n, site, op, "src");
    vec_operand(dst, with_index ? 2 : 1, site, op, "dst");
    uint64_t per_repeat = kRepeatBytes / sizeof(T);
    uint64_t repeats = (n + per_repeat - 1) / per_repeat;
    work.check_live(site, op);
    if (work.size_ < repeats)
        hazard("ub_out_of_bounds",
               evk::fmt("%s of %lld %s elements needs a workLocal of at least %llu elements (one per 256-byte "
                        "repeat); it has %u",
                        op, (long long)n, type_name<T>(), (unsigned long long)repeats, work.size_),
               site);
    acc_t<T> best = acc_t<T>(src.data_[0]);
    uint32_t best_i = 0;
    if (kind == 0) {
        // Pairwise within each repeat, then across repeats, as the tree of
        // vector adds does; close to, not bit-equal with, the hardware order.
        float total = 0;
        for (uint64_t r = 0; r < repeats; ++r) {
            float part = 0;
            for (uint64_t j = r * per_repeat; j < std::min<uint64_t>(n, (r + 1) * per_repeat); ++j)
                part += float(src.data_[j]);
            total += part;
        }
        dst.data_[0] = static_cast<T>(total);
    } else {
        for (int64_t i = 1; i < n; ++i) {
            acc_t<T> v = acc_t<T>(src.data_[i]);
            if ((kind == 1 && v > best) || (kind == 2 && v < best)) {
                best = v;
                best_i = static_cast<uint32_t>(i);
            }
        }
        dst.data_[0] = static_cast<T>(best);
        if (with_index) store_index(dst, 1, best_i);
    }
    uint64_t levels = 1;
    for (uint64_t m = repeats; m > 1; m = (m + per_repeat - 1) / per_repeat) levels++;
    count_vector(op, sizeof(T), repeats + levels - 1, levels + (repeats - 1) / kMaxRepeat);
}

// WholeReduce*: one result per repeat, written dstRepStride results apart
// (a result is one element, or a value/index pair for Max/Min with index).
template <typename T>
inline void whole_reduce(const char* op, int kind, const AscendC::LocalTensor<T>& dst,
                         const AscendC::LocalTensor<T>& src, const RepeatMask<T>& m, uint64_t repeats,
                         uint64_t dst_rep_stride, uint64_t src_blk_stride, uint64_t src_rep_stride,
                         AscendC::ReduceOrder order, Site site) {
    using AscendC::ReduceOrder;
    check_repeats(repeats, op, site);
    repeat_operand(src, m, repeats, src_blk_stride, src_rep_stride, site, op, "src");
    bool pair = kind != 0 && (order == ReduceOrder::ORDER_VALUE_INDEX || order == ReduceOrder::ORDER_INDEX_VALUE);
    uint64_t width = pair ? 2 : 1;
    if (repeats) vec_operand(dst, (repeats - 1) * dst_rep_stride * width + width, site, op, "dst");
    for (uint64_t r = 0; r < repeats; ++r) {
        float total = 0;
        acc_t<T> best = 0;
        uint32_t best_j = 0;
        bool first = true;
        for (uint64_t j = 0; j < m.highest; ++j) {
            if (!m.on(j)) continue;
            acc_t<T> v = acc_t<T>(src.data_[repeat_index<T>(r, j, src_blk_stride, src_rep_stride)]);
            total += float(v);
            if (first || (kind == 1 && v > best) || (kind == 2 && v < best)) {
                best = v;
                best_j = static_cast<uint32_t>(j);
                first = false;
            }
        }
        uint32_t at = static_cast<uint32_t>(r * dst_rep_stride * width);
        if (kind == 0) dst.data_[at] = static_cast<T>(total);
        else if (order == ReduceOrder::ORDER_VALUE_INDEX) {
            dst.data_[at] = static_cast<T>(best);
            store_index(dst, at + 1, best_j);
        } else if (order == ReduceOrder::ORDER_INDEX_VALUE) {
            store_index(dst, at, best_j);
            dst.data_[at + 1] = static_cast<T>(best);
        } else if (order == ReduceOrder::ORDER_ONLY_VALUE) {
            dst.data_[at] = static_cast<T>(best);
        } else {
            store_index(dst, at, best_j);
        }
    }
    count_vector(op, sizeof(T), repeats ? repeats : 1, 1);
}
}  // namespace evk

namespace AscendC {

template <typename T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,
                      const int32_t count, evk::Site site = evk::Site()) {
    evk::reduce_count("ReduceSum", 0, dst, src, workLocal, count, false, site);
}
template <typename T>
inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,
                      const int32_t count, bool calIndex = false, evk::Site site = evk::Site()) {
    evk::reduce_count("ReduceMax", 1, dst, src, workLocal, count, calIndex, site);
}
template <typename T>
inline void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,
                      const int32_t count, bool calIndex = false, evk::Site site = evk::Site()) {
    evk::reduce_count("ReduceMin", 2, dst, src, workLocal, count, calIndex, site);
}

template <typename T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                           const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride, evk::Site site = evk::Site()) {
    evk::whole_reduce("WholeReduceSum", 0, dst, src, evk::RepeatMask<T>::counted(mask, "WholeReduceSum", site),
                      repeatTimes, dstRepStride, srcBlkStride, srcRepStride, ReduceOrder::ORDER_ONLY_VALUE, site);
}
template <typename T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],
                           const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride, evk::Site site = evk::Site()) {
    evk::whole_reduce("WholeReduceSum", 0, dst, src, evk::RepeatMask<T>::bitwise(mask, "WholeReduceSum", site),
                      repeatTimes, dstRepStride, srcBlkStride, srcRepStride, ReduceOrder::ORDER_ONLY_VALUE, site);
}

#define EVK_WHOLE_MINMAX(NAME, KIND)                                                                               \
    template <typename T, bool isSetMask = true>                                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,                     \
                     const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,            \
                     const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,               \
                     evk::Site site = evk::Site()) {                                                               \
        evk::whole_reduce(#NAME, KIND, dst, src, evk::RepeatMask<T>::counted(mask, #NAME, site), repeatTimes,      \
                          dstRepStride, srcBlkStride, srcRepStride, order, site);                                  \
    }                                                                                                              \
    template <typename T, bool isSetMask = true>                                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],                  \
                     const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,            \
                     const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,               \
                     evk::Site site = evk::Site()) {                                                               \
        evk::whole_reduce(#NAME, KIND, dst, src, evk::RepeatMask<T>::bitwise(mask, #NAME, site), repeatTimes,      \
                          dstRepStride, srcBlkStride, srcRepStride, order, site);                                  \
    }
EVK_WHOLE_MINMAX(WholeReduceMax, 1)
EVK_WHOLE_MINMAX(WholeReduceMin, 2)
#undef EVK_WHOLE_MINMAX

}  // namespace AscendC
