// AVX-512 (BW + VNNI) dot products of Q2_K, Q4_K, Q5_K and Q6_K with Q8_K activations, one
// 256-element super-block per step in 512-bit registers. The weights are decoded into unsigned
// bytes laid out like the activations, so that every product is a plain 64-byte load of a.qs:
//   Q4_K: the low nibbles of a 64-byte load qs[64k, 64k + 64) are sub-blocks 4k and 4k+2, the
//         high nibbles 4k+1 and 4k+3; the activations come in that order (nibble order,
//         quantize_act_q8_K_nibbles), so no lanes move. Scales and mins are unpacked from their
//         12 bytes with two vpshufb (scales_mins_k4_vec), faster than lane shuffles and scalar
//         unpacking (docs/design-measurements.md#avx512-q4k-scales).
//   Q5_K: Q4_K's, with the fifth bit of each value added from qh under a byte mask.
//   Q6_K: per half h, the low nibbles of ql[64h, 64h + 64) are elements 128h + [0, 64) and the
//         high nibbles 128h + [64, 128); their two high bits come from qh, shifted per 32-byte
//         half with vpsrlvw.
//   Q2_K: the four 2-bit fields of qs[0, 64) are four registers: field g of byte l < 32 is
//         element 32 g + l, of byte 32 + l element 128 + 32 g + l; the activations come in that
//         order (32-value chunks swapped, quantize_act_q8_K_q2k).
// Products: vpmaddubsw (unsigned weight x signed activation, pair sums in int16: 2 * 63 * 127
// fits) then vpdpwssd with the sub-block scales as int16, chosen per lane with vpermw. The mins
// (Q2_K, Q4_K) and the offset 32 (Q6_K) come from the activation block sums, as in
// vec_dot_kquants.cpp.
#include "quant/quant_kernels.hpp"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512F__) && defined(__F16C__)
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "quant/column_sums512.hpp"
#include "quant/int8_simd.hpp"
#include "quant/tile512.hpp"

#define SY_CPU_WIDE_KQUANTS 1
#endif

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

#if defined(SY_CPU_WIDE_KQUANTS)
namespace {

// Constant tables built at compile time (see vec_dot_groups.cpp: no AVX-512 static initializers).
struct alignas(64) Words32 {
    int16_t w[32];
};
// Word l = the scale index for 16-bit product lane l when each scale covers `per` lanes,
// starting at scale `first`.
constexpr Words32 scale_lanes(int first, int per) {
    Words32 t{};
    for (int l = 0; l < 32; ++l) t.w[l] = int16_t(first + l / per);
    return t;
}
// Word l = `first` for l < 16, else `second`.
constexpr Words32 halves(int first, int second) {
    Words32 t{};
    for (int l = 0; l < 32; ++l) t.w[l] = int16_t(l < 16 ? first : second);
    return t;
}
// Q4_K: 32 values per scale = 16 product lanes. With the activations in nibble order, register
// 2k (low nibbles of qs[64k, 64k + 64)) holds sub-blocks 4k and 4k + 2, register 2k + 1 (their
// high nibbles) 4k + 1 and 4k + 3.
constexpr Words32 kQ4KScaleIndex[4] = {halves(0, 2), halves(1, 3), halves(4, 6), halves(5, 7)};
// Q4_K mins (words 8-15 of [scales | mins]) for the 16 block sums: word j -> 8 + j / 2.
constexpr Words32 kQ4KMinIndex = scale_lanes(8, 2);
// Q6_K: 16 values per scale = 8 product lanes; register t covers scales 4t .. 4t + 3.
constexpr Words32 kQ6KScaleIndex[4] = {scale_lanes(0, 8), scale_lanes(4, 8), scale_lanes(8, 8),
                                       scale_lanes(12, 8)};
// Q2_K: register g = bits 2g..2g+1 of qs[0..63], i.e. elements 32 g + l (bytes l < 32) and
// 128 + 32 g + l (bytes 32 + l), with the activations in that order (quantize_act_q8_K_q2k):
// 16-bit product lane k covers 16-value unit 8 (k / 16) + 2 g + (k % 16) / 8.
constexpr Words32 q2k_scale_lanes(int g) {
    Words32 t{};
    for (int k = 0; k < 32; ++k) t.w[k] = int16_t(8 * (k / 16) + 2 * g + k % 16 / 8);
    return t;
}
constexpr Words32 kQ2KScaleIndex[4] = {q2k_scale_lanes(0), q2k_scale_lanes(1), q2k_scale_lanes(2),
                                       q2k_scale_lanes(3)};
// Q6_K: per-word shifts of qh for [first 32 bytes | last 32 bytes].
constexpr Words32 kQ6KShiftLow = halves(0, 2), kQ6KShiftHigh = halves(4, 6);

// Q5_K's fifth bit of register t = 2k + h: bit 4k + h of qh (bytes 0-31), 4k + 2 + h (32-63).
struct alignas(64) Bytes64 {
    int8_t b[64];
};
constexpr Bytes64 q5k_bit(int t) {
    Bytes64 m{};
    for (int l = 0; l < 64; ++l) m.b[l] = int8_t(1 << (4 * (t / 2) + t % 2 + (l < 32 ? 0 : 2)));
    return m;
}
constexpr Bytes64 kQ5KBit[4] = {q5k_bit(0), q5k_bit(1), q5k_bit(2), q5k_bit(3)};

inline __m512i load(const Words32& t) {
    return _mm512_load_si512(t.w);
}

// acc + the products of unsigned weights u and activations at a, each 16-bit lane scaled.
inline __m512i dot_scaled(__m512i acc, __m512i u, const int8_t* a, __m512i scales) {
    return _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(u, _mm512_loadu_si512(a)), scales);
}

