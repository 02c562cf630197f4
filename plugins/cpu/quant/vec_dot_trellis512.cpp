// AVX-512 (VNNI) dot products of ik_llama.cpp's trellis types IQ1_KT, IQ2_KT and IQ4_KT: their
// weights are generated from the codes (quant_blocks.h), 16 generator states per 512-bit
// multiply, and never packed to bytes. A state x gives the value v = sum of the bytes of
// s = x & 0x3F3F3F3F minus 126, so against activations stored four times each (ActQ8x4: byte
// 4k + b = a_k),
//   vpdpbusd(acc, s, a4) = acc + sum_k a_k (sum of s_k's bytes)
// is the dot product of a register of 16 values plus 126 sum_k a_k, in one instruction; the
// 126's share comes off at the end through the block sums. Each 32-value sub-block's sum then
// takes its integer scale in f32.
//
// Registers: r = 0 .. 15 holds the block's values 16 r .. 16 r + 15, i.e. codes 2r and 2r + 1
// (8 states each; IQ4_KT: codes 4r .. 4r + 3, 4 states each). Each lane's start x0 = code +
// offset is picked from the block's codes with vpermd, and x = x0 * a^(1 + lane % G).
//
// IQ3_KT's weights are |v| with a sign bit per value, which is not linear in the states' bytes:
// its values are formed in the 32-bit lanes (vpdpbusd of the state with ones from -126, abs,
// negated under the sign mask) and multiplied with activations stored as 32-bit lanes whose high
// half is zero (ActQ16x2), so that vpdpwssd takes a lane's whole product.
#include "quant/quant_kernels.hpp"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512F__)
#include <immintrin.h>

#include <cstring>

#include "quant/column_sums512.hpp"
#include "quant/int8_simd.hpp"

#define SY_CPU_WIDE_TRELLIS 1
#endif

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

