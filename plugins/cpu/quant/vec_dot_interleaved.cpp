// Products of row-interleaved Q4_0, IQ4_NL, Q8_0, Q4_1, Q5_0, Q5_1 and Q6_0 weights
// (interleaved_weights.hpp) with ActQ8x32 activations; AVX-512 VNNI here, AVX2 in the section
// below: 16 weight rows at once, one int32 lane per
// row. Per block and chunk of 64 bytes, one vpdpbusd per activation column (two for the low and
// high nibbles) against the column's 4 activation bytes broadcast to every lane; the block's 16 f16
// scales convert in one vector. IQ4_NL's nibbles become their table entries plus 128 by one vpshufb
// each. The unsigned weights exceed the true ones by o (Q4_0: 8, Q5_0: 16, Q6_0: 32, IQ4_NL and
// Q8_0: 128): each column's lanes start at -o * sum q_a, so the integer sums are exact before the
// one scaling per block. Q4_1 and Q5_1 (x = d q + m) add m d_a sum q_a per block in float. The 5th
// and 6th bits join the nibbles with one vpternlogd each (a | b & mask). Every column goes through
// the same operations whatever the column count, so a column's results do not depend on the columns
// beside it.
#include "quant/int8_simd.hpp"
#include "quant/quant_kernels.hpp"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512F__) && defined(__F16C__)
#include <immintrin.h>

#define SY_CPU_INTERLEAVED_KERNELS 1
#elif defined(__AVX2__)
#include <immintrin.h>
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
    // acc[c] += the block's 16 row minimums (f16 at p) times d_a sum q_a.
    void add_mins(const uint8_t* p, int64_t b) {
        const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        for (int c = 0; c < C; ++c)
            acc[c] = _mm512_fmadd_ps(m, _mm512_set1_ps(a[c][b].d * float(a[c][b].sum)), acc[c]);
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

// a | (b & mask) per bit.
inline __m512i or_masked(__m512i a, __m512i b, __m512i mask) {
    return _mm512_ternarylogic_epi32(a, b, mask, 0xF8);
}

// The types with more than 4 bits or a minimum (interleaved_weights.hpp's layouts): per type, the
// f16 fields in front (kHeads), its offset, and chunk(p, k, lo, hi), which turns nibble chunk k of
// a block (p its start) into the unsigned values of its low and high nibbles.
struct Q41x16 {
    static constexpr int kHeads = 2, kOffset = 0, kBlock = 320;
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    void chunk(const uint8_t* p, int k, __m512i& lo, __m512i& hi) const {
        const __m512i x = _mm512_loadu_si512(p + 64 + 64 * k);
        lo = _mm512_and_si512(x, low4);
        hi = _mm512_and_si512(_mm512_srli_epi16(x, 4), low4);
    }
};
// Q5_0 (kMins false) and Q5_1: the regrouped 5th bits, bit 2k (low nibble) and 2k + 1 (high) of
// each byte, moved to bit 4 (the 16-bit shifts move no bit of one byte to another's bit 4).
template <bool kMins>
struct Q5x16 {
    static constexpr int kHeads = kMins ? 2 : 1, kOffset = kMins ? 0 : 16;
    static constexpr int kBlock = kMins ? 384 : 352;
    const __m512i low4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
    void chunk(const uint8_t* p, int k, __m512i& lo, __m512i& hi) const {
        const uint8_t* qs = p + 32 * kHeads;
        const __m512i x = _mm512_loadu_si512(qs + 64 * k);
        const __m512i qh = _mm512_loadu_si512(qs + 256);
        const __m512i h = k == 0   ? _mm512_slli_epi16(qh, 4)
                          : k == 1 ? _mm512_slli_epi16(qh, 2)
                          : k == 2 ? qh
                                   : _mm512_srli_epi16(qh, 2);
        lo = or_masked(_mm512_and_si512(x, low4), h, bit4);
        hi = or_masked(_mm512_and_si512(_mm512_srli_epi16(x, 4), low4), _mm512_srli_epi16(h, 1),
                       bit4);
    }
};
// Q6_0: chunk k's bits 4-5 are in qh chunk k % 2, at bits 4 (k / 2) (low nibbles) and 2 above
// (high nibbles) of each byte.
struct Q60x16 {
    static constexpr int kHeads = 1, kOffset = 32, kBlock = 416;
    const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
    void chunk(const uint8_t* p, int k, __m512i& lo, __m512i& hi) const {
        const __m512i x = _mm512_loadu_si512(p + 32 + 64 * k);
        __m512i h = _mm512_loadu_si512(p + 288 + 64 * (k % 2));
        if (k >= 2) h = _mm512_srli_epi16(h, 4);
        lo = or_masked(_mm512_and_si512(x, low4), _mm512_slli_epi16(h, 4), bits45);
        hi = or_masked(_mm512_and_si512(_mm512_srli_epi16(x, 4), low4), _mm512_slli_epi16(h, 2),
                       bits45);
    }
};

template <typename T, int C>
void wide_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const uint8_t* p = static_cast<const uint8_t*>(w);
    Columns<C> cols(act);
    const T decoder;
    for (int64_t b = 0; b < blocks; ++b, p += T::kBlock) {
        i8::prefetch_ahead(p, T::kBlock);
        __m512i lo[C], hi[C];  // low and high nibbles: two chains of 4
        for (int c = 0; c < C; ++c) {
            lo[c] = _mm512_set1_epi32(-T::kOffset * cols.a[c][b].sum);
            hi[c] = _mm512_setzero_si512();
        }
        for (int k = 0; k < 4; ++k) {
            __m512i l, h;
            decoder.chunk(p, k, l, h);
            for (int c = 0; c < C; ++c) {
                lo[c] = _mm512_dpbusd_epi32(lo[c], l, splat4(cols.a[c][b].qs + 4 * k));
                hi[c] = _mm512_dpbusd_epi32(hi[c], h, splat4(cols.a[c][b].qs + 16 + 4 * k));
            }
        }
        for (int c = 0; c < C; ++c) lo[c] = _mm512_add_epi32(lo[c], hi[c]);
        cols.scale_block(p, b, lo);
        if constexpr (T::kHeads == 2) cols.add_mins(p + 32, b);
    }
    cols.store(out);
}

