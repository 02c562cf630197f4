// AVX-512 VNNI products of row-interleaved Q4_0, IQ4_NL and Q8_0 weights (interleaved_weights.hpp)
// with ActQ8x32 activations: 16 weight rows at once, one int32 lane per row. Per block and chunk
// of 64 bytes, one vpdpbusd per activation column (two for the low and high nibbles) against the
// column's 4 activation bytes broadcast to every lane; the block's 16 f16 scales convert in one
// vector. IQ4_NL's nibbles become their table entries plus 128 by one vpshufb each. The unsigned
// weights exceed the true ones by o (Q4_0: 8, IQ4_NL and Q8_0: 128): each column's
// lanes start at -o * sum q_a, so the integer sums are exact before the one scaling per block.
// Every column goes through the same operations whatever the column count, so a column's results
// do not depend on the columns beside it.
#include "quant/int8_simd.hpp"
#include "quant/quant_kernels.hpp"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512F__) && defined(__F16C__)
#include <immintrin.h>

#define SY_CPU_INTERLEAVED_KERNELS 1
#endif

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

#if defined(SY_CPU_INTERLEAVED_KERNELS)
namespace {

inline __m512i splat4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

// The C activation columns of a call and their accumulators: lane r of acc[c] is row r's sum.
template <int C>
struct Columns {
    const ActQ8x32* a[C];
    __m512 acc[C];

    explicit Columns(const void* const* act) {
        for (int c = 0; c < C; ++c) {
            a[c] = static_cast<const ActQ8x32*>(act[c]);
            acc[c] = _mm512_setzero_ps();
        }
    }
    // acc[c] += the block's integer sums[c] times its 16 row scales (f16 at p) times d_a.
    void scale_block(const uint8_t* p, int64_t b, const __m512i* sums) {
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        for (int c = 0; c < C; ++c)
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[c]),
                                     _mm512_mul_ps(dw, _mm512_set1_ps(a[c][b].d)), acc[c]);
    }
    void store(float* out) const {
        for (int c = 0; c < C; ++c) _mm512_storeu_ps(out + 16 * c, acc[c]);
    }
};

// Q4_0 (kTable false: the nibble is the unsigned weight), IQ4_NL (the nibble's table entry plus
// 128, looked up with vpshufb).
template <bool kTable, int C>
void nibbles_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    constexpr int64_t kBlock = 288;
    constexpr int kOffset = kTable ? 128 : 8;
    const uint8_t* p = static_cast<const uint8_t*>(w);
    Columns<C> cols(act);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512i table = low4;
    if constexpr (kTable) {
        alignas(16) uint8_t t[16];
        for (int i = 0; i < 16; ++i) t[i] = uint8_t(sy_kvalues_iq4nl[i] + 128);
        table = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
    }
    for (int64_t b = 0; b < blocks; ++b, p += kBlock) {
        i8::prefetch_ahead(p, kBlock);
        __m512i lo[C], hi[C];  // low and high nibbles: two chains of 4
        for (int c = 0; c < C; ++c) {
            lo[c] = _mm512_set1_epi32(-kOffset * cols.a[c][b].sum);
            hi[c] = _mm512_setzero_si512();
        }
        for (int k = 0; k < 4; ++k) {
            const __m512i x = _mm512_loadu_si512(p + 32 + 64 * k);
            __m512i l = _mm512_and_si512(x, low4);
            __m512i h = _mm512_and_si512(_mm512_srli_epi16(x, 4), low4);
            if constexpr (kTable) {
                l = _mm512_shuffle_epi8(table, l);
                h = _mm512_shuffle_epi8(table, h);
            }
            for (int c = 0; c < C; ++c) {
                lo[c] = _mm512_dpbusd_epi32(lo[c], l, splat4(cols.a[c][b].qs + 4 * k));
                hi[c] = _mm512_dpbusd_epi32(hi[c], h, splat4(cols.a[c][b].qs + 16 + 4 * k));
            }
        }
        for (int c = 0; c < C; ++c) lo[c] = _mm512_add_epi32(lo[c], hi[c]);
        cols.scale_block(p, b, lo);
    }
    cols.store(out);
}

template <int C>
void q8_0_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    constexpr int64_t kBlock = 544;
    const uint8_t* p = static_cast<const uint8_t*>(w);
    Columns<C> cols(act);
    for (int64_t b = 0; b < blocks; ++b, p += kBlock) {
        i8::prefetch_ahead(p, kBlock);
        __m512i even[C], odd[C];  // chunks 0, 2, 4, 6 and 1, 3, 5, 7: two chains of 4
        for (int c = 0; c < C; ++c) {
            even[c] = _mm512_set1_epi32(-128 * cols.a[c][b].sum);
            odd[c] = _mm512_setzero_si512();
        }
        for (int k = 0; k < 8; k += 2) {
            const __m512i x0 = _mm512_loadu_si512(p + 32 + 64 * k);
            const __m512i x1 = _mm512_loadu_si512(p + 96 + 64 * k);
            for (int c = 0; c < C; ++c) {
                even[c] = _mm512_dpbusd_epi32(even[c], x0, splat4(cols.a[c][b].qs + 4 * k));
                odd[c] = _mm512_dpbusd_epi32(odd[c], x1, splat4(cols.a[c][b].qs + 4 * k + 4));
            }
        }
        for (int c = 0; c < C; ++c) even[c] = _mm512_add_epi32(even[c], odd[c]);
        cols.scale_block(p, b, even);
    }
    cols.store(out);
}

template <int C>
void q4_0_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    nibbles_x16_cols<false, C>(blocks, w, act, out);
}
template <int C>
void iq4_nl_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    nibbles_x16_cols<true, C>(blocks, w, act, out);
}

SY_CPU_DEFINE_VEC_DOT(q4_0_x16)
SY_CPU_DEFINE_VEC_DOT(iq4_nl_x16)
SY_CPU_DEFINE_VEC_DOT(q8_0_x16)

}  // namespace

VecDotFn interleaved_dot(int32_t weight_type) {
    switch (weight_type) {
        case SY_TYPE_Q4_0: return vec_dot_q4_0_x16;
        case SY_TYPE_Q8_0: return vec_dot_q8_0_x16;
        case SY_TYPE_IQ4_NL: return vec_dot_iq4_nl_x16;
        default: return nullptr;
    }
}

#else

VecDotFn interleaved_dot(int32_t) {
    return nullptr;
}

#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
