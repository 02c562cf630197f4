// The decoding side of the avx2 tile path (quant_kernels.hpp, WeightTile; tile_gemm256.cpp): as
// tile512.hpp, a type's decoder writes each row's block as 256 int8 true values in natural order
// and its 16 sub-block scales into a 16-row scratch, which plain loops (the compiler's vectors)
// then move into the tile's lane-per-row words, with each row's offset term -128 sum_j l_j V_j
// (V_j the sum of sub-block j's values). The decode is paid once per 16 rows and block, for all
// of a product's columns.
#pragma once

#include <cstring>

#include "quant/quant_kernels.hpp"
#include "quant/tile_decode.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

// Block b of the tile from the scratch: values, scales and offsets.
inline void store_tile_block256(const TileScratch& s, const WeightTile& tile, int64_t b) {
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

// decode_tile_rows (tile_decode.hpp) with this path's store.
template <typename Block, int kMeta, bool kScales32, bool kMins = false, bool kSigned = false,
          typename RowScale, typename Row>
inline void decode_tile256(int64_t blocks, const void* w, int64_t row_stride, int rows,
                           WeightTile& tile, RowScale&& row_scale, Row&& row) {
    decode_tile_rows<Block, kMeta, kScales32, kMins, kSigned>(blocks, w, row_stride, rows, tile,
                                                              store_tile_block256, row_scale, row);
}

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