// The 16 block sums of a Q8_K block (sums of 16 activations each) as int16.
inline __m256i bsums(const sy_block_q8_K& a) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums));
}

// The 8 scales and 8 mins of a Q4_K super-block from its 12 packed bytes (scales_mins_k4 in
// vector form): 16 bytes [sc0..sc7 | mn0..mn7]. `q` points at the 12 bytes; 16 are read.
inline __m128i scales_mins_k4_vec(const uint8_t* q) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    // Low parts: q[0..3] & 63, q[8..11] & 15, q[4..7] & 63, q[8..11] >> 4.
    const __m128i a =
        _mm_shuffle_epi8(x, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m128i a_or_high = _mm_mask_blend_epi8(0xF000, a, _mm_srli_epi16(a, 4));
    const __m128i low = _mm_and_si128(
        a_or_high, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 15, 15, 15, 15));
    // High parts of scales and mins 4..7: the top two bits of q[0..3] and q[4..7], at bits 4-5.
    const __m128i b =
        _mm_shuffle_epi8(x, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    return _mm_or_si128(low, _mm_and_si128(_mm_srli_epi16(b, 2), _mm_set1_epi8(0x30)));
}

// One decoded super-block of a type with mins (Q2_K, Q4_K) against each column: u the four
// registers of unsigned weights in the activations' order, s their int16 scales per lane, mn16
// the min of each 16-value block sum; d_dmin points at the block's adjacent f16 d and dmin.
template <int C>
inline void accumulate_with_mins(const __m512i (&u)[4], const __m512i (&s)[4], __m256i mn16,
                                 const void* d_dmin, const sy_block_q8_K* const (&a)[C], int64_t i,
                                 ColumnSums<C>& sums) {
    int32_t bits;
    std::memcpy(&bits, d_dmin, 4);
    const __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128(bits));
    for (int c = 0; c < C; ++c) {
        const sy_block_q8_K& ac = a[c][i];
        __m512i sum = _mm512_setzero_si512();
        for (int t = 0; t < 4; ++t) sum = dot_scaled(sum, u[t], ac.qs + 64 * t, s[t]);
        const __m128 dd = _mm_mul_ps(dm, _mm_set1_ps(ac.d));
        sums.acc[c] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_broadcastss_ps(dd), sums.acc[c]);
        sums.off[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bsums(ac), mn16)),
                                      _mm256_broadcastss_ps(_mm_movehdup_ps(dd)), sums.off[c]);
    }
}

