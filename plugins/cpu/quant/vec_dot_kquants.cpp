// Dot products of the K-quants Q2_K, Q4_K, Q5_K, Q6_K (256-element super-blocks) with Q8_K
// activations (Q3_K runs on IQ3_K's kernel, vec_dot_ikquants.cpp). Per super-block the weights are
// decoded 32 values at a time into unsigned bytes, dot_us gives int32 lanes of 4 products (lanes
// 0-3: the first 16 values, 4-7: the next 16), the sub-block scales multiply those lanes
// (dot_us_scaled: pair sums in int16, then a widening multiply-add by the scales), and one float
// FMA per super-block applies d_w * d_a. The constant parts (mins, and the offset of Q6_K) come
// from the activation block sums:
//   sum_j sc_j * (q_j - o) * a_j = sum_j sc_j * q_j a_j - o * sum_sub sc_sub * bsum_sub.
#include <type_traits>

#include "quant/int8_simd.hpp"
#include "quant/quant_kernels.hpp"
#include "quant/tile256.hpp"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {
namespace {

using namespace i8;

template <int C>
struct Columns {
    const sy_block_q8_K* a[C];
    F32x8 acc[C];
    float scalar[C];

    explicit Columns(const void* const* act) {
        for (int c = 0; c < C; ++c) {
            a[c] = static_cast<const sy_block_q8_K*>(act[c]);
            acc[c] = zerof();
            scalar[c] = 0.0f;
        }
    }
    void finish(float* out) const {
        for (int c = 0; c < C; ++c) out[c] = reduce(acc[c]) + scalar[c];
    }
};

// Q4_K and Q5_K: x = d * sc * q - dmin * m per 32 values, q 4 bits (Q5_K: plus a fifth from qh).
template <int C, typename Block>
void q4_5_K_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    constexpr bool kFifthBit = std::is_same_v<Block, sy_block_q5_K>;
    const Block* x = static_cast<const Block*>(w);
    Columns<C> cols(act);
    for (int64_t i = 0; i < blocks; ++i) {
        prefetch_ahead(&x[i], sizeof x[i]);
        uint8_t sc[8], mn[8];
        scales_mins_k4(x[i].scales, sc, mn);
        I32x8 sum[C];
        for (int c = 0; c < C; ++c) sum[c] = zero32();
        for (int j = 0; j < 4; ++j) {
            const I8x32 bytes = load32(x[i].qs + 32 * j);
            I8x32 lo = low_nibbles(bytes), hi = high_nibbles(bytes);
            if constexpr (kFifthBit) {
                const I8x32 qh = load32(x[i].qh);
                lo = or8(lo, shl8(and8(shr8(qh, 2 * j), 1), 4));
                hi = or8(hi, shl8(and8(shr8(qh, 2 * j + 1), 1), 4));
            }
            const Scale16 slo = scales16(int16_t(sc[2 * j]), int16_t(sc[2 * j])),
                          shi = scales16(int16_t(sc[2 * j + 1]), int16_t(sc[2 * j + 1]));
            for (int c = 0; c < C; ++c) {
                const int8_t* aq = cols.a[c][i].qs + 64 * j;
                sum[c] = dot_us_scaled(sum[c], lo, load32(aq), slo);
                sum[c] = dot_us_scaled(sum[c], hi, load32(aq + 32), shi);
            }
        }
        const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
        for (int c = 0; c < C; ++c) {
            const sy_block_q8_K& a = cols.a[c][i];
            int32_t msum = 0;
            for (int j = 0; j < 8; ++j) msum += mn[j] * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
            cols.acc[c] = fma_i32(sum[c], d * a.d, cols.acc[c]);
            cols.scalar[c] -= dmin * a.d * float(msum);
        }
    }
    cols.finish(out);
}

template <int C>
void q4_K_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    q4_5_K_cols<C, sy_block_q4_K>(blocks, w, act, out);
}

template <int C>
void q5_K_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    q4_5_K_cols<C, sy_block_q5_K>(blocks, w, act, out);
}

