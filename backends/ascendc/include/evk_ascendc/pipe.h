// TPipe, TQue, TBuf and the synchronisation calls, with the queue protocol
// checked: the NPU hangs or corrupts data where this model raises.
#pragma once
#include <deque>
#include "tensor.h"

namespace evk {

inline const char* position_name(AscendC::TPosition p) {
    switch (p) {
        case AscendC::TPosition::VECIN: return "VECIN";
        case AscendC::TPosition::VECOUT: return "VECOUT";
        case AscendC::TPosition::VECCALC: return "VECCALC";
        case AscendC::TPosition::A1: return "A1";
        case AscendC::TPosition::A2: return "A2";
        case AscendC::TPosition::B1: return "B1";
        case AscendC::TPosition::B2: return "B2";
        case AscendC::TPosition::C1: return "C1";
        case AscendC::TPosition::C2: return "C2";
        case AscendC::TPosition::CO1: return "CO1";
        case AscendC::TPosition::CO2: return "CO2";
        case AscendC::TPosition::TSCM: return "TSCM";
        case AscendC::TPosition::GM: return "GM";
        default: return "SPM";
    }
}

// The physical buffer behind a queue position on the 910B, or COUNT for one
// that has no local buffer there.
inline Phys phys_of(AscendC::TPosition p) {
    using AscendC::TPosition;
    switch (p) {
        case TPosition::VECIN: case TPosition::VECOUT: case TPosition::VECCALC: return Phys::UB;
        case TPosition::A1: case TPosition::B1: case TPosition::C1: case TPosition::TSCM: return Phys::L1;
        case TPosition::A2: return Phys::L0A;
        case TPosition::B2: return Phys::L0B;
        case TPosition::CO1: return Phys::L0C;
        case TPosition::C2: return Phys::BT;
        default: return Phys::COUNT;
    }
}

inline const char* phys_short(AscendC::TPosition p) {
    Phys ph = phys_of(p);
    return ph == Phys::COUNT ? "no buffer" : kPhysShort[static_cast<int>(ph)];
}

}  // namespace evk

namespace AscendC {
template <typename T>
inline std::string LocalTensor<T>::where() const {
    if (in_ub()) return "UB";
    return std::string(evk::phys_short(position_)) + " (" + evk::position_name(position_) + ")";
}
}  // namespace AscendC