// Q4_K, and Q5_K: Q4_K's nibbles and scales with a fifth bit per value in qh (value n: bit n / 32
// of qh[n % 32]), i.e. for register 2k + h (chunks 4k + h and 4k + 2 + h) bit 4k + h of
// qh[l] for bytes l < 32 and bit 4k + 2 + h for bytes 32 + l.
template <typename Block, int C>
void k4_k5_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    constexpr bool kFifthBit = std::is_same_v<Block, sy_block_q5_K>;
    const Block* x = static_cast<const Block*>(w);
    const sy_block_q8_K* a[C];
    for (int c = 0; c < C; ++c) a[c] = static_cast<const sy_block_q8_K*>(act[c]);
    ColumnSums<C> sums;  // off: the mins' share
    const __m512i low4 = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
    const __m512i scale_index[4] = {load(kQ4KScaleIndex[0]), load(kQ4KScaleIndex[1]),
                                    load(kQ4KScaleIndex[2]), load(kQ4KScaleIndex[3])};
    const __m256i min_index = _mm512_castsi512_si256(load(kQ4KMinIndex));
    for (int64_t i = 0; i < blocks; ++i) {
        const Block& b = x[i];
        i8::prefetch_ahead(&b, sizeof b);
        // Words [sc0..sc7 | mn0..mn7].
        const __m256i sm16 = _mm256_cvtepu8_epi16(scales_mins_k4_vec(b.scales));
        const __m512i sm = _mm512_castsi256_si512(sm16);
        __m512i u[4], s[4];
        for (int k = 0; k < 2; ++k) {
            const __m512i q = _mm512_loadu_si512(b.qs + 64 * k);
            u[2 * k] = _mm512_and_si512(q, low4);
            u[2 * k + 1] = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
        }
        if constexpr (kFifthBit) {
            const __m512i qh =
                _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh)));
            for (int t = 0; t < 4; ++t)
                u[t] = _mm512_mask_add_epi8(
                    u[t], _mm512_test_epi8_mask(qh, _mm512_load_si512(kQ5KBit[t].b)), u[t],
                    sixteen);
        }
        for (int t = 0; t < 4; ++t) s[t] = _mm512_permutexvar_epi16(scale_index[t], sm);
        // The mins once per 16 activations: m_j for block sums 2j and 2j + 1.
        const __m256i mn16 = _mm256_permutexvar_epi16(min_index, sm16);
        accumulate_with_mins(u, s, mn16, &b.d, a, i, sums);
    }
    sums.store(1.0f, out);
}

template <int C>
void q4_K_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    k4_k5_wide_cols<sy_block_q4_K, C>(blocks, w, act, out);
}
template <int C>
void q5_K_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    k4_k5_wide_cols<sy_block_q5_K, C>(blocks, w, act, out);
}

// Q6_K's values plus 32 (unsigned, 6 bits): per half h, the low nibbles of ql[64 h, 64 h + 64)
// are elements 128 h + [0, 64) (u[2 h]), the high nibbles 128 h + [64, 128) (u[2 h + 1]), each
// with its two bits of qh.
inline void q6_K_unsigned(const sy_block_q6_K& b, __m512i (&u)[4]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), low2 = _mm512_set1_epi8(0x03);
    const __m512i shift_low = load(kQ6KShiftLow), shift_high = load(kQ6KShiftHigh);
    for (int h = 0; h < 2; ++h) {
        const __m512i l = _mm512_loadu_si512(b.ql + 64 * h);
        const __m512i qh = _mm512_broadcast_i64x4(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h)));
        // Two bits per byte shifted to bits 4-5: (qh >> shift) & 3, then << 4 (no carry across
        // bytes: the values are below 4).
        const __m512i h_low =
            _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift_low), low2), 4);
        const __m512i h_high =
            _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift_high), low2), 4);
        u[2 * h] = _mm512_or_si512(_mm512_and_si512(l, low4), h_low);
        u[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), low4), h_high);
    }
}

template <int C>
void q6_K_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const sy_block_q6_K* x = static_cast<const sy_block_q6_K*>(w);
    const sy_block_q8_K* a[C];
    for (int c = 0; c < C; ++c) a[c] = static_cast<const sy_block_q8_K*>(act[c]);
    ColumnSums<C> sums;  // off: the offset 32's share
    const __m512i scale_index[4] = {load(kQ6KScaleIndex[0]), load(kQ6KScaleIndex[1]),
                                    load(kQ6KScaleIndex[2]), load(kQ6KScaleIndex[3])};
    for (int64_t i = 0; i < blocks; ++i) {
        const sy_block_q6_K& b = x[i];
        i8::prefetch_ahead(&b, sizeof b);
        const __m256i scales =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
        const __m512i sc16 = _mm512_castsi256_si512(scales);
        __m512i u[4], s[4];
        q6_K_unsigned(b, u);
        for (int t = 0; t < 4; ++t) s[t] = _mm512_permutexvar_epi16(scale_index[t], sc16);
        const float d = _cvtsh_ss(b.d);
        for (int c = 0; c < C; ++c) {
            const sy_block_q8_K& ac = a[c][i];
            __m512i sum = _mm512_setzero_si512();
            for (int t = 0; t < 4; ++t) sum = dot_scaled(sum, u[t], ac.qs + 64 * t, s[t]);
            sums.acc[c] =
                _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(d * ac.d), sums.acc[c]);
            sums.off[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bsums(ac), scales)),
                                          _mm256_set1_ps(32.0f * d * ac.d), sums.off[c]);
        }
    }
    sums.store(1.0f, out);
}

