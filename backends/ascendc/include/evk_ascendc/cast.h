// Cast between element types, with the rounding modes of RoundMode.
#pragma once
#include "vector.h"

namespace evk {
inline AscendC::half half_step(AscendC::half h, bool up) {
    uint16_t b;
    std::memcpy(&b, &h, 2);
    if ((b & 0x7fffu) == 0) b = up ? 0x0001u : 0x8001u;
    else if (!(b & 0x8000u)) b = up ? b + 1 : b - 1;
    else b = up ? b - 1 : b + 1;
    AscendC::half out;
    std::memcpy(&out, &b, 2);
    return out;
}

template <typename D, typename S>
inline D convert(S v, AscendC::RoundMode mode) {
    using AscendC::RoundMode;
    float f = static_cast<float>(v);
    if constexpr (std::is_integral<D>::value && !std::is_integral<S>::value) {
        float r;
        switch (mode) {
            case RoundMode::CAST_FLOOR: r = std::floor(f); break;
            case RoundMode::CAST_CEIL: r = std::ceil(f); break;
            case RoundMode::CAST_ROUND: r = std::round(f); break;
            case RoundMode::CAST_TRUNC: r = std::trunc(f); break;
            default: r = std::nearbyint(f); break;
        }
        if (std::isnan(r)) return D(0);
        if (r >= static_cast<float>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
        if (r <= static_cast<float>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
        return static_cast<D>(r);
    } else if constexpr (std::is_same<D, AscendC::half>::value && !std::is_integral<S>::value) {
        AscendC::half h = static_cast<AscendC::half>(f);
        float back = static_cast<float>(h);
        if (std::isnan(f) || std::isinf(f)) return h;
        if (std::isinf(back)) {  // finite input beyond the half range
            bool toward_zero = mode == RoundMode::CAST_TRUNC || (mode == RoundMode::CAST_FLOOR && f > 0) ||
                               (mode == RoundMode::CAST_CEIL && f < 0);
            return toward_zero ? static_cast<AscendC::half>(f > 0 ? 65504.0f : -65504.0f) : h;
        }
        bool up = back < f, down = back > f;
        if (mode == RoundMode::CAST_FLOOR && down) return half_step(h, false);
        if (mode == RoundMode::CAST_CEIL && up) return half_step(h, true);
        if (mode == RoundMode::CAST_TRUNC && std::fabs(back) > std::fabs(f)) return half_step(h, f < 0);
        return h;
    } else {
        return static_cast<D>(v);
    }
}
}  // namespace evk

namespace AscendC {

template <typename D, typename S>
inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, const RoundMode& roundMode,
                 const uint32_t calCount, evk::Site site = evk::Site()) {
    evk::vec_operand(dst, calCount, site, "Cast", "dst");
    evk::vec_operand(src, calCount, site, "Cast", "src");
    for (uint32_t i = 0; i < calCount; ++i) dst.data_[i] = evk::convert<D>(src.data_[i], roundMode);
    evk::count_vector_elems("Cast", sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S), calCount);
}

}  // namespace AscendC
