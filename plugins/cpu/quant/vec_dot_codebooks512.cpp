// AVX-512 VBMI + VNNI dot products of IQ2_XXS and IQ3_XXS with Q8_K activations, decoding the
// codebook in vector registers instead of one scalar table load per 8 (or 4) weights.
//
// Both grids have 256 entries whose bytes take few values (IQ2_XXS: 8 bytes from {8, 25, 43};
// IQ3_XXS: 4 bytes from {4, 12, ..., 52, 62}), so each entry is stored here as one 16-bit word of
// level codes (2 or 3 bits per byte, byte k at bit `bits * k`). The 256 words fill 8 registers
// and one lookup of 32 indices is 4 vpermi2w (64 entries each) and 3 blends on index bits 6 and
// 7. vpmultishiftqb then moves each byte's code to the bottom of an output byte, and vpermb maps
// codes to the grid's byte values.
//
// vpmultishiftqb only reads within a 64-bit lane, so a register of expanded weights takes 8
// bytes from each qword of the codes: for IQ2_XXS qword j holds sub-block j (4 words = 32
// weights), and output register m (m = 0..3) takes word m of every qword, i.e. the 8 weights
// 32 j + 8 m + t (t = 0..7) at byte 8 j + t. The activations are quantized in that order
// (quantize_act_q8_K_iq2_order), so every product is a plain 64-byte load, and every int32 lane
// of vpdpbusd sums weights of one sub-block (lane l: sub-block l / 2 for IQ2_XXS), whose scale
// then multiplies the lane as a float once per super-block. IQ3_XXS's qword j (of the codes of
// half h, 32 index bytes) holds 16 weights, so output register 2 h + n takes words 2 n and 2 n + 1:
// position 64 (2 h + n) + 8 j + t <- element 128 h + 16 j + 8 n + t, lane l: sub-block 4 h + l / 4.
//
// Signs: the 7-bit ksigns indices are pulled out with one vpmultishiftqb, completed to 8 bits by
// vpermi2b over the 128-byte ksigns_iq2xs table, and transposed with vpermb into one 64-bit mask
// per output register; the activations take them (masked 0 - a) before the unsigned x signed
// product. All grid bytes are <= 62 and |a| <= 127, so the int32 sums are exact; the results
// differ from vec_dot_iquants.cpp's only by the float summation order.
#include "quant/quant_kernels.hpp"

#if defined(__AVX512VBMI__) && defined(__AVX512VNNI__) && defined(__AVX512BW__) && \
    defined(__AVX512F__) && defined(__F16C__)
#include <immintrin.h>

#include <cstring>

#include "quant/int8_simd.hpp"
#include "switchyard/iquant_grids.h"

#define SY_CPU_CODEBOOK_KERNELS 1
#endif

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

