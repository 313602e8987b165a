// DataCopy and DataCopyPad between GM and the Unified Buffer.
#pragma once
#include "pipe.h"

namespace AscendC {

// Burst copy: blockCount bursts of blockLen 32-byte blocks; the strides are
// the gaps between bursts, in 32-byte blocks.
struct DataCopyParams {
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    uint16_t srcStride = 0;
    uint16_t dstStride = 0;
    DataCopyParams() = default;
    DataCopyParams(uint16_t count, uint16_t len, uint16_t srcStrideIn, uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
};

// DataCopyPad: blockLen in bytes; the GM-side stride is a gap in bytes, the
// UB-side stride a gap in 32-byte blocks. Each burst starts a new 32-byte
// block in UB.
struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
    DataCopyExtParams() = default;
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcStrideIn, uint32_t dstStrideIn, uint32_t rsvIn = 0)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
};

template <typename T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = T(0);
    DataCopyPadExtParams() = default;
    DataCopyPadExtParams(bool isPadIn, uint8_t left, uint8_t right, T value)
        : isPad(isPadIn), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

struct DataCopyPadParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
    DataCopyPadParams() = default;
    DataCopyPadParams(bool isPadIn, uint8_t left, uint8_t right, uint64_t value)
        : isPad(isPadIn), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

}  // namespace AscendC

namespace evk {

template <typename T>
inline void check_copy_len(uint64_t count, const char* api, Site site) {
    uint64_t bytes = count * sizeof(T);
    if (bytes % kBlockBytes != 0) {
        uint64_t per = kBlockBytes / sizeof(T);
        hazard("datacopy_align",
               evk::fmt("%s of %llu %s elements moves %llu bytes, which is not a multiple of 32 bytes: DataCopy "
                        "moves whole 32-byte blocks. Round the tile to a multiple of %llu elements, or copy the tail "
                        "with DataCopyPad(dst, src, DataCopyExtParams{1, %llu, 0, 0, 0}, "
                        "DataCopyPadExtParams<%s>{false, 0, 0, 0}) (blockLen in bytes)",
                        api, (unsigned long long)count, type_name<T>(), (unsigned long long)bytes,
                        (unsigned long long)per, (unsigned long long)bytes, type_name<T>()),
               site);
    }
}

// Burst layout of a copy: where burst i starts, in bytes, on each side.
struct Bursts {
    uint64_t count, len, src_pitch, dst_pitch;
    uint64_t src_extent() const { return count ? (count - 1) * src_pitch + len : 0; }
    uint64_t dst_extent() const { return count ? (count - 1) * dst_pitch + len : 0; }
};

inline uint64_t round32(uint64_t n) { return (n + kBlockBytes - 1) / kBlockBytes * kBlockBytes; }

}  // namespace evk

namespace AscendC {

// ---- DataCopy ----------------------------------------------------------------
}  // namespace AscendC