namespace evk {

template <typename T>
inline Phys phys(const AscendC::LocalTensor<T>& t) { return phys_of(t.position_); }

// A vector instruction or UB copy given a tensor of a cube buffer.
template <typename T>
inline void require_ub(const AscendC::LocalTensor<T>& t, const char* api, const char* role, Site site) {
    t.check_live(site, api);
    if (!t.in_ub())
        hazard("wrong_position",
               std::string(api) + " works on Unified Buffer tensors (TPosition VECIN/VECOUT/VECCALC), but " + role +
                   " is in " + t.where() +
                   ". Cube results leave L0C (CO1) with Fixpipe to GM; a vector core then reads them with "
                   "DataCopy into a VECIN queue",
               site);
}

// The UB buffers behind one TQue or TBuf.
class BufferGroup {
public:
    void init(AscendC::TPosition pos, uint32_t num, uint32_t len, const char* what, Site site) {
        CoreState& c = core();
        Phys ph = phys_of(pos);
        if (ph == Phys::COUNT)
            hazard("wrong_position",
                   evk::fmt("%s with TPosition::%s: that position has no local buffer on the 910B. On this chip the "
                            "result of Mmad leaves L0C (TPosition::CO1) straight to GM with Fixpipe (there is no CO2 "
                            "buffer); vector data lives in VECIN/VECOUT/VECCALC (Unified Buffer), cube operands in "
                            "A1/B1 (L1), A2 (L0A), B2 (L0B), CO1 (L0C) and C2 (bias table)",
                            what, position_name(pos)),
                   site);
        bool vec = ph == Phys::UB;
        if (vec != (c.kind == CoreKind::AIV))
            hazard("core_type",
                   evk::fmt("%s with TPosition::%s on the %s: the %s buffer exists only on the %s. In a kernel "
                            "with both cube and vector work, guard each side's code with `if ASCEND_IS_AIC { ... }` "
                            "and `if ASCEND_IS_AIV { ... }` (the NPU compiler builds the kernel once for each kind "
                            "of core)",
                            what, position_name(pos), kind_name(c.kind), kPhysName[static_cast<int>(ph)],
                            vec ? "vector core (AIV)" : "cube core (AIC)"),
                   site);
        if (num_ != 0)
            hazard("queue_misuse", evk::fmt("%s at line %d initialises a queue or buffer that InitBuffer "
                                            "already set up at line %d",
                                            what, site.line, line_),
                   site);
        if (num == 0 || len == 0)
            hazard("queue_misuse", evk::fmt("%s with num=%u and len=%u bytes: both must be positive", what, num, len),
                   site);
        int pi = static_cast<int>(ph);
        uint64_t aligned = (static_cast<uint64_t>(len) + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
        uint64_t total = aligned * num;
        c.calls[pi] += evk::fmt("  line %d: %s %s x %u buffer(s) x %llu bytes = %llu bytes\n", site.line, what,
                                position_name(pos), num, (unsigned long long)aligned, (unsigned long long)total);
        if (c.used[pi] + total > kPhysBytes[pi]) {
            std::string advice =
                ph == Phys::UB
                    ? "Use smaller tiles (fewer elements per tile and per loop iteration) or fewer buffers, so that "
                      "the sum of num * len over all InitBuffer calls stays within 196608 bytes."
                    : evk::fmt("Use smaller base blocks (baseM/baseN/baseK) or fewer buffers, so that the sum of "
                               "num * len over the InitBuffer calls on %s stays within %llu bytes.",
                               kPhysName[pi], (unsigned long long)kPhysBytes[pi]);
            const char* label = ph == Phys::UB ? "Unified Buffer" : kPhysName[pi];
            hazard(kPhysOverflowKind[pi],
                   evk::fmt("%s overflow: the InitBuffer calls ask for %llu bytes in total, but a 910B %s has %llu "
                            "bytes (%llu KB) of %s. InitBuffer calls so far:\n",
                            label, (unsigned long long)(c.used[pi] + total),
                            ph == Phys::UB ? "vector core" : "cube core", (unsigned long long)kPhysBytes[pi],
                            (unsigned long long)(kPhysBytes[pi] / 1024), ph == Phys::UB ? "UB" : kPhysShort[pi]) +
                       c.calls[pi] + advice,
                   site);
        }
        pos_ = pos;
        phys_ = ph;
        num_ = num;
        len_ = static_cast<uint32_t>(aligned);
        line_ = site.line;
        ub_offset_ = c.used[pi];
        c.used[pi] += total;
        slots_.clear();
        for (uint32_t i = 0; i < num; ++i) slots_.emplace_back(new SlotState());
        use_ = std::make_shared<QueueUse>(QueueUse{static_cast<int>(pos), num, 0, 0});
        c.queues.push_back(use_);
        used_.assign(num, false);
    }

    std::string describe() const {
        return evk::fmt("the %s queue set up by InitBuffer at line %d (%u buffer(s) of %u bytes)",
                        position_name(pos_), line_, num_, len_);
    }

    template <typename T>
    AscendC::LocalTensor<T> view(uint32_t slot, uint32_t offset_bytes, uint32_t bytes) {
        AscendC::LocalTensor<T> t;
        uint64_t off = ub_offset_ + static_cast<uint64_t>(slot) * len_ + offset_bytes;
        t.data_ = reinterpret_cast<T*>(core().mem[static_cast<int>(phys_)].data() + off);
        t.size_ = static_cast<uint32_t>(bytes / sizeof(T));
        t.limit_ = static_cast<uint32_t>((len_ - offset_bytes) / sizeof(T));
        t.ub_offset_ = off;
        t.position_ = pos_;
        return t;
    }

    template <typename T>
    AscendC::LocalTensor<T> alloc(Site site) {
        require_init("AllocTensor", site);
        uint32_t in_use = 0;
        for (auto& s : slots_) in_use += s->allocated;
        if (in_use == num_) {
            std::string lines;
            for (auto& s : slots_) lines += (lines.empty() ? "" : ", ") + std::to_string(s->alloc_line);
            hazard("queue_depth",
                   "AllocTensor on " + describe() + " while all its buffers are in use: AllocTensor was called " +
                       std::to_string(num_ + 1) + " times without FreeTensor (earlier allocations at lines " +
                       lines + "). Call FreeTensor on each tensor after its last use (after DeQue in Compute/CopyOut), "
                       "or give InitBuffer more buffers.",
                   site);
        }
        // Round robin, as the hardware queue hands out its buffers: with two
        // buffers, tile i+1 is copied in while tile i is computed.
        uint32_t k = next_;
        while (slots_[k]->allocated) k = (k + 1) % num_;
        next_ = (k + 1) % num_;
        SlotState& s = *slots_[k];
        s.allocated = true;
        s.enqueued = false;
        s.alloc_line = site.line;
        s.owner = this;
        use_->allocs++;
        if (!used_[k]) {
            used_[k] = true;
            use_->distinct++;
        }
        AscendC::LocalTensor<T> t = view<T>(k, 0, len_);
        t.slot_ = &s;
        t.generation_ = s.generation;
        return t;
    }

    template <typename T>
    void enque(const AscendC::LocalTensor<T>& t, Site site) {
        require_init("EnQue", site);
        SlotState* s = own(t, "EnQue", site);
        if (s->enqueued)
            hazard("queue_misuse", "EnQue of a tensor that is already in " + describe() + " (EnQue twice without DeQue)",
                   site);
        s->enqueued = true;
        fifo_.push_back(s);
    }

    template <typename T>
    AscendC::LocalTensor<T> deque(Site site) {
        require_init("DeQue", site);
        if (fifo_.empty())
            hazard("queue_empty",
                   "DeQue<" + std::string(type_name<T>()) + ">() on " + describe() +
                       ", but the queue is empty: on the NPU this waits forever. Every DeQue needs an earlier "
                       "EnQue of a tensor from AllocTensor (is the EnQue after DataCopy in CopyIn, or after the "
                       "vector op in Compute, missing?)",
                   site);
        SlotState* s = fifo_.front();
        fifo_.pop_front();
        s->enqueued = false;
        uint32_t k = 0;
        while (slots_[k].get() != s) ++k;
        AscendC::LocalTensor<T> t = view<T>(k, 0, len_);
        t.slot_ = s;
        t.generation_ = s->generation;
        return t;
    }

    template <typename T>
    void free(const AscendC::LocalTensor<T>& t, Site site) {
        require_init("FreeTensor", site);
        SlotState* s = own(t, "FreeTensor", site);
        if (s->enqueued)
            hazard("queue_misuse",
                   "FreeTensor of a tensor that is still enqueued in " + describe() + "; DeQue it first", site);
        s->allocated = false;
        s->free_line = site.line;
        s->generation++;
    }

    uint32_t queued() const { return static_cast<uint32_t>(fifo_.size()); }
    uint32_t idle() const {
        uint32_t n = 0;
        for (auto& s : slots_) n += !s->allocated;
        return n;
    }
    uint32_t num() const { return num_; }
    uint32_t len() const { return len_; }
    int line() const { return line_; }

    void require_init(const char* api, Site site) const {
        if (num_ == 0)
            hazard("queue_misuse",
                   std::string(api) + " on a queue or buffer that was never given memory: call "
                   "pipe.InitBuffer(queue, num, bytes) in Init first",
                   site);
    }

private:
    template <typename T>
    SlotState* own(const AscendC::LocalTensor<T>& t, const char* api, Site site) {
        t.check_live(site, api);
        for (auto& s : slots_)
            if (s.get() == t.slot_) return s.get();
        hazard("queue_misuse",
               std::string(api) + " with a tensor that did not come from " + describe() +
                   " (use the same queue for AllocTensor, EnQue, DeQue and FreeTensor)",
               site);
    }

    AscendC::TPosition pos_ = AscendC::TPosition::VECCALC;
    Phys phys_ = Phys::UB;
    uint32_t num_ = 0, len_ = 0, next_ = 0;
    int line_ = 0;
    uint64_t ub_offset_ = 0;
    std::vector<std::unique_ptr<SlotState>> slots_;
    std::vector<bool> used_;
    std::deque<SlotState*> fifo_;
    std::shared_ptr<QueueUse> use_;
};

}  // namespace evk

namespace AscendC {

template <TPosition pos, int32_t depth = 1, int32_t mask = 0>
class TQue {
public:
    static_assert(depth >= 1, "TQue depth must be at least 1");
    template <typename T>
    LocalTensor<T> AllocTensor(evk::Site site = evk::Site()) { return group_.template alloc<T>(site); }
    template <typename T>
    bool EnQue(const LocalTensor<T>& tensor, evk::Site site = evk::Site()) {
        group_.enque(tensor, site);
        return true;
    }
    template <typename T>
    LocalTensor<T> DeQue(evk::Site site = evk::Site()) { return group_.template deque<T>(site); }
    template <typename T>
    void FreeTensor(LocalTensor<T>& tensor, evk::Site site = evk::Site()) { group_.free(tensor, site); }
    int32_t GetTensorCountInQue() const { return static_cast<int32_t>(group_.queued()); }
    bool HasTensorInQue() const { return group_.queued() > 0; }
    bool VacantInQue() const { return group_.queued() < static_cast<uint32_t>(depth > 1 ? depth : group_.num()); }
    bool HasIdleBuffer() const { return group_.idle() > 0; }
    evk::BufferGroup group_;
};

template <TPosition src, TPosition dst, int32_t depth = 1, int32_t mask = 0>
class TQueBind : public TQue<dst, depth, mask> {};

template <TPosition pos = TPosition::VECCALC>
class TBuf {
public:
    template <typename T>
    LocalTensor<T> Get(evk::Site site = evk::Site()) {
        group_.require_init("TBuf::Get", site);
        return group_.template view<T>(0, 0, group_.len());
    }
    template <typename T>
    LocalTensor<T> Get(uint32_t count, evk::Site site = evk::Site()) {
        group_.require_init("TBuf::Get", site);
        if (static_cast<uint64_t>(count) * sizeof(T) > group_.len())
            evk::hazard("ub_out_of_bounds",
                        evk::fmt("TBuf::Get<%s>(%u) asks for %llu bytes from a TBuf of %u bytes (InitBuffer at "
                                 "line %d)",
                                 evk::type_name<T>(), count, (unsigned long long)(count * sizeof(T)), group_.len(),
                                 group_.line()),
                        site);
        return group_.template view<T>(0, 0, count * static_cast<uint32_t>(sizeof(T)));
    }
    template <typename T>
    LocalTensor<T> GetWithOffset(uint32_t count, uint32_t bufOffset, evk::Site site = evk::Site()) {
        group_.require_init("TBuf::GetWithOffset", site);
        if (bufOffset % evk::kBlockBytes != 0 || bufOffset + static_cast<uint64_t>(count) * sizeof(T) > group_.len())
            evk::hazard("ub_out_of_bounds",
                        evk::fmt("TBuf::GetWithOffset<%s>(%u, %u) does not fit a TBuf of %u bytes with a "
                                 "32-byte-aligned offset",
                                 evk::type_name<T>(), count, bufOffset, group_.len()),
                        site);
        return group_.template view<T>(0, bufOffset, count * static_cast<uint32_t>(sizeof(T)));
    }
    evk::BufferGroup group_;
};

class TPipe {
public:
    TPipe() { evk::core().pipe = this; }
    template <TPosition P, int32_t D, int32_t M>
    bool InitBuffer(TQue<P, D, M>& que, uint8_t num, uint32_t len, evk::Site site = evk::Site()) {
        que.group_.init(P, num, len, "InitBuffer(queue, num, len)", site);
        return true;
    }
    template <TPosition P>
    bool InitBuffer(TBuf<P>& buf, uint32_t len, evk::Site site = evk::Site()) {
        buf.group_.init(P, 1, len, "InitBuffer(tbuf, len)", site);
        return true;
    }
    void Destroy() {}
    void Reset() {}
    template <HardEvent E>
    TEventID FetchEventID() { return 0; }
    TEventID FetchEventID(HardEvent) { return 0; }
    template <HardEvent E>
    TEventID AllocEventID() { return 0; }
    template <HardEvent E>
    void ReleaseEventID(TEventID) {}
};

inline TPipe* GetTPipePtr() { return static_cast<TPipe*>(evk::core().pipe); }

// ---- synchronisation ---------------------------------------------------------
// The model runs every pipe in program order, so barriers and flags change
// nothing here; flags are still counted, because a WaitFlag with no earlier
// SetFlag hangs the NPU.
template <pipe_t pipe>
inline void PipeBarrier() {}
inline void pipe_barrier(pipe_t) {}

template <HardEvent event>
inline void SetFlag(int32_t eventID, evk::Site site = evk::Site()) {
    (void)site;
    evk::core().flags[{static_cast<int>(event), eventID}]++;
}

}  // namespace AscendC

namespace evk {
inline const char* event_name(AscendC::HardEvent e) {
    static const char* names[] = {"MTE2_MTE1", "MTE1_MTE2", "MTE1_M", "M_MTE1", "MTE2_V", "V_MTE2", "MTE3_V",
                                  "V_MTE3", "M_V", "V_M", "V_V", "MTE3_MTE1", "MTE1_MTE3", "MTE1_V", "MTE2_M",
                                  "M_MTE2", "V_MTE1", "M_FIX", "FIX_M", "MTE3_MTE2", "MTE2_MTE3", "S_V", "V_S",
                                  "S_MTE2", "MTE2_S", "S_MTE3", "MTE3_S", "MTE2_FIX", "FIX_MTE2", "FIX_S", "M_S",
                                  "FIX_MTE3"};
    int i = static_cast<int>(e);
    return i >= 0 && i < static_cast<int>(sizeof(names) / sizeof(names[0])) ? names[i] : "?";
}
}  // namespace evk

namespace AscendC {

template <HardEvent event>
inline void WaitFlag(int32_t eventID, evk::Site site = evk::Site()) {
    int64_t& pending = evk::core().flags[{static_cast<int>(event), eventID}];
    if (pending <= 0)
        evk::hazard("sync_deadlock",
                    evk::fmt("WaitFlag<HardEvent::%s>(%d) waits for an event that no earlier SetFlag with the same "
                             "HardEvent and event id raised on this core: on the NPU this hangs. Pair every "
                             "WaitFlag with a SetFlag before it",
                             evk::event_name(event), eventID),
                    site);
    pending--;
}

}  // namespace AscendC
