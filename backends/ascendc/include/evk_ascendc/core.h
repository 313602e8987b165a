// EvoKernel's CPU model of the Ascend C programming model: core definitions.
//
// Written from the public Ascend C API documentation (names, arguments and
// semantics); no Huawei header or CANN source was used. The model runs each
// AI core (block) in turn on the host CPU and checks the rules the hardware
// punishes: Unified Buffer overflow, unaligned DataCopy, queue protocol
// errors, out-of-bounds GM/UB access, and event waits that would hang.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "half.h"

// ---- qualifiers that mean something only to the NPU compiler --------------
#define __aicore__
#define __global__
#define __gm__
#define __ubuf__
#define __inline__ inline
#define GM_ADDR uint8_t*
#define KERNEL_TYPE_AIV_ONLY 0
#define KERNEL_TYPE_AIC_ONLY 1
#define KERNEL_TYPE_MIX_AIC_1_2 2
#define KERNEL_TYPE_MIX_AIC_1_1 3
#define KERNEL_TYPE_MIX_AIV_1_0 4
#define KERNEL_TYPE_MIX_AIC_1_0 5
// Which core this code runs on: the NPU compiler builds a MIX kernel twice and
// these are constants there; here each core asks at run time. Written
// `if ASCEND_IS_AIV { ... }` or `if (ASCEND_IS_AIV) { ... }`.
#define ASCEND_IS_AIV (evk::core().kind == evk::CoreKind::AIV)
#define ASCEND_IS_AIC (evk::core().kind == evk::CoreKind::AIC)
#define ASCEND_IS_NOT_AIV (!ASCEND_IS_AIV)
#define ASCEND_IS_NOT_AIC (!ASCEND_IS_AIC)
#define KERNEL_TASK_TYPE_DEFAULT(x)
#define KERNEL_TASK_TYPE(key, x)

