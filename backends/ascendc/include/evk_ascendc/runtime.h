// Launch support for the wrapper that backends/ascendc/_build.py generates:
// run every core of a launch, turn a hazard into an error kind and message,
// and write what each core did for the cost model.
//
// Each core runs on its own thread, but only one runs at a time: a core runs
// until it finishes or waits (CrossCoreWaitFlag, SyncAll), then the next one
// that can go does. That keeps the model deterministic and lets a vector core
// wait for its cube core and the other way round. When every unfinished core
// waits, the NPU would hang: that is a `sync_deadlock`.
#pragma once
#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <thread>
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

// Fresh UB (and L1/L0) holds garbage on the NPU; the model fills it with 0xFF
// bytes (NaN for half and float) so a kernel that reads a buffer it never
// wrote shows wrong results instead of passing by luck on zeros.
constexpr uint8_t kUbPoison = 0xFF;

inline void append_stats(std::string& out, const CoreState& c) {
    out += evk::fmt("block=%lld core=%s gm_to_ub=%llu ub_to_gm=%llu ub_to_ub=%llu gm_to_ub_copies=%llu "
                    "ub_to_gm_copies=%llu ub_used=%llu scalar_ub=%llu scalar_gm=%llu",
                    (long long)c.block_idx, c.kind == CoreKind::AIC ? "aic" : "aiv",
                    (unsigned long long)c.gm_to_ub_bytes, (unsigned long long)c.ub_to_gm_bytes,
                    (unsigned long long)c.ub_to_ub_bytes, (unsigned long long)c.gm_to_ub_copies,
                    (unsigned long long)c.ub_to_gm_copies, (unsigned long long)c.used[0],
                    (unsigned long long)c.scalar_ub, (unsigned long long)c.scalar_gm);
    out += evk::fmt(" group=%lld gm_to_l1=%llu gm_to_l0=%llu l1_to_l0=%llu l1_to_gm=%llu fixpipe=%llu "
                        "mmad_cycles=%llu mmad_calls=%llu loaddata_calls=%llu fixpipe_calls=%llu l1_copies=%llu "
                        "l1_used=%llu l0a_used=%llu l0b_used=%llu l0c_used=%llu",
                        (long long)c.group, (unsigned long long)c.gm_to_l1_bytes, (unsigned long long)c.gm_to_l0_bytes,
                        (unsigned long long)c.l1_to_l0_bytes, (unsigned long long)c.l1_to_gm_bytes,
                        (unsigned long long)c.fixpipe_bytes, (unsigned long long)c.mmad_cycles,
                        (unsigned long long)c.mmad_calls, (unsigned long long)c.loaddata_calls,
                        (unsigned long long)c.fixpipe_calls, (unsigned long long)c.l1_copies,
                        (unsigned long long)c.used[1], (unsigned long long)c.used[2], (unsigned long long)c.used[3],
                        (unsigned long long)c.used[4]);
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

// Thrown into a waiting core when another core failed: unwinds its stack.
struct Aborted {};
// Thrown on the AIC of a MIX kernel by REGIST_MATMUL_OBJ (matmul.h): from there
// on the cube core only serves its vector cores' Matmul calls, so its own code
// after the registration never runs. A normal end of that core.
struct MatmulServer {};

// One core of a launch and the cooperative scheduler that runs them.
struct CoreSlot {
    CoreKind kind = CoreKind::AIV;
    int64_t block = 0, group = 0, sub = 0, ration = 1;
    enum class St { NotStarted, Running, Waiting, Done } st = St::NotStarted;
    std::function<bool()> ready;  // while waiting: can it go on?
    std::string waiting_for;      // while waiting: what for (for deadlock messages)
    std::unique_ptr<CoreState> state;
    std::thread thread;
    int16_t cross_flag[16] = {};       // CrossCoreWaitFlag counters
    Clock cross_clock[16];             // what the SetFlag that raised each counter knew
};

struct Launch {
    KernelType type = KernelType::AIV_ONLY;
    int64_t block_dim = 1;
    std::vector<CoreSlot> cores;
    std::mutex m;
    std::condition_variable cv;
    int running = -1;       // the core allowed to run, -1 none, -2 the launching thread
    bool abort = false;
    std::function<void()> body;
    std::vector<int> finished;  // done cores whose threads are not joined yet
    // CrossCoreSetFlag bookkeeping: pending sets per (core, flag) that wait for the other participants
    std::vector<std::array<int, 16>> pending;
    std::vector<std::array<Clock, 16>> pending_clock;
    // SyncAll barriers: generation and arrivals per participant set (0: all AIV, 1: all cores)
    uint64_t barrier_gen[2] = {0, 0};
    int barrier_count[2] = {0, 0};
    Clock barrier_clock[2];
    Clock barrier_release[2];

    bool mixed() const { return type == KernelType::MIX_AIC_1_2 || type == KernelType::MIX_AIC_1_1; }
    int aivs_per_group() const { return type == KernelType::MIX_AIC_1_2 ? 2 : 1; }
};

inline Launch*& current_launch() {
    static Launch* l = nullptr;
    return l;
}

// Hand the machine to the next core that can run; called with the lock held
// by the core that stops running (or by the launching thread to start).
inline void schedule_next(Launch& L, std::unique_lock<std::mutex>& lock, int self);

inline void core_main(Launch& L, int i) {
    std::unique_lock<std::mutex> lock(L.m);
    L.cv.wait(lock, [&] { return L.running == i || L.abort; });
    CoreSlot& s = L.cores[i];
    if (!L.abort) {
        lock.unlock();
        current_core() = s.state.get();
        bool failed = false;
        try {
            L.body();
            append_stats(report().stats, *s.state);
        } catch (const Hazard& h) {
            if (report().error_kind.empty()) {
                report().error_kind = h.kind;
                report().error_message = s.state->who() + ", " + h.message;
                if (!L.mixed() && s.kind == CoreKind::AIV)
                    report().error_message = "block " + std::to_string(s.block) + ", " + h.message;
            }
            failed = true;
        } catch (const MatmulServer&) {
            append_stats(report().stats, *s.state);
        } catch (const Aborted&) {
        } catch (const std::exception& e) {
            if (report().error_kind.empty()) {
                report().error_kind = "runtime_error";
                report().error_message = s.state->who() + ": C++ exception: " + e.what();
            }
            failed = true;
        }
        current_core() = nullptr;
        lock.lock();
        if (failed) L.abort = true;
    }
    s.st = CoreSlot::St::Done;
    s.state.reset();
    schedule_next(L, lock, i);
}

inline void start_core(Launch& L, int i) {
    CoreSlot& s = L.cores[i];
    s.state.reset(new CoreState());
    s.state->reset(i, s.kind, s.block, L.block_dim, s.group, s.sub, s.ration);
    for (auto& m : s.state->mem) std::fill(m.begin(), m.end(), kUbPoison);
    s.st = CoreSlot::St::Running;
    s.thread = std::thread(core_main, std::ref(L), i);
}

inline void schedule_next(Launch& L, std::unique_lock<std::mutex>&, int self) {
    // Threads of finished cores have released the lock and are exiting: join
    // them now, so a launch of thousands of blocks never holds thousands of threads.
    // (After an abort the launching thread joins everything itself.)
    std::vector<int> keep;
    for (int j : L.finished)
        if (j != self && !L.abort) L.cores[j].thread.join();
        else keep.push_back(j);
    L.finished = keep;
    if (self >= 0 && L.cores[self].st == CoreSlot::St::Done) L.finished.push_back(self);
    int n = static_cast<int>(L.cores.size());
    if (!L.abort) {
        for (int i = 0; i < n; ++i)
            if (L.cores[i].st == CoreSlot::St::Waiting && L.cores[i].ready()) {
                L.cores[i].st = CoreSlot::St::Running;
                L.running = i;
                L.cv.notify_all();
                return;
            }
        for (int i = 0; i < n; ++i)
            if (L.cores[i].st == CoreSlot::St::NotStarted) {
                start_core(L, i);
                L.running = i;
                L.cv.notify_all();
                return;
            }
        std::string waits;
        for (int i = 0; i < n; ++i)
            if (L.cores[i].st == CoreSlot::St::Waiting)
                waits += "\n  " + std::string(L.cores[i].kind == CoreKind::AIC ? "AIC " : "AIV ") +
                         std::to_string(L.cores[i].block) + " waits in " + L.cores[i].waiting_for;
        if (!waits.empty()) {
            report().error_kind = "sync_deadlock";
            report().error_message =
                "every unfinished core waits for another: on the NPU this launch hangs." + waits +
                "\nEach CrossCoreWaitFlag needs a matching CrossCoreSetFlag (same flag id, and a mode that "
                "reaches this core) on the other side, and every core must reach each SyncAll";
            L.abort = true;
        }
    }
    L.running = -2;  // back to the launching thread, which wakes the waiting cores to unwind
    L.cv.notify_all();
}

// Called by a core that must wait until `ready()`; gives the machine to others meanwhile.
inline void wait_until(std::function<bool()> ready, const std::string& what) {
    Launch* L = current_launch();
    if (L == nullptr || ready()) return;
    int me = core().index;
    std::unique_lock<std::mutex> lock(L->m);
    CoreSlot& s = L->cores[me];
    s.st = CoreSlot::St::Waiting;
    s.ready = std::move(ready);
    s.waiting_for = what;
    schedule_next(*L, lock, me);
    L->cv.wait(lock, [&] { return L->running == me || L->abort; });
    if (L->abort) throw Aborted{};
    s.ready = nullptr;
}

// Runs body() once per core with fresh per-core state. Returns 0 on success,
// 1 on a hazard, 2 on any other C++ exception.
template <typename F>
inline int run_blocks(int64_t block_dim, int kernel_type, const std::vector<GmRegion>& regions, F&& body) {
    LaunchReport& r = report();
    r.error_kind.clear();
    r.error_message.clear();
    r.stats.clear();
    gm_regions() = regions;
    GmAccess& acc = gm_access();
    acc.clear();
    Launch L;
    L.type = static_cast<KernelType>(kernel_type);
    L.block_dim = block_dim;
    L.body = [&] { body(); };
    // Cube cores first: in a MIX kernel the AIC usually produces what its AIVs consume.
    bool has_aic = L.type != KernelType::AIV_ONLY && L.type != KernelType::MIX_AIV_1_0;
    bool has_aiv = L.type != KernelType::AIC_ONLY && L.type != KernelType::MIX_AIC_1_0;
    int per = L.mixed() ? L.aivs_per_group() : 1;
    auto add = [&](CoreKind kind, int64_t block, int64_t group, int64_t sub, int64_t ration) {
        L.cores.emplace_back();
        CoreSlot& s = L.cores.back();
        s.kind = kind;
        s.block = block;
        s.group = group;
        s.sub = sub;
        s.ration = ration;
    };
    L.cores.reserve(static_cast<size_t>(block_dim) * (has_aic + (has_aiv ? per : 0)));
    if (has_aic)
        for (int64_t b = 0; b < block_dim; ++b) add(CoreKind::AIC, b, b, 0, 1);
    if (has_aiv)
        for (int64_t b = 0; b < block_dim * per; ++b)
            add(CoreKind::AIV, b, L.mixed() ? b / per : b, L.mixed() ? b % per : 0, L.mixed() ? per : 1);
    acc.mixed = has_aic && has_aiv;
    for (const CoreSlot& s : L.cores) {
        acc.names.push_back(evk::fmt("%s %lld", s.kind == CoreKind::AIC ? "AIC" : "AIV", (long long)s.block));
        acc.kinds.push_back(s.kind);
        acc.blocks.push_back(s.block);
    }
    L.pending.assign(L.cores.size(), {});
    L.pending_clock.assign(L.cores.size(), {});
    current_launch() = &L;
    {
        std::unique_lock<std::mutex> lock(L.m);
        schedule_next(L, lock, -1);
        L.cv.wait(lock, [&] {
            if (L.running != -2) return false;
            for (auto& c : L.cores)
                if (c.st == CoreSlot::St::Running) return false;
            return true;
        });
        L.abort = L.abort || !r.error_kind.empty();
        L.cv.notify_all();
        // waiting cores unwind; join only once every started core has finished
        L.cv.wait(lock, [&] {
            for (auto& c : L.cores)
                if (c.st == CoreSlot::St::Running || c.st == CoreSlot::St::Waiting) return false;
            return true;
        });
    }
    for (auto& c : L.cores)
        if (c.thread.joinable()) c.thread.join();
    current_launch() = nullptr;
    gm_regions().clear();
    acc.clear();
    if (r.error_kind.empty()) return 0;
    return r.error_kind == "runtime_error" ? 2 : 1;
}

}  // namespace evk
