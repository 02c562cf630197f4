// AVX-512 (VNNI, VBMI) dot products of ik_llama.cpp's trellis types IQ1_KT ... IQ4_KT: their
// weights are generated from the codes (quant_blocks.h), 16 generator states per 512-bit
// multiply, and never packed to bytes. A state x gives the value v = sum of the bytes of
// s = x & 0x3F3F3F3F minus 126, so against activations stored four times each (ActQ8x4: byte
// 4k + b = a_k),
//   vpdpbusd(acc, s, a4) = acc + sum_k a_k (sum of s_k's bytes)
// is the dot product of a register of 16 values plus 126 sum_k a_k, in one instruction; the
// 126's share comes off at the end through the block sums. Each 32-value sub-block's sum then
// takes its integer scale in f32.
//
// Registers: a block's codes sit one per 32-bit lane, 16 to a register (IQ4_KT's 64 codes in four
// registers, the others' 32 in two), and register r = G q + k (G = 8 states per code, IQ4_KT's
// 4) is state k + 1 of codes 16 q .. 16 q + 15: x = (code + offset) * a^(k + 1), one vpmulld
// with a constant and no lane moves. The activations come in that order (value G c + k of code
// c in lane c % 16 of register G (c / 16) + k), each lane's sum over the G states is one code's
// dot product, and the sub-block scales (one per 32 values, i.e. per 32 / G codes) are applied
// per lane in f32 once per 16 codes.
//
// IQ3_KT's weights are |v| with a sign bit per value, which is not linear in the states' bytes:
// its values are formed in the 32-bit lanes (vpdpbusd of the state with ones from -126, abs,
// negated under the sign mask) and multiplied with activations stored as 32-bit lanes whose high
// half is zero (ActQ16x2), so that vpdpwssd takes a lane's whole product.
#include "quant/quant_kernels.hpp"

#if defined(__AVX512VNNI__) && defined(__AVX512VBMI__) && defined(__AVX512BW__) && \
    defined(__AVX512F__)
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "quant/column_sums512.hpp"
#include "quant/int8_simd.hpp"
#include "quant/tile512.hpp"

#define SY_CPU_WIDE_TRELLIS 1
#endif

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