// x = d * sc * (q - 32), q = 4 bits of ql | 2 bits of qh << 4; scales per 16 values.
template <int C>
void q6_K_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const sy_block_q6_K* x = static_cast<const sy_block_q6_K*>(w);
    Columns<C> cols(act);
    for (int64_t i = 0; i < blocks; ++i) {
        prefetch_ahead(&x[i], sizeof x[i]);
        const int8_t* sc = x[i].scales;
        I32x8 sum[C];
        for (int c = 0; c < C; ++c) sum[c] = zero32();
        for (int half = 0; half < 2; ++half) {
            const uint8_t* ql = x[i].ql + 64 * half;
            const I8x32 qh = load32(x[i].qh + 32 * half);
            const I8x32 l0 = load32(ql), l1 = load32(ql + 32);
            const I8x32 q[4] = {
                or8(low_nibbles(l0), shl8(and8(qh, 3), 4)),
                or8(low_nibbles(l1), shl8(and8(shr8(qh, 2), 3), 4)),
                or8(high_nibbles(l0), shl8(and8(shr8(qh, 4), 3), 4)),
                or8(high_nibbles(l1), shl8(shr8(qh, 6), 4)),
            };
            for (int g = 0; g < 4; ++g) {
                const Scale16 s = scales16(sc[8 * half + 2 * g], sc[8 * half + 2 * g + 1]);
                for (int c = 0; c < C; ++c)
                    sum[c] = dot_us_scaled(sum[c], q[g],
                                           load32(cols.a[c][i].qs + 128 * half + 32 * g), s);
            }
        }
        const float d = h2f(x[i].d);
        for (int c = 0; c < C; ++c) {
            const sy_block_q8_K& a = cols.a[c][i];
            int32_t osum = 0;
            for (int j = 0; j < 16; ++j) osum += sc[j] * a.bsums[j];
            cols.acc[c] = fma_i32(sum[c], d * a.d, cols.acc[c]);
            cols.scalar[c] -= 32.0f * d * a.d * float(osum);
        }
    }
    cols.finish(out);
}

// x = d * (sc & 15) * q - dmin * (sc >> 4), q 2 bits; scales per 16 values.
template <int C>
void q2_K_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const sy_block_q2_K* x = static_cast<const sy_block_q2_K*>(w);
    Columns<C> cols(act);
    for (int64_t i = 0; i < blocks; ++i) {
        prefetch_ahead(&x[i], sizeof x[i]);
        const uint8_t* sc = x[i].scales;
        I32x8 sum[C];
        for (int c = 0; c < C; ++c) sum[c] = zero32();
        for (int half = 0; half < 2; ++half) {
            const I8x32 qs = load32(x[i].qs + 32 * half);
            for (int g = 0; g < 4; ++g) {
                const int group = 4 * half + g;
                const I8x32 q = and8(shr8(qs, 2 * g), 3);
                const Scale16 s =
                    scales16(int16_t(sc[2 * group] & 15), int16_t(sc[2 * group + 1] & 15));
                for (int c = 0; c < C; ++c)
                    sum[c] = dot_us_scaled(sum[c], q, load32(cols.a[c][i].qs + 32 * group), s);
            }
        }
        const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
        for (int c = 0; c < C; ++c) {
            const sy_block_q8_K& a = cols.a[c][i];
            int32_t msum = 0;
            for (int j = 0; j < 16; ++j) msum += (sc[j] >> 4) * a.bsums[j];
            cols.acc[c] = fma_i32(sum[c], d * a.d, cols.acc[c]);
            cols.scalar[c] -= dmin * a.d * float(msum);
        }
    }
    cols.finish(out);
}

}  // namespace

SY_CPU_DEFINE_VEC_DOT(q2_K)
SY_CPU_DEFINE_VEC_DOT(q4_K)
SY_CPU_DEFINE_VEC_DOT(q5_K)
SY_CPU_DEFINE_VEC_DOT(q6_K)

#if defined(SY_CPU_TILE_GEMM) && !defined(SY_CPU_TILE_GEMM512)
namespace {

// The avx2 tile path (tile_gemm256.cpp): each block's values (Q2_K 0..3, Q4_K 0..15, Q5_K
// 0..31 with their mins apart; Q6_K -32..31) in natural order, the 16 sub-block scales (Q4_K's
// and Q5_K's per 32 values written twice) and mins.
inline void store32(int8_t* v, __m256i x) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(v), x);
}

