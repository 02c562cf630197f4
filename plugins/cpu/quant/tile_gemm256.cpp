// The tile path of the avx2 variant (quant_kernels.hpp, WeightTile; no VNNI): each group of 16
// weight rows is decoded once into int8 values, lane r per row (rows 0-7 in the first 32 bytes of
// each 64-byte line, rows 8-15 in the last 32), and every activation column runs over the tile:
// per 4 values, one vpmaddubsw of the column's unsigned bytes a + 128 (4 at a time, broadcast)
// against each half's values, then one vpmaddwd by the rows' l_j as int16 pairs, which adds the
// pair sums and scales them in one step. Pairs stay below 2^15 for the types with |v| <= 64
// (2 * 255 * 64 = 32640); the types whose values reach 128 take the signed form
// (WeightTile::signed_values): |v| against the activations, their top bit flipped back to q and
// carrying v's sign (vpsignb), pairs of at most 2 * 128 * 127, and no offset term; two more
// instructions per 4 values and column. Per 256-value block, 16 rows and one column: 64
// broadcasts, 128 vpmaddubsw, 128 vpmaddwd and 128 vpaddd, where the per-row kernels also decode
// each row for every group of 4 columns. The offset term and the float scaling as in
// tile_gemm512.cpp. The columns pass over 4 blocks of the tile at a time (25 KiB, in L1), each
// keeping its 16 float sums in memory between passes (the same additions in the same order).
#include "quant/quant_kernels.hpp"
#include "quant/tile_decode.hpp"

#if defined(SY_CPU_TILE_GEMM) && !defined(SY_CPU_TILE_GEMM512)
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>
#endif

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

#if defined(SY_CPU_TILE_GEMM) && !defined(SY_CPU_TILE_GEMM512)
namespace {

inline __m256i quad_of(const ActU8K& a, int p) {
    int32_t v;
    std::memcpy(&v, a.qs + 4 * p, 4);
    return _mm256_set1_epi32(v);
}

// acc[16 c + r] += row r of the tile's blocks [b0, b1) times column c, for C columns whose ActU8K
// blocks are at act[c].
template <int C, bool kMins, bool kScales32, bool kSigned>
void tile_columns(int64_t b0, int64_t b1, const WeightTile& tile, const ActU8K* const* act,
                  float* acc_out) {
    constexpr int kGroup = kScales32 ? 2 : 1;  // sub-blocks of 16 per scale
    const __m256i low16 = _mm256_set1_epi32(0xFFFF);
    __m256 acc[C][2];
    for (int c = 0; c < C; ++c)
        for (int h = 0; h < 2; ++h) acc[c][h] = _mm256_loadu_ps(acc_out + 16 * c + 8 * h);
    for (int64_t b = b0; b < b1; ++b) {
        const int8_t* values = tile.values + 4096 * b;
        const int32_t* scales = tile.scales + 256 * b;
        __m256i s[C][2];
        for (int h = 0; h < 2; ++h) {
            const __m256i offsets = kSigned ? _mm256_setzero_si256()
                                            : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                                  tile.offsets + 16 * b + 8 * h));
            for (int c = 0; c < C; ++c) s[c][h] = offsets;
        }
        for (int j = 0; j < 16; j += kGroup) {
            __m256i pairs[2];  // l_j of each row as the int16 pair (l_j, l_j)
            for (int h = 0; h < 2; ++h) {
                const __m256i l =
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + 16 * j + 8 * h));
                pairs[h] = _mm256_or_si256(_mm256_and_si256(l, low16), _mm256_slli_epi32(l, 16));
            }
            for (int k = 0; k < 4 * kGroup; ++k) {
                const int p = 4 * j + k;
                const __m256i w0 =
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(values + 64 * p));
                const __m256i w1 =
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(values + 64 * p + 32));
                if constexpr (kSigned) {
                    // |v| against the signed activations (a + 128 with its top bit flipped)
                    // carrying v's sign: pairs of at most 2 * 128 * 127.
                    const __m256i m0 = _mm256_sign_epi8(w0, w0), m1 = _mm256_sign_epi8(w1, w1);
                    const __m256i flip = _mm256_set1_epi8(char(0x80));
                    for (int c = 0; c < C; ++c) {
                        const __m256i a = _mm256_xor_si256(quad_of(act[c][b], p), flip);
                        s[c][0] = _mm256_add_epi32(
                            s[c][0],
                            _mm256_madd_epi16(_mm256_maddubs_epi16(m0, _mm256_sign_epi8(a, w0)),
                                              pairs[0]));
                        s[c][1] = _mm256_add_epi32(
                            s[c][1],
                            _mm256_madd_epi16(_mm256_maddubs_epi16(m1, _mm256_sign_epi8(a, w1)),
                                              pairs[1]));
                    }
                } else {
                    for (int c = 0; c < C; ++c) {
                        const __m256i a = quad_of(act[c][b], p);
                        s[c][0] = _mm256_add_epi32(
                            s[c][0], _mm256_madd_epi16(_mm256_maddubs_epi16(a, w0), pairs[0]));
                        s[c][1] = _mm256_add_epi32(
                            s[c][1], _mm256_madd_epi16(_mm256_maddubs_epi16(a, w1), pairs[1]));
                    }
                }
            }
        }
        for (int h = 0; h < 2; ++h) {
            const __m256 dw = _mm256_loadu_ps(tile.d + 16 * b + 8 * h);
            for (int c = 0; c < C; ++c)
                acc[c][h] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[c][h]),
                                    _mm256_mul_ps(dw, _mm256_set1_ps(act[c][b].d)), acc[c][h]);
        }
        if constexpr (kMins) {
            // -dmin sum_j m_j B_j: the rows' (m_2i, m_2i+1) against the column's bsums pair.
            const int32_t* mins = tile.mins + 256 * b;
            for (int c = 0; c < C; ++c) s[c][0] = s[c][1] = _mm256_setzero_si256();
            for (int i = 0; i < 8; ++i) {
                const __m256i m0 =
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(mins + 16 * i));
                const __m256i m1 =
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(mins + 16 * i + 8));
                for (int c = 0; c < C; ++c) {
                    int32_t pair;
                    std::memcpy(&pair, act[c][b].bsums + 2 * i, 4);
                    const __m256i bs = _mm256_set1_epi32(pair);
                    s[c][0] = _mm256_add_epi32(s[c][0], _mm256_madd_epi16(m0, bs));
                    s[c][1] = _mm256_add_epi32(s[c][1], _mm256_madd_epi16(m1, bs));
                }
            }
            for (int h = 0; h < 2; ++h) {
                const __m256 dmin = _mm256_loadu_ps(tile.dmin + 16 * b + 8 * h);
                for (int c = 0; c < C; ++c)
                    acc[c][h] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(s[c][h]),
                                                 _mm256_mul_ps(dmin, _mm256_set1_ps(act[c][b].d)),
                                                 acc[c][h]);
            }
        }
    }
    for (int c = 0; c < C; ++c)
        for (int h = 0; h < 2; ++h) _mm256_storeu_ps(acc_out + 16 * c + 8 * h, acc[c][h]);
}

