// The decoding side of the avx2 tile path (quant_kernels.hpp, WeightTile; tile_gemm256.cpp): as
// tile512.hpp, a type's decoder writes each row's block as 256 int8 true values in natural order
// and its 16 sub-block scales into a 16-row scratch, which plain loops (the compiler's vectors)
// then move into the tile's lane-per-row words, with each row's offset term -128 sum_j l_j V_j
// (V_j the sum of sub-block j's values). The decode is paid once per 16 rows and block, for all
// of a product's columns.
#pragma once

#include <cstring>

#include "quant/quant_kernels.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

// 16 rows of one block: 256 values and 16 sub-block scales each.
struct alignas(64) TileScratch256 {
    int8_t v[16][256];
    int32_t l[16][16];
    int16_t m[16][16];  // the 16 mins (types with mins)
    float dmin[16];
};

// Block b of the tile from the scratch: values, scales and offsets.
inline void store_tile_block256(const TileScratch256& s, const WeightTile& tile, int64_t b) {
    int8_t* values = tile.values + 4096 * b;
    for (int p = 0; p < 64; ++p)
        for (int r = 0; r < 16; ++r) std::memcpy(values + 64 * p + 4 * r, &s.v[r][4 * p], 4);
    int32_t* scales = tile.scales + 256 * b;
    for (int j = 0; j < 16; ++j)
        for (int r = 0; r < 16; ++r) scales[16 * j + r] = s.l[r][j];
    for (int r = 0; r < 16; ++r) {
        int32_t offset = 0;
        for (int j = 0; j < 16; ++j) {
            int32_t sum = 0;
            for (int k = 0; k < 16; ++k) sum += s.v[r][16 * j + k];
            offset += s.l[r][j] * sum;
        }
        tile.offsets[16 * b + r] = -128 * offset;
    }
    if (tile.has_mins) {
        int32_t* mins = tile.mins + 256 * b;
        for (int i = 0; i < 8; ++i)
            for (int r = 0; r < 16; ++r)
                mins[16 * i + r] = int32_t(uint32_t(uint16_t(s.m[r][2 * i])) |
                                           uint32_t(uint16_t(s.m[r][2 * i + 1])) << 16);
        for (int r = 0; r < 16; ++r) tile.dmin[16 * b + r] = s.dmin[r];
    }
}

// Decodes a tile with `row(block, int8 values[256], int32 scales[16])`, which returns the
// block's float scale; Block the type's block, kMeta the bytes in front of each row's blocks,
// row_scale(row start). kScales32: the type's scales are per 32 values (the decoder writes each
// twice). With kMins, `row(block, values, scales, int16 mins[16], float& dmin)`. kSigned: the
// values reach 128 in magnitude (WeightTile::signed_values).
template <typename Block, int kMeta, bool kScales32, bool kMins = false, bool kSigned = false,
          typename RowScale, typename Row>
inline void decode_tile256(int64_t blocks, const void* w, int64_t row_stride, int rows,
                           WeightTile& tile, RowScale&& row_scale, Row&& row) {
    TileScratch256 s;
    std::memset(&s, 0, sizeof s);
    tile.has_mins = kMins;
    tile.scales32 = kScales32;
    tile.signed_values = kSigned;
    const Block* x[16];
    for (int r = 0; r < 16; ++r) {
        if (r < rows) {
            const uint8_t* p = static_cast<const uint8_t*>(w) + r * row_stride;
            x[r] = reinterpret_cast<const Block*>(p + kMeta);
            tile.row_scale[r] = row_scale(p);
        } else {
            tile.row_scale[r] = 0.0f;
        }
    }
    for (int64_t b = 0; b < blocks; ++b) {
        float* d = tile.d + 16 * b;
        for (int r = 0; r < 16; ++r) {
            if (r < rows) {
                if (b + 4 < blocks) {
                    const char* ahead = reinterpret_cast<const char*>(x[r] + b + 4);
                    for (size_t o = 0; o < sizeof(Block); o += 64)
                        __builtin_prefetch(ahead + o, 0, 3);
                }
                if constexpr (kMins)
                    d[r] = row(x[r][b], s.v[r], s.l[r], s.m[r], s.dmin[r]);
                else
                    d[r] = row(x[r][b], s.v[r], s.l[r]);
            } else {
                d[r] = 0.0f;
            }
        }
        store_tile_block256(s, tile, b);
    }
}

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