#if defined(SY_CPU_WIDE_TRELLIS)
namespace {

// 256 activations, each byte stored four times (qs[4 k + b] = value k), with Q8_K's scale and
// 16-value sums.
struct ActQ8x4 {
    int8_t qs[4 * SY_QK_K];
    int16_t bsums[SY_QK_K / 16];
    float d;
};

// Each 256 values quantized as Q8_K, then handed to store(q, out) to be laid out.
template <typename Act, typename Store>
void quantize_expanded(const float* x, void* y, int64_t n, Store store) {
    auto* out = static_cast<Act*>(y);
    for (int64_t b = 0; b < n / SY_QK_K; ++b) {
        sy_block_q8_K q;
        quantize_act_q8_K(x + SY_QK_K * b, &q, SY_QK_K);
        store(q, out[b]);
        out[b].d = q.d;
    }
}

void quantize_act_q8x4(const float* x, void* y, int64_t n) {
    quantize_expanded<ActQ8x4>(x, y, n, [](const sy_block_q8_K& q, ActQ8x4& a) {
        for (int k = 0; k < SY_QK_K; ++k) std::memset(a.qs + 4 * k, q.qs[k], 4);
        std::memcpy(a.bsums, q.bsums, sizeof q.bsums);
    });
}

// 256 activations as 32-bit lanes: the low 16 bits the int8 value, the high 16 zero.
struct ActQ16x2 {
    int16_t qs[2 * SY_QK_K];
    float d;
};

void quantize_act_q16x2(const float* x, void* y, int64_t n) {
    quantize_expanded<ActQ16x2>(x, y, n, [](const sy_block_q8_K& q, ActQ16x2& a) {
        for (int k = 0; k < SY_QK_K; ++k) {
            a.qs[2 * k] = q.qs[k];
            a.qs[2 * k + 1] = 0;
        }
    });
}

struct alignas(64) Dwords16 {
    uint32_t d[16];
};
constexpr uint32_t kt_power(int k) {
    uint32_t p = 1;
    for (int i = 0; i < k; ++i) p *= SY_KT_MULT;
    return p;
}
// Lane l: a^(1 + l % G), the multiplier from a group's start to its (l % G)-th state.
constexpr Dwords16 kt_multipliers(int group) {
    Dwords16 t{};
    for (int l = 0; l < 16; ++l) t.d[l] = kt_power(1 + l % group);
    return t;
}
// Register r's lanes: the index of their code within the 16 codes of one codes register.
constexpr Dwords16 code_lanes(int r, int group) {
    Dwords16 t{};
    const int codes = 16 / group;  // codes per value register
    for (int l = 0; l < 16; ++l) t.d[l] = uint32_t(codes * (r % group) + l / group);
    return t;
}
constexpr Dwords16 kMult8 = kt_multipliers(8), kMult4 = kt_multipliers(4);
constexpr Dwords16 kLanes8[8] = {code_lanes(0, 8), code_lanes(1, 8), code_lanes(2, 8),
                                 code_lanes(3, 8), code_lanes(4, 8), code_lanes(5, 8),
                                 code_lanes(6, 8), code_lanes(7, 8)};
constexpr Dwords16 kLanes4[4] = {code_lanes(0, 4), code_lanes(1, 4), code_lanes(2, 4),
                                 code_lanes(3, 4)};
// Dword l = l + base, and = l / 4 (+ base), = 4 + l % 4, and so on: small index vectors.
constexpr Dwords16 lanes_div(int div, int base) {
    Dwords16 t{};
    for (int l = 0; l < 16; ++l) t.d[l] = uint32_t(base + l / div);
    return t;
}
constexpr Dwords16 lanes_mod(int mod, int base, int step) {
    Dwords16 t{};
    for (int l = 0; l < 16; ++l) t.d[l] = uint32_t(base + step * (l % mod));
    return t;
}

inline __m512i load(const Dwords16& t) {
    return _mm512_load_si512(t.d);
}
inline __m512i bytes_to_dwords(const uint8_t* p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// The first 16 IQ4_K values (the IQ1_KT and IQ2_KT sub-block scales).
inline __m128i iq4k_table() {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(sy_iq4k_values));
}
inline float row_scale_f32(const void* w) {
    float d;
    std::memcpy(&d, w, 4);
    return d;
}

// Per type: the block, states per code (G), its codes plus offset as 16-lane registers (32
// codes in two, IQ4_KT's 64 in four), and the 8 sub-block scales.
struct Iq2KtWide {
    using Block = sy_block_iq2_kt;
    static constexpr int kGroup = 8, kCodeRegs = 2;
    static float row_scale(const void* w) { return row_scale_f32(w) * 1.05f; }
    static void codes(const Block& b, __m512i (&x)[kCodeRegs]) {
        const __m512i offset = _mm512_set1_epi32(int(SY_KT_OFFSET));
        for (int k = 0; k < 2; ++k)
            x[k] = _mm512_add_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(
                                        reinterpret_cast<const __m256i*>(b.ql + 32 * k))),
                                    offset);
    }
    // Sub-block c: entry (nibble c / 4 of scales[c % 4]) of the first 16 IQ4_K values.
    static __m256i scales(const Block& b) {
        const __m128i idx = i8::nibbles_low_high(b.scales);
        return _mm256_cvtepi8_epi32(_mm_shuffle_epi8(iq4k_table(), idx));
    }
};
struct Iq1KtWide {
    using Block = sy_block_iq1_kt;
    static constexpr int kGroup = 8, kCodeRegs = 2;
    static float row_scale(const void* w) { return row_scale_f32(w); }
    // Code j = 4c + i: ql[j] | (nibble c / 4 of qh[j % 16]) << 8 | (bit 4 + i of sh[c]) << 12.
    static void codes(const Block& b, __m512i (&x)[kCodeRegs]) {
        const __m512i qh = bytes_to_dwords(b.qh);
        uint64_t sh8;
        std::memcpy(&sh8, b.sh, 8);
        const __m512i sh = _mm512_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(sh8)));
        const __m512i offset = _mm512_set1_epi32(int(SY_KT_OFFSET)), low4 = _mm512_set1_epi32(0xF),
                      one = _mm512_set1_epi32(1);
        for (int k = 0; k < 2; ++k) {
            const __m512i high = _mm512_and_si512(_mm512_srli_epi32(qh, 4 * k), low4);
            const __m512i top = _mm512_and_si512(
                _mm512_srlv_epi32(_mm512_permutexvar_epi32(load(kShLanes[k]), sh), load(kShShift)),
                one);
            x[k] = _mm512_add_epi32(_mm512_or_si512(_mm512_or_si512(bytes_to_dwords(b.ql + 16 * k),
                                                                    _mm512_slli_epi32(high, 8)),
                                                    _mm512_slli_epi32(top, 12)),
                                    offset);
        }
    }
    static __m256i scales(const Block& b) {
        const __m128i idx = _mm_and_si128(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.sh)),
                                          _mm_set1_epi8(0x0F));
        return _mm256_cvtepi8_epi32(_mm_shuffle_epi8(iq4k_table(), idx));
    }
    static constexpr Dwords16 kShLanes[2] = {lanes_div(4, 0), lanes_div(4, 4)};
    static constexpr Dwords16 kShShift = lanes_mod(4, 4, 1);
};
struct Iq4KtWide {
    using Block = sy_block_iq4_kt;
    static constexpr int kGroup = 4, kCodeRegs = 4;
    static float row_scale(const void* w) { return row_scale_f32(w); }
    // Code j = 8c + i: (ql[j] | (nibble j / 32 of qh[j % 32]) << 8 | (bits 8 + 3i .. of h_c) << 12)
    // + offset, + SY_KT_OFFSET4 where bit 0 of h_c is set; h_c the 32-bit word shb[4c ..].
    static void codes(const Block& b, __m512i (&x)[kCodeRegs]) {
        const __m512i h =
            _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.shb)));
        const __m512i offset = _mm512_set1_epi32(int(SY_KT_OFFSET)),
                      offset4 = _mm512_set1_epi32(int(SY_KT_OFFSET4)),
                      low4 = _mm512_set1_epi32(0xF), low3 = _mm512_set1_epi32(7),
                      one = _mm512_set1_epi32(1);
        for (int k = 0; k < 4; ++k) {
            const __m512i hc = _mm512_permutexvar_epi32(load(kHLanes[k]), h);  // c = 2k + l / 8
            const __m512i qh = _mm512_and_si512(
                _mm512_srli_epi32(bytes_to_dwords(b.qh + 16 * (k % 2)), 4 * (k / 2)), low4);
            const __m512i top = _mm512_and_si512(_mm512_srlv_epi32(hc, load(kHShift)), low3);
            const __m512i code = _mm512_or_si512(
                _mm512_or_si512(bytes_to_dwords(b.ql + 16 * k), _mm512_slli_epi32(qh, 8)),
                _mm512_slli_epi32(top, 12));
            const __mmask16 flag = _mm512_test_epi32_mask(hc, one);
            const __m512i start = _mm512_add_epi32(code, offset);
            x[k] = _mm512_mask_add_epi32(start, flag, start, offset4);
        }
    }
    // Sub-block c: bits 1-7 of h_c, minus 64.
    static __m256i scales(const Block& b) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.shb));
        return _mm256_sub_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 1), _mm256_set1_epi32(127)),
                                _mm256_set1_epi32(64));
    }
    static constexpr Dwords16 kHLanes[4] = {lanes_div(8, 0), lanes_div(8, 2), lanes_div(8, 4),
                                            lanes_div(8, 6)};
    static constexpr Dwords16 kHShift = lanes_mod(8, 8, 3);
};