// Q2_K: x = d (sc & 15) q - dmin (sc >> 4) per 16 values, q 2 bits; four shifts of the 64 qs
// bytes are the four registers, the mins come from the activation block sums.
template <int C>
void q2_K_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const sy_block_q2_K* x = static_cast<const sy_block_q2_K*>(w);
    const sy_block_q8_K* a[C];
    for (int c = 0; c < C; ++c) a[c] = static_cast<const sy_block_q8_K*>(act[c]);
    ColumnSums<C> sums;  // off: the mins' share
    const __m512i low2 = _mm512_set1_epi8(0x03);
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m512i scale_index[4] = {load(kQ2KScaleIndex[0]), load(kQ2KScaleIndex[1]),
                                    load(kQ2KScaleIndex[2]), load(kQ2KScaleIndex[3])};
    for (int64_t i = 0; i < blocks; ++i) {
        const sy_block_q2_K& b = x[i];
        i8::prefetch_ahead(&b, sizeof b);
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
        const __m512i sc16 =
            _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(packed, low4)));
        const __m256i mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4));
        const __m512i q = _mm512_loadu_si512(b.qs);
        __m512i u[4], s[4];
        for (int g = 0; g < 4; ++g) {
            u[g] = _mm512_and_si512(_mm512_srli_epi16(q, 2 * g), low2);
            s[g] = _mm512_permutexvar_epi16(scale_index[g], sc16);
        }
        accumulate_with_mins(u, s, mn16, &b.d, a, i, sums);
    }
    sums.store(1.0f, out);
}

// The tile path (tile512.hpp): each block's values in natural order as int8 (Q6_K's minus 32),
// its 16-value sub-blocks' scales and mins (Q4_K's and Q5_K's per 32 values, twice each).
inline void store32(int8_t* p, __m256i x) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(p), x);
}
inline void store_halves(int8_t* v, int lo, int hi, __m512i x) {
    store32(v + lo, _mm512_castsi512_si256(x));
    store32(v + hi, _mm512_extracti64x4_epi64(x, 1));
}

// Q4_K, Q5_K: the low nibbles of qs[64 h, 64 h + 64) are values 128 h + [0, 32) (bytes 0-31)
// and 128 h + [64, 96) (bytes 32-63), the high nibbles 128 h + [32, 64) and 128 h + [96, 128);
// Q5_K's fifth bit of value 32 c + i is bit c of qh[i].
template <typename Block>
float k4_k5_tile_row(const Block& b, int8_t* v, int32_t* l, int16_t* m, float& dmin) {
    const __m128i sm = scales_mins_k4_vec(b.scales);  // [sc0..sc7 | mn0..mn7]
    const __m128i twice = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    _mm512_store_si512(l, _mm512_cvtepu8_epi32(_mm_shuffle_epi8(sm, twice)));
    _mm256_store_si256(
        reinterpret_cast<__m256i*>(m),
        _mm256_cvtepu8_epi16(_mm_shuffle_epi8(sm, _mm_add_epi8(twice, _mm_set1_epi8(8)))));
    const __m512i low4 = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
    __m512i qh = _mm512_setzero_si512();
    if constexpr (std::is_same_v<Block, sy_block_q5_K>)
        qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh)));
    for (int h = 0; h < 2; ++h) {
        const __m512i q = _mm512_loadu_si512(b.qs + 64 * h);
        __m512i lo = _mm512_and_si512(q, low4);
        __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
        if constexpr (std::is_same_v<Block, sy_block_q5_K>) {
            // Chunks 4 h (bytes 0-31 of lo), 4 h + 2 (32-63); 4 h + 1, 4 h + 3 (hi): the kernel's
            // registers 2 h and 2 h + 1.
            lo = _mm512_mask_add_epi8(
                lo, _mm512_test_epi8_mask(qh, _mm512_load_si512(kQ5KBit[2 * h].b)), lo, sixteen);
            hi = _mm512_mask_add_epi8(
                hi, _mm512_test_epi8_mask(qh, _mm512_load_si512(kQ5KBit[2 * h + 1].b)), hi,
                sixteen);
        }
        store_halves(v, 128 * h, 128 * h + 64, lo);
        store_halves(v, 128 * h + 32, 128 * h + 96, hi);
    }
    dmin = i8::h2f(b.dmin);
    return i8::h2f(b.d);
}

