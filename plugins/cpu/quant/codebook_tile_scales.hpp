// The integer sub-block scales of the codebook i-quants for the tile paths (tile512.hpp,
// tile256.hpp): per type its 16 scales l of 16-value sub-blocks (each 32-value scale written
// twice), 2 ls + 1, and the float scale they share:
//   IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M: d / 8;  IQ3_XXS: d / 4;  IQ3_S: d.
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/int8_simd.hpp"
#include "switchyard/quant_blocks.h"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {
namespace {

inline float tile_scales(const sy_block_iq2_xxs& b, int32_t* l) {
    for (int j = 0; j < 8; ++j) {
        uint32_t w;
        std::memcpy(&w, b.qs + 4 * j + 2, 4);
        l[2 * j] = l[2 * j + 1] = int32_t(2 * (w >> 28) + 1);
    }
    return i8::h2f(b.d) * 0.125f;
}
template <typename Block>  // IQ2_XS, IQ2_S: a 4-bit scale per 16 values
inline float nibble_tile_scales(const Block& b, int32_t* l) {
    for (int s = 0; s < 16; ++s) l[s] = 2 * ((b.scales[s / 2] >> (4 * (s % 2))) & 15) + 1;
    return i8::h2f(b.d) * 0.125f;
}
inline float tile_scales(const sy_block_iq2_xs& b, int32_t* l) {
    return nibble_tile_scales(b, l);
}
inline float tile_scales(const sy_block_iq2_s& b, int32_t* l) {
    return nibble_tile_scales(b, l);
}
inline float tile_scales(const sy_block_iq3_xxs& b, int32_t* l) {
    for (int j = 0; j < 8; ++j) {
        uint32_t w;
        std::memcpy(&w, b.qs + SY_QK_K / 4 + 4 * j, 4);
        l[2 * j] = l[2 * j + 1] = int32_t(2 * (w >> 28) + 1);
    }
    return i8::h2f(b.d) * 0.25f;
}
inline float tile_scales(const sy_block_iq3_s& b, int32_t* l) {
    uint32_t sc;
    std::memcpy(&sc, b.scales, sizeof sc);
    for (int j = 0; j < 8; ++j) l[2 * j] = l[2 * j + 1] = int32_t(2 * ((sc >> (4 * j)) & 15) + 1);
    return i8::h2f(b.d);
}
inline float tile_scales(const sy_block_iq1_s& b, int32_t* l) {
    for (int j = 0; j < 8; ++j) l[2 * j] = l[2 * j + 1] = 2 * ((b.qh[j] >> 12) & 7) + 1;
    return i8::h2f(b.d) * 0.125f;
}
inline float tile_scales(const sy_block_iq1_m& b, int32_t* l) {
    uint16_t sc[4];
    std::memcpy(sc, b.scales, sizeof sc);
    for (int u = 0; u < 16; ++u) l[u] = 2 * ((sc[u / 4] >> (3 * (u % 4))) & 7) + 1;
    return i8::h2f(SY_IQ1M_D_BITS(sc)) * 0.125f;
}

}  // namespace
}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