template <typename T, int C>
void kt_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    constexpr int G = T::kGroup;
    const auto* x = reinterpret_cast<const typename T::Block*>(static_cast<const uint8_t*>(w) + 4);
    const ActQ8x4* a[C];
    for (int c = 0; c < C; ++c) a[c] = static_cast<const ActQ8x4*>(act[c]);
    ColumnSums<C> sums;  // off: the scaled block sums, for the 126 of every value
    const __m512i mult = load(G == 8 ? kMult8 : kMult4), mask = _mm512_set1_epi32(0x3F3F3F3F);
    for (int64_t i = 0; i < blocks; ++i) {
        const typename T::Block& b = x[i];
        i8::prefetch_ahead(&b, sizeof b);
        __m512i codes[T::kCodeRegs];
        T::codes(b, codes);
        // The 8 sub-block scales: as floats, and as int16 pairs for the 16 block sums.
        const __m256i l32 = T::scales(b);
        const __m512 lf = _mm512_castps256_ps512(_mm256_cvtepi32_ps(l32));
        const __m256i scale16 = _mm256_or_si256(_mm256_and_si256(l32, _mm256_set1_epi32(0xFFFF)),
                                                _mm256_slli_epi32(l32, 16));
        // Two accumulators per column (even and odd sub-blocks), so that the FMAs do not chain.
        __m512 block[C][2];
        for (int c = 0; c < C; ++c) block[c][0] = block[c][1] = _mm512_setzero_ps();
        for (int chunk = 0; chunk < 8; ++chunk) {
            __m512i s[2];
            for (int h = 0; h < 2; ++h) {
                const int r = 2 * chunk + h;
                const __m512i lanes = load(G == 8 ? kLanes8[r % 8] : kLanes4[r % 4]);
                const __m512i x0 = _mm512_permutexvar_epi32(lanes, codes[r / G]);
                s[h] = _mm512_and_si512(_mm512_mullo_epi32(x0, mult), mask);
            }
            const __m512 lc = _mm512_permutexvar_ps(_mm512_set1_epi32(chunk), lf);
            for (int c = 0; c < C; ++c) {
                const int8_t* q = a[c][i].qs + 128 * chunk;
                __m512i sum =
                    _mm512_dpbusd_epi32(_mm512_setzero_si512(), s[0], _mm512_loadu_si512(q));
                sum = _mm512_dpbusd_epi32(sum, s[1], _mm512_loadu_si512(q + 64));
                block[c][chunk % 2] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), lc, block[c][chunk % 2]);
            }
        }
        for (int c = 0; c < C; ++c) {
            const ActQ8x4& ac = a[c][i];
            const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ac.bsums));
            const __m256 corr = _mm256_cvtepi32_ps(_mm256_madd_epi16(scale16, bs));
            sums.acc[c] = _mm512_fmadd_ps(_mm512_add_ps(block[c][0], block[c][1]),
                                          _mm512_set1_ps(ac.d), sums.acc[c]);
            sums.off[c] = _mm256_fmadd_ps(corr, _mm256_set1_ps(ac.d), sums.off[c]);
        }
    }
    sums.store(126.0f, out);
    const float row = T::row_scale(w);
    for (int c = 0; c < C; ++c) out[c] *= row;
}

