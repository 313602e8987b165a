// The high-level Matmul API (a subset): C = A * B (+ bias) for one core's
// block, tiled by a TCubeTiling, as the public documentation describes it.
//
// In a MIX kernel the vector core (AIV) drives the object and the cube core
// (AIC) serves it: REGIST_MATMUL_OBJ on the AIC turns it into that server for
// the rest of the launch, as on the NPU. The model computes each request in
// the calling core and charges the cube work (cycles, L1/L0 traffic, fixpipe)
// to the AI Core's cube unit in the cost model. With ASCENDC_CUBE_ONLY defined
// (or a cube-only kernel) the AIC drives the object itself.
//
// Modelled: A, B, C and bias in GM, ND format (C also to a VECIN/VECCALC UB
// tensor with GetTensorC), A and B optionally transposed (MatmulType's ISTRANS
// and SetTensorA/B's flag), SetOrgShape, SetSingleShape, SetTail, Iterate +
// GetTensorC, IterateAll, End. The tiling's base blocks are checked against
// the L0A/L0B/L0C/L1 capacities with the documentation's rules.
#pragma once
#include "cube.h"

namespace AscendC {

enum class LayoutMode : int32_t { NONE = 0, NORMAL, BSNGD, SBNGD, BNGS1S2 };

template <TPosition POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false,
          LayoutMode LAYOUT = LayoutMode::NONE, bool IBSHARE = false>
struct MatmulType {
    constexpr static TPosition pos = POSITION;
    constexpr static CubeFormat format = FORMAT;
    using T = TYPE;
    constexpr static bool isTrans = ISTRANS;
    constexpr static LayoutMode layout = LAYOUT;
    constexpr static bool ibShare = IBSHARE;
};

// The fields of the documentation's TCubeTiling table, in its order.
struct TCubeTiling {
    int32_t usedCoreNum = 1;
    int32_t M = 0, N = 0, Ka = 0, Kb = 0;
    int32_t singleCoreM = 0, singleCoreN = 0, singleCoreK = 0;
    int32_t baseM = 0, baseN = 0, baseK = 0;
    int32_t depthA1 = 0, depthB1 = 0;
    int32_t stepM = 0, stepN = 0, stepKa = 0, stepKb = 0;
    int32_t isBias = 0;
    int32_t transLength = 0;
    int32_t iterateOrder = 0;
    int32_t dbL0A = 1, dbL0B = 1, dbL0C = 1;
    int32_t shareMode = 0, shareL1Size = 0, shareL0CSize = 0, shareUbSize = 0;
    int32_t batchM = 0, batchN = 0, singleBatchM = 0, singleBatchN = 0;
};

struct MatmulConfig {
    bool doNorm = true;
};
constexpr MatmulConfig CFG_NORM = {true};
constexpr MatmulConfig CFG_MDL = {false};

}  // namespace AscendC

