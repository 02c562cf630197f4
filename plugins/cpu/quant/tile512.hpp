// The decoding side of the tile path (quant_kernels.hpp, WeightTile): a type's decoder writes
// each row's block as 256 int16 in natural order (value times sub-block scale) into a 16-row
// scratch, which is then transposed into the tile's lane-per-row words. Only for translation
// units built with AVX-512F.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "quant/quant_kernels.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

// 16 rows of one block, 256 int16 each (128 int32 pairs).
struct alignas(64) TileScratch {
    int16_t v[16][256];
};

// out[16 p + r] = pair p of scratch row r, for the 128 pairs: eight 16 x 16 transposes of 32-bit
// words (unpack 32, unpack 64, then two rounds of 128-bit lane shuffles: 64 instructions each).
inline void transpose_tile_block(const TileScratch& s, int32_t* out) {
    for (int q = 0; q < 8; ++q) {
        __m512i r[16], t[16];
        for (int i = 0; i < 16; ++i) r[i] = _mm512_load_si512(&s.v[i][32 * q]);
        for (int i = 0; i < 8; ++i) {
            t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
        }
        // r[4 i + k], 128-bit lane L: word 4 L + k of rows 4 i .. 4 i + 3.
        for (int i = 0; i < 4; ++i) {
            r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
            r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
            r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
            r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
        }
        int32_t* o = out + 256 * q;
        for (int k = 0; k < 4; ++k) {
            // Lanes 0, 2 (a, c) and 1, 3 (b, d) of row groups 0, 1 and 2, 3.
            const __m512i a = _mm512_shuffle_i32x4(r[k], r[4 + k], _MM_SHUFFLE(2, 0, 2, 0));
            const __m512i b = _mm512_shuffle_i32x4(r[k], r[4 + k], _MM_SHUFFLE(3, 1, 3, 1));
            const __m512i c = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], _MM_SHUFFLE(2, 0, 2, 0));
            const __m512i d = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], _MM_SHUFFLE(3, 1, 3, 1));
            _mm512_store_si512(o + 16 * k, _mm512_shuffle_i32x4(a, c, _MM_SHUFFLE(2, 0, 2, 0)));
            _mm512_store_si512(o + 16 * (8 + k),
                               _mm512_shuffle_i32x4(a, c, _MM_SHUFFLE(3, 1, 3, 1)));
            _mm512_store_si512(o + 16 * (4 + k),
                               _mm512_shuffle_i32x4(b, d, _MM_SHUFFLE(2, 0, 2, 0)));
            _mm512_store_si512(o + 16 * (12 + k),
                               _mm512_shuffle_i32x4(b, d, _MM_SHUFFLE(3, 1, 3, 1)));
        }
    }
}

// Decodes a tile with `row(block pointer, int16 out[256])`, which returns the block's float
// scale; Block the type's block, kMeta the bytes in front of each row's blocks, row_scale(row).
template <typename Block, int kMeta, typename RowScale, typename Row>
inline void decode_tile(int64_t blocks, const void* w, int64_t row_stride, int rows,
                        WeightTile& tile, RowScale&& row_scale, Row&& row) {
    TileScratch s;
    std::memset(&s, 0, sizeof s);
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
        float* scales = tile.scales + 16 * b;
        for (int r = 0; r < 16; ++r) {
            if (r < rows) {
                const char* ahead = reinterpret_cast<const char*>(x[r] + b + 4);
                for (size_t o = 0; o < sizeof(Block); o += 64) __builtin_prefetch(ahead + o, 0, 3);
                scales[r] = row(x[r][b], s.v[r]);
            } else {
                scales[r] = 0.0f;
            }
        }
        transpose_tile_block(s, tile.words + 2048 * b);
    }
}

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
