// half and bfloat16_t for the CPU model: IEEE binary16 (the compiler's
// _Float16 where it has one, else our own) and the upper half of a float.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace AscendC {

// ---- half and bfloat16 -----------------------------------------------------
#if defined(__FLT16_MANT_DIG__) && !defined(EVK_SOFT_HALF)
using half = _Float16;
#else
// IEEE binary16 in software, for compilers without _Float16.
struct half {
    uint16_t bits = 0;
    half() = default;
    template <typename U, typename = std::enable_if_t<std::is_arithmetic<U>::value>>
    half(U v) : bits(from_float(static_cast<float>(v))) {}
    operator float() const { return to_float(bits); }
    static uint16_t from_float(float f) {
        uint32_t x;
        std::memcpy(&x, &f, 4);
        uint32_t sign = (x >> 16) & 0x8000u;
        uint32_t mag = x & 0x7fffffffu;
        if (mag >= 0x7f800000u) return sign | (mag > 0x7f800000u ? 0x7e00u : 0x7c00u);
        if (mag >= 0x477ff000u) return sign | 0x7c00u;  // rounds to infinity
        if (mag < 0x38800000u) {                          // subnormal or zero
            float a;
            std::memcpy(&a, &mag, 4);
            return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));
        }
        uint32_t r = mag + 0xc8000fffu + ((mag >> 13) & 1u);  // rebias, round to nearest even
        return sign | static_cast<uint16_t>(r >> 13);
    }
    static float to_float(uint16_t h) {
        uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
        if (e == 0) {
            float v = std::ldexp(static_cast<float>(m), -24);
            return sign ? -v : v;
        }
        if (e == 31) x = sign | 0x7f800000u | (m << 13);
        else x = sign | ((e + 112) << 23) | (m << 13);
        float f;
        std::memcpy(&f, &x, 4);
        return f;
    }
    half& operator+=(float v) { return *this = half(float(*this) + v); }
    half& operator-=(float v) { return *this = half(float(*this) - v); }
    half& operator*=(float v) { return *this = half(float(*this) * v); }
    half& operator/=(float v) { return *this = half(float(*this) / v); }
};
inline half operator-(half a) { return half(-float(a)); }
#endif

struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    template <typename U, typename = std::enable_if_t<std::is_arithmetic<U>::value>>
    bfloat16_t(U v) {
        float f = static_cast<float>(v);
        uint32_t x;
        std::memcpy(&x, &f, 4);
        if ((x & 0x7fffffffu) > 0x7f800000u) bits = static_cast<uint16_t>((x >> 16) | 0x40);
        else bits = static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    }
    bfloat16_t(half h) : bfloat16_t(static_cast<float>(h)) {}
    operator float() const {
        uint32_t x = static_cast<uint32_t>(bits) << 16;
        float f;
        std::memcpy(&f, &x, 4);
        return f;
    }
};

}  // namespace AscendC