template <int C>
void q4_1_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    wide_x16_cols<Q41x16, C>(blocks, w, act, out);
}
template <int C>
void q5_0_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    wide_x16_cols<Q5x16<false>, C>(blocks, w, act, out);
}
template <int C>
void q5_1_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    wide_x16_cols<Q5x16<true>, C>(blocks, w, act, out);
}
template <int C>
void q6_0_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    wide_x16_cols<Q60x16, C>(blocks, w, act, out);
}

SY_CPU_DEFINE_VEC_DOT(q4_0_x16)
SY_CPU_DEFINE_VEC_DOT(iq4_nl_x16)
SY_CPU_DEFINE_VEC_DOT(q8_0_x16)
SY_CPU_DEFINE_VEC_DOT(q4_1_x16)
SY_CPU_DEFINE_VEC_DOT(q5_0_x16)
SY_CPU_DEFINE_VEC_DOT(q5_1_x16)
SY_CPU_DEFINE_VEC_DOT(q6_0_x16)

}  // namespace

VecDotFn interleaved_dot(int32_t weight_type) {
    switch (weight_type) {
        case SY_TYPE_Q4_0: return vec_dot_q4_0_x16;
        case SY_TYPE_Q8_0: return vec_dot_q8_0_x16;
        case SY_TYPE_IQ4_NL: return vec_dot_iq4_nl_x16;
        case SY_TYPE_Q4_1: return vec_dot_q4_1_x16;
        case SY_TYPE_Q5_0: return vec_dot_q5_0_x16;
        case SY_TYPE_Q5_1: return vec_dot_q5_1_x16;
        case SY_TYPE_Q6_0: return vec_dot_q6_0_x16;
        default: return nullptr;
    }
}

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