#if defined(SY_CPU_CODEBOOK_KERNELS)
namespace {

// Constant tables built at compile time (no AVX-512 code may run in static initializers: the
// plugin is loaded on any x86-64 machine before its probe chooses a variant).
struct alignas(64) Bytes64 {
    uint8_t b[64];
};
struct alignas(64) Bytes128 {
    uint8_t b[128];
};
struct alignas(64) Codes256 {
    uint16_t w[256];
};
struct alignas(64) Dwords16 {
    int32_t d[16];
};

constexpr uint64_t kIq2xxsGrid[256] = SY_IQ2XXS_GRID_INIT;
constexpr uint32_t kIq3xxsGrid[256] = SY_IQ3XXS_GRID_INIT;
constexpr Bytes128 kKsigns = {SY_KSIGNS_IQ2XS_INIT};

// The levels of each grid, in code order.
constexpr uint8_t kIq2Levels[3] = {0x08, 0x19, 0x2b};
constexpr uint8_t kIq3Levels[8] = {4, 12, 20, 28, 36, 44, 52, 62};

template <typename Entry, int N>
constexpr Codes256 level_codes(const Entry (&grid)[256], const uint8_t (&levels)[N], int bytes,
                               int bits) {
    Codes256 t{};
    for (int i = 0; i < 256; ++i) {
        uint16_t c = 0;
        for (int k = 0; k < bytes; ++k) {
            const uint8_t v = uint8_t(grid[i] >> (8 * k));
            int code = 0;
            while (levels[code] != v) ++code;  // every byte is one of the levels
            c = uint16_t(c | code << (bits * k));
        }
        t.w[i] = c;
    }
    return t;
}
constexpr Codes256 kIq2xxsCodes = level_codes(kIq2xxsGrid, kIq2Levels, 8, 2);
constexpr Codes256 kIq3xxsCodes = level_codes(kIq3xxsGrid, kIq3Levels, 4, 3);

// vpermb table: byte i -> the level of code i & (2^bits - 1) (vpermb reads the low 6 bits of each
// index; the bits above the code belong to the next codes).
template <int N>
constexpr Bytes64 level_table(const uint8_t (&levels)[N], int bits) {
    Bytes64 t{};
    for (int i = 0; i < 64; ++i) {
        const int code = i & ((1 << bits) - 1);
        t.b[i] = code < N ? levels[code] : 0;
    }
    return t;
}
constexpr Bytes64 kIq2LevelTable = level_table(kIq2Levels, 2);
constexpr Bytes64 kIq3LevelTable = level_table(kIq3Levels, 3);

// vpmultishiftqb controls: output byte 8 j + t of register m takes 8 bits from qword j at
//   IQ2_XXS: 16 m + 2 t (word m, code t)
//   IQ3_XXS: 32 n + 16 (t / 4) + 3 (t % 4) (words 2 n and 2 n + 1, code t % 4)
constexpr Bytes64 iq2_expand(int m) {
    Bytes64 t{};
    for (int i = 0; i < 64; ++i) t.b[i] = uint8_t(16 * m + 2 * (i % 8));
    return t;
}
constexpr Bytes64 kIq2Expand[4] = {iq2_expand(0), iq2_expand(1), iq2_expand(2), iq2_expand(3)};
constexpr Bytes64 iq3_expand(int n) {
    Bytes64 t{};
    for (int i = 0; i < 64; ++i) t.b[i] = uint8_t(32 * n + 16 * (i % 8 / 4) + 3 * (i % 4));
    return t;
}
constexpr Bytes64 kIq3Expand[2] = {iq3_expand(0), iq3_expand(1)};

// IQ2_XXS block qs as qwords: qword j = 4 grid index bytes | 28 sign bits and the 4-bit scale.
// Word w of the lookup's indices = index byte w % 4 of qword w / 4 (zero-extended by maskz).
constexpr Bytes64 iq2_index_words() {
    Bytes64 t{};
    for (int w = 0; w < 32; ++w) t.b[2 * w] = uint8_t(8 * (w / 4) + w % 4);
    return t;
}
constexpr Bytes64 kIq2IndexWords = iq2_index_words();
// The ksigns indices: byte k < 4 of qword j = bits [32 + 7 k, 39 + 7 k) (sub-block j, group k).
constexpr Bytes64 iq2_sign_fields() {
    Bytes64 t{};
    for (int i = 0; i < 64; ++i) t.b[i] = uint8_t(32 + 7 * (i % 4));
    return t;
}
constexpr Bytes64 kIq2SignFields = iq2_sign_fields();
// Mask of register m: byte j = sign byte of (sub-block j, group m) = byte 8 j + m.
constexpr Bytes64 iq2_sign_masks() {
    Bytes64 t{};
    for (int i = 0; i < 32; ++i) t.b[i] = uint8_t(8 * (i % 8) + i / 8);
    return t;
}
constexpr Bytes64 kIq2SignMasks = iq2_sign_masks();

// IQ3_XXS sign words (8 x 32 bits, 2 per qword): byte k of qword q = group k % 4 of sub-block
// 2 q + k / 4, i.e. the natural group index 8 q + k.
constexpr Bytes64 iq3_sign_fields() {
    Bytes64 t{};
    for (int i = 0; i < 64; ++i) t.b[i] = uint8_t(32 * (i % 8 / 4) + 7 * (i % 4));
    return t;
}
constexpr Bytes64 kIq3SignFields = iq3_sign_fields();
// Mask of register 2 h + n: byte j = group 16 h + 2 j + n.
constexpr Bytes64 iq3_sign_masks() {
    Bytes64 t{};
    for (int i = 0; i < 32; ++i) t.b[i] = uint8_t(16 * (i / 16) + 2 * (i % 8) + i / 8 % 2);
    return t;
}
constexpr Bytes64 kIq3SignMasks = iq3_sign_masks();
// Scale of int32 lane l in half h: sub-block 4 h + l / 4.
constexpr Dwords16 iq3_scale_lanes(int h) {
    Dwords16 t{};
    for (int l = 0; l < 16; ++l) t.d[l] = 4 * h + l / 4;
    return t;
}
constexpr Dwords16 kIq3ScaleLanes[2] = {iq3_scale_lanes(0), iq3_scale_lanes(1)};

inline __m512i load(const Bytes64& t) {
    return _mm512_load_si512(t.b);
}

// 32 word indices (0..255) -> their grid entries' level codes.
struct CodeLookup {
    __m512i t[8];
    explicit CodeLookup(const Codes256& c) {
        for (int k = 0; k < 8; ++k) t[k] = _mm512_load_si512(c.w + 32 * k);
    }
    __m512i operator()(__m512i idx) const {
        const __m512i a = _mm512_permutex2var_epi16(t[0], idx, t[1]);
        const __m512i b = _mm512_permutex2var_epi16(t[2], idx, t[3]);
        const __m512i c = _mm512_permutex2var_epi16(t[4], idx, t[5]);
        const __m512i d = _mm512_permutex2var_epi16(t[6], idx, t[7]);
        const __mmask32 k6 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(64));
        const __mmask32 k7 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(128));
        return _mm512_mask_blend_epi16(k7, _mm512_mask_blend_epi16(k6, a, b),
                                       _mm512_mask_blend_epi16(k6, c, d));
    }
};

