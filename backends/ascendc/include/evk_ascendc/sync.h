// Synchronisation between cores (CrossCoreSetFlag/CrossCoreWaitFlag, SyncAll),
// atomic accumulation into GM, and the system workspace.
//
// Our reading of the public documentation: every core has 16 counters, one per
// flag id. Mode 0 raises the counter of every core of the setter's kind once all
// of them have set the flag; mode 1 does the same for the AIVs of one AI Core;
// mode 2 pairs an AIC with its AIVs (the AIC's set raises each AIV's counter,
// the AIVs' sets, once all of them have set, raise the AIC's). A wait blocks
// until its counter is positive and takes one.
#pragma once
#include "runtime.h"
#include "tensor.h"

namespace evk {

inline CoreSlot& my_slot() { return current_launch()->cores[core().index]; }

// A release: move this core's epoch on and return what it knows.
inline Clock release_clock() {
    CoreState& c = core();
    c.clock[c.index]++;
    return c.clock;
}

inline void raise_flag(CoreSlot& target, int flag, const Clock& clock, Site site) {
    if (target.cross_flag[flag] >= 15)
        hazard("invalid_argument",
               evk::fmt("CrossCoreSetFlag raised flag %d of %s %lld a 16th time before any CrossCoreWaitFlag took "
                        "one: the hardware counter holds 0..15 and the NPU stops with an error. Wait for each set "
                        "before setting again",
                        flag, target.kind == CoreKind::AIC ? "AIC" : "AIV", (long long)target.block),
               site);
    target.cross_flag[flag]++;
    merge_clock(target.cross_clock[flag], clock);
}

inline void check_flag_id(uint16_t flag, const char* api, Site site) {
    if (flag > 15)
        hazard("invalid_argument",
               evk::fmt("%s(%u): flag ids are 0..15 (the hardware keeps only the low 4 bits, so %u would alias "
                        "flag %u)",
                        api, flag, flag, flag & 15u),
               site);
}

// Cores of a launch taking part in a mode-0/1 set: the same kind everywhere, or the AIVs of one AI Core.
inline std::vector<int> participants(Launch& L, int mode) {
    CoreState& me = core();
    std::vector<int> out;
    for (int i = 0; i < static_cast<int>(L.cores.size()); ++i) {
        const CoreSlot& s = L.cores[i];
        if (s.kind != me.kind) continue;
        if (mode == 1 && s.group != me.group) continue;
        out.push_back(i);
    }
    return out;
}

inline void cross_set(int mode, uint16_t flag, Site site) {
    check_flag_id(flag, "CrossCoreSetFlag", site);
    Launch* L = current_launch();
    if (L == nullptr) return;
    CoreState& me = core();
    if (mode != 0 && mode != 1 && mode != 2)
        hazard("invalid_argument",
               evk::fmt("CrossCoreSetFlag<%d, ...>: the 910B has sync modes 0 (all cores of one kind), 1 (the AIVs "
                        "of one AI Core) and 2 (an AIC and its AIVs)",
                        mode),
               site);
    if (mode != 0 && !L->mixed())
        hazard("core_type",
               evk::fmt("CrossCoreSetFlag<%d, ...> pairs the cores inside one AI Core, which only a MIX kernel has "
                        "(cube and vector work, KERNEL_TYPE_MIX_AIC_1_2). This kernel runs on %s only; use mode 0 "
                        "(or SyncAll) to synchronise cores of one kind",
                        mode, me.kind == CoreKind::AIC ? "cube cores" : "vector cores"),
               site);
    if (mode == 1 && me.kind != CoreKind::AIV)
        hazard("invalid_argument", "CrossCoreSetFlag<1, ...> synchronises the AIVs of an AI Core; call it on the AIV",
               site);
    Clock clock = release_clock();
    if (mode == 2 && me.kind == CoreKind::AIC) {
        for (CoreSlot& s : L->cores)
            if (s.kind == CoreKind::AIV && s.group == me.group) raise_flag(s, flag, clock, site);
        return;
    }
    std::vector<int> who;
    if (mode == 2) {  // an AIV: the AIC's counter moves once every AIV of the group has set
        for (int i = 0; i < static_cast<int>(L->cores.size()); ++i)
            if (L->cores[i].kind == CoreKind::AIV && L->cores[i].group == me.group) who.push_back(i);
    } else {
        who = participants(*L, mode);
    }
    L->pending[me.index][flag]++;
    merge_clock(L->pending_clock[me.index][flag], clock);
    for (int i : who)
        if (L->pending[i][flag] == 0) return;
    Clock all;
    for (int i : who) {
        L->pending[i][flag]--;
        merge_clock(all, L->pending_clock[i][flag]);
        if (L->pending[i][flag] == 0) L->pending_clock[i][flag].clear();
    }
    if (mode == 2) {
        for (CoreSlot& s : L->cores)
            if (s.kind == CoreKind::AIC && s.group == me.group) raise_flag(s, flag, all, site);
    } else {
        for (int i : who) raise_flag(L->cores[i], flag, all, site);
    }
}

inline void cross_wait(uint16_t flag, Site site) {
    check_flag_id(flag, "CrossCoreWaitFlag", site);
    Launch* L = current_launch();
    if (L == nullptr) return;
    CoreSlot* slot = &my_slot();
    wait_until([slot, flag] { return slot->cross_flag[flag] > 0; },
               evk::fmt("CrossCoreWaitFlag(%u) at line %d", flag, site.line));
    slot->cross_flag[flag]--;
    merge_clock(core().clock, slot->cross_clock[flag]);
}

inline void sync_all(bool aiv_only, Site site) {
    Launch* L = current_launch();
    if (L == nullptr) return;
    CoreState& me = core();
    if (aiv_only && me.kind == CoreKind::AIC)
        hazard("core_type",
               "SyncAll<true>() synchronises the vector cores only; the cube core must not call it (in a MIX "
               "kernel use SyncAll<false>() on both kinds of core)",
               site);
    int idx = aiv_only ? 0 : 1;
    int n = 0;
    for (const CoreSlot& s : L->cores) n += (!aiv_only || s.kind == CoreKind::AIV);
    Clock clock = release_clock();
    merge_clock(L->barrier_clock[idx], clock);
    uint64_t gen = L->barrier_gen[idx];
    if (++L->barrier_count[idx] == n) {
        L->barrier_release[idx] = L->barrier_clock[idx];
        L->barrier_clock[idx].clear();
        L->barrier_count[idx] = 0;
        L->barrier_gen[idx]++;
    } else {
        wait_until([L, idx, gen] { return L->barrier_gen[idx] != gen; },
                   evk::fmt("SyncAll at line %d (%d of %d cores arrived)", site.line, L->barrier_count[idx], n));
    }
    merge_clock(me.clock, L->barrier_release[idx]);
}

}  // namespace evk