namespace evk {

[[noreturn]] inline void matmul_misuse(const std::string& message, Site site) {
    hazard("matmul_misuse", message, site);
}

inline void check_tiling(const AscendC::TCubeTiling& t, uint32_t a_bytes, uint32_t b_bytes, uint32_t c0, bool bias,
                         uint32_t bias_bytes, Site site) {
    auto need = [&](bool ok, const std::string& rule) {
        if (!ok)
            matmul_misuse("TCubeTiling breaks a rule of the Matmul API: " + rule +
                              evk::fmt(" (tiling: M=%d N=%d Ka=%d singleCoreM=%d singleCoreN=%d singleCoreK=%d "
                                       "baseM=%d baseN=%d baseK=%d depthA1=%d depthB1=%d stepM=%d stepN=%d "
                                       "stepKa=%d stepKb=%d dbL0A=%d dbL0B=%d dbL0C=%d). A working fp16 start: "
                                       "baseM=128 baseN=256 baseK=64, stepM=stepN=1, stepKa=stepKb=4, "
                                       "depthA1=depthB1=8, dbL0A=dbL0B=2, dbL0C=1",
                                       t.M, t.N, t.Ka, t.singleCoreM, t.singleCoreN, t.singleCoreK, t.baseM, t.baseN,
                                       t.baseK, t.depthA1, t.depthB1, t.stepM, t.stepN, t.stepKa, t.stepKb, t.dbL0A,
                                       t.dbL0B, t.dbL0C),
                          site);
    };
    need(t.M > 0 && t.N > 0 && t.Ka > 0, "M, N and Ka must be positive");
    need(t.singleCoreM > 0 && t.singleCoreN > 0 && t.singleCoreK > 0, "singleCoreM/N/K must be positive");
    need(t.baseM > 0 && t.baseN > 0 && t.baseK > 0, "baseM/N/K must be positive");
    need(t.baseM % 16 == 0 && t.baseN % 16 == 0, "baseM and baseN must be multiples of 16 (one fractal)");
    need(t.baseK % 16 == 0 || t.baseK % static_cast<int32_t>(c0) == 0,
         evk::fmt("baseK must be a multiple of 16 (or of C0 = %u for this type when A is not transposed and B is)",
                  c0));
    need(t.stepM > 0 && t.stepN > 0 && t.stepKa > 0 && t.stepKb > 0, "stepM/N/Ka/Kb must be positive");
    need(t.depthA1 > 0 && t.depthB1 > 0, "depthA1 and depthB1 must be positive");
    need(t.depthA1 % (t.stepM * t.stepKa) == 0 && t.depthA1 / (t.stepM * t.stepKa) <= 2,
         "depthA1 must be stepM * stepKa (single-buffered L1) or twice that (double-buffered)");
    need(t.depthB1 % (t.stepN * t.stepKb) == 0 && t.depthB1 / (t.stepN * t.stepKb) <= 2,
         "depthB1 must be stepN * stepKb (single-buffered L1) or twice that (double-buffered)");
    need((t.dbL0A == 1 || t.dbL0A == 2) && (t.dbL0B == 1 || t.dbL0B == 2) && (t.dbL0C == 1 || t.dbL0C == 2),
         "dbL0A/dbL0B/dbL0C are 1 or 2");
    need(uint64_t(t.baseM) * t.baseK * a_bytes * t.dbL0A <= kPhysBytes[int(Phys::L0A)],
         evk::fmt("baseM * baseK * sizeof(A) * dbL0A = %llu bytes must fit the 64 KB L0A",
                  (unsigned long long)(uint64_t(t.baseM) * t.baseK * a_bytes * t.dbL0A)));
    need(uint64_t(t.baseN) * t.baseK * b_bytes * t.dbL0B <= kPhysBytes[int(Phys::L0B)],
         evk::fmt("baseN * baseK * sizeof(B) * dbL0B = %llu bytes must fit the 64 KB L0B",
                  (unsigned long long)(uint64_t(t.baseN) * t.baseK * b_bytes * t.dbL0B)));
    need(uint64_t(t.baseM) * t.baseN * 4 * t.dbL0C <= kPhysBytes[int(Phys::L0C)],
         evk::fmt("baseM * baseN * 4 * dbL0C = %llu bytes must fit the 128 KB L0C",
                  (unsigned long long)(uint64_t(t.baseM) * t.baseN * 4 * t.dbL0C)));
    uint64_t l1 = uint64_t(t.baseM) * t.baseK * t.depthA1 * a_bytes + uint64_t(t.baseN) * t.baseK * t.depthB1 * b_bytes +
                  (bias ? uint64_t(t.baseN) * bias_bytes : 0);
    need(l1 <= kPhysBytes[int(Phys::L1)],
         evk::fmt("the L1 blocks (baseM*baseK*depthA1*sizeof(A) + baseN*baseK*depthB1*sizeof(B) + bias) = %llu "
                  "bytes must fit the 512 KB L1",
                  (unsigned long long)l1));
    need(!bias || uint64_t(t.baseN) * 4 <= kPhysBytes[int(Phys::BT)],
         "baseN * 4 must fit the 1 KB bias table when the bias is on (baseN <= 256)");
    need(t.usedCoreNum >= 1 && t.usedCoreNum <= 24, "usedCoreNum is 1..24 (cube cores of a 910B)");
}

}  // namespace evk