// One decoded super-block: 4 registers of unsigned grid bytes in the activation order, the mask
// of negative weights of each, and per int32 lane of the products the float factor
// d * (2 ls + 1) / 4 or / 8 of its sub-block (two lane maps for IQ3_XXS: registers 0-1, 2-3).
struct Decoded {
    __m512i w[4];
    __mmask64 negative[4];
    __m512 factor[2];
};

inline void sign_masks(__m512i fields, __m512i transpose, __m512i ks_lo, __m512i ks_hi,
                       Decoded& d) {
    const __m512i signs =
        _mm512_permutexvar_epi8(transpose, _mm512_permutex2var_epi8(ks_lo, fields, ks_hi));
    alignas(64) uint64_t masks[8];
    _mm512_store_si512(masks, signs);
    for (int m = 0; m < 4; ++m) d.negative[m] = _load_mask64(reinterpret_cast<__mmask64*>(masks + m));
}

struct Iq2xxs {
    using Block = sy_block_iq2_xxs;
    static constexpr int kFactors = 1;
    CodeLookup lookup{kIq2xxsCodes};
    __m512i levels = load(kIq2LevelTable), ks_lo = _mm512_load_si512(kKsigns.b),
            ks_hi = _mm512_load_si512(kKsigns.b + 64);

    void decode(const Block& b, Decoded& d) const {
        const __m512i q = _mm512_loadu_si512(b.qs);
        const __m512i codes =
            lookup(_mm512_maskz_permutexvar_epi8(0x5555555555555555ull, load(kIq2IndexWords), q));
        for (int m = 0; m < 4; ++m)
            d.w[m] = _mm512_permutexvar_epi8(
                _mm512_multishift_epi64_epi8(load(kIq2Expand[m]), codes), levels);
        sign_masks(_mm512_multishift_epi64_epi8(load(kIq2SignFields), q), load(kIq2SignMasks),
                   ks_lo, ks_hi, d);
        // Scale of qword j in both its int32 lanes: 2 (q >> 60) + 1.
        const __m512i ls = _mm512_srli_epi64(q, 60);
        const __m512i s = _mm512_add_epi64(_mm512_add_epi64(ls, ls), _mm512_set1_epi64(1));
        d.factor[0] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_or_si512(s, _mm512_slli_epi64(s, 32))),
                                    _mm512_set1_ps(i8::h2f(b.d) * 0.125f));
    }
};

struct Iq3xxs {
    using Block = sy_block_iq3_xxs;
    static constexpr int kFactors = 2;
    CodeLookup lookup{kIq3xxsCodes};
    __m512i levels = load(kIq3LevelTable), ks_lo = _mm512_load_si512(kKsigns.b),
            ks_hi = _mm512_load_si512(kKsigns.b + 64);

    void decode(const Block& b, Decoded& d) const {
        for (int h = 0; h < 2; ++h) {
            const __m512i codes = lookup(_mm512_cvtepu8_epi16(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * h))));
            for (int n = 0; n < 2; ++n)
                d.w[2 * h + n] = _mm512_permutexvar_epi8(
                    _mm512_multishift_epi64_epi8(load(kIq3Expand[n]), codes), levels);
        }
        const __m512i words = _mm512_zextsi256_si512(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + SY_QK_K / 4)));
        sign_masks(_mm512_multishift_epi64_epi8(load(kIq3SignFields), words), load(kIq3SignMasks),
                   ks_lo, ks_hi, d);
        // Scale of sub-block s: 2 (word s >> 28) + 1.
        const __m512i ls = _mm512_srli_epi32(words, 28);
        const __m512 s = _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_add_epi32(ls, ls), _mm512_set1_epi32(1)));
        const __m512 f = _mm512_mul_ps(s, _mm512_set1_ps(i8::h2f(b.d) * 0.25f));
        for (int h = 0; h < 2; ++h)
            d.factor[h] = _mm512_permutexvar_ps(_mm512_load_si512(kIq3ScaleLanes[h].d), f);
    }
};

