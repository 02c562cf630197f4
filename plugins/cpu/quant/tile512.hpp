// The decoding side of the tile path (quant_kernels.hpp, WeightTile): a type's decoder writes
// each row's block as 256 int8 true values in natural order and its 16 sub-block scales into a
// 16-row scratch, which is then transposed into the tile's lane-per-row words, with each row's
// offset term -128 sum_j l_j V_j (V_j the sum of sub-block j's values). Only for translation
// units built with AVX-512F, BW and VNNI.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "quant/quant_kernels.hpp"
#include "quant/tile_decode.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

// The 16 x 16 32-bit words at in[i] (rows), transposed: out[16 k + i] = word k of in[i], with
// out rows `stride` words apart. Unpack 32, unpack 64, then two rounds of 128-bit lane shuffles.
inline void transpose16x16(__m512i (&r)[16], int32_t* out, int64_t stride) {
    __m512i t[16];
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
    for (int k = 0; k < 4; ++k) {
        // Lanes 0, 2 (a, c) and 1, 3 (b, d) of row groups 0, 1 and 2, 3.
        const __m512i a = _mm512_shuffle_i32x4(r[k], r[4 + k], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512i b = _mm512_shuffle_i32x4(r[k], r[4 + k], _MM_SHUFFLE(3, 1, 3, 1));
        const __m512i c = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512i d = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], _MM_SHUFFLE(3, 1, 3, 1));
        _mm512_store_si512(out + stride * k, _mm512_shuffle_i32x4(a, c, _MM_SHUFFLE(2, 0, 2, 0)));
        _mm512_store_si512(out + stride * (8 + k),
                           _mm512_shuffle_i32x4(a, c, _MM_SHUFFLE(3, 1, 3, 1)));
        _mm512_store_si512(out + stride * (4 + k),
                           _mm512_shuffle_i32x4(b, d, _MM_SHUFFLE(2, 0, 2, 0)));
        _mm512_store_si512(out + stride * (12 + k),
                           _mm512_shuffle_i32x4(b, d, _MM_SHUFFLE(3, 1, 3, 1)));
    }
}

// Block b of the tile from the scratch: values, scales and offsets.
inline void store_tile_block(const TileScratch& s, const WeightTile& tile, int64_t b) {
    int32_t* values = reinterpret_cast<int32_t*>(tile.values + 4096 * b);
    for (int q = 0; q < 4; ++q) {
        __m512i r[16];
        for (int i = 0; i < 16; ++i) r[i] = _mm512_load_si512(&s.v[i][64 * q]);
        transpose16x16(r, values + 256 * q, 16);
    }
    __m512i l[16];
    for (int i = 0; i < 16; ++i) l[i] = _mm512_load_si512(s.l[i]);
    int32_t* scales = tile.scales + 256 * b;
    transpose16x16(l, scales, 16);
    // The offsets -128 sum_j l_j V_j of the 16 rows at once, from the transposed tile: the
    // product with a column of ones (vpdpbusd of ones against the values, per sub-block, times
    // l_j), as tile_gemm512.cpp computes a column.
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i acc = _mm512_setzero_si512();
    for (int j = 0; j < 16; ++j) {
        __m512i t = _mm512_setzero_si512();
        for (int k = 0; k < 4; ++k)
            t = _mm512_dpbusd_epi32(t, ones, _mm512_load_si512(values + 16 * (4 * j + k)));
        acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(t, _mm512_load_si512(scales + 16 * j)));
    }
    _mm512_store_si512(tile.offsets + 16 * b, _mm512_mullo_epi32(acc, _mm512_set1_epi32(-128)));
    if (tile.has_mins) {
        __m512i m[16];
        for (int i = 0; i < 16; ++i) m[i] = _mm512_load_si512(s.m[i]);
        transpose16x16(m, tile.mins + 256 * b, 16);
        _mm512_store_ps(tile.dmin + 16 * b, _mm512_load_ps(s.dmin));
    }
}

// decode_tile_rows (tile_decode.hpp) with this path's store.
template <typename Block, int kMeta, bool kScales32, bool kMins = false, typename RowScale,
          typename Row>
inline void decode_tile(int64_t blocks, const void* w, int64_t row_stride, int rows,
                        WeightTile& tile, RowScale&& row_scale, Row&& row) {
    decode_tile_rows<Block, kMeta, kScales32, kMins, false>(blocks, w, row_stride, rows, tile,
                                                            store_tile_block, row_scale, row);
}

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