namespace evk {

// Copy `count` elements to GM for the current core: plain, or added to what
// is there when SetAtomicAdd is on (then other cores' adds are not a race).
template <typename T>
inline void gm_store(T* dst, const T* src, uint64_t count, Site site) {
    if (core().atomic_add) {
        std::vector<T> sum(count);
        for (uint64_t i = 0; i < count; ++i) sum[i] = static_cast<T>(acc_t<T>(dst[i]) + acc_t<T>(src[i]));
        gm_write(dst, sum.data(), count * sizeof(T), sizeof(T), site);
    } else {
        gm_write(dst, src, count * sizeof(T), sizeof(T), site);
    }
}

// Which copy a DataCopy(local, gm) / DataCopy(gm, local) is, from the local
// tensor's position; the ones the 910B has no path for are named with the call to use.
enum class Path { UB, L1, NONE };

template <typename T>
inline Path gm_path(const AscendC::LocalTensor<T>& t, bool into_local, const char* api, Site site) {
    t.check_live(site, api);
    Phys p = phys(t);
    if (p == Phys::UB) return Path::UB;
    if (p == Phys::L1) return Path::L1;
    std::string loc = t.where();
    if (into_local && (p == Phys::L0A || p == Phys::L0B))
        hazard("wrong_position",
               std::string(api) + " into " + loc +
                   ": DataCopy cannot fill L0A/L0B. Copy the matrix into L1 first (DataCopy(a1Local, aGm, "
                   "Nd2NzParams{...}) for a row-major matrix), then LoadData(a2Local, a1Local, LoadData2DParams{...})",
               site);
    if (!into_local && p == Phys::L0C)
        hazard("wrong_position",
               std::string(api) + " from " + loc +
                   ": results leave L0C with Fixpipe<T, float, CFG_ROW_MAJOR>(cGm, c1Local, FixpipeParamsV220{...}) "
                   "(it also converts NZ to row-major and float to half)",
               site);
    hazard("wrong_position", std::string(api) + (into_local ? " into " : " from ") + loc +
                                 ": the 910B has no DataCopy path between GM and that buffer (GM <-> UB and "
                                 "GM <-> L1 only; L0C goes out with Fixpipe, L0A/L0B are filled with LoadData)",
           site);
}

inline void count_gm_in(Path p, uint64_t bytes) {
    CoreState& c = core();
    if (p == Path::UB) {
        c.gm_to_ub_bytes += bytes;
        c.gm_to_ub_copies++;
    } else {
        c.gm_to_l1_bytes += bytes;
        c.l1_copies++;
    }
}

inline void count_gm_out(Path p, uint64_t bytes) {
    CoreState& c = core();
    if (p == Path::UB) {
        c.ub_to_gm_bytes += bytes;
        c.ub_to_gm_copies++;
    } else {
        c.l1_to_gm_bytes += bytes;
    }
}

}  // namespace evk

namespace AscendC {

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count,
                     evk::Site site = evk::Site()) {
    evk::Path path = evk::gm_path(dst, true, "DataCopy(GM->local)", site);
    const char* api = path == evk::Path::UB ? "DataCopy(GM->UB)" : "DataCopy(GM->L1)";
    evk::check_copy_len<T>(count, api, site);
    dst.check_span(0, count, site, api, "the destination");
    dst.check_aligned(site, api, "the destination");
    src.check_span(0, count, site, api);
    evk::gm_read(src.data_, count * sizeof(T), sizeof(T), site);
    std::memcpy(dst.data_, src.data_, count * sizeof(T));
    evk::count_gm_in(path, count * sizeof(T));
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count,
                     evk::Site site = evk::Site()) {
    evk::Path path = evk::gm_path(src, false, "DataCopy(local->GM)", site);
    const char* api = path == evk::Path::UB ? "DataCopy(UB->GM)" : "DataCopy(L1->GM)";
    evk::check_copy_len<T>(count, api, site);
    src.check_span(0, count, site, api, "the source");
    src.check_aligned(site, api, "the source");
    dst.check_span(0, count, site, api);
    evk::gm_store(dst.data_, src.data_, count, site);
    evk::count_gm_out(path, count * sizeof(T));
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count,
                     evk::Site site = evk::Site()) {
    src.check_live(site, "DataCopy(local->local)");
    dst.check_live(site, "DataCopy(local->local)");
    evk::Phys ps = evk::phys(src), pd = evk::phys(dst);
    const char* api = "DataCopy(UB->UB)";
    if (ps == evk::Phys::L1 && pd == evk::Phys::BT) {
        api = "DataCopy(C1->C2)";  // bias into the bias table
    } else if (ps != evk::Phys::UB || pd != evk::Phys::UB) {
        std::string hint = (ps == evk::Phys::L1 && (pd == evk::Phys::L0A || pd == evk::Phys::L0B))
                               ? "L1 -> L0A/L0B is LoadData(dst, src, LoadData2DParams{...})"
                               : "the 910B copies locally only UB -> UB and L1 (C1) -> bias table (C2); between a "
                                 "vector core's UB and a cube core's L1 data goes through GM";
        evk::hazard("wrong_position",
                    std::string("DataCopy from ") + src.where() + " to " + dst.where() + ": no such path; " + hint,
                    site);
    }
    evk::check_copy_len<T>(count, api, site);
    dst.check_span(0, count, site, api, "the destination");
    src.check_span(0, count, site, api, "the source");
    dst.check_aligned(site, api, "the destination", pd == evk::Phys::BT ? 64 : evk::kBlockBytes);
    src.check_aligned(site, api, "the source");
    std::memmove(dst.data_, src.data_, count * sizeof(T));
    if (pd == evk::Phys::UB) {
        evk::core().ub_to_ub_bytes += count * sizeof(T);
        evk::count_vector_elems("Copy", sizeof(T), count);
    } else {
        evk::core().l1_to_l0_bytes += count * sizeof(T);
    }
}

