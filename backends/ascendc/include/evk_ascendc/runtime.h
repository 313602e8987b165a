// Launch support for the wrapper that backends/ascendc/_build.py generates:
// run every block in turn, turn a hazard into an error kind and message, and
// write what each block did for the cost model.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <new>
#include "core.h"

#define EVK_EXPORT extern "C" __attribute__((visibility("default")))

namespace evk {

struct LaunchReport {
    std::string error_kind;
    std::string error_message;
    std::string stats;
};

inline LaunchReport& report() {
    static LaunchReport r;
    return r;
}

// Fresh UB holds garbage on the NPU; the model fills it with 0xFF bytes (NaN
// for half and float) so a kernel that reads UB it never wrote shows wrong
// results instead of passing by luck on zeros.
constexpr uint8_t kUbPoison = 0xFF;

inline void append_stats(std::string& out) {
    CoreState& c = core();
    out += evk::fmt("block=%lld gm_to_ub=%llu ub_to_gm=%llu ub_to_ub=%llu gm_to_ub_copies=%llu "
                    "ub_to_gm_copies=%llu ub_used=%llu scalar_ub=%llu scalar_gm=%llu",
                    (long long)c.block_idx, (unsigned long long)c.gm_to_ub_bytes,
                    (unsigned long long)c.ub_to_gm_bytes, (unsigned long long)c.ub_to_ub_bytes,
                    (unsigned long long)c.gm_to_ub_copies, (unsigned long long)c.ub_to_gm_copies,
                    (unsigned long long)c.ub_used, (unsigned long long)c.scalar_ub,
                    (unsigned long long)c.scalar_gm);
    out += " queues=";
    bool first = true;
    for (auto& q : c.queues) {
        out += evk::fmt("%s%d:%u:%u:%u", first ? "" : ",", q->position, q->buffers, q->allocs, q->distinct);
        first = false;
    }
    out += " ops=";
    first = true;
    for (auto& kv : c.ops) {
        out += evk::fmt("%s%s:%llu:%llu", first ? "" : ",", kv.first.c_str(),
                        (unsigned long long)kv.second.instructions, (unsigned long long)kv.second.repeats);
        first = false;
    }
    out += "\n";
}

// The kernel runs on shadow copies of its GM tensors, each with unused red
// zones around it, so an access past the end of one tensor can never land in
// its neighbour (torch often packs small tensors back to back) and is always
// reported. Arguments that overlap in host memory (in-place kernels) share one
// shadow. Results are copied back after the launch.
class GmShadow {
public:
    explicit GmShadow(const std::vector<GmRegion>& host) : host_(host), device_(host) {
        std::vector<size_t> order(host.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return host[a].base < host[b].base; });
        size_t i = 0;
        while (i < order.size()) {
            const uint8_t* lo = host[order[i]].base;
            const uint8_t* hi = lo + host[order[i]].bytes;
            size_t j = i + 1;
            while (j < order.size() && lo != nullptr && host[order[j]].base != nullptr && host[order[j]].base < hi) {
                hi = std::max(hi, host[order[j]].base + host[order[j]].bytes);
                ++j;
            }
            uint64_t bytes = static_cast<uint64_t>(hi - lo);
            uint64_t gap = std::max<uint64_t>(65536, (bytes + 511) / 512 * 512);
            uint8_t* block = static_cast<uint8_t*>(std::malloc(2 * gap + bytes + 512));
            if (block == nullptr) throw std::bad_alloc();
            blocks_.push_back(block);
            uint8_t* base = block + gap;
            if (bytes) std::memcpy(base, lo, bytes);
            groups_.push_back({const_cast<uint8_t*>(lo), base, bytes});
            for (size_t k = i; k < j; ++k) device_[order[k]].base = base + (host[order[k]].base - lo);
            i = j;
        }
    }
    ~GmShadow() {
        for (uint8_t* b : blocks_) std::free(b);
    }
    GmShadow(const GmShadow&) = delete;
    GmShadow& operator=(const GmShadow&) = delete;

    uint8_t* ptr(size_t i) const { return const_cast<uint8_t*>(device_[i].base); }
    const std::vector<GmRegion>& regions() const { return device_; }
    void copy_back() const {
        for (const Group& g : groups_)
            if (g.bytes) std::memcpy(g.host, g.device, g.bytes);
    }

private:
    struct Group {
        uint8_t* host;
        uint8_t* device;
        uint64_t bytes;
    };
    std::vector<GmRegion> host_, device_;
    std::vector<uint8_t*> blocks_;
    std::vector<Group> groups_;
};

// Runs body() once per block with fresh per-core state. Returns 0 on
// success, 1 on a hazard, 2 on any other C++ exception.
template <typename F>
inline int run_blocks(int64_t block_dim, const std::vector<GmRegion>& regions, F&& body) {
    LaunchReport& r = report();
    r.error_kind.clear();
    r.error_message.clear();
    r.stats.clear();
    gm_regions() = regions;
    gm_writes().clear();
    int rc = 0;
    for (int64_t b = 0; b < block_dim && rc == 0; ++b) {
        core().reset(b, block_dim);
        std::fill(core().ub.begin(), core().ub.end(), kUbPoison);
        try {
            body();
            append_stats(r.stats);
        } catch (const Hazard& h) {
            r.error_kind = h.kind;
            r.error_message = "block " + std::to_string(b) + ", " + h.message;
            rc = 1;
        } catch (const std::exception& e) {
            r.error_kind = "runtime_error";
            r.error_message = "block " + std::to_string(b) + ": C++ exception: " + e.what();
            rc = 2;
        }
    }
    gm_regions().clear();
    gm_writes().clear();
    core().queues.clear();
    return rc;
}

}  // namespace evk
