// The tile path of the quantized products (quant_kernels.hpp, WeightTile): each group of 16
// weight rows is decoded once into int16 pairs, lane r per row, and every activation column runs
// over the tile with one vpdpwssd per pair of values against the column's pair broadcast from
// memory: 128 per 256-value block and 16 rows, with no decoding or sub-block scaling left in the
// loop (the per-row kernels spend about as many instructions again decoding, for every column
// group of 4). Integer sums per block are exact (|pair sum| <= 2 * 127 * 127 * 127, 128 pairs:
// below 2^31); each block's sum times its row's block scale and the column's d goes into a float
// accumulator per row, times the row scale at the end.
#include "quant/quant_kernels.hpp"

#if defined(SY_CPU_TILE_GEMM)
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>
#endif

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

#if defined(SY_CPU_TILE_GEMM)
namespace {

inline __m512i pair_of(const ActQ16K& a, int p) {
    int32_t v;
    std::memcpy(&v, a.qs + 2 * p, 4);
    return _mm512_set1_epi32(v);
}

// out[16 c + r] = row r of the tile times column c, for C columns whose ActQ16K blocks are at
// act[c]. Below 5 columns each column keeps two integer chains (even and odd pairs), so that
// the vpdpwssd latency does not bound it.
template <int C>
void tile_columns(int64_t blocks, const WeightTile& tile, const ActQ16K* const* act, float* out) {
    constexpr int kChains = C < 5 ? 2 : 1;
    __m512 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
        const int32_t* words = tile.words + 2048 * b;
        __m512i s[kChains][C];
        for (int k = 0; k < kChains; ++k)
            for (int c = 0; c < C; ++c) s[k][c] = _mm512_setzero_si512();
        for (int p = 0; p < 128; p += kChains)
            for (int k = 0; k < kChains; ++k) {
                const __m512i w = _mm512_load_si512(words + 16 * (p + k));
                for (int c = 0; c < C; ++c)
                    s[k][c] = _mm512_dpwssd_epi32(s[k][c], w, pair_of(act[c][b], p + k));
            }
        const __m512 dw = _mm512_loadu_ps(tile.scales + 16 * b);
        for (int c = 0; c < C; ++c) {
            const __m512i sum = kChains == 2 ? _mm512_add_epi32(s[0][c], s[kChains - 1][c]) : s[0][c];
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),
                                     _mm512_mul_ps(dw, _mm512_set1_ps(act[c][b].d)), acc[c]);
        }
    }
    const __m512 rs = _mm512_loadu_ps(tile.row_scale);
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(out + 16 * c, _mm512_mul_ps(acc[c], rs));
}

constexpr int kTileColumns = 8;
using TileColumnsFn = void (*)(int64_t, const WeightTile&, const ActQ16K* const*, float*);
constexpr TileColumnsFn kTileColumnsFns[kTileColumns] = {
    tile_columns<1>, tile_columns<2>, tile_columns<3>, tile_columns<4>,
    tile_columns<5>, tile_columns<6>, tile_columns<7>, tile_columns<8>};

// The calling thread's tile, grown to the largest row it has decoded.
struct alignas(64) TileVector {
    int32_t w[16];
};
struct TileBuffer {
    std::vector<TileVector> words;  // 64-byte aligned (operator new of an over-aligned type)
    std::vector<float> scales;
    WeightTile tile(int64_t blocks) {
        if (int64_t(words.size()) < 128 * blocks) words.resize(size_t(128 * blocks));
        if (int64_t(scales.size()) < 16 * blocks) scales.resize(size_t(16 * blocks));
        return WeightTile{words.data()->w, scales.data(), {}};
    }
};

}  // namespace

void tile_matmul_block(const QuantKernel& kernel, const char* a, int64_t a_row_stride, int64_t n0,
                       int64_t n1, int64_t K, const void* const* act, float* const* out,
                       int64_t count, int64_t out_row_stride) {
    const int64_t blocks = K / 256;
    const int64_t q16_offset = blocks * int64_t(sizeof(sy_block_q8_K));
    thread_local TileBuffer buffer;
    WeightTile tile = buffer.tile(blocks);
    for (int64_t n = n0; n < n1; n += 16) {
        const int rows = int(std::min<int64_t>(16, n1 - n));
        kernel.tile_decode(blocks, a + n * a_row_stride, a_row_stride, rows, tile);
        for (int64_t c = 0; c < count; c += kTileColumns) {
            const int cols = int(std::min<int64_t>(kTileColumns, count - c));
            const ActQ16K* cols_act[kTileColumns];
            for (int j = 0; j < cols; ++j)
                cols_act[j] = reinterpret_cast<const ActQ16K*>(
                    static_cast<const char*>(act[c + j]) + q16_offset);
            alignas(64) float r[16 * kTileColumns];
            kTileColumnsFns[cols - 1](blocks, tile, cols_act, r);
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
