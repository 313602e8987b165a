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
#define KERNEL_TASK_TYPE_DEFAULT(x)
#define KERNEL_TASK_TYPE(key, x)

namespace evk {

// 910B vector core (DESIGN section 7): 192 KB Unified Buffer, 32 B data
// blocks, 256 B per vector repeat, at most 255 repeats per instruction.
constexpr uint64_t kUbBytes = 196608;
constexpr uint32_t kBlockBytes = 32;
constexpr uint32_t kRepeatBytes = 256;
constexpr uint32_t kMaxRepeat = 255;

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

struct CoreState {
    int64_t block_idx = 0;
    int64_t block_num = 1;
    std::vector<uint8_t> ub;
    uint64_t ub_used = 0;
    std::string ub_calls;                // "InitBuffer(...) at line N: B bytes\n" ...
    uint64_t gm_to_ub_bytes = 0, ub_to_gm_bytes = 0, ub_to_ub_bytes = 0;
    uint64_t gm_to_ub_copies = 0, ub_to_gm_copies = 0;
    uint64_t scalar_ub = 0, scalar_gm = 0;
    std::map<std::string, OpCount> ops; // "Add:2" -> counts (2 = bytes per element)
    std::vector<std::shared_ptr<QueueUse>> queues;
    std::map<std::pair<int, int>, int64_t> flags;  // (HardEvent, id) -> pending SetFlag count
    void* pipe = nullptr;

    void reset(int64_t idx, int64_t num) {
        block_idx = idx;
        block_num = num;
        ub.assign(kUbBytes, 0);
        ub_used = 0;
        ub_calls.clear();
        gm_to_ub_bytes = ub_to_gm_bytes = ub_to_ub_bytes = 0;
        gm_to_ub_copies = ub_to_gm_copies = 0;
        scalar_ub = scalar_gm = 0;
        ops.clear();
        queues.clear();
        flags.clear();
        pipe = nullptr;
    }
};

inline CoreState& core() {
    static CoreState state;
    return state;
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

// GM bytes written so far in this launch, by block: [lo, hi) -> (hi, block).
// Blocks run one after another here but at the same time on the NPU, so two
// blocks writing different values to the same bytes is a race the model must
// report; writing the same values (redundant work) is allowed.
struct GmWrites {
    std::map<const uint8_t*, std::pair<const uint8_t*, int64_t>> spans;
    void clear() { spans.clear(); }
};

inline GmWrites& gm_writes() {
    static GmWrites w;
    return w;
}

[[noreturn]] inline void report_race(const uint8_t* at, uint32_t elem_bytes, int64_t first_block, Site site);

// Copy `bytes` to GM at `dst` for the current block, checking other blocks' writes.
inline void gm_write(void* dst, const void* src, uint64_t bytes, uint32_t elem_bytes, Site site) {
    if (bytes == 0) return;
    auto lo = static_cast<const uint8_t*>(dst);
    const uint8_t* hi = lo + bytes;
    const int64_t me = core().block_idx;
    auto& spans = gm_writes().spans;
    auto it = spans.upper_bound(lo);
    if (it != spans.begin()) --it;
    for (; it != spans.end() && it->first < hi; ++it) {
        const uint8_t* a = std::max(lo, it->first);
        const uint8_t* b = std::min(hi, it->second.first);
        if (a >= b || it->second.second == me) continue;
        const uint8_t* fresh = static_cast<const uint8_t*>(src) + (a - lo);
        if (std::memcmp(a, fresh, static_cast<size_t>(b - a)) != 0) {
            const uint8_t* diff = a;
            while (*diff == fresh[diff - a]) ++diff;
            report_race(diff, elem_bytes, it->second.second, site);
        }
    }
    std::memmove(dst, src, bytes);
    // Record [lo, hi) for this block, merging with its own neighbouring spans.
    auto next = spans.lower_bound(lo);
    if (next != spans.begin()) {
        auto prev = std::prev(next);
        if (prev->second.second == me && prev->second.first >= lo) {
            lo = prev->first;
            hi = std::max(hi, prev->second.first);
            next = spans.erase(prev);
        }
    }
    while (next != spans.end() && next->first <= hi && next->second.second == me) {
        hi = std::max(hi, next->second.first);
        next = spans.erase(next);
    }
    spans[lo] = {hi, me};
}

inline void report_race(const uint8_t* at, uint32_t elem_bytes, int64_t first_block, Site site) {
    const GmRegion* r = find_region(at);
    std::string where = r ? evk::fmt("element %lld of tensor argument #%d '%s'",
                                     (long long)((at - r->base) / (elem_bytes ? elem_bytes : 1)), r->arg, r->name)
                          : std::string("a GM address");
    hazard("gm_write_race",
           evk::fmt("blocks %lld and %lld write different values to ", (long long)first_block,
                    (long long)core().block_idx) +
               where +
               ": on the NPU all blocks run at the same time, so the result would depend on timing. Give each "
               "block its own slice of the output (offset by GetBlockIdx() * blockLength) and make the slices "
               "disjoint",
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
inline int64_t GetTaskRation() { return 1; }

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