// Up to 4 columns per pass: 8 int32 accumulators, the 2 weight halves and 2 scale registers of
// 16 (the signed form adds the halves' magnitudes and the flip constant).
constexpr int kTileColumns = 4;
using TileColumnsFn = void (*)(int64_t, int64_t, const WeightTile&, const ActU8K* const*, float*);
// Blocks per pass of the columns: 4 blocks of a 16-row tile (25 KiB) stay in L1 while every
// column group passes over them.
constexpr int64_t kBlocksPerPass = 4;
// [has_mins][scales32][signed_values]: no decoder sets both mins and signed values (the types
// with mins have values below 32), so those entries are empty.
template <bool kMins, bool kScales32, bool kSigned, int... I>
constexpr std::array<TileColumnsFn, sizeof...(I)> tile_columns_fns(
    std::integer_sequence<int, I...>) {
    return {tile_columns<I + 1, kMins, kScales32, kSigned>...};
}
template <bool kMins, bool kScales32, bool kSigned>
constexpr std::array<TileColumnsFn, kTileColumns> kFns =
    tile_columns_fns<kMins, kScales32, kSigned>(std::make_integer_sequence<int, kTileColumns>());
constexpr const std::array<TileColumnsFn, kTileColumns>* kTileColumnsFns[2][2][2] = {
    {{&kFns<false, false, false>, &kFns<false, false, true>},
     {&kFns<false, true, false>, &kFns<false, true, true>}},
    {{&kFns<true, false, false>, nullptr}, {&kFns<true, true, false>, nullptr}}};

}  // namespace

void tile_matmul_block(const QuantKernel& kernel, const char* a, int64_t a_row_stride, int64_t n0,
                       int64_t n1, int64_t K, const void* const* act, float* const* out,
                       int64_t count, int64_t out_row_stride) {
    const int64_t blocks = K / 256;
    const int64_t u8_offset = kernel.tile_act_offset(K);
    thread_local TileBuffer buffer;
    WeightTile tile = buffer.tile(blocks);
    thread_local std::vector<float> acc;
    if (int64_t(acc.size()) < 16 * count) acc.resize(size_t(16 * count));
    for (int64_t n = n0; n < n1; n += 16) {
        const int rows = int(std::min<int64_t>(16, n1 - n));
        kernel.tile_decode(blocks, a + n * a_row_stride, a_row_stride, rows, tile);
        std::fill(acc.begin(), acc.begin() + 16 * count, 0.0f);
        for (int64_t b0 = 0; b0 < blocks; b0 += kBlocksPerPass) {
            const int64_t b1 = std::min(blocks, b0 + kBlocksPerPass);
            for (int64_t c = 0; c < count; c += kTileColumns) {
                const int cols = int(std::min<int64_t>(kTileColumns, count - c));
                const ActU8K* cols_act[kTileColumns];
                for (int j = 0; j < cols; ++j)
                    cols_act[j] = reinterpret_cast<const ActU8K*>(
                        static_cast<const char*>(act[c + j]) + u8_offset);
                (*kTileColumnsFns[tile.has_mins][tile.scales32][tile.signed_values])[size_t(
                    cols - 1)](b0, b1, tile, cols_act, acc.data() + 16 * c);
            }
        }
        for (int64_t c = 0; c < count; ++c)
            for (int i = 0; i < rows; ++i) {
                const float y = acc[size_t(16 * c + i)] * tile.row_scale[i];
                std::memcpy(reinterpret_cast<char*>(out[c]) + (n + i) * out_row_stride, &y,
                            sizeof(float));
            }
    }
}

#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