template <typename T, int C>
void codebook_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const auto* x = static_cast<const typename T::Block*>(w);
    const sy_block_q8_K* a[C];
    __m512 acc[C];
    for (int c = 0; c < C; ++c) {
        a[c] = static_cast<const sy_block_q8_K*>(act[c]);
        acc[c] = _mm512_setzero_ps();
    }
    const T type;
    for (int64_t i = 0; i < blocks; ++i) {
        i8::prefetch_ahead(&x[i], sizeof x[i]);
        Decoded d;
        type.decode(x[i], d);
        for (int c = 0; c < C; ++c) {
            const int8_t* qa = a[c][i].qs;
            const __m512 ad = _mm512_set1_ps(a[c][i].d);
            for (int f = 0; f < T::kFactors; ++f) {
                __m512i sum = _mm512_setzero_si512();
                for (int m = f * 4 / T::kFactors; m < (f + 1) * 4 / T::kFactors; ++m) {
                    const __m512i v = _mm512_loadu_si512(qa + 64 * m);
                    sum = _mm512_dpbusd_epi32(
                        sum, d.w[m], _mm512_mask_sub_epi8(v, d.negative[m], _mm512_setzero_si512(), v));
                }
                acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(d.factor[f], ad), acc[c]);
            }
        }
    }
    for (int c = 0; c < C; ++c) out[c] = _mm512_reduce_add_ps(acc[c]);
}

template <int C>
void iq2_xxs_codebook_cols(int64_t b, const void* w, const void* const* a, float* o) {
    codebook_cols<Iq2xxs, C>(b, w, a, o);
}
template <int C>
void iq3_xxs_codebook_cols(int64_t b, const void* w, const void* const* a, float* o) {
    codebook_cols<Iq3xxs, C>(b, w, a, o);
}
SY_CPU_DEFINE_VEC_DOT(iq2_xxs_codebook)
SY_CPU_DEFINE_VEC_DOT(iq3_xxs_codebook)

// Q8_K activations with each super-block's qs in the kernel's order: qs[p] = element order(p).
template <typename Order>
void quantize_act_q8_K_ordered(const float* x, void* y, int64_t n, Order order) {
    auto* out = static_cast<sy_block_q8_K*>(y);
    quantize_act_q8_K(x, out, n);
    for (int64_t b = 0; b < n / SY_QK_K; ++b) {
        int8_t natural[SY_QK_K];
        std::memcpy(natural, out[b].qs, sizeof natural);
        for (int p = 0; p < SY_QK_K; ++p) out[b].qs[p] = natural[order(p)];
    }
}

// p = 64 m + 8 j + t <- 32 j + 8 m + t
void quantize_act_q8_K_iq2_order(const float* x, void* y, int64_t n) {
    quantize_act_q8_K_ordered(x, y, n, [](int p) { return 32 * (p / 8 % 8) + 8 * (p / 64) + p % 8; });
}
// p = 64 (2 h + n) + 8 j + t <- 128 h + 16 j + 8 n + t
void quantize_act_q8_K_iq3_order(const float* x, void* y, int64_t n) {
    quantize_act_q8_K_ordered(x, y, n, [](int p) {
        return 128 * (p / 128) + 16 * (p / 8 % 8) + 8 * (p / 64 % 2) + p % 8;
    });
}

}  // namespace

QuantKernel codebook_kernel(int32_t weight_type) {
    constexpr int64_t a256 = sizeof(sy_block_q8_K);
    switch (weight_type) {
        case SY_TYPE_IQ2_XXS:
            return {vec_dot_iq2_xxs_codebook, quantize_act_q8_K_iq2_order, 256, 256, a256};
        case SY_TYPE_IQ3_XXS:
            return {vec_dot_iq3_xxs_codebook, quantize_act_q8_K_iq3_order, 256, 256, a256};
        default: return {nullptr, nullptr, 0, 0, 0};
    }
}

#else

QuantKernel codebook_kernel(int32_t) {
    return {nullptr, nullptr, 0, 0, 0};
}

#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