namespace detail {
template <typename T>
inline evk::Bursts block_bursts(const DataCopyParams& p) {
    uint64_t len = static_cast<uint64_t>(p.blockLen) * evk::kBlockBytes;
    return {p.blockCount, len, len + static_cast<uint64_t>(p.srcStride) * evk::kBlockBytes,
            len + static_cast<uint64_t>(p.dstStride) * evk::kBlockBytes};
}
}  // namespace detail

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                     evk::Site site = evk::Site()) {
    evk::Path path = evk::gm_path(dst, true, "DataCopy(GM->local, DataCopyParams)", site);
    const char* api = path == evk::Path::UB ? "DataCopy(GM->UB, DataCopyParams)" : "DataCopy(GM->L1, DataCopyParams)";
    evk::Bursts b = detail::block_bursts<T>(p);
    dst.check_span(0, b.dst_extent() / sizeof(T), site, api, "the destination");
    dst.check_aligned(site, api, "the destination");
    src.check_span(0, b.src_extent() / sizeof(T), site, api);
    for (uint64_t i = 0; i < b.count; ++i) {
        const uint8_t* from = reinterpret_cast<const uint8_t*>(src.data_) + i * b.src_pitch;
        evk::gm_read(from, b.len, sizeof(T), site);
        std::memcpy(reinterpret_cast<uint8_t*>(dst.data_) + i * b.dst_pitch, from, b.len);
    }
    evk::count_gm_in(path, b.count * b.len);
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                     evk::Site site = evk::Site()) {
    evk::Path path = evk::gm_path(src, false, "DataCopy(local->GM, DataCopyParams)", site);
    const char* api = path == evk::Path::UB ? "DataCopy(UB->GM, DataCopyParams)" : "DataCopy(L1->GM, DataCopyParams)";
    evk::Bursts b = detail::block_bursts<T>(p);
    src.check_span(0, b.src_extent() / sizeof(T), site, api, "the source");
    src.check_aligned(site, api, "the source");
    dst.check_span(0, b.dst_extent() / sizeof(T), site, api);
    for (uint64_t i = 0; i < b.count; ++i)
        evk::gm_store(reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(dst.data_) + i * b.dst_pitch),
                      reinterpret_cast<const T*>(reinterpret_cast<const uint8_t*>(src.data_) + i * b.src_pitch),
                      b.len / sizeof(T), site);
    evk::count_gm_out(path, b.count * b.len);
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                     evk::Site site = evk::Site()) {
    evk::require_ub(src, "DataCopy(UB->UB, DataCopyParams)", "the source", site);
    evk::require_ub(dst, "DataCopy(UB->UB, DataCopyParams)", "the destination", site);
    evk::Bursts b = detail::block_bursts<T>(p);
    src.check_span(0, b.src_extent() / sizeof(T), site, "DataCopy(UB->UB, DataCopyParams)", "the source");
    dst.check_span(0, b.dst_extent() / sizeof(T), site, "DataCopy(UB->UB, DataCopyParams)", "the destination");
    src.check_aligned(site, "DataCopy(UB->UB, DataCopyParams)", "the source");
    dst.check_aligned(site, "DataCopy(UB->UB, DataCopyParams)", "the destination");
    for (uint64_t i = 0; i < b.count; ++i)
        std::memmove(reinterpret_cast<uint8_t*>(dst.data_) + i * b.dst_pitch,
                     reinterpret_cast<const uint8_t*>(src.data_) + i * b.src_pitch, b.len);
    evk::core().ub_to_ub_bytes += b.count * b.len;
    evk::count_vector_elems("Copy", sizeof(T), b.count * b.len / sizeof(T));
}