#if defined(SY_CPU_WIDE_TRELLIS)
namespace {

// 256 activations, each byte stored four times, in the registers' order (value G c + k at
// qs[64 (G (c / 16) + k) + 4 (c % 16) + b], b < 4), with Q8_K's scale and 16-value sums.
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

// Position of value v = G c + k (code c, state k) in the registers' order: lane c % 16 of register
// G (c / 16) + k.
template <int G>
constexpr int lane_of(int v) {
    const int c = v / G, k = v % G;
    return 16 * (G * (c / 16) + k) + c % 16;
}

template <int G>
void quantize_act_q8x4(const float* x, void* y, int64_t n) {
    quantize_expanded<ActQ8x4>(x, y, n, [](const sy_block_q8_K& q, ActQ8x4& a) {
        for (int v = 0; v < SY_QK_K; ++v) std::memset(a.qs + 4 * lane_of<G>(v), q.qs[v], 4);
        std::memcpy(a.bsums, q.bsums, sizeof q.bsums);
    });
}

// 256 activations as 32-bit lanes: the low 16 bits the int8 value, the high 16 zero; in IQ3_KT's
// register order (G = 8).
struct ActQ16x2 {
    int16_t qs[2 * SY_QK_K];
    float d;
};

void quantize_act_q16x2(const float* x, void* y, int64_t n) {
    quantize_expanded<ActQ16x2>(x, y, n, [](const sy_block_q8_K& q, ActQ16x2& a) {
        for (int v = 0; v < SY_QK_K; ++v) {
            a.qs[2 * lane_of<8>(v)] = q.qs[v];
            a.qs[2 * lane_of<8>(v) + 1] = 0;
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
// a^1 .. a^8: the multipliers from a code's start to its states.
constexpr uint32_t kPowers[8] = {kt_power(1), kt_power(2), kt_power(3), kt_power(4),
                                 kt_power(5), kt_power(6), kt_power(7), kt_power(8)};
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

// Lane l of code register q: its code's sub-block, (16 q + l) / (32 / G) (also where IQ1_KT's
// and IQ4_KT's per-sub-block code bits are read).
constexpr Dwords16 kScaleLanes8[2] = {lanes_div(4, 0), lanes_div(4, 4)};
constexpr Dwords16 kScaleLanes4[4] = {lanes_div(8, 0), lanes_div(8, 2), lanes_div(8, 4),
                                      lanes_div(8, 6)};

// IQ2_KT's and IQ3_KT's 32 codes (16-bit words ql) plus the offset, 16 to a register.
template <typename Block>
inline void word_codes(const Block& b, __m512i (&x)[2]) {
    const __m512i offset = _mm512_set1_epi32(int(SY_KT_OFFSET));
    for (int k = 0; k < 2; ++k)
        x[k] = _mm512_add_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(
                                    reinterpret_cast<const __m256i*>(b.ql + 32 * k))),
                                offset);
}

// Per type: the block, states per code (G), its codes plus offset as 16-lane registers (32
// codes in two, IQ4_KT's 64 in four), and the 8 sub-block scales.
struct Iq2KtWide {
    using Block = sy_block_iq2_kt;
    static constexpr int kGroup = 8, kCodeRegs = 2;
    static float row_scale(const void* w) { return row_scale_f32(w) * 1.05f; }
    static void codes(const Block& b, __m512i (&x)[kCodeRegs]) { word_codes(b, x); }
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
                _mm512_srlv_epi32(_mm512_permutexvar_epi32(load(kScaleLanes8[k]), sh),
                                  load(kShShift)),
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
            const __m512i hc =
                _mm512_permutexvar_epi32(load(kScaleLanes4[k]), h);  // c = 2k + l / 8
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
    static constexpr Dwords16 kHShift = lanes_mod(8, 8, 3);
};

template <typename T, int C>
void kt_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    constexpr int G = T::kGroup, Q = T::kCodeRegs;  // G * Q = 16 value registers
    const auto* x = reinterpret_cast<const typename T::Block*>(static_cast<const uint8_t*>(w) + 4);
    const ActQ8x4* a[C];
    for (int c = 0; c < C; ++c) a[c] = static_cast<const ActQ8x4*>(act[c]);
    ColumnSums<C> sums;  // off: the scaled block sums, for the 126 of every value
    const __m512i mask = _mm512_set1_epi32(0x3F3F3F3F), zero = _mm512_setzero_si512();
    for (int64_t i = 0; i < blocks; ++i) {
        const typename T::Block& b = x[i];
        i8::prefetch_ahead(&b, sizeof b);
        __m512i codes[Q];
        T::codes(b, codes);
        // The 8 sub-block scales: per code lane as floats, and as int16 pairs for the block sums.
        const __m256i l32 = T::scales(b);
        const __m256i scale16 = _mm256_or_si256(_mm256_and_si256(l32, _mm256_set1_epi32(0xFFFF)),
                                                _mm256_slli_epi32(l32, 16));
        __m512 block[C];
        for (int c = 0; c < C; ++c) block[c] = _mm512_setzero_ps();
        for (int q = 0; q < Q; ++q) {
            const __m512 lq = _mm512_cvtepi32_ps(_mm512_permutexvar_epi32(
                load(G == 8 ? kScaleLanes8[q] : kScaleLanes4[q]), _mm512_castsi256_si512(l32)));
            // Two accumulators per column (even and odd states), so that the vpdpbusd of a
            // column do not form one long chain.
            __m512i sum[C][2];
            for (int c = 0; c < C; ++c) sum[c][0] = sum[c][1] = zero;
            for (int k = 0; k < G; ++k) {
                const __m512i st = _mm512_and_si512(
                    _mm512_mullo_epi32(codes[q], _mm512_set1_epi32(int(kPowers[k]))), mask);
                for (int c = 0; c < C; ++c)
                    sum[c][k % 2] = _mm512_dpbusd_epi32(
                        sum[c][k % 2], st, _mm512_loadu_si512(a[c][i].qs + 64 * (G * q + k)));
            }
            for (int c = 0; c < C; ++c)
                block[c] = _mm512_fmadd_ps(
                    _mm512_cvtepi32_ps(_mm512_add_epi32(sum[c][0], sum[c][1])), lq, block[c]);
        }
        for (int c = 0; c < C; ++c) {
            const ActQ8x4& ac = a[c][i];
            const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ac.bsums));
            const __m256 corr = _mm256_cvtepi32_ps(_mm256_madd_epi16(scale16, bs));
            sums.acc[c] = _mm512_fmadd_ps(block[c], _mm512_set1_ps(ac.d), sums.acc[c]);
            sums.off[c] = _mm256_fmadd_ps(corr, _mm256_set1_ps(ac.d), sums.off[c]);
        }
    }
    sums.store(126.0f, out);
    const float row = T::row_scale(w);
    for (int c = 0; c < C; ++c) out[c] *= row;
}