namespace evk {

// 910B vector core (DESIGN section 7): 192 KB Unified Buffer, 32 B data
// blocks, 256 B per vector repeat, at most 255 repeats per instruction.
constexpr uint64_t kUbBytes = 196608;
constexpr uint32_t kBlockBytes = 32;
constexpr uint32_t kRepeatBytes = 256;
constexpr uint32_t kMaxRepeat = 255;

// The on-chip buffers of a 910B AI Core. The vector core (AIV) has the
// Unified Buffer; the cube core (AIC) has L1 (A1/B1/C1), L0A (A2), L0B (B2),
// L0C (CO1) and the bias table (C2). Capacities from DESIGN section 7; the
// bias table's 1 KB from the public Ascend C documentation of Mmad with bias.
enum class Phys : int { UB = 0, L1, L0A, L0B, L0C, BT, COUNT };
constexpr uint64_t kPhysBytes[] = {196608, 524288, 65536, 65536, 131072, 1024};
constexpr const char* kPhysName[] = {"Unified Buffer", "L1 Buffer", "L0A Buffer", "L0B Buffer", "L0C Buffer",
                                     "BiasTable Buffer"};
constexpr const char* kPhysShort[] = {"UB", "L1", "L0A", "L0B", "L0C", "BT"};
// Start-address alignment a tensor operand needs in each buffer (bytes).
constexpr uint64_t kPhysAlign[] = {32, 32, 512, 512, 64, 64};
constexpr const char* kPhysOverflowKind[] = {"ub_overflow", "l1_overflow", "l0a_overflow", "l0b_overflow",
                                             "l0c_overflow", "bt_overflow"};

enum class CoreKind : int { AIV = 0, AIC = 1 };
inline const char* kind_name(CoreKind k) { return k == CoreKind::AIC ? "AIC (cube core)" : "AIV (vector core)"; }

// Kernel types, as the launch wrapper passes them (backends/ascendc/_build.py).
enum class KernelType : int { AIV_ONLY = 0, AIC_ONLY = 1, MIX_AIC_1_2 = 2, MIX_AIC_1_1 = 3, MIX_AIV_1_0 = 4,
                              MIX_AIC_1_0 = 5 };

// Where in the candidate's source a call was made: the default argument is
// evaluated at the call site, so messages can name the kernel's own line.
struct Site {
    int line;
    explicit Site(int l = __builtin_LINE()) : line(l) {}
};

struct Hazard {
    std::string kind;
    std::string message;
};

[[noreturn]] inline void hazard(const char* kind, const std::string& message, Site site) {
    std::string where = site.line > 0 ? "line " + std::to_string(site.line) + ": " : "";
    throw Hazard{kind, where + message};
}

template <typename... A>
inline std::string fmt(const char* f, A... a) {
    char buf[1024];
    std::snprintf(buf, sizeof buf, f, a...);
    return buf;
}

template <typename T> inline const char* type_name() { return "T"; }

struct GmRegion {
    const uint8_t* base;
    uint64_t bytes;
    int arg;           // position in the entry's parameter list
    const char* name;  // the entry's parameter name
};

struct SlotState;

// What one AI core did, for the cost model (backends/ascendc/_cost.py).
struct OpCount {
    uint64_t instructions = 0;
    uint64_t repeats = 0;
};

struct QueueUse {
    int position;       // TPosition value
    uint32_t buffers;   // InitBuffer num
    uint32_t allocs;    // AllocTensor calls
    uint32_t distinct;  // distinct buffers handed out
};

// A vector clock: what this core knows of every other core's progress.
// Sparse, because an AIV-only launch may have thousands of blocks that never
// synchronise.
using Clock = std::map<int, uint64_t>;
inline void merge_clock(Clock& into, const Clock& from) {
    for (const auto& kv : from) {
        uint64_t& v = into[kv.first];
        if (kv.second > v) v = kv.second;
    }
}

struct CoreState {
    int index = 0;  // position in the launch (all cores of all kinds)
    CoreKind kind = CoreKind::AIV;
    int64_t block_idx = 0;
    int64_t block_num = 1;
    int64_t group = 0;     // the AI Core (one AIC and its AIVs) this core belongs to
    int64_t sub_block = 0; // GetSubBlockIdx(): which AIV of its AI Core
    int64_t task_ration = 1;
    std::vector<uint8_t> mem[static_cast<int>(Phys::COUNT)];
    uint64_t used[static_cast<int>(Phys::COUNT)] = {};
    std::string calls[static_cast<int>(Phys::COUNT)];  // "line N: InitBuffer(...) ... bytes\n" ...
    std::vector<uint8_t>& ub = mem[0];
    uint64_t& ub_used = used[0];
    uint64_t gm_to_ub_bytes = 0, ub_to_gm_bytes = 0, ub_to_ub_bytes = 0;
    uint64_t gm_to_ub_copies = 0, ub_to_gm_copies = 0;
    uint64_t scalar_ub = 0, scalar_gm = 0;
    // cube work (AIC): MTE2 into L1/L0, MTE1 L1 -> L0A/L0B, cube fractal cycles, FIXPIPE out of L0C
    uint64_t gm_to_l1_bytes = 0, l1_to_l0_bytes = 0, gm_to_l0_bytes = 0, fixpipe_bytes = 0, l1_to_gm_bytes = 0;
    uint64_t mmad_cycles = 0, mmad_calls = 0, loaddata_calls = 0, fixpipe_calls = 0, l1_copies = 0;
    std::map<std::string, OpCount> ops; // "Add:2" -> counts (2 = bytes per element)
    std::vector<std::shared_ptr<QueueUse>> queues;
    std::map<std::pair<int, int>, int64_t> flags;  // (HardEvent, id) -> pending SetFlag count
    void* pipe = nullptr;
    bool atomic_add = false;  // SetAtomicAdd: UB/L0C -> GM copies accumulate
    bool matmul_registered = false;
    Clock clock;  // clock[index] is this core's own epoch