namespace AscendC {

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = C_TYPE,
          const MatmulConfig& MM_CFG = CFG_NORM>
class Matmul {
    using AT = typename A_TYPE::T;
    using BT = typename B_TYPE::T;
    using CT = typename C_TYPE::T;
    using BiasT = typename BIAS_TYPE::T;

public:
    void Init(const TCubeTiling* tiling, TPipe* tpipe = nullptr, evk::Site site = evk::Site()) {
        if (tiling == nullptr) evk::matmul_misuse("Matmul::Init(nullptr): pass the TCubeTiling", site);
        tiling_ = *tiling;
        evk::check_tiling(tiling_, sizeof(AT), sizeof(BT), evk::c0_of<AT>(), tiling_.isBias != 0, sizeof(BiasT),
                          site);
        org_m_ = tiling_.M;
        org_n_ = tiling_.N;
        org_ka_ = tiling_.Ka;
        org_kb_ = tiling_.Kb > 0 ? tiling_.Kb : tiling_.Ka;
        single_m_ = tiling_.singleCoreM;
        single_n_ = tiling_.singleCoreN;
        single_k_ = tiling_.singleCoreK;
        bias_on_ = tiling_.isBias != 0;
        inited_ = true;
    }
    void SetOrgShape(int orgM, int orgN, int orgK) { SetOrgShape(orgM, orgN, orgK, orgK); }
    void SetOrgShape(int orgM, int orgN, int orgKa, int orgKb, int orgKc = 0) {
        org_m_ = orgM;
        org_n_ = orgN;
        org_ka_ = orgKa;
        org_kb_ = orgKb;
        org_kc_ = orgKc;
    }
    void SetSingleShape(int singleM, int singleN, int singleK) {
        single_m_ = singleM;
        single_n_ = singleN;
        single_k_ = singleK;
    }
    void SetTail(int tailM = -1, int tailN = -1, int tailK = -1) {
        if (tailM > 0) single_m_ = tailM;
        if (tailN > 0) single_n_ = tailN;
        if (tailK > 0) single_k_ = tailK;
    }
    void SetTensorA(const GlobalTensor<AT>& gm, bool isTransposeA = false, evk::Site site = evk::Site()) {
        require_client("SetTensorA", site);
        if (isTransposeA && !A_TYPE::isTrans)
            evk::matmul_misuse("SetTensorA(gm, true) needs MatmulType<..., ISTRANS=true> for A", site);
        a_ = gm;
        a_set_ = true;
        trans_a_ = isTransposeA;
        reset_iter();
    }
    void SetTensorB(const GlobalTensor<BT>& gm, bool isTransposeB = false, evk::Site site = evk::Site()) {
        require_client("SetTensorB", site);
        if (isTransposeB && !B_TYPE::isTrans)
            evk::matmul_misuse("SetTensorB(gm, true) needs MatmulType<..., ISTRANS=true> for B", site);
        b_ = gm;
        b_set_ = true;
        trans_b_ = isTransposeB;
        reset_iter();
    }
    void SetBias(const GlobalTensor<BiasT>& gm, evk::Site site = evk::Site()) {
        require_client("SetBias", site);
        if (!bias_on_)
            evk::matmul_misuse("SetBias on a Matmul whose TCubeTiling has isBias = 0: set isBias = 1 in the tiling",
                               site);
        bias_ = gm;
        bias_set_ = true;
    }
    void DisableBias() { bias_set_ = false; }
    void ClearBias() { bias_set_ = false; }
    template <typename... A> void SetHF32(A...) {}
    template <typename... A> void SetWorkspace(A...) {}
    template <typename... A> void SetLocalWorkspace(A...) {}

    template <bool sync = true>
    void IterateAll(const GlobalTensor<CT>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    bool waitIterateAll = false, bool fakeMsg = false, evk::Site site = evk::Site()) {
        require_ready("IterateAll", site);
        bool prev = evk::core().atomic_add;
        if (enAtomic == 1) evk::core().atomic_add = true;
        for (int64_t bm = 0; bm < blocks_m(); ++bm)
            for (int64_t bn = 0; bn < blocks_n(); ++bn) compute_block(bm, bn, &gm, nullptr, site);
        evk::core().atomic_add = prev;
        charge_traffic();
    }

    template <bool sync = true>
    bool Iterate(bool enPartialSum = false, evk::Site site = evk::Site()) {
        require_ready("Iterate", site);
        if (pending_)
            evk::matmul_misuse("Iterate called again before GetTensorC took the previous block's result: call "
                               "GetTensorC after each Iterate that returned true",
                               site);
        int64_t total = blocks_m() * blocks_n();
        if (iter_ >= total) return false;
        if (iter_ == 0) charge_traffic();
        int64_t i = iter_++;
        if (tiling_.iterateOrder == 0) {
            cur_m_ = i % blocks_m();
            cur_n_ = i / blocks_m();
        } else {
            cur_m_ = i / blocks_n();
            cur_n_ = i % blocks_n();
        }
        pending_ = true;
        return true;
    }