// IQ3_KT's signs for value register 8 q + k: lane l holds value 8 (16 q + l) + k, whose sign is
// bit 4 q + l / 4 of qh[8 (l % 4) + k]. kSignBytes[k] moves that byte into lane l's low byte
// (vpermb), kSignBits[q] tests its bit.
struct alignas(64) Bytes64 {
    uint8_t b[64];
};
constexpr Bytes64 sign_bytes(int k) {
    Bytes64 t{};
    for (int i = 0; i < 64; ++i) t.b[i] = uint8_t(8 * (i / 4 % 4) + k);
    return t;
}
constexpr Dwords16 sign_bits(int q) {
    Dwords16 t{};
    for (int l = 0; l < 16; ++l) t.d[l] = 1u << (4 * q + l / 4);
    return t;
}
constexpr Bytes64 kSignBytes[8] = {sign_bytes(0), sign_bytes(1), sign_bytes(2), sign_bytes(3),
                                   sign_bytes(4), sign_bytes(5), sign_bytes(6), sign_bytes(7)};
constexpr Dwords16 kSignBits[2] = {sign_bits(0), sign_bits(1)};

// IQ3_KT: as IQ2_KT's codes (and row scale 1.01), unsigned scale nibbles, and the sign of value
// 32 c + j in bit c of qh[j].
template <int C>
void iq3_kt_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const auto* x = reinterpret_cast<const sy_block_iq3_kt*>(static_cast<const uint8_t*>(w) + 4);
    const ActQ16x2* a[C];
    for (int c = 0; c < C; ++c) a[c] = static_cast<const ActQ16x2*>(act[c]);
    ColumnSums<C> sums;
    const __m512i mask = _mm512_set1_epi32(0x3F3F3F3F), ones = _mm512_set1_epi8(1),
                  minus126 = _mm512_set1_epi32(-126), zero = _mm512_setzero_si512();
    for (int64_t i = 0; i < blocks; ++i) {
        const sy_block_iq3_kt& b = x[i];
        i8::prefetch_ahead(&b, sizeof b);
        __m512i codes[2];
        word_codes(b, codes);
        const __m512i qh =
            _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh)));
        const __m512i l512 =
            _mm512_castsi256_si512(_mm256_cvtepu8_epi32(i8::nibbles_low_high(b.scales)));
        __m512 block[C];
        for (int c = 0; c < C; ++c) block[c] = _mm512_setzero_ps();
        for (int q = 0; q < 2; ++q) {
            const __m512 lq =
                _mm512_cvtepi32_ps(_mm512_permutexvar_epi32(load(kScaleLanes8[q]), l512));
            const __m512i bits = load(kSignBits[q]);
            __m512i sum[C][2];
            for (int c = 0; c < C; ++c) sum[c][0] = sum[c][1] = zero;
            for (int k = 0; k < 8; ++k) {
                const __m512i st = _mm512_and_si512(
                    _mm512_mullo_epi32(codes[q], _mm512_set1_epi32(int(kPowers[k]))), mask);
                const __m512i mag = _mm512_abs_epi32(_mm512_dpbusd_epi32(minus126, st, ones));
                const __mmask16 neg = _mm512_test_epi32_mask(
                    _mm512_permutexvar_epi8(_mm512_load_si512(kSignBytes[k].b), qh), bits);
                const __m512i v = _mm512_mask_sub_epi32(mag, neg, zero, mag);
                for (int c = 0; c < C; ++c)
                    sum[c][k % 2] = _mm512_dpwssd_epi32(
                        sum[c][k % 2], v, _mm512_loadu_si512(a[c][i].qs + 32 * (8 * q + k)));
            }
            for (int c = 0; c < C; ++c)
                block[c] = _mm512_fmadd_ps(
                    _mm512_cvtepi32_ps(_mm512_add_epi32(sum[c][0], sum[c][1])), lq, block[c]);
        }
        for (int c = 0; c < C; ++c)
            sums.acc[c] = _mm512_fmadd_ps(block[c], _mm512_set1_ps(a[c][i].d), sums.acc[c]);
    }
    sums.store(0.0f, out);
    const float row = row_scale_f32(w) * 1.01f;
    for (int c = 0; c < C; ++c) out[c] *= row;
}