    void reset(int idx, CoreKind k, int64_t block, int64_t num, int64_t grp, int64_t sub, int64_t ration) {
        index = idx;
        kind = k;
        block_idx = block;
        block_num = num;
        group = grp;
        sub_block = sub;
        task_ration = ration;
        for (int p = 0; p < static_cast<int>(Phys::COUNT); ++p) {
            bool here = (p == static_cast<int>(Phys::UB)) == (k == CoreKind::AIV);
            mem[p].assign(here ? kPhysBytes[p] : 0, 0);
            used[p] = 0;
            calls[p].clear();
        }
        gm_to_ub_bytes = ub_to_gm_bytes = ub_to_ub_bytes = 0;
        gm_to_ub_copies = ub_to_gm_copies = 0;
        scalar_ub = scalar_gm = 0;
        gm_to_l1_bytes = l1_to_l0_bytes = gm_to_l0_bytes = fixpipe_bytes = l1_to_gm_bytes = 0;
        mmad_cycles = mmad_calls = loaddata_calls = fixpipe_calls = l1_copies = 0;
        ops.clear();
        queues.clear();
        flags.clear();
        pipe = nullptr;
        atomic_add = false;
        matmul_registered = false;
        clock.clear();
        clock[idx] = 1;
    }
    std::string who() const {
        return kind == CoreKind::AIC ? evk::fmt("AIC %lld", (long long)block_idx)
                                     : evk::fmt("AIV %lld", (long long)block_idx);
    }
};

// The core the calling thread runs (runtime.h runs each core on its own thread,
// one at a time).
inline CoreState*& current_core() {
    static thread_local CoreState* state = nullptr;
    return state;
}
inline CoreState& core() {
    CoreState* c = current_core();
    if (c == nullptr) {
        static thread_local CoreState outside;  // kernel code called outside a launch
        return outside;
    }
    return *c;
}

inline std::vector<GmRegion>& gm_regions() {
    static std::vector<GmRegion> regions;
    return regions;
}

inline void count_vector(const char* op, uint32_t elem_bytes, uint64_t repeats, uint64_t instructions) {
    OpCount& c = core().ops[std::string(op) + ":" + std::to_string(elem_bytes)];
    c.instructions += instructions;
    c.repeats += repeats;
}

// A count-mode vector instruction of `count` elements: 256 B per repeat, a
// new instruction every 255 repeats.
inline void count_vector_elems(const char* op, uint32_t elem_bytes, uint64_t count) {
    uint64_t repeats = (count * elem_bytes + kRepeatBytes - 1) / kRepeatBytes;
    if (repeats == 0) repeats = 1;
    count_vector(op, elem_bytes, repeats, (repeats + kMaxRepeat - 1) / kMaxRepeat);
}

inline const GmRegion* find_region(const void* p) {
    auto q = static_cast<const uint8_t*>(p);
    for (const GmRegion& r : gm_regions())
        if (q >= r.base && q < r.base + (r.bytes ? r.bytes : 1)) return &r;
    return nullptr;
}

// The argument whose end lies closest below `p`, for "N bytes past the end
// of 'x'" messages when an address is in no argument at all.
inline const GmRegion* region_below(const void* p) {
    auto q = static_cast<const uint8_t*>(p);
    const GmRegion* best = nullptr;
    for (const GmRegion& r : gm_regions())
        if (r.base && r.base + r.bytes <= q && (!best || r.base > best->base)) best = &r;
    return best;
}

// Every GM byte a launch touched, as disjoint segments: who wrote it last (at
// which epoch of its clock) and who read it since. All cores of a launch run
// at the same time on the NPU, so an access is safe only when the other
// core's conflicting access happened before it through a synchronisation
// (CrossCoreSetFlag/CrossCoreWaitFlag or SyncAll); the model runs cores one at
// a time and would otherwise hide the race.
struct GmSegment {
    const uint8_t* hi;
    int writer = -1;          // core index, -1: not written in this launch
    uint64_t write_epoch = 0;
    int write_line = 0;
    std::map<int, std::pair<uint64_t, int>> readers;  // core -> (epoch, line), reads since the last write
};

struct GmAccess {
    std::map<const uint8_t*, GmSegment> segs;
    std::vector<std::string> names;  // core index -> "AIV 3" / "AIC 0"
    std::vector<CoreKind> kinds;
    std::vector<int64_t> blocks;
    bool mixed = false;  // cores of both kinds in this launch
    void clear() {
        segs.clear();
        names.clear();
        kinds.clear();
        blocks.clear();
        mixed = false;
    }
    // Split so that [lo, hi) is covered by whole segments, creating empty ones for gaps.
    void cover(const uint8_t* lo, const uint8_t* hi) {
        split_at(lo);
        split_at(hi);
        const uint8_t* at = lo;
        auto it = segs.lower_bound(lo);
        while (at < hi) {
            if (it == segs.end() || it->first > at) {
                const uint8_t* end = (it == segs.end() || it->first > hi) ? hi : it->first;
                it = segs.emplace_hint(it, at, GmSegment{end});
                at = end;
                ++it;
            } else {
                at = it->second.hi;
                ++it;
            }
        }
    }
    void split_at(const uint8_t* p) {
        auto it = segs.upper_bound(p);
        if (it == segs.begin()) return;
        --it;
        if (it->first < p && p < it->second.hi) {
            GmSegment right = it->second;
            it->second.hi = p;
            segs.emplace(p, right);
        }
    }
};

inline GmAccess& gm_access() {
    static GmAccess a;
    return a;
}

[[noreturn]] inline void report_race(const uint8_t* at, uint32_t elem_bytes, int first_core, Site site);
[[noreturn]] inline void report_unsynced(const char* what, const uint8_t* at, uint32_t elem_bytes, int other,
                                         int other_line, Site site);

inline bool happened_before(int other, uint64_t epoch, const CoreState& me) {
    auto it = me.clock.find(other);
    return it != me.clock.end() && it->second > epoch;
}

// Record a GM read of [p, p + bytes) by the current core; a byte another core
// wrote in this launch without a synchronisation in between is a race.
inline void gm_read(const void* p, uint64_t bytes, uint32_t elem_bytes, Site site) {
    if (bytes == 0) return;
    CoreState& me = core();
    auto lo = static_cast<const uint8_t*>(p);
    const uint8_t* hi = lo + bytes;
    GmAccess& acc = gm_access();
    acc.cover(lo, hi);
    for (auto it = acc.segs.lower_bound(lo); it != acc.segs.end() && it->first < hi; ++it) {
        GmSegment& s = it->second;
        if (s.writer >= 0 && s.writer != me.index && !happened_before(s.writer, s.write_epoch, me))
            report_unsynced("reads", it->first, elem_bytes, s.writer, s.write_line, site);
        auto& r = s.readers[me.index];
        r = {me.clock[me.index], site.line};
    }
}

// Copy `bytes` to GM at `dst` for the current core, checking other cores' accesses.
// Two cores writing the same values (redundant work) is allowed; different
// values, or overwriting what another core read, without synchronisation, is a race.
inline void gm_write(void* dst, const void* src, uint64_t bytes, uint32_t elem_bytes, Site site) {
    if (bytes == 0) return;
    CoreState& me = core();
    auto lo = static_cast<const uint8_t*>(dst);
    const uint8_t* hi = lo + bytes;
    GmAccess& acc = gm_access();
    acc.cover(lo, hi);
    for (auto it = acc.segs.lower_bound(lo); it != acc.segs.end() && it->first < hi; ++it) {
        GmSegment& s = it->second;
        for (const auto& r : s.readers)
            if (r.first != me.index && !happened_before(r.first, r.second.first, me))
                report_unsynced("overwrites what", it->first, elem_bytes, r.first, r.second.second, site);
        if (s.writer >= 0 && s.writer != me.index && !happened_before(s.writer, s.write_epoch, me)) {
            const uint8_t* a = it->first;
            const uint8_t* b = s.hi;
            const uint8_t* fresh = static_cast<const uint8_t*>(src) + (a - lo);
            if (!me.atomic_add && std::memcmp(a, fresh, static_cast<size_t>(b - a)) != 0) {
                const uint8_t* diff = a;
                while (*diff == fresh[diff - a]) ++diff;
                report_race(diff, elem_bytes, s.writer, site);
            }
        }
    }
    std::memmove(dst, src, bytes);
    for (auto it = acc.segs.lower_bound(lo); it != acc.segs.end() && it->first < hi; ++it) {
        GmSegment& s = it->second;
        s.writer = me.index;
        s.write_epoch = me.clock[me.index];
        s.write_line = site.line;
        s.readers.clear();
    }
}

inline std::string gm_where(const uint8_t* at, uint32_t elem_bytes) {
    const GmRegion* r = find_region(at);
    return r ? evk::fmt("element %lld of tensor argument #%d '%s'",
                        (long long)((at - r->base) / (elem_bytes ? elem_bytes : 1)), r->arg, r->name)
             : std::string("a GM address");
}

inline std::string core_name(int index) {
    const GmAccess& acc = gm_access();
    return index >= 0 && index < static_cast<int>(acc.names.size()) ? acc.names[index] : "another core";
}

inline void report_race(const uint8_t* at, uint32_t elem_bytes, int first_core, Site site) {
    const GmAccess& acc = gm_access();
    long long first_block = first_core < static_cast<int>(acc.blocks.size()) ? acc.blocks[first_core] : first_core;
    std::string who = acc.mixed ? core_name(first_core) + " and " + core().who()
                                : evk::fmt("blocks %lld and %lld", first_block, (long long)core().block_idx);
    hazard("gm_write_race",
           who + " write different values to " + gm_where(at, elem_bytes) +
               ": on the NPU all blocks run at the same time, so the result would depend on timing. Give each "
               "block its own slice of the output (offset by GetBlockIdx() * blockLength) and make the slices "
               "disjoint",
           site);
}

inline void report_unsynced(const char* what, const uint8_t* at, uint32_t elem_bytes, int other, int other_line,
                            Site site) {
    const GmAccess& acc = gm_access();
    CoreState& me = core();
    bool cross_kind = other < static_cast<int>(acc.kinds.size()) && acc.kinds[other] != me.kind;
    std::string other_did = std::string(std::strcmp(what, "reads") == 0 ? "wrote" : "read") +
                            (other_line > 0 ? " at line " + std::to_string(other_line) : std::string());
    std::string fix =
        cross_kind
            ? (me.kind == CoreKind::AIV
                   ? "The AIC must signal after its Fixpipe/DataCopy to GM with CrossCoreSetFlag<2, PIPE_FIX>(id) "
                     "and the AIV wait with CrossCoreWaitFlag(id) before reading (mode 2 pairs an AIC with its "
                     "AIVs)"
                   : "The AIV must signal after its DataCopy to GM with CrossCoreSetFlag<2, PIPE_MTE3>(id) and the "
                     "AIC wait with CrossCoreWaitFlag(id) before reading (mode 2 pairs an AIC with its AIVs)")
            : "Synchronise the cores in between (SyncAll(), or CrossCoreSetFlag/CrossCoreWaitFlag), or let each "
              "block read only what it wrote itself";
    hazard("cross_core_race",
           me.who() + " " + what + " " + gm_where(at, elem_bytes) + ", which " + core_name(other) + " " +
               other_did + " without a synchronisation in between: on the NPU both run at the same time, so " +
               (std::strcmp(what, "reads") == 0 ? "the read may see old data. " : "the other core may read the new data. ") +
               fix,
           site);
}

}  // namespace evk