    template <bool sync = true>
    void GetTensorC(const GlobalTensor<CT>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    evk::Site site = evk::Site()) {
        take(site);
        bool prev = evk::core().atomic_add;
        if (enAtomic == 1) evk::core().atomic_add = true;
        compute_block(cur_m_, cur_n_, &gm, nullptr, site);
        evk::core().atomic_add = prev;
    }

    // The block as a [rows x cols] row-major tile in UB, rows at a pitch of
    // cols rounded up to 32 bytes (our reading of "ND, tail axis 32-byte aligned").
    template <bool sync = true>
    void GetTensorC(const LocalTensor<CT>& ub, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    evk::Site site = evk::Site()) {
        take(site);
        evk::require_ub(ub, "Matmul::GetTensorC(LocalTensor)", "the destination", site);
        compute_block(cur_m_, cur_n_, nullptr, &ub, site);
    }

    void End() { reset_iter(); }

    // ---- model internals ----
    void registered(evk::Site site) {
        evk::CoreState& c = evk::core();
        if (c.kind == evk::CoreKind::AIV && c.used[0] > 0)
            evk::matmul_misuse("REGIST_MATMUL_OBJ after pipe.InitBuffer: the Matmul object takes its buffers from "
                               "the TPipe first, so register it before any InitBuffer call",
                               site);
        registered_ = true;
        evk::Launch* L = evk::current_launch();
        bool mixed = L && L->mixed();
        if (mixed && c.kind == evk::CoreKind::AIC) throw evk::MatmulServer{};
    }

    TCubeTiling tiling_;

private:
    void require_client(const char* api, evk::Site site) {
        if (!registered_)
            evk::matmul_misuse(std::string("Matmul::") + api +
                                   " before REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling)",
                               site);
    }
    void require_ready(const char* api, evk::Site site) {
        require_client(api, site);
        if (!inited_)
            evk::matmul_misuse(std::string("Matmul::") + api +
                                   " without a tiling: pass &tiling to REGIST_MATMUL_OBJ or call mm.Init(&tiling)",
                               site);
        if (!a_set_ || !b_set_)
            evk::matmul_misuse(std::string("Matmul::") + api + " before SetTensorA and SetTensorB", site);
        if (single_m_ <= 0 || single_n_ <= 0 || single_k_ <= 0)
            evk::matmul_misuse(evk::fmt("Matmul::%s with single shape %d x %d x %d: set positive sizes", api,
                                        single_m_, single_n_, single_k_),
                               site);
    }
    void take(evk::Site site) {
        if (!pending_)
            evk::matmul_misuse("GetTensorC without a block: call it after each `while (mm.Iterate())` step", site);
        pending_ = false;
    }
    void reset_iter() {
        iter_ = 0;
        pending_ = false;
    }
    int64_t blocks_m() const { return (single_m_ + tiling_.baseM - 1) / tiling_.baseM; }
    int64_t blocks_n() const { return (single_n_ + tiling_.baseN - 1) / tiling_.baseN; }

    AT a_at(int64_t i, int64_t k, evk::Site site) const {
        int64_t at = trans_a_ ? k * org_m_ + i : i * org_ka_ + k;
        a_.check_span(at, 1, site, "Matmul (A)");
        return a_.data_[at];
    }
    BT b_at(int64_t k, int64_t j, evk::Site site) const {
        int64_t at = trans_b_ ? j * org_kb_ + k : k * org_n_ + j;
        b_.check_span(at, 1, site, "Matmul (B)");
        return b_.data_[at];
    }