// ---- DataCopyPad ---------------------------------------------------------------
namespace detail {
template <typename T>
inline void pad_gm_to_ub(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint64_t count, uint64_t len,
                         uint64_t src_gap, uint64_t dst_gap_blocks, bool is_pad, uint32_t left, uint32_t right,
                         T value, evk::Site site) {
    const char* api = "DataCopyPad(GM->UB)";
    evk::require_ub(dst, api, "the destination (DataCopyPad to L1 exists only on Ascend 950; on the 910B use "
                              "DataCopy(a1Local, aGm, Nd2NzParams{...}), which pads each row to 32 bytes)", site);
    if (len % sizeof(T) != 0)
        evk::hazard("datacopy_align",
                    evk::fmt("%s blockLen=%llu bytes is not a whole number of %s elements (blockLen is in bytes)",
                             api, (unsigned long long)len, evk::type_name<T>()),
                    site);
    if ((left + right) * sizeof(T) > evk::kBlockBytes)
        evk::hazard("datacopy_align",
                    evk::fmt("%s: leftPadding + rightPadding = %u elements exceeds one 32-byte block", api,
                             left + right),
                    site);
    uint64_t footprint = evk::round32(len + (is_pad ? (left + right) * sizeof(T) : 0));
    evk::Bursts b{count, len, len + src_gap, footprint + dst_gap_blocks * evk::kBlockBytes};
    uint64_t dst_bytes = count ? (count - 1) * b.dst_pitch + footprint : 0;
    dst.check_span(0, dst_bytes / sizeof(T), site, api, "the destination");
    dst.check_aligned(site, api, "the destination");
    src.check_span(0, b.src_extent() / sizeof(T), site, api);
    for (uint64_t i = 0; i < count; ++i) {
        uint8_t* d = reinterpret_cast<uint8_t*>(dst.data_) + i * b.dst_pitch;
        evk::gm_read(reinterpret_cast<const uint8_t*>(src.data_) + i * b.src_pitch, len, sizeof(T), site);
        T* row = reinterpret_cast<T*>(d);
        uint64_t n = len / sizeof(T);
        if (is_pad) {
            for (uint32_t k = 0; k < left; ++k) row[k] = value;
            std::memcpy(row + left, reinterpret_cast<const uint8_t*>(src.data_) + i * b.src_pitch, len);
            for (uint32_t k = 0; k < right; ++k) row[left + n + k] = value;
        } else {
            std::memcpy(d, reinterpret_cast<const uint8_t*>(src.data_) + i * b.src_pitch, len);
        }
    }
    evk::core().gm_to_ub_bytes += count * len;
    evk::core().gm_to_ub_copies++;
}

template <typename T>
inline void pad_ub_to_gm(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint64_t count, uint64_t len,
                         uint64_t src_gap_blocks, uint64_t dst_gap, evk::Site site) {
    const char* api = "DataCopyPad(UB->GM)";
    evk::require_ub(src, api, "the source", site);
    if (len % sizeof(T) != 0)
        evk::hazard("datacopy_align",
                    evk::fmt("%s blockLen=%llu bytes is not a whole number of %s elements (blockLen is in bytes)",
                             api, (unsigned long long)len, evk::type_name<T>()),
                    site);
    evk::Bursts b{count, len, evk::round32(len) + src_gap_blocks * evk::kBlockBytes, len + dst_gap};
    src.check_span(0, (b.src_extent() + sizeof(T) - 1) / sizeof(T), site, api, "the source");
    src.check_aligned(site, api, "the source");
    dst.check_span(0, b.dst_extent() / sizeof(T), site, api);
    for (uint64_t i = 0; i < count; ++i)
        evk::gm_store(reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(dst.data_) + i * b.dst_pitch),
                      reinterpret_cast<const T*>(reinterpret_cast<const uint8_t*>(src.data_) + i * b.src_pitch),
                      len / sizeof(T), site);
    evk::core().ub_to_gm_bytes += count * len;
    evk::core().ub_to_gm_copies++;
}
}  // namespace detail

template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<T>& pad, evk::Site site = evk::Site()) {
    detail::pad_gm_to_ub(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, pad.isPad, pad.leftPadding,
                         pad.rightPadding, pad.paddingValue, site);
}

template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                        const DataCopyPadParams& pad, evk::Site site = evk::Site()) {
    detail::pad_gm_to_ub(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, pad.isPad, pad.leftPadding,
                         pad.rightPadding, static_cast<T>(static_cast<float>(pad.paddingValue)), site);
}

template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p,
                        evk::Site site = evk::Site()) {
    detail::pad_ub_to_gm(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, site);
}

template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                        evk::Site site = evk::Site()) {
    detail::pad_ub_to_gm(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, site);
}

}  // namespace AscendC
