// What both tile paths (tile512.hpp / tile_gemm512.cpp, tile256.hpp / tile_gemm256.cpp) share:
// the 16-row scratch a type's decoder writes each block's rows into, the loop over a tile's
// blocks that fills it and hands it to the path's store, and the thread's tile buffer.
#pragma once

#include <cstring>
#include <vector>

#include "quant/quant_kernels.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

// 16 rows of one block: 256 values and 16 sub-block scales each.
struct alignas(64) TileScratch {
    int8_t v[16][256];
    int32_t l[16][16];
    int16_t m[16][32];  // the 16 mins (types with mins), then zeros
    float dmin[16];
};

// Decodes a tile with `row(block, int8 values[256], int32 scales[16])`, which returns the
// block's float scale, and `store(scratch, tile, block index)` per block; Block the type's
// block, kMeta the bytes in front of each row's blocks, row_scale(row start). kScales32: the
// type's scales are per 32 values (the decoder writes each twice). With kMins, `row(block,
// values, scales, int16 mins[16], float& dmin)`. kSigned: WeightTile::signed_values.
template <typename Block, int kMeta, bool kScales32, bool kMins, bool kSigned, typename Store,
          typename RowScale, typename Row>
inline void decode_tile_rows(int64_t blocks, const void* w, int64_t row_stride, int rows,
                             WeightTile& tile, Store&& store, RowScale&& row_scale, Row&& row) {
    TileScratch s;
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
        store(s, tile, b);
    }
}

// The calling thread's tile, grown to the longest row it has decoded; 64-byte aligned (operator
// new of an over-aligned type).
struct TileBuffer {
    struct alignas(64) Line {
        int8_t b[64];
    };
    std::vector<Line> lines;
    WeightTile tile(int64_t blocks) {
        // Per block: 4096 bytes of values, 1024 of scales, 64 of offsets, 64 of d, 1024 of
        // mins, 64 of dmin.
        constexpr int64_t kLines = (4096 + 1024 + 64 + 64 + 1024 + 64) / 64;
        if (int64_t(lines.size()) < kLines * blocks) lines.resize(size_t(kLines * blocks));
        int8_t* p = lines.data()->b;
        return WeightTile{p,
                          reinterpret_cast<int32_t*>(p + 4096 * blocks),
                          reinterpret_cast<int32_t*>(p + 5120 * blocks),
                          reinterpret_cast<float*>(p + 5184 * blocks),
                          reinterpret_cast<int32_t*>(p + 5248 * blocks),
                          reinterpret_cast<float*>(p + 6272 * blocks),
                          false,
                          false,
                          {}};
    }
};

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