// IQ3_KT: as IQ2_KT's codes (and row scale 1.01), unsigned scale nibbles, and the sign of value
// 32 c + j in bit c of qh[j].
template <int C>
void iq3_kt_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const auto* x = reinterpret_cast<const sy_block_iq3_kt*>(static_cast<const uint8_t*>(w) + 4);
    const ActQ16x2* a[C];
    for (int c = 0; c < C; ++c) a[c] = static_cast<const ActQ16x2*>(act[c]);
    ColumnSums<C> sums;
    const __m512i mult = load(kMult8), mask = _mm512_set1_epi32(0x3F3F3F3F),
                  ones = _mm512_set1_epi8(1), minus126 = _mm512_set1_epi32(-126),
                  offset = _mm512_set1_epi32(int(SY_KT_OFFSET)), zero = _mm512_setzero_si512();
    for (int64_t i = 0; i < blocks; ++i) {
        const sy_block_iq3_kt& b = x[i];
        i8::prefetch_ahead(&b, sizeof b);
        __m512i codes[2];
        for (int k = 0; k < 2; ++k)
            codes[k] = _mm512_add_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(
                                            reinterpret_cast<const __m256i*>(b.ql + 32 * k))),
                                        offset);
        const __m512i qh[2] = {bytes_to_dwords(b.qh), bytes_to_dwords(b.qh + 16)};
        const __m512 lf = _mm512_castps256_ps512(
            _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(i8::nibbles_low_high(b.scales))));
        __m512 block[C][2];
        for (int c = 0; c < C; ++c) block[c][0] = block[c][1] = _mm512_setzero_ps();
        for (int chunk = 0; chunk < 8; ++chunk) {
            const __m512i bit = _mm512_set1_epi32(1 << chunk);
            __m512i v[2];
            for (int h = 0; h < 2; ++h) {
                const int r = 2 * chunk + h;
                const __m512i x0 = _mm512_permutexvar_epi32(load(kLanes8[r % 8]), codes[r / 8]);
                const __m512i st = _mm512_and_si512(_mm512_mullo_epi32(x0, mult), mask);
                const __m512i mag = _mm512_abs_epi32(_mm512_dpbusd_epi32(minus126, st, ones));
                v[h] = _mm512_mask_sub_epi32(mag, _mm512_test_epi32_mask(qh[h], bit), zero, mag);
            }
            const __m512 lc = _mm512_permutexvar_ps(_mm512_set1_epi32(chunk), lf);
            for (int c = 0; c < C; ++c) {
                const int16_t* q = a[c][i].qs + 64 * chunk;
                __m512i sum = _mm512_dpwssd_epi32(zero, v[0], _mm512_loadu_si512(q));
                sum = _mm512_dpwssd_epi32(sum, v[1], _mm512_loadu_si512(q + 32));
                block[c][chunk % 2] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), lc, block[c][chunk % 2]);
            }
        }
        for (int c = 0; c < C; ++c)
            sums.acc[c] = _mm512_fmadd_ps(_mm512_add_ps(block[c][0], block[c][1]),
                                          _mm512_set1_ps(a[c][i].d), sums.acc[c]);
    }
    sums.store(0.0f, out);
    const float row = row_scale_f32(w) * 1.01f;
    for (int c = 0; c < C; ++c) out[c] *= row;
}

