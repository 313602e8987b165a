// GlobalTensor and LocalTensor, with the bounds and lifetime checks the
// hardware does not do for you.
#pragma once
#include "core.h"

namespace evk {
// One UB buffer of a TQue/TBuf. `generation` moves on at every FreeTensor so
// that a LocalTensor kept past FreeTensor is caught on its next use.
struct SlotState {
    uint32_t generation = 0;
    bool allocated = false;
    bool enqueued = false;
    int alloc_line = 0;
    int free_line = 0;
    const void* owner = nullptr;
    std::string owner_desc;
};
}  // namespace evk

namespace AscendC {

template <typename T>
class LocalTensor {
public:
    LocalTensor() = default;

    LocalTensor operator[](uint32_t offset) const {
        check_live(evk::Site(0), "LocalTensor::operator[]");
        if (offset > size_)
            evk::hazard("ub_out_of_bounds",
                        evk::fmt("LocalTensor<%s>[%u] starts past the end of a tensor of %u elements",
                                 evk::type_name<T>(), offset, size_),
                        evk::Site(0));
        LocalTensor sub = *this;
        sub.data_ = data_ + offset;
        sub.size_ = size_ - offset;
        sub.limit_ = limit_ - offset;
        sub.ub_offset_ = ub_offset_ + static_cast<uint64_t>(offset) * sizeof(T);
        return sub;
    }

    T GetValue(uint32_t index, evk::Site site = evk::Site()) const {
        check_index(index, "GetValue", site);
        evk::core().scalar_ub++;
        return data_[index];
    }
    template <typename U>
    void SetValue(uint32_t index, U value, evk::Site site = evk::Site()) const {
        check_index(index, "SetValue", site);
        evk::core().scalar_ub++;
        data_[index] = static_cast<T>(value);
    }
    T& operator()(uint32_t index) const {
        check_index(index, "operator()", evk::Site(0));
        evk::core().scalar_ub++;
        return data_[index];
    }

    uint32_t GetSize() const { return size_; }
    uint32_t GetLength() const { return size_ * static_cast<uint32_t>(sizeof(T)); }
    void SetSize(uint32_t size, evk::Site site = evk::Site()) {
        if (size > limit_)
            evk::hazard("ub_out_of_bounds",
                        evk::fmt("LocalTensor<%s>::SetSize(%u) exceeds the %u elements its buffer holds",
                                 evk::type_name<T>(), size, limit_),
                        site);
        size_ = size;
    }
    uint64_t GetPhyAddr() const { return ub_offset_; }
    TPosition GetPosition() const { return position_; }

    template <typename U>
    LocalTensor<U> ReinterpretCast() const {
        LocalTensor<U> out;
        out.data_ = reinterpret_cast<U*>(data_);
        out.size_ = static_cast<uint32_t>(static_cast<uint64_t>(size_) * sizeof(T) / sizeof(U));
        out.limit_ = static_cast<uint32_t>(static_cast<uint64_t>(limit_) * sizeof(T) / sizeof(U));
        out.ub_offset_ = ub_offset_;
        out.slot_ = slot_;
        out.generation_ = generation_;
        out.position_ = position_;
        return out;
    }

    // ---- model internals (public so the free functions can reach them) ----
    void check_live(evk::Site site, const char* api) const {
        if (data_ == nullptr)
            evk::hazard("ub_out_of_bounds",
                        std::string(api) + " uses a LocalTensor that was never allocated: get it from "
                        "TQue::AllocTensor / DeQue or TBuf::Get first",
                        site);
        if (slot_ && slot_->generation != generation_)
            evk::hazard("use_after_free",
                        std::string(api) + " uses a LocalTensor after FreeTensor (allocated at line " +
                            std::to_string(slot_->alloc_line) + ", freed at line " +
                            std::to_string(slot_->free_line) +
                            "); its buffer may already hold another tile. Use the tensor before "
                            "FreeTensor, or AllocTensor a new one",
                        site);
    }
    bool in_ub() const {
        return position_ == TPosition::VECIN || position_ == TPosition::VECOUT || position_ == TPosition::VECCALC;
    }
    // The buffer this tensor lives in, for messages: "UB", "L1 (A1)", "L0A (A2)"...
    std::string where() const;
    void check_span(uint64_t first, uint64_t count, evk::Site site, const char* api, const char* role) const {
        check_live(site, api);
        if (first + count > size_)
            evk::hazard(in_ub() ? "ub_out_of_bounds" : "buffer_out_of_bounds",
                        evk::fmt("%s touches elements [%llu, %llu) of %s, a LocalTensor<%s> of only %u "
                                 "elements (%u bytes of ",
                                 api, (unsigned long long)first, (unsigned long long)(first + count), role,
                                 evk::type_name<T>(), size_, size_ * (unsigned)sizeof(T)) +
                            where() + ")",
                        site);
    }
    void check_aligned(evk::Site site, const char* api, const char* role, uint64_t align = evk::kBlockBytes) const {
        if (ub_offset_ % align != 0)
            evk::hazard(in_ub() ? "ub_align" : "cube_align",
                        evk::fmt("%s: %s starts at %s byte %llu, which is not %llu-byte aligned (an "
                                 "operator[] offset of a whole number of %llu-byte blocks is needed: "
                                 "a multiple of %llu %s elements)",
                                 api, role, in_ub() ? "UB" : where().c_str(), (unsigned long long)ub_offset_,
                                 (unsigned long long)align, (unsigned long long)align,
                                 (unsigned long long)(align / sizeof(T)), evk::type_name<T>()),
                        site);
    }
    void check_index(uint32_t index, const char* api, evk::Site site) const {
        check_live(site, api);
        if (index >= size_)
            evk::hazard("ub_out_of_bounds",
                        evk::fmt("LocalTensor<%s>::%s(%u) is out of bounds: the tensor has %u elements",
                                 evk::type_name<T>(), api, index, size_),
                        site);
    }