    void compute_block(int64_t bm, int64_t bn, const GlobalTensor<CT>* gm, const LocalTensor<CT>* ub,
                       evk::Site site) {
        const int64_t m0 = bm * tiling_.baseM, n0 = bn * tiling_.baseN;
        const int64_t rows = std::min<int64_t>(tiling_.baseM, single_m_ - m0);
        const int64_t cols = std::min<int64_t>(tiling_.baseN, single_n_ - n0);
        const int64_t K = single_k_;
        const int64_t pitch = (cols * int64_t(sizeof(CT)) + 31) / 32 * 32 / int64_t(sizeof(CT));
        if (ub) ub->check_span(0, uint64_t(rows) * pitch, site, "Matmul::GetTensorC(LocalTensor)", "the destination");
        // the A rows and B columns of the block are read from GM (race-checked like any copy)
        for (int64_t i = 0; i < rows; ++i) {
            int64_t first = trans_a_ ? m0 + i : (m0 + i) * org_ka_;
            if (!trans_a_) {
                a_.check_span(first, K, site, "Matmul (A)");
                evk::gm_read(a_.data_ + first, K * sizeof(AT), sizeof(AT), site);
            }
        }
        std::vector<CT> row(cols);
        for (int64_t i = 0; i < rows; ++i) {
            for (int64_t j = 0; j < cols; ++j) {
                float acc = 0.0f;
                if (bias_set_) {
                    bias_.check_span(n0 + j, 1, site, "Matmul (bias)");
                    acc = static_cast<float>(bias_.data_[n0 + j]);
                }
                for (int64_t k = 0; k < K; ++k)
                    acc += static_cast<float>(a_at(m0 + i, k, site)) * static_cast<float>(b_at(k, n0 + j, site));
                if constexpr (std::is_same<CT, half>::value) row[j] = evk::convert<half>(acc, RoundMode::CAST_RINT);
                else row[j] = static_cast<CT>(acc);
            }
            if (gm) {
                int64_t at = (m0 + i) * org_n_ + n0;
                gm->check_span(at, cols, site, "Matmul (C)");
                evk::gm_store(gm->data_ + at, row.data(), cols, site);
            } else {
                std::memcpy(ub->data_ + i * pitch, row.data(), cols * sizeof(CT));
            }
        }
        constexpr uint64_t C0 = evk::c0_of<AT>();
        evk::CoreState& c = evk::core();
        c.mmad_cycles += evk::ceil_div(rows, 16) * evk::ceil_div(cols, 16) * evk::ceil_div(K, C0);
        c.mmad_calls += evk::ceil_div(K, tiling_.baseK);
        c.l1_to_l0_bytes += (uint64_t(rows) * K * sizeof(AT) + uint64_t(K) * cols * sizeof(BT));
        c.fixpipe_bytes += uint64_t(rows) * cols * sizeof(CT);
        c.fixpipe_calls++;
    }

    // GM -> L1: A re-read for every stepN group of N blocks, B for every stepM group of M blocks.
    void charge_traffic() {
        evk::CoreState& c = evk::core();
        uint64_t a = uint64_t(single_m_) * single_k_ * sizeof(AT), b = uint64_t(single_k_) * single_n_ * sizeof(BT);
        uint64_t a_times = evk::ceil_div(blocks_n(), tiling_.stepN), b_times = evk::ceil_div(blocks_m(), tiling_.stepM);
        c.gm_to_l1_bytes += a * a_times + b * b_times;
        c.l1_copies += a_times + b_times;
        c.matmul_registered = true;
    }

    TPipe* pipe_ = nullptr;
    GlobalTensor<AT> a_;
    GlobalTensor<BT> b_;
    GlobalTensor<BiasT> bias_;
    bool registered_ = false, inited_ = false, a_set_ = false, b_set_ = false, bias_set_ = false, bias_on_ = false;
    bool trans_a_ = false, trans_b_ = false, pending_ = false;
    int org_m_ = 0, org_n_ = 0, org_ka_ = 0, org_kb_ = 0, org_kc_ = 0;
    int single_m_ = 0, single_n_ = 0, single_k_ = 0;
    int64_t iter_ = 0, cur_m_ = 0, cur_n_ = 0;
};

}  // namespace AscendC

namespace matmul {
using AscendC::Matmul;
using AscendC::MatmulType;
}  // namespace matmul

namespace evk {
template <typename M>
inline void regist_one(M& mm, evk::Site site) {
    mm.registered(site);
}
template <typename M>
inline void regist_one(M& mm, const AscendC::TCubeTiling* tiling, evk::Site site) {
    mm.registered(site);
    mm.Init(tiling, nullptr, site);
}
template <typename M>
inline void regist(evk::Site site, M& mm) { regist_one(mm, site); }
template <typename M>
inline void regist(evk::Site site, M& mm, const AscendC::TCubeTiling* tiling) { regist_one(mm, tiling, site); }
template <typename M, typename... Rest>
inline void regist(evk::Site site, M& mm, const AscendC::TCubeTiling* tiling, Rest&&... rest) {
    regist_one(mm, tiling, site);
    regist(site, rest...);
}
}  // namespace evk

// REGIST_MATMUL_OBJ(&pipe, workspace, mm[, &tiling][, mm2, &tiling2 ...])
#define REGIST_MATMUL_OBJ(tpipe, workspace, ...) \
    do {                                            \
        (void)(tpipe);                              \
        (void)(workspace);                          \
        evk::regist(evk::Site(), __VA_ARGS__);      \
    } while (0)
