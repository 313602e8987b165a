// Kernel-side printing.
#pragma once
#include "tensor.h"

namespace AscendC {

// Kernel printf goes to stderr: stdout may carry a worker protocol.
template <typename... A>
inline void printf(const char* format, A... args) {
    std::fprintf(stderr, format, args...);
}

template <typename T>
inline void DumpTensor(const LocalTensor<T>& t, uint32_t desc, uint32_t count) {
    std::fprintf(stderr, "DumpTensor desc=%u core=%lld:", desc, (long long)GetBlockIdx());
    for (uint32_t i = 0; i < count && i < t.size_; ++i) std::fprintf(stderr, " %g", double(float(t.data_[i])));
    std::fprintf(stderr, "\n");
}

}  // namespace AscendC