namespace AscendC {

// ---- constants and enums ---------------------------------------------------
constexpr int32_t ONE_BLK_SIZE = 32;
constexpr int32_t ONE_REPEAT_BYTE_SIZE = 256;
constexpr int32_t MAX_REPEAT_TIMES = 255;
constexpr int32_t DEFAULT_BLK_NUM = 8;
constexpr int32_t DEFAULT_BLK_STRIDE = 1;
constexpr int32_t DEFAULT_REPEAT_STRIDE = 8;
constexpr int32_t BLOCK_CUBE = 16;

enum class TPosition : int32_t { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM, TSCM, MAX };
using QuePosition = TPosition;

enum class RoundMode : int32_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };

enum class ReduceOrder : int32_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };

enum pipe_t : int32_t { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_MTE4, PIPE_MTE5, PIPE_V2, PIPE_FIX };

enum class HardEvent : int32_t { MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V, MTE3_MTE1, MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3, S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3, MAX };

enum event_t : int32_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };
using TEventID = int8_t;

// ---- where this block runs ---------------------------------------------------
inline int64_t GetBlockIdx() { return evk::core().block_idx; }
inline int64_t GetBlockNum() { return evk::core().block_num; }
inline int64_t GetTaskRation() { return evk::core().task_ration; }
inline int64_t GetSubBlockIdx() { return evk::core().sub_block; }
inline int64_t GetSubBlockNum() { return evk::core().kind == evk::CoreKind::AIV ? evk::core().task_ration : 1; }

}  // namespace AscendC

