// The scale in front of each row of the row-scaled types (ik_llama.cpp's _KS, _KSS, _KL and
// trellis types; dtype.h's row_meta_size): an f16 or f32 d, then the row's blocks.
#pragma once

#include <cstdint>
#include <cstring>

#include "internal.hpp"

namespace sy::quants::detail {

template <typename Block>
Block* row_blocks(void* row, int meta) {
    return reinterpret_cast<Block*>(static_cast<char*>(row) + meta);
}
template <typename Block>
const Block* row_blocks(const void* row, int meta) {
    return reinterpret_cast<const Block*>(static_cast<const char*>(row) + meta);
}
inline float row_d_f16(const void* row) {
    uint16_t h;
    std::memcpy(&h, row, 2);
    return from_half(h);
}
inline float row_d_f32(const void* row) {
    float d;
    std::memcpy(&d, row, 4);
    return d;
}
inline void store_d(void* row, float d, bool f16) {
    if (f16) {
        const uint16_t h = to_half(d);
        std::memcpy(row, &h, 2);
    } else {
        std::memcpy(row, &d, 4);
    }
}

}  // namespace sy::quants::detail
