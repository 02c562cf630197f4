// The tile path of the quantized products (quant_kernels.hpp, WeightTile): each group of 16
// weight rows is decoded once into int8 values, lane r per row, and every activation column runs
// over the tile: per 16-value sub-block, four vpdpbusd of the column's unsigned bytes (4 at a
// time, broadcast from memory) against the tile's, then one vpmulld by the 16 rows' l_j and an
// add. Per 256-value block, 16 rows and one column: 64 vpdpbusd, 16 vpmulld, 16 vpaddd and three
// float operations, where the per-row kernels spend about as much again decoding each row for
// every group of 4 columns. Each block's integer sum (offset term included) times its row's
// block scale and the column's d goes into a float accumulator per row, times the row scale at
// the end.
#include "quant/quant_kernels.hpp"
#include "quant/tile_decode.hpp"

#if defined(SY_CPU_TILE_GEMM512)
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>
#endif

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

#if defined(SY_CPU_TILE_GEMM512)
namespace {

inline __m512i quad_of(const ActU8K& a, int p) {
    int32_t v;
    std::memcpy(&v, a.qs + 4 * p, 4);
    return _mm512_set1_epi32(v);
}

// out[16 c + r] = row r of the tile times column c, for C columns whose ActU8K blocks are at
// act[c].
template <int C, bool kMins, bool kScales32>
void tile_columns(int64_t blocks, const WeightTile& tile, const ActU8K* const* act, float* out) {
    constexpr int kGroup = kScales32 ? 2 : 1;  // sub-blocks of 16 per scale
    __m512 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
        const int8_t* values = tile.values + 4096 * b;
        const int32_t* scales = tile.scales + 256 * b;
        const __m512i offsets = _mm512_load_si512(tile.offsets + 16 * b);
        __m512i s[C];
        for (int c = 0; c < C; ++c) s[c] = offsets;
        for (int j = 0; j < 16; j += kGroup) {
            const __m512i l = _mm512_load_si512(scales + 16 * j);
            __m512i w[4 * kGroup];
            for (int k = 0; k < 4 * kGroup; ++k)
                w[k] = _mm512_load_si512(values + 64 * (4 * j + k));
            for (int c = 0; c < C; ++c) {
                __m512i t =
                    _mm512_dpbusd_epi32(_mm512_setzero_si512(), quad_of(act[c][b], 4 * j), w[0]);
                for (int k = 1; k < 4 * kGroup; ++k)
                    t = _mm512_dpbusd_epi32(t, quad_of(act[c][b], 4 * j + k), w[k]);
                s[c] = _mm512_add_epi32(s[c], _mm512_mullo_epi32(t, l));
            }
        }
        const __m512 dw = _mm512_load_ps(tile.d + 16 * b);
        for (int c = 0; c < C; ++c)
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[c]),
                                     _mm512_mul_ps(dw, _mm512_set1_ps(act[c][b].d)), acc[c]);
        if constexpr (kMins) {
            const int32_t* mins = tile.mins + 256 * b;
            for (int c = 0; c < C; ++c) s[c] = _mm512_setzero_si512();
            for (int i = 0; i < 8; ++i) {
                const __m512i m = _mm512_load_si512(mins + 16 * i);
                for (int c = 0; c < C; ++c) {
                    int32_t pair;
                    std::memcpy(&pair, act[c][b].bsums + 2 * i, 4);
                    s[c] = _mm512_dpwssd_epi32(s[c], m, _mm512_set1_epi32(pair));
                }
            }
            const __m512 dmin = _mm512_load_ps(tile.dmin + 16 * b);
            for (int c = 0; c < C; ++c)
                acc[c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(s[c]),
                                          _mm512_mul_ps(dmin, _mm512_set1_ps(act[c][b].d)), acc[c]);
        }
    }
    const __m512 rs = _mm512_loadu_ps(tile.row_scale);
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(out + 16 * c, _mm512_mul_ps(acc[c], rs));
}

constexpr int kTileColumns = 8;
using TileColumnsFn = void (*)(int64_t, const WeightTile&, const ActU8K* const*, float*);
// [has_mins][scales32][columns - 1]
template <bool kMins, bool kScales32, int... I>
constexpr std::array<TileColumnsFn, sizeof...(I)> tile_columns_fns(
    std::integer_sequence<int, I...>) {
    return {tile_columns<I + 1, kMins, kScales32>...};
}
constexpr std::array<TileColumnsFn, kTileColumns> kTileColumnsFns[2][2] = {
    {tile_columns_fns<false, false>(std::make_integer_sequence<int, kTileColumns>()),
     tile_columns_fns<false, true>(std::make_integer_sequence<int, kTileColumns>())},
    {tile_columns_fns<true, false>(std::make_integer_sequence<int, kTileColumns>()),
     tile_columns_fns<true, true>(std::make_integer_sequence<int, kTileColumns>())}};

}  // namespace

void tile_matmul_block(const QuantKernel& kernel, const char* a, int64_t a_row_stride, int64_t n0,
                       int64_t n1, int64_t K, const void* const* act, float* const* out,
                       int64_t count, int64_t out_row_stride) {
    const int64_t blocks = K / 256;
    const int64_t u8_offset = kernel.tile_act_offset(K);
    thread_local TileBuffer buffer;
    WeightTile tile = buffer.tile(blocks);
    for (int64_t n = n0; n < n1; n += 16) {
        const int rows = int(std::min<int64_t>(16, n1 - n));
        kernel.tile_decode(blocks, a + n * a_row_stride, a_row_stride, rows, tile);
        for (int64_t c = 0; c < count; c += kTileColumns) {
            const int cols = int(std::min<int64_t>(kTileColumns, count - c));
            const ActU8K* cols_act[kTileColumns];
            for (int j = 0; j < cols; ++j)
                cols_act[j] = reinterpret_cast<const ActU8K*>(static_cast<const char*>(act[c + j]) +
                                                              u8_offset);
            alignas(64) float r[16 * kTileColumns];
            kTileColumnsFns[tile.has_mins][tile.scales32][size_t(cols - 1)](blocks, tile, cols_act,
                                                                            r);
            for (int j = 0; j < cols; ++j)
                for (int i = 0; i < rows; ++i)
                    std::memcpy(reinterpret_cast<char*>(out[c + j]) + (n + i) * out_row_stride,
                                &r[16 * j + i], sizeof(float));
        }
    }
}

#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