// Q4_K, Q5_K: qs[32 j, 32 j + 32) holds values 64 j + [0, 32) in its low nibbles and 64 j + 32
// + [0, 32) in its high ones; Q5_K's fifth bit of value 32 c + i is bit c of qh[i].
template <typename Block>
float k4_k5_tile_row256(const Block& b, int8_t* v, int32_t* l, int16_t* m, float& dmin) {
    uint8_t sc[8], mn[8];
    scales_mins_k4(b.scales, sc, mn);
    for (int j = 0; j < 8; ++j) {
        l[2 * j] = l[2 * j + 1] = sc[j];
        m[2 * j] = m[2 * j + 1] = mn[j];
    }
    const __m256i low4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
    for (int j = 0; j < 4; ++j) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * j));
        __m256i lo = _mm256_and_si256(q, low4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        if constexpr (std::is_same_v<Block, sy_block_q5_K>) {
            const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
            // Bit 2 j to bit 4 (bit 2 j + 1 to bit 5): 16-bit shifts by at most 4 bring no bit of
            // one byte to another's bit 4 or 5.
            const __m256i t = j == 0   ? _mm256_slli_epi16(qh, 4)
                              : j == 1 ? _mm256_slli_epi16(qh, 2)
                              : j == 2 ? qh
                                       : _mm256_srli_epi16(qh, 2);
            lo = _mm256_or_si256(lo, _mm256_and_si256(t, bit4));
            hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_srli_epi16(t, 1), bit4));
        }
        store32(v + 64 * j, lo);
        store32(v + 64 * j + 32, hi);
    }
    dmin = h2f(b.dmin);
    return h2f(b.d);
}

// Q6_K: per half n, ql[64 n, 64 n + 32) and ql[64 n + 32, 64 n + 64) hold in their low nibbles
// values 128 n + [0, 32) and 128 n + [32, 64), in their high ones 128 n + [64, 96) and 128 n +
// [96, 128); bits 4-5 are bits 2 k of qh[32 n + i] for the k-th of those four; minus 32.
float q6_K_tile_row256(const sy_block_q6_K& b, int8_t* v, int32_t* l) {
    for (int s = 0; s < 16; ++s) l[s] = b.scales[s];
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30),
                  offset = _mm256_set1_epi8(32);
    for (int n = 0; n < 2; ++n) {
        const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * n));
        const __m256i ql1 =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * n + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * n));
        const __m256i low[4] = {_mm256_and_si256(ql0, low4), _mm256_and_si256(ql1, low4),
                                _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4)};
        const __m256i high[4] = {_mm256_slli_epi16(qh, 4), _mm256_slli_epi16(qh, 2), qh,
                                 _mm256_srli_epi16(qh, 2)};
        for (int k = 0; k < 4; ++k)
            store32(v + 128 * n + 32 * k,
                    _mm256_sub_epi8(_mm256_or_si256(low[k], _mm256_and_si256(high[k], bits45)),
                                    offset));
    }
    return h2f(b.d);
}

// Q2_K: field g of qs byte i < 32 is value 32 g + i, of byte 32 + i value 128 + 32 g + i; scale
// and min of sub-block j in the low and high nibble of scales[j].
float q2_K_tile_row256(const sy_block_q2_K& b, int8_t* v, int32_t* l, int16_t* m, float& dmin) {
    for (int j = 0; j < 16; ++j) {
        l[j] = b.scales[j] & 15;
        m[j] = int16_t(b.scales[j] >> 4);
    }
    const __m256i low2 = _mm256_set1_epi8(0x03);
    for (int n = 0; n < 2; ++n) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * n));
        for (int g = 0; g < 4; ++g)
            store32(v + 128 * n + 32 * g, _mm256_and_si256(_mm256_srli_epi16(q, 2 * g), low2));
    }
    dmin = h2f(b.dmin);
    return h2f(b.d);
}

template <typename Block>
void k_tile_decode256(int64_t blocks, const void* w, int64_t row_stride, int rows,
                      WeightTile& tile) {
    auto one = [](const uint8_t*) { return 1.0f; };
    if constexpr (std::is_same_v<Block, sy_block_q6_K>)
        decode_tile256<Block, 0, false>(blocks, w, row_stride, rows, tile, one, q6_K_tile_row256);
    else if constexpr (std::is_same_v<Block, sy_block_q2_K>)
        decode_tile256<Block, 0, false, true>(blocks, w, row_stride, rows, tile, one,
                                              q2_K_tile_row256);
    else
        decode_tile256<Block, 0, true, true>(blocks, w, row_stride, rows, tile, one,
                                             k4_k5_tile_row256<Block>);
}

}  // namespace

TileDecodeFn avx2_kquant_tile_decoder(int32_t weight_type) {
    switch (weight_type) {
        case SY_TYPE_Q2_K: return k_tile_decode256<sy_block_q2_K>;
        case SY_TYPE_Q4_K: return k_tile_decode256<sy_block_q4_K>;
        case SY_TYPE_Q5_K: return k_tile_decode256<sy_block_q5_K>;
        case SY_TYPE_Q6_K: return k_tile_decode256<sy_block_q6_K>;
        default: return nullptr;
    }
}
#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