// The tile path (tile512.hpp): values v = bytesum - 126 formed in 32-bit lanes (vpdpbusd from
// -126 with ones; IQ3_KT's then |.| and negated under its sign bits), narrowed to bytes per state
// (vpmovdb) and put in natural order with one byte permute per 64 values: value G c + k of code
// c = 16 q + l is byte l of state k's 16.
// Natural byte 4 l + k of codes 16 q .. 16 q + 15 (G = 4) from [state 0 | 1 | 2 | 3] (16 bytes
// each); for G = 8, natural byte 64 h + j from [states 0-3] and [states 4-7] (vpermt2b).
constexpr Bytes64 natural_of_states4() {
    Bytes64 t{};
    for (int n = 0; n < 64; ++n) t.b[n] = uint8_t(16 * (n % 4) + n / 4);
    return t;
}
constexpr Bytes64 natural_of_states8(int h) {
    Bytes64 t{};
    for (int j = 0; j < 64; ++j) {
        const int n = 64 * h + j, l = n / 8, k = n % 8;
        t.b[j] = uint8_t(k < 4 ? 16 * k + l : 64 + 16 * (k - 4) + l);
    }
    return t;
}
constexpr Bytes64 kNatural4 = natural_of_states4();
constexpr Bytes64 kNatural8[2] = {natural_of_states8(0), natural_of_states8(1)};
// Sub-block j of 16 values: the scale of sub-block j / 2 of 32.
constexpr Dwords16 kHalves = lanes_div(2, 0);

struct Iq3KtWide {
    using Block = sy_block_iq3_kt;
    static constexpr int kGroup = 8, kCodeRegs = 2;
    static float row_scale(const void* w) { return row_scale_f32(w) * 1.01f; }
    static void codes(const Block& b, __m512i (&x)[kCodeRegs]) { word_codes(b, x); }
    static __m256i scales(const Block& b) {
        return _mm256_cvtepu8_epi32(i8::nibbles_low_high(b.scales));
    }
};