namespace evk {
template <> inline const char* type_name<float>() { return "float"; }
template <> inline const char* type_name<AscendC::half>() { return "half"; }
template <> inline const char* type_name<AscendC::bfloat16_t>() { return "bfloat16_t"; }
template <> inline const char* type_name<double>() { return "double"; }
template <> inline const char* type_name<int8_t>() { return "int8_t"; }
template <> inline const char* type_name<uint8_t>() { return "uint8_t"; }
template <> inline const char* type_name<int16_t>() { return "int16_t"; }
template <> inline const char* type_name<uint16_t>() { return "uint16_t"; }
template <> inline const char* type_name<int32_t>() { return "int32_t"; }
template <> inline const char* type_name<uint32_t>() { return "uint32_t"; }
template <> inline const char* type_name<int64_t>() { return "int64_t"; }
template <> inline const char* type_name<uint64_t>() { return "uint64_t"; }

// Arithmetic goes through float for 16-bit floats (one rounding per
// instruction, as the hardware does) and natively otherwise.
template <typename T> struct Acc { using type = T; };
template <> struct Acc<AscendC::half> { using type = float; };
template <> struct Acc<AscendC::bfloat16_t> { using type = float; };
template <typename T> using acc_t = typename Acc<T>::type;
}  // namespace evk