// Q6_K: per half h, the low nibbles of ql[64 h, 64 h + 64) with qh's bits are values 128 h +
// [0, 64), the high nibbles 128 h + [64, 128); minus 32.
float q6_K_tile_row(const sy_block_q6_K& b, int8_t* v, int32_t* l) {
    _mm512_store_si512(
        l, _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales))));
    __m512i u[4];
    q6_K_unsigned(b, u);
    for (int t = 0; t < 4; ++t)
        _mm512_store_si512(v + 64 * t, _mm512_sub_epi8(u[t], _mm512_set1_epi8(32)));
    return i8::h2f(b.d);
}

// Q2_K: field g of qs byte i < 32 is value 32 g + i, of byte 32 + i value 128 + 32 g + i; scale
// and min of sub-block j in the low and high nibble of scales[j].
float q2_K_tile_row(const sy_block_q2_K& b, int8_t* v, int32_t* l, int16_t* m, float& dmin) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    _mm512_store_si512(l, _mm512_cvtepu8_epi32(_mm_and_si128(packed, low4)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(m),
                       _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4)));
    const __m512i q = _mm512_loadu_si512(b.qs), low2 = _mm512_set1_epi8(0x03);
    for (int g = 0; g < 4; ++g)
        store_halves(v, 32 * g, 128 + 32 * g, _mm512_and_si512(_mm512_srli_epi16(q, 2 * g), low2));
    dmin = i8::h2f(b.dmin);
    return i8::h2f(b.d);
}

template <typename Block>
void k_tile_decode(int64_t blocks, const void* w, int64_t row_stride, int rows, WeightTile& tile) {
    auto one = [](const uint8_t*) { return 1.0f; };
    if constexpr (std::is_same_v<Block, sy_block_q6_K>)
        decode_tile<Block, 0, false>(blocks, w, row_stride, rows, tile, one, q6_K_tile_row);
    else if constexpr (std::is_same_v<Block, sy_block_q2_K>)
        decode_tile<Block, 0, false, true>(blocks, w, row_stride, rows, tile, one, q2_K_tile_row);
    else
        decode_tile<Block, 0, true, true>(blocks, w, row_stride, rows, tile, one,
                                          k4_k5_tile_row<Block>);
}

SY_CPU_DEFINE_VEC_DOT(q2_K_wide)
SY_CPU_DEFINE_VEC_DOT(q4_K_wide)
SY_CPU_DEFINE_VEC_DOT(q5_K_wide)
SY_CPU_DEFINE_VEC_DOT(q6_K_wide)

}  // namespace

// The types with mins add 8 vpdpwssd per block and column and a second transpose per tile.
constexpr int64_t kMinsTileColumns = 16;

QuantKernel wide_kquant_kernel(int32_t weight_type) {
    constexpr int64_t q8_K = sizeof(sy_block_q8_K);
    constexpr QuantizeActFn planes = quantize_act_q8_K_q2k, nibbles = quantize_act_q8_K_nibbles,
                            natural = quantize_act_q8_K_row;
    switch (weight_type) {
        case SY_TYPE_Q2_K:
            return with_tile({vec_dot_q2_K_wide, planes, 256, 256, q8_K},
                             k_tile_decode<sy_block_q2_K>, kMinsTileColumns);
        case SY_TYPE_Q4_K:
            return with_tile({vec_dot_q4_K_wide, nibbles, 256, 256, q8_K},
                             k_tile_decode<sy_block_q4_K>, kMinsTileColumns);
        case SY_TYPE_Q5_K:
            return with_tile({vec_dot_q5_K_wide, nibbles, 256, 256, q8_K},
                             k_tile_decode<sy_block_q5_K>, kMinsTileColumns);
        case SY_TYPE_Q6_K:
            return with_tile({vec_dot_q6_K_wide, natural, 256, 256, q8_K},
                             k_tile_decode<sy_block_q6_K>);
        default: return {nullptr, nullptr, 0, 0, 0};
    }
}

#else

QuantKernel wide_kquant_kernel(int32_t) {
    return {nullptr, nullptr, 0, 0, 0};
}

#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