template <typename T>
float kt_tile_row(const typename T::Block& b, int8_t* v, int32_t* l) {
    constexpr int G = T::kGroup, Q = T::kCodeRegs;
    constexpr bool kSigns = std::is_same_v<T, Iq3KtWide>;
    __m512i codes[Q];
    T::codes(b, codes);
    _mm512_store_si512(
        l, _mm512_permutexvar_epi32(load(kHalves), _mm512_castsi256_si512(T::scales(b))));
    const __m512i mask = _mm512_set1_epi32(0x3F3F3F3F), ones = _mm512_set1_epi8(1),
                  minus126 = _mm512_set1_epi32(-126), zero = _mm512_setzero_si512();
    __m512i qh = zero;
    if constexpr (kSigns)
        qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh)));
    for (int q = 0; q < Q; ++q) {
        __m128i bytes[G];
        for (int k = 0; k < G; ++k) {
            const __m512i st = _mm512_and_si512(
                _mm512_mullo_epi32(codes[q], _mm512_set1_epi32(int(kPowers[k]))), mask);
            __m512i val = _mm512_dpbusd_epi32(minus126, st, ones);
            if constexpr (kSigns) {
                const __m512i mag = _mm512_abs_epi32(val);
                const __mmask16 neg = _mm512_test_epi32_mask(
                    _mm512_permutexvar_epi8(_mm512_load_si512(kSignBytes[k].b), qh),
                    load(kSignBits[q]));
                val = _mm512_mask_sub_epi32(mag, neg, zero, mag);
            }
            bytes[k] = _mm512_cvtepi32_epi8(val);
        }
        const __m512i z0 =
            _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(bytes[1], bytes[0])),
                               _mm256_set_m128i(bytes[3], bytes[2]), 1);
        if constexpr (G == 4) {
            _mm512_store_si512(v + 64 * q,
                               _mm512_permutexvar_epi8(_mm512_load_si512(kNatural4.b), z0));
        } else {
            const __m512i z1 =
                _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(bytes[5], bytes[4])),
                                   _mm256_set_m128i(bytes[7], bytes[6]), 1);
            for (int h = 0; h < 2; ++h)
                _mm512_store_si512(
                    v + 128 * q + 64 * h,
                    _mm512_permutex2var_epi8(z0, _mm512_load_si512(kNatural8[h].b), z1));
        }
    }
    return 1.0f;
}

template <typename T>
void kt_tile_decode(int64_t blocks, const void* w, int64_t row_stride, int rows, WeightTile& tile) {
    decode_tile<typename T::Block, 4, true>(
        blocks, w, row_stride, rows, tile, [](const uint8_t* p) { return T::row_scale(p); },
        [](const typename T::Block& b, int8_t* v, int32_t* l) { return kt_tile_row<T>(b, v, l); });
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

// The trellis types' per-row kernels generate every value again for each group of 4 columns:
// the tile is cheaper from 4 columns on.
constexpr int64_t kTrellisTileColumns = 4;

QuantKernel wide_trellis_kernel(int32_t weight_type) {
    constexpr int64_t bytes = sizeof(ActQ8x4);
    switch (weight_type) {
        case SY_TYPE_IQ1_KT:
            return with_tile({vec_dot_iq1_kt_wide, quantize_act_q8x4<8>, 256, 256, bytes},
                             kt_tile_decode<Iq1KtWide>, kTrellisTileColumns);
        case SY_TYPE_IQ2_KT:
            return with_tile({vec_dot_iq2_kt_wide, quantize_act_q8x4<8>, 256, 256, bytes},
                             kt_tile_decode<Iq2KtWide>, kTrellisTileColumns);
        case SY_TYPE_IQ3_KT:
            return with_tile({vec_dot_iq3_kt_wide, quantize_act_q16x2, 256, 256, sizeof(ActQ16x2)},
                             kt_tile_decode<Iq3KtWide>, kTrellisTileColumns);
        case SY_TYPE_IQ4_KT:
            return with_tile({vec_dot_iq4_kt_wide, quantize_act_q8x4<4>, 256, 256, bytes},
                             kt_tile_decode<Iq4KtWide>, kTrellisTileColumns);
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