namespace {

// AVX2 without VNNI: vpmaddubsw of the unsigned weights (at most 63: Q4_0, Q4_1, Q5_0, Q5_1,
// Q6_0) against the signed activations, pair sums of at most 2 * 63 * 127; a chunk's low and high
// nibbles' pair sums added in int16 (at most 32004), then vpmaddwd by ones. Rows 0-7 are the
// first 32 bytes of each 64-byte chunk, rows 8-15 the last 32. Q8_0 and IQ4_NL below.
struct Avx2Layout {
    int heads, offset, block;  // f16 fields in front, the weights' offset, bytes per block
    int high_bits;             // 0, 5 (Q5_0, Q5_1) or 6 (Q6_0)
};
constexpr Avx2Layout kQ40{1, 8, 288, 0}, kQ41{2, 0, 320, 0}, kQ50{1, 16, 352, 5},
    kQ51{2, 0, 384, 5}, kQ60{1, 32, 416, 6};

inline __m256i splat4_256(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// The C activation columns of a call and their accumulators: lane r of acc[c][h] is row 8 h + r's
// sum; the int32 sums sum[c][h] of one block, started by start(b).
template <int C>
struct Columns256 {
    const ActQ8x32* a[C];
    __m256 acc[C][2];
    __m256i sum[C][2];

    explicit Columns256(const void* const* act) {
        for (int c = 0; c < C; ++c) {
            a[c] = static_cast<const ActQ8x32*>(act[c]);
            acc[c][0] = acc[c][1] = _mm256_setzero_ps();
        }
    }
    // The block's sums start at -offset * sum q_a.
    void start(int64_t b, int offset) {
        for (int c = 0; c < C; ++c)
            sum[c][0] = sum[c][1] = _mm256_set1_epi32(-offset * a[c][b].sum);
    }
    // acc += the sums times the block's 16 row scales (f16 at p) times d_a; with kMins also the
    // 16 row minimums (f16 at p + 32) times d_a sum q_a.
    template <bool kMins>
    void finish_block(const uint8_t* p, int64_t b) {
        for (int h = 0; h < 2; ++h) {
            const __m256 dw =
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * h)));
            for (int c = 0; c < C; ++c)
                acc[c][h] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[c][h]),
                                    _mm256_mul_ps(dw, _mm256_set1_ps(a[c][b].d)), acc[c][h]);
            if constexpr (kMins) {
                const __m256 m = _mm256_cvtph_ps(
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32 + 16 * h)));
                for (int c = 0; c < C; ++c)
                    acc[c][h] = _mm256_fmadd_ps(m, _mm256_set1_ps(a[c][b].d * float(a[c][b].sum)),
                                                acc[c][h]);
            }
        }
    }
    void store(float* out) const {
        for (int c = 0; c < C; ++c) {
            _mm256_storeu_ps(out + 16 * c, acc[c][0]);
            _mm256_storeu_ps(out + 16 * c + 8, acc[c][1]);
        }
    }
};

// Half h (rows 8 h .. 8 h + 7) of nibble chunk k, as the low and high nibbles' unsigned values.
template <const Avx2Layout& L>
inline void avx2_chunk(const uint8_t* p, int k, int h, __m256i& lo, __m256i& hi) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const uint8_t* qs = p + 32 * L.heads;
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * k + 32 * h));
    lo = _mm256_and_si256(x, low4);
    hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), low4);
    if constexpr (L.high_bits == 5) {
        // The regrouped 5th bits: bit 2k (low nibbles) and 2k + 1 of each byte to bit 4.
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 256 + 32 * h));
        const __m256i t = k == 0   ? _mm256_slli_epi16(qh, 4)
                          : k == 1 ? _mm256_slli_epi16(qh, 2)
                          : k == 2 ? qh
                                   : _mm256_srli_epi16(qh, 2);
        const __m256i bit4 = _mm256_set1_epi8(0x10);
        lo = _mm256_or_si256(lo, _mm256_and_si256(t, bit4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_srli_epi16(t, 1), bit4));
    } else if constexpr (L.high_bits == 6) {
        __m256i t =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 256 + 64 * (k % 2) + 32 * h));
        if (k >= 2) t = _mm256_srli_epi16(t, 4);
        const __m256i bits45 = _mm256_set1_epi8(0x30);
        lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(t, 4), bits45));
        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(t, 2), bits45));
    }
}

template <const Avx2Layout& L, int C>
void avx2_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const uint8_t* p = static_cast<const uint8_t*>(w);
    Columns256<C> cols(act);
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < blocks; ++b, p += L.block) {
        i8::prefetch_ahead(p, L.block);
        cols.start(b, L.offset);
        for (int k = 0; k < 4; ++k) {
            __m256i lo[2], hi[2];
            avx2_chunk<L>(p, k, 0, lo[0], hi[0]);
            avx2_chunk<L>(p, k, 1, lo[1], hi[1]);
            for (int c = 0; c < C; ++c) {
                const __m256i al = splat4_256(cols.a[c][b].qs + 4 * k),
                              ah = splat4_256(cols.a[c][b].qs + 16 + 4 * k);
                for (int h = 0; h < 2; ++h) {
                    const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(lo[h], al),
                                                           _mm256_maddubs_epi16(hi[h], ah));
                    cols.sum[c][h] =
                        _mm256_add_epi32(cols.sum[c][h], _mm256_madd_epi16(pairs, ones));
                }
            }
        }
        cols.template finish_block<L.heads == 2>(p, b);
    }
    cols.store(out);
}