namespace AscendC {

template <uint8_t modeId, pipe_t pipe>
inline void CrossCoreSetFlag(uint16_t flagId, evk::Site site = evk::Site()) {
    evk::cross_set(modeId, flagId, site);
}

template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId, evk::Site site = evk::Site()) {
    evk::cross_wait(flagId, site);
}

template <bool isAIVOnly = true>
inline void SyncAll(evk::Site site = evk::Site()) {
    evk::sync_all(isAIVOnly, site);
}

// The software barrier through a GM workspace: modelled as the hardware one
// over all vector cores (usedCores 0 or the full count).
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                    const int32_t usedCores = 0, evk::Site site = evk::Site()) {
    evk::Launch* L = evk::current_launch();
    int aivs = 0;
    if (L)
        for (const auto& s : L->cores) aivs += s.kind == evk::CoreKind::AIV;
    if (usedCores != 0 && usedCores != aivs)
        evk::hazard("invalid_argument",
                    evk::fmt("SyncAll(gm, ub, usedCores=%d) over a subset of the %d vector cores is not modelled; "
                             "synchronise all of them (usedCores = 0)",
                             usedCores, aivs),
                    site);
    evk::sync_all(true, site);
}

// GM writes of DataCopy (UB/L1 -> GM) and Fixpipe add to what is there while on.
template <typename T>
inline void SetAtomicAdd() { evk::core().atomic_add = true; }
inline void SetAtomicNone() { evk::core().atomic_add = false; }
inline void DisableDmaAtomic() { evk::core().atomic_add = false; }

// The system workspace the Matmul API and SyncAll use: the model needs none,
// but kernels written for CANN ask for it.
inline uint8_t*& evk_sys_workspace() {
    static thread_local uint8_t* w = nullptr;
    return w;
}
inline void SetSysWorkspace(GM_ADDR workspace) { evk_sys_workspace() = workspace; }
inline GM_ADDR GetSysWorkSpacePtr() {
    static uint8_t dummy[64];
    return evk_sys_workspace() ? evk_sys_workspace() : dummy;
}
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) { return workspace; }

}  // namespace AscendC