template <int C>
void iq1_kt_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    kt_wide_cols<Iq1KtWide, C>(blocks, w, act, out);
}
template <int C>
void iq2_kt_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    kt_wide_cols<Iq2KtWide, C>(blocks, w, act, out);
}
template <int C>
void iq4_kt_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    kt_wide_cols<Iq4KtWide, C>(blocks, w, act, out);
}

SY_CPU_DEFINE_VEC_DOT(iq1_kt_wide)
SY_CPU_DEFINE_VEC_DOT(iq2_kt_wide)
SY_CPU_DEFINE_VEC_DOT(iq3_kt_wide)
SY_CPU_DEFINE_VEC_DOT(iq4_kt_wide)

}  // namespace

QuantKernel wide_trellis_kernel(int32_t weight_type) {
    constexpr int64_t bytes = sizeof(ActQ8x4);
    switch (weight_type) {
        case SY_TYPE_IQ1_KT: return {vec_dot_iq1_kt_wide, quantize_act_q8x4, 256, 256, bytes};
        case SY_TYPE_IQ2_KT: return {vec_dot_iq2_kt_wide, quantize_act_q8x4, 256, 256, bytes};
        case SY_TYPE_IQ3_KT:
            return {vec_dot_iq3_kt_wide, quantize_act_q16x2, 256, 256, sizeof(ActQ16x2)};
        case SY_TYPE_IQ4_KT: return {vec_dot_iq4_kt_wide, quantize_act_q8x4, 256, 256, bytes};
        default: return {nullptr, nullptr, 0, 0, 0};
    }
}

#else

QuantKernel wide_trellis_kernel(int32_t) {
    return {nullptr, nullptr, 0, 0, 0};
}

#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