    T* data_ = nullptr;
    uint32_t size_ = 0;   // elements visible through this tensor
    uint32_t limit_ = 0;  // elements up to the end of its buffer (for SetSize)
    uint64_t ub_offset_ = 0;
    evk::SlotState* slot_ = nullptr;
    uint32_t generation_ = 0;
    TPosition position_ = TPosition::VECCALC;
};

template <typename T>
class GlobalTensor {
public:
    GlobalTensor() = default;

    void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize, evk::Site site = evk::Site()) {
        bind(buffer, bufferSize, true, site);
    }
    void SetGlobalBuffer(__gm__ T* buffer, evk::Site site = evk::Site()) { bind(buffer, 0, false, site); }

    GlobalTensor operator[](uint64_t offset) const {
        GlobalTensor sub = *this;
        sub.data_ = data_ + offset;
        sub.offset_ = offset_ + offset;
        return sub;
    }

    T GetValue(uint64_t index, evk::Site site = evk::Site()) const {
        check_span(index, 1, site, "GlobalTensor::GetValue");
        evk::core().scalar_gm++;
        evk::gm_read(data_ + index, sizeof(T), sizeof(T), site);
        return data_[index];
    }
    template <typename U>
    void SetValue(uint64_t index, U value, evk::Site site = evk::Site()) const {
        check_span(index, 1, site, "GlobalTensor::SetValue");
        evk::core().scalar_gm++;
        T v = static_cast<T>(value);
        evk::gm_write(data_ + index, &v, sizeof(T), sizeof(T), site);
    }

    uint64_t GetSize() const {
        if (!sized_) return 0;
        return offset_ < size_ ? size_ - offset_ : 0;
    }
    __gm__ T* GetPhyAddr() const { return data_; }
    __gm__ T* GetPhyAddr(uint64_t offset) const { return data_ + offset; }
    // Cache hints do not change results; accepted and ignored.
    template <typename H>
    void SetL2CacheHint(H) {}

    // Check an access of `count` elements starting `first` elements into
    // this (sub-)tensor, against the SetGlobalBuffer length and the real
    // tensor argument behind it.
    void check_span(uint64_t first, uint64_t count, evk::Site site, const char* api) const {
        if (origin_ == nullptr)
            evk::hazard("gm_out_of_bounds",
                        std::string(api) + " uses a GlobalTensor before SetGlobalBuffer", site);
        uint64_t lo = offset_ + first, hi = lo + count;
        if (sized_ && hi > size_)
            evk::hazard("gm_out_of_bounds",
                        evk::fmt("%s reads or writes elements [%llu, %llu) of a GlobalTensor<%s> whose "
                                 "SetGlobalBuffer length is %llu elements (set at line %d)",
                                 api, (unsigned long long)lo, (unsigned long long)hi, evk::type_name<T>(),
                                 (unsigned long long)size_, set_line_),
                        site);
        const uint8_t* a = reinterpret_cast<const uint8_t*>(origin_ + lo);
        const uint8_t* b = reinterpret_cast<const uint8_t*>(origin_ + hi);
        const evk::GmRegion* r = region_ ? region_ : evk::find_region(a);
        if (count == 0) return;
        if (r == nullptr || a < r->base || b > r->base + r->bytes) {
            if (r == nullptr) r = evk::find_region(origin_);
            std::string what = r ? evk::fmt("tensor argument #%d '%s' has %llu bytes (%llu %s elements) and "
                                            "the access covers bytes [%lld, %lld) of it",
                                            r->arg, r->name, (unsigned long long)r->bytes,
                                            (unsigned long long)(r->bytes / sizeof(T)), evk::type_name<T>(),
                                            (long long)(a - r->base), (long long)(b - r->base))
                                 : std::string("the address is outside every tensor argument");
            const evk::GmRegion* below = r ? nullptr : evk::region_below(a);
            if (below)
                what = evk::fmt("the access starts %llu bytes (%llu %s elements) past the end of tensor argument "
                                "#%d '%s' (%llu bytes)",
                                (unsigned long long)(a - (below->base + below->bytes)),
                                (unsigned long long)((a - (below->base + below->bytes)) / sizeof(T)),
                                evk::type_name<T>(), below->arg, below->name, (unsigned long long)below->bytes);
            evk::hazard("gm_out_of_bounds",
                        evk::fmt("%s reads or writes GM out of bounds on block %lld: ", api,
                                 (long long)evk::core().block_idx) +
                            what + " (check the per-block offset GetBlockIdx() * blockLength and the tail)",
                        site);
        }
    }

    T* data_ = nullptr;
    T* origin_ = nullptr;
    uint64_t offset_ = 0;
    uint64_t size_ = 0;
    bool sized_ = false;
    int set_line_ = 0;
    const evk::GmRegion* region_ = nullptr;

private:
    void bind(T* buffer, uint64_t size, bool sized, evk::Site site) {
        data_ = origin_ = buffer;
        offset_ = 0;
        size_ = size;
        sized_ = sized;
        set_line_ = site.line;
        region_ = evk::find_region(buffer);
    }
};

}  // namespace AscendC