template <int C>
void q4_0_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    avx2_x16_cols<kQ40, C>(blocks, w, act, out);
}
template <int C>
void q4_1_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    avx2_x16_cols<kQ41, C>(blocks, w, act, out);
}
template <int C>
void q5_0_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    avx2_x16_cols<kQ50, C>(blocks, w, act, out);
}
template <int C>
void q5_1_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    avx2_x16_cols<kQ51, C>(blocks, w, act, out);
}
template <int C>
void q6_0_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    avx2_x16_cols<kQ60, C>(blocks, w, act, out);
}

// Q8_0 and IQ4_NL: signed weights w (Q8_0's stored q + 128 with the top bit flipped back; IQ4_NL's
// nibbles looked up in its table), so vpmaddubsw takes |w| against the activations carrying w's
// sign (vpsignb): pairs of at most 2 * 128 * 127, added to int32 by vpmaddwd per chunk half.
// The lanes start at zero: the weights have no offset.
template <bool kTable, int C>
void signed_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    constexpr int64_t kBlock = kTable ? 288 : 544;
    constexpr int kChunks = kTable ? 4 : 8;
    const uint8_t* p = static_cast<const uint8_t*>(w);
    Columns256<C> cols(act);
    const __m256i ones = _mm256_set1_epi16(1), low4 = _mm256_set1_epi8(0x0F),
                  flip = _mm256_set1_epi8(char(0x80));
    __m256i table = low4;
    if constexpr (kTable)
        table = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(sy_kvalues_iq4nl)));
    for (int64_t b = 0; b < blocks; ++b, p += kBlock) {
        i8::prefetch_ahead(p, kBlock);
        cols.start(b, 0);
        for (int k = 0; k < kChunks; ++k)
            for (int h = 0; h < 2; ++h) {
                const __m256i x =
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 + 64 * k + 32 * h));
                // The chunk's values (Q8_0: 4 per row; IQ4_NL: low, then high nibbles) and the
                // activation bytes each meets (IQ4_NL's high nibbles: elements 16 + 4 k ..).
                __m256i v[2];
                int at[2] = {4 * k, 16 + 4 * k};
                int n = 1;
                if constexpr (kTable) {
                    v[0] = _mm256_shuffle_epi8(table, _mm256_and_si256(x, low4));
                    v[1] =
                        _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(x, 4), low4));
                    n = 2;
                } else {
                    v[0] = _mm256_xor_si256(x, flip);
                }
                for (int j = 0; j < n; ++j) {
                    const __m256i mag = _mm256_sign_epi8(v[j], v[j]);
                    for (int c = 0; c < C; ++c) {
                        const __m256i s =
                            _mm256_sign_epi8(splat4_256(cols.a[c][b].qs + at[j]), v[j]);
                        cols.sum[c][h] = _mm256_add_epi32(
                            cols.sum[c][h], _mm256_madd_epi16(_mm256_maddubs_epi16(mag, s), ones));
                    }
                }
            }
        cols.template finish_block<false>(p, b);
    }
    cols.store(out);
}
template <int C>
void q8_0_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    signed_x16_cols<false, C>(blocks, w, act, out);
}
template <int C>
void iq4_nl_x16_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    signed_x16_cols<true, C>(blocks, w, act, out);
}

SY_CPU_DEFINE_VEC_DOT(q4_0_x16)
SY_CPU_DEFINE_VEC_DOT(q4_1_x16)
SY_CPU_DEFINE_VEC_DOT(q5_0_x16)
SY_CPU_DEFINE_VEC_DOT(q5_1_x16)
SY_CPU_DEFINE_VEC_DOT(q6_0_x16)
SY_CPU_DEFINE_VEC_DOT(q8_0_x16)
SY_CPU_DEFINE_VEC_DOT(iq4_nl_x16)

}  // namespace

VecDotFn interleaved_dot(int32_t weight_type) {
    switch (weight_type) {
        case SY_TYPE_Q4_0: return vec_dot_q4_0_x16;
        case SY_TYPE_Q4_1: return vec_dot_q4_1_x16;
        case SY_TYPE_Q5_0: return vec_dot_q5_0_x16;
        case SY_TYPE_Q5_1: return vec_dot_q5_1_x16;
        case SY_TYPE_Q6_0: return vec_dot_q6_0_x16;
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
