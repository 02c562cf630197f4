// AVX-512 VBMI + VNNI dot products of the codebook i-quants with Q8_K activations, decoding the
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
// then multiplies the lane as a float once per super-block. The IQ3 types decode differently, from
// two byte planes of codes (see decode_iq3_entries); their old word order, position
// 64 (2 h + n) + 8 j + t <- element 128 h + 16 j + 8 n + t, is the one the IQ1 kernels' gathers
// produce.
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

#include "quant/codebook_tile_scales.hpp"
#include "quant/int8_simd.hpp"
#include "quant/tile512.hpp"
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
template <int N>
struct alignas(64) Codes {
    uint16_t w[N];
};
struct alignas(64) Dwords16 {
    int32_t d[16];
};

constexpr uint64_t kIq2xxsGrid[256] = SY_IQ2XXS_GRID_INIT;
constexpr uint64_t kIq2xsGrid[512] = SY_IQ2XS_GRID_INIT;
constexpr uint64_t kIq2sGrid[1024] = SY_IQ2S_GRID_INIT;
constexpr uint32_t kIq3xxsGrid[256] = SY_IQ3XXS_GRID_INIT;
constexpr uint32_t kIq3sGrid[512] = SY_IQ3S_GRID_INIT;
constexpr Bytes128 kKsigns = {SY_KSIGNS_IQ2XS_INIT};

// The byte values of each grid, in code order.
constexpr uint8_t kIq2Levels[3] = {0x08, 0x19, 0x2b};
constexpr uint8_t kIq3xxsLevels[8] = {4, 12, 20, 28, 36, 44, 52, 62};
constexpr uint8_t kIq3sLevels[8] = {1, 3, 5, 7, 9, 11, 13, 15};

// Entry i of a grid as one word: byte k's code at bit bits * k.
template <typename Entry, int N, int L>
constexpr Codes<N> level_codes(const Entry (&grid)[N], const uint8_t (&levels)[L], int bytes,
                               int bits) {
    Codes<N> t{};
    for (int i = 0; i < N; ++i) {
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
constexpr Codes<256> kIq2xxsCodes = level_codes(kIq2xxsGrid, kIq2Levels, 8, 2);
constexpr Codes<512> kIq2xsCodes = level_codes(kIq2xsGrid, kIq2Levels, 8, 2);
constexpr Codes<1024> kIq2sCodes = level_codes(kIq2sGrid, kIq2Levels, 8, 2);

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

template <typename F>
constexpr Bytes64 bytes64(F f) {
    Bytes64 t{};
    for (int i = 0; i < 64; ++i) t.b[i] = uint8_t(f(i));
    return t;
}

// vpmultishiftqb controls: output byte i = 8 j + t of register m takes 8 bits from qword j at
// 16 m + 2 t (word m, code t).
constexpr Bytes64 kIq2Expand[4] = {bytes64([](int i) { return 2 * (i % 8); }),
                                   bytes64([](int i) { return 16 + 2 * (i % 8); }),
                                   bytes64([](int i) { return 32 + 2 * (i % 8); }),
                                   bytes64([](int i) { return 48 + 2 * (i % 8); })};

// Sign masks, as bytes 8 r + j of a register of sign bytes (byte j of register r's mask), from
// the sign byte of each 8-weight group g (natural order, g = element / 8):
//   IQ2 order: register m, byte j = group 4 j + m
// IQ2_XXS has its groups' sign bytes at byte 8 j + m (qword j = sub-block j), IQ2_XS at byte
// 2 g (the high byte of each index word).
constexpr Bytes64 kIq2SignMasks = bytes64([](int i) { return i < 32 ? 4 * (i % 8) + i / 8 : 0; });
constexpr Bytes64 kIq2xxsSignMasks =
    bytes64([](int i) { return i < 32 ? 8 * (i % 8) + i / 8 : 0; });
constexpr Bytes64 kIq2xsSignMasks =
    bytes64([](int i) { return i < 32 ? 2 * (4 * (i % 8) + i / 8) : 0; });

// IQ2_XXS block qs as qwords: qword j = 4 grid index bytes | 28 sign bits and the 4-bit scale.
// Word w of the lookup's indices = index byte w % 4 of qword w / 4 (zero-extended by maskz);
// the ksigns indices: byte k < 4 of qword j = bits [32 + 7 k, 39 + 7 k) (sub-block j, group k).
constexpr Bytes64 kIq2xxsIndexWords =
    bytes64([](int i) { return i % 2 ? 0 : 8 * (i / 8) + i / 2 % 4; });
constexpr Bytes64 kIq2xxsSignFields = bytes64([](int i) { return 32 + 7 * (i % 4); });
// IQ3_XXS sign words (8 x 32 bits, 2 per qword): byte k of qword q = group k % 4 of sub-block
// 2 q + k / 4, i.e. the natural group index 8 q + k.
constexpr Bytes64 kIq3xxsSignFields = bytes64([](int i) { return 32 * (i % 8 / 4) + 7 * (i % 4); });
// IQ2_S: the 2 high index bits of word w from qh (as one qword broadcast): bits 2 w, 2 w + 1,
// into the word's high byte.
constexpr Bytes64 kIq2sHighBits = bytes64([](int i) { return 2 * (i / 2); });

constexpr Dwords16 dwords16(int (*f)(int)) {
    Dwords16 t{};
    for (int l = 0; l < 16; ++l) t.d[l] = f(l);
    return t;
}

inline __m512i load(const Bytes64& t) {
    return _mm512_load_si512(t.b);
}

// 32 word indices (0..N-1) -> their grid entries' codes: one vpermi2w per 64 entries, then a
// tree of blends on index bits 6, 7, ...
template <int N>
inline __m512i lookup(const Codes<N>& table, __m512i idx) {
    __m512i r[N / 64];
    for (int k = 0; k < N / 64; ++k)
        r[k] = _mm512_permutex2var_epi16(_mm512_load_si512(table.w + 64 * k), idx,
                                         _mm512_load_si512(table.w + 64 * k + 32));
    for (int bit = 6, n = N / 64; n > 1; ++bit, n /= 2) {
        const __mmask32 high = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(int16_t(1 << bit)));
        for (int k = 0; k < n / 2; ++k)
            r[k] = _mm512_mask_blend_epi16(high, r[2 * k], r[2 * k + 1]);
    }
    return r[0];
}

// One decoded super-block: 4 registers of unsigned grid bytes in the activation order, the mask
// of negative weights of each, and per int32 lane of the products the float factor of its
// sub-block (or half sub-block): factor[0] for registers 0-1, factor[1] for 2-3.
struct Decoded {
    __m512i w[4];
    __mmask64 negative[4];
    __m512 factor[2];
    __m512 offset;  // IQ1: per 16-value unit, the factor of its activation sum (bsums)
};

// The four masks from sign bytes placed as kIq*SignMasks place them.
inline void store_masks(__m512i signs, Decoded& d) {
    alignas(64) uint64_t masks[8];
    _mm512_store_si512(masks, signs);
    for (int m = 0; m < 4; ++m)
        d.negative[m] = _load_mask64(reinterpret_cast<__mmask64*>(masks + m));
}
// ksigns_iq2xs of the 7-bit fields in each byte (bit 7 ignored).
inline __m512i ksigns(__m512i fields) {
    return _mm512_permutex2var_epi8(_mm512_load_si512(kKsigns.b), fields,
                                    _mm512_load_si512(kKsigns.b + 64));
}

// IQ2 order: the four registers of 8-byte-entry codes (qword j = sub-block j's 4 words).
inline void expand_iq2(__m512i codes, Decoded& d) {
    for (int m = 0; m < 4; ++m)
        d.w[m] = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(load(kIq2Expand[m]), codes),
                                         load(kIq2LevelTable));
}
// Factors of the IQ2 order from one 4-bit scale per qword lane (both its int32 lanes): f * (2 ls +
// 1).
inline __m512 iq2_factor(__m512i ls_per_qword, float f) {
    const __m512i s =
        _mm512_add_epi64(_mm512_add_epi64(ls_per_qword, ls_per_qword), _mm512_set1_epi64(1));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_or_si512(s, _mm512_slli_epi64(s, 32))),
                         _mm512_set1_ps(f));
}
// IQ2_XS / IQ2_S: two 4-bit scales per sub-block (low nibble: its first 16 weights, groups 0-1,
// i.e. registers 0-1 of the IQ2 order).
inline void nibble_scale_factors(const uint8_t* scales, float f, Decoded& d) {
    const __m512i s =
        _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales)));
    d.factor[0] = iq2_factor(_mm512_and_si512(s, _mm512_set1_epi64(15)), f);
    d.factor[1] = iq2_factor(_mm512_srli_epi64(s, 4), f);
}

struct Iq2xxs {
    using Block = sy_block_iq2_xxs;
    static constexpr int kFactors = 1;
    static constexpr bool kSigns = true, kOffset = false;
    static void decode(const Block& b, Decoded& d) {
        const __m512i q = _mm512_loadu_si512(b.qs);
        expand_iq2(lookup(kIq2xxsCodes, _mm512_maskz_permutexvar_epi8(0x5555555555555555ull,
                                                                      load(kIq2xxsIndexWords), q)),
                   d);
        store_masks(_mm512_permutexvar_epi8(
                        load(kIq2xxsSignMasks),
                        ksigns(_mm512_multishift_epi64_epi8(load(kIq2xxsSignFields), q))),
                    d);
        d.factor[0] = iq2_factor(_mm512_srli_epi64(q, 60), i8::h2f(b.d) * 0.125f);
    }
};

struct Iq2xs {
    using Block = sy_block_iq2_xs;
    static constexpr int kFactors = 2;
    static constexpr bool kSigns = true, kOffset = false;
    static void decode(const Block& b, Decoded& d) {
        const __m512i q = _mm512_loadu_si512(b.qs);
        expand_iq2(lookup(kIq2xsCodes, _mm512_and_si512(q, _mm512_set1_epi16(511))), d);
        store_masks(_mm512_permutexvar_epi8(load(kIq2xsSignMasks), ksigns(_mm512_srli_epi16(q, 9))),
                    d);
        nibble_scale_factors(b.scales, i8::h2f(b.d) * 0.125f, d);
    }
};

struct Iq2s {
    using Block = sy_block_iq2_s;
    static constexpr int kFactors = 2;
    static constexpr bool kSigns = true, kOffset = false;
    static void decode(const Block& b, Decoded& d) {
        uint64_t qh;
        std::memcpy(&qh, b.qh, sizeof qh);
        const __m512i low =
            _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)));
        const __m512i high = _mm512_and_si512(
            _mm512_multishift_epi64_epi8(load(kIq2sHighBits), _mm512_set1_epi64(int64_t(qh))),
            _mm512_set1_epi16(0x0300));
        expand_iq2(lookup(kIq2sCodes, _mm512_or_si512(low, high)), d);
        store_masks(
            _mm512_permutexvar_epi8(load(kIq2SignMasks),
                                    _mm512_zextsi256_si512(_mm256_loadu_si256(
                                        reinterpret_cast<const __m256i*>(b.qs + SY_QK_K / 8)))),
            d);
        nibble_scale_factors(b.scales, i8::h2f(b.d) * 0.125f, d);
    }
};

// IQ3_XXS / IQ3_S: the 64 grid indices of a super-block fill one register, and every entry is 4
// bytes from 8 levels, so each entry is stored as two 6-bit bytes of level codes, plane A =
// code 0 | code 1 << 3 and plane B = code 2 | code 3 << 3. A lookup of all 64 indices is then two
// vpermi2b per 128 entries and plane, blended on the index bits above 7, and vpermb maps a plane
// byte straight to the level of either of its codes (vpermb reads 6 index bits). Register k
// (k = 0..3) holds byte k of every entry: byte e = element 4 e + k, the activation order of
// quantize_act_q8_K_iq3t_order, and int32 lane l sums entries 4 l .. 4 l + 3, all of sub-block
// l / 2. Signs: byte e of register k is negative when bit k + 4 (e % 2) of group e / 2's sign
// byte is set, one vptestmb per register on the sign bytes spread to 2 bytes each.
template <int N>
struct alignas(64) Planes {
    uint8_t a[N], b[N];
};
template <typename Entry, int N, int L>
constexpr Planes<N> code_planes(const Entry (&grid)[N], const uint8_t (&levels)[L]) {
    Planes<N> t{};
    for (int i = 0; i < N; ++i) {
        int code[4] = {};
        for (int k = 0; k < 4; ++k) {
            const uint8_t v = uint8_t(grid[i] >> (8 * k));
            while (levels[code[k]] != v) ++code[k];  // every byte is one of the levels
        }
        t.a[i] = uint8_t(code[0] | code[1] << 3);
        t.b[i] = uint8_t(code[2] | code[3] << 3);
    }
    return t;
}
constexpr Planes<256> kIq3xxsPlanes = code_planes(kIq3xxsGrid, kIq3xxsLevels);
constexpr Planes<512> kIq3sPlanes = code_planes(kIq3sGrid, kIq3sLevels);

// vpermb tables from a plane byte (6 bits) to the level of its low (code 0 / 2) or high code.
template <int N>
constexpr Bytes64 plane_levels(const uint8_t (&levels)[N], int shift) {
    return bytes64([&](int i) { return levels[(i >> shift) & 7]; });
}
constexpr Bytes64 kIq3xxsLow = plane_levels(kIq3xxsLevels, 0);
constexpr Bytes64 kIq3xxsHigh = plane_levels(kIq3xxsLevels, 3);
constexpr Bytes64 kIq3sLow = plane_levels(kIq3sLevels, 0);
constexpr Bytes64 kIq3sHigh = plane_levels(kIq3sLevels, 3);

// Byte e -> e / 2 (the sign byte of entry e's group), and the bit of it for register k.
constexpr Bytes64 kEntryGroup = bytes64([](int i) { return i / 2; });
constexpr Bytes64 kEntrySignBit[4] = {bytes64([](int i) { return 1 << (0 + 4 * (i % 2)); }),
                                      bytes64([](int i) { return 1 << (1 + 4 * (i % 2)); }),
                                      bytes64([](int i) { return 1 << (2 + 4 * (i % 2)); }),
                                      bytes64([](int i) { return 1 << (3 + 4 * (i % 2)); })};
// Lane l of the IQ3 entry order: sub-block l / 2.
constexpr Dwords16 kEntryScaleLanes = dwords16([](int l) { return l / 2; });

// One plane's bytes for 64 indices (their low 8 bits in idx8, bit 8 in `ninth`).
template <int N>
inline __m512i plane_lookup(const uint8_t (&plane)[N], __m512i idx8, __mmask64 bit7,
                            __mmask64 ninth) {
    __m512i r[N / 128];
    for (int k = 0; k < N / 128; ++k)
        r[k] = _mm512_permutex2var_epi8(_mm512_load_si512(plane + 128 * k), idx8,
                                        _mm512_load_si512(plane + 128 * k + 64));
    if constexpr (N == 256) {
        return _mm512_mask_blend_epi8(bit7, r[0], r[1]);
    } else {
        return _mm512_mask_blend_epi8(ninth, _mm512_mask_blend_epi8(bit7, r[0], r[1]),
                                      _mm512_mask_blend_epi8(bit7, r[2], r[3]));
    }
}

// The four registers, sign masks and factors of an IQ3 super-block: 64 index bytes, the 9th
// index bits (IQ3_S), the 32 sign bytes of the groups (low half of `signs`) and the 8 sub-block
// factors (dwords 0-7 of `factors`).
template <int N>
inline void decode_iq3_entries(const Planes<N>& planes, const Bytes64& low, const Bytes64& high,
                               __m512i idx8, __mmask64 ninth, __m512i signs, __m512 factors,
                               Decoded& d) {
    const __mmask64 bit7 = _mm512_movepi8_mask(idx8);
    const __m512i a = plane_lookup(planes.a, idx8, bit7, ninth);
    const __m512i b = plane_lookup(planes.b, idx8, bit7, ninth);
    d.w[0] = _mm512_permutexvar_epi8(a, load(low));
    d.w[1] = _mm512_permutexvar_epi8(a, load(high));
    d.w[2] = _mm512_permutexvar_epi8(b, load(low));
    d.w[3] = _mm512_permutexvar_epi8(b, load(high));
    const __m512i spread = _mm512_permutexvar_epi8(load(kEntryGroup), signs);
    for (int k = 0; k < 4; ++k)
        d.negative[k] = _mm512_test_epi8_mask(spread, load(kEntrySignBit[k]));
    d.factor[0] = _mm512_permutexvar_ps(_mm512_load_si512(kEntryScaleLanes.d), factors);
}

// f * (2 ls + 1) of the 8 sub-block scales in dwords 0..7.
inline __m512 odd_scale_factors(__m512i ls, float f) {
    return _mm512_mul_ps(
        _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_add_epi32(ls, ls), _mm512_set1_epi32(1))),
        _mm512_set1_ps(f));
}

struct Iq3xxs {
    using Block = sy_block_iq3_xxs;
    static constexpr int kFactors = 1;
    static constexpr bool kSigns = true, kOffset = false;
    static void decode(const Block& b, Decoded& d) {
        const __m512i words = _mm512_zextsi256_si512(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + SY_QK_K / 4)));
        decode_iq3_entries(kIq3xxsPlanes, kIq3xxsLow, kIq3xxsHigh, _mm512_loadu_si512(b.qs), 0,
                           ksigns(_mm512_multishift_epi64_epi8(load(kIq3xxsSignFields), words)),
                           odd_scale_factors(_mm512_srli_epi32(words, 28), i8::h2f(b.d) * 0.25f),
                           d);
    }
};

struct Iq3s {
    using Block = sy_block_iq3_s;
    static constexpr int kFactors = 1;
    static constexpr bool kSigns = true, kOffset = false;
    static void decode(const Block& b, Decoded& d) {
        uint64_t qh;
        std::memcpy(&qh, b.qh, sizeof qh);
        uint32_t sc;
        std::memcpy(&sc, b.scales, sizeof sc);
        const __m512i ls = _mm512_and_si512(
            _mm512_srlv_epi32(
                _mm512_set1_epi32(int(sc)),
                _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0)),
            _mm512_set1_epi32(15));
        decode_iq3_entries(
            kIq3sPlanes, kIq3sLow, kIq3sHigh, _mm512_loadu_si512(b.qs), _cvtu64_mask64(qh),
            _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.signs))),
            odd_scale_factors(ls, i8::h2f(b.d)), d);
    }
};

// IQ1_S / IQ1_M: 2048 grid entries of 8 values in {-1, 0, 1}, too many for registers. With the
// group's delta sign as a 12th index bit, each entry becomes one dword of 8 3-bit fields
// (c | delta_bit << 2, c = grid + 1) in a 16 KiB table that vpgatherdd reads 16 groups (128
// weights) at a time. vpermb maps a field to the unsigned byte u = 8 grid + delta + 9 (delta =
// +-1, the IQ1 delta of 1/8 in eighths), so that x = f * (u - 9) with f = d * (2 ls + 1) / 8 and
// the -9 comes back through the activation block sums: sum x a = f (sum u a - 9 sum a).
// The gathered dwords are in group order, so the registers take the IQ3 element order.
struct alignas(64) Iq1Table {
    uint32_t e[4096];
};
constexpr Iq1Table iq1_table() {
    constexpr uint64_t grid[2048] = SY_IQ1S_GRID_INIT;
    Iq1Table t{};
    for (int delta = 0; delta < 2; ++delta)
        for (int i = 0; i < 2048; ++i) {
            uint32_t e = 0;
            for (int k = 0; k < 8; ++k) {
                const int v = int(int8_t(uint8_t(grid[i] >> (8 * k))));  // -1, 0 or 1
                e |= uint32_t((v + 1) | delta << 2) << (3 * k);
            }
            t.e[delta << 11 | i] = e;
        }
    return t;
}
constexpr Iq1Table kIq1Table = iq1_table();
// u for field value i & 7 = c | delta_bit << 2: 8 c + 2 (delta +1) or 8 c (delta -1).
constexpr Bytes64 kIq1Levels = bytes64([](int i) { return 8 * (i & 3) + (i & 4 ? 0 : 2); });
constexpr Bytes64 kIq1Expand[2] = {bytes64([](int i) { return 3 * (i % 8); }),
                                   bytes64([](int i) { return 32 + 3 * (i % 8); })};
// Lane maps: unit (16 values) of int32 lane l in half h of the IQ3 order: 8 h + l / 2; sub-block
// of unit u: u / 2.
constexpr Dwords16 kUnitLanes[2] = {dwords16([](int l) { return l / 2; }),
                                    dwords16([](int l) { return 8 + l / 2; })};
constexpr Dwords16 kHalfIndex = dwords16([](int l) { return l / 2; });

// Registers 2 h, 2 h + 1 from the 16 table indices of groups 16 h .. 16 h + 15.
inline void expand_iq1(__m512i idx, int h, Decoded& d) {
    const __m512i e = _mm512_i32gather_epi32(idx, kIq1Table.e, 4);
    for (int n = 0; n < 2; ++n)
        d.w[2 * h + n] = _mm512_permutexvar_epi8(
            _mm512_multishift_epi64_epi8(load(kIq1Expand[n]), e), load(kIq1Levels));
}
// factor[h] and offset from f per 16-value unit (16 lanes).
inline void iq1_factors(__m512 unit_f, Decoded& d) {
    for (int h = 0; h < 2; ++h)
        d.factor[h] = _mm512_permutexvar_ps(_mm512_load_si512(kUnitLanes[h].d), unit_f);
    d.offset = _mm512_mul_ps(unit_f, _mm512_set1_ps(-9.0f));
}

struct Iq1s {
    using Block = sy_block_iq1_s;
    static constexpr int kFactors = 2;
    static constexpr bool kSigns = false, kOffset = true;
    static void decode(const Block& b, Decoded& d) {
        // qh word j (sub-block j): group k's 3 high index bits at 3 k, ls at 12, delta sign at 15.
        const __m512i qh = _mm512_cvtepu16_epi32(
            _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh))));
        for (int h = 0; h < 2; ++h) {
            // group g = 16 h + i: sub-block 4 h + i / 4, k = i % 4
            const __m512i w = _mm512_permutexvar_epi32(
                _mm512_add_epi32(
                    _mm512_srli_epi32(
                        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 2),
                    _mm512_set1_epi32(4 * h)),
                qh);
            const __m512i high = _mm512_and_si512(
                _mm512_srlv_epi32(
                    w, _mm512_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9)),
                _mm512_set1_epi32(7));
            const __m512i idx = _mm512_or_si512(
                _mm512_or_si512(_mm512_cvtepu8_epi32(_mm_loadu_si128(
                                    reinterpret_cast<const __m128i*>(b.qs + 16 * h))),
                                _mm512_slli_epi32(high, 8)),
                _mm512_slli_epi32(_mm512_srli_epi32(w, 15), 11));
            expand_iq1(idx, h, d);
        }
        const __m512i ls = _mm512_and_si512(_mm512_srli_epi32(qh, 12), _mm512_set1_epi32(7));
        const __m512 f = _mm512_mul_ps(
            _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_add_epi32(ls, ls), _mm512_set1_epi32(1))),
            _mm512_set1_ps(i8::h2f(b.d) * 0.125f));
        iq1_factors(_mm512_permutexvar_ps(_mm512_load_si512(kHalfIndex.d), f), d);
    }
};

struct Iq1m {
    using Block = sy_block_iq1_m;
    static constexpr int kFactors = 2;
    static constexpr bool kSigns = false, kOffset = true;
    static void decode(const Block& b, Decoded& d) {
        for (int h = 0; h < 2; ++h) {
            // qh byte g / 2, nibble g % 2: 3 high index bits and the delta sign, i.e. index bits
            // 8..11 of the table.
            const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qh + 8 * h));
            const __m128i nibbles =
                _mm_unpacklo_epi8(_mm_and_si128(q, _mm_set1_epi8(15)),
                                  _mm_and_si128(_mm_srli_epi16(q, 4), _mm_set1_epi8(15)));
            const __m512i idx = _mm512_or_si512(
                _mm512_cvtepu8_epi32(
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * h))),
                _mm512_slli_epi32(_mm512_cvtepu8_epi32(nibbles), 8));
            expand_iq1(idx, h, d);
        }
        // Scale words: unit u's 3-bit scale at bit 3 (u % 4) of word u / 4; the f16 d in the
        // words' top nibbles.
        uint16_t sc[4];
        std::memcpy(sc, b.scales, sizeof sc);
        const uint16_t dbits = SY_IQ1M_D_BITS(sc);
        const __m512i words = _mm512_permutexvar_epi32(
            _mm512_srli_epi32(
                _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 2),
            _mm512_cvtepu16_epi32(
                _mm256_zextsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)))));
        const __m512i ls = _mm512_and_si512(
            _mm512_srlv_epi32(words,
                              _mm512_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9)),
            _mm512_set1_epi32(7));
        iq1_factors(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_add_epi32(ls, ls),
                                                                      _mm512_set1_epi32(1))),
                                  _mm512_set1_ps(i8::h2f(dbits) * 0.125f)),
                    d);
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
    for (int64_t i = 0; i < blocks; ++i) {
        i8::prefetch_ahead(&x[i], sizeof x[i]);
        Decoded d;
        T::decode(x[i], d);
        for (int c = 0; c < C; ++c) {
            const int8_t* qa = a[c][i].qs;
            const __m512 ad = _mm512_set1_ps(a[c][i].d);
            for (int f = 0; f < T::kFactors; ++f) {
                __m512i sum = _mm512_setzero_si512();
                for (int m = f * 4 / T::kFactors; m < (f + 1) * 4 / T::kFactors; ++m) {
                    __m512i v = _mm512_loadu_si512(qa + 64 * m);
                    if constexpr (T::kSigns)
                        v = _mm512_mask_sub_epi8(v, d.negative[m], _mm512_setzero_si512(), v);
                    sum = _mm512_dpbusd_epi32(sum, d.w[m], v);
                }
                acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(d.factor[f], ad),
                                         acc[c]);
            }
            if constexpr (T::kOffset) {
                const __m512 sums = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[c][i].bsums))));
                acc[c] = _mm512_fmadd_ps(sums, _mm512_mul_ps(d.offset, ad), acc[c]);
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
void iq2_xs_codebook_cols(int64_t b, const void* w, const void* const* a, float* o) {
    codebook_cols<Iq2xs, C>(b, w, a, o);
}
template <int C>
void iq2_s_codebook_cols(int64_t b, const void* w, const void* const* a, float* o) {
    codebook_cols<Iq2s, C>(b, w, a, o);
}
template <int C>
void iq3_xxs_codebook_cols(int64_t b, const void* w, const void* const* a, float* o) {
    codebook_cols<Iq3xxs, C>(b, w, a, o);
}
template <int C>
void iq3_s_codebook_cols(int64_t b, const void* w, const void* const* a, float* o) {
    codebook_cols<Iq3s, C>(b, w, a, o);
}
template <int C>
void iq1_s_codebook_cols(int64_t b, const void* w, const void* const* a, float* o) {
    codebook_cols<Iq1s, C>(b, w, a, o);
}
template <int C>
void iq1_m_codebook_cols(int64_t b, const void* w, const void* const* a, float* o) {
    codebook_cols<Iq1m, C>(b, w, a, o);
}
SY_CPU_DEFINE_VEC_DOT(iq1_s_codebook)
SY_CPU_DEFINE_VEC_DOT(iq1_m_codebook)
SY_CPU_DEFINE_VEC_DOT(iq2_xxs_codebook)
SY_CPU_DEFINE_VEC_DOT(iq2_xs_codebook)
SY_CPU_DEFINE_VEC_DOT(iq2_s_codebook)
SY_CPU_DEFINE_VEC_DOT(iq3_xxs_codebook)
SY_CPU_DEFINE_VEC_DOT(iq3_s_codebook)

// The tile path (tile512.hpp): a super-block decoded as above, made true values (negated where
// the sign says, IQ1's u - 9), moved from the activation order to the natural one (per output
// register two vpermt2b, over registers 0-1 and 2-3, and a blend), and the integer scales 2 ls + 1
// read from the block, with the float scale that they share.
enum class Order { kIq2, kIq3Entries, kIq3 };
// The position in the activation order of natural element x.
constexpr int position(Order order, int x) {
    switch (order) {
        case Order::kIq2: return 64 * (x / 8 % 4) + 8 * (x / 32) + x % 8;  // x = 32 j + 8 m + t
        case Order::kIq3Entries: return 64 * (x % 4) + x / 4;              // x = 4 e + k
        default: return 64 * (2 * (x / 128) + x / 8 % 2) + 8 * (x / 16 % 8) + x % 8;
    }
}
struct NaturalPicks {
    Bytes64 idx[4];    // per output register, the byte within registers 0-1 or 2-3
    uint64_t high[4];  // bit i: byte i comes from registers 2-3
};
constexpr NaturalPicks natural_picks(Order order) {
    NaturalPicks t{};
    for (int r = 0; r < 4; ++r)
        for (int i = 0; i < 64; ++i) {
            const int p = position(order, 64 * r + i);
            t.idx[r].b[i] = uint8_t(p % 128);
            if (p >= 128) t.high[r] |= uint64_t(1) << i;
        }
    return t;
}
template <Order kOrder>
struct Picks {
    static constexpr NaturalPicks t = natural_picks(kOrder);
};

template <typename T, Order kOrder>
float codebook_tile_row(const typename T::Block& b, int8_t* v, int32_t* l) {
    Decoded d;
    T::decode(b, d);
    __m512i x[4];
    for (int m = 0; m < 4; ++m) {
        if constexpr (T::kSigns)
            x[m] = _mm512_mask_sub_epi8(d.w[m], d.negative[m], _mm512_setzero_si512(), d.w[m]);
        else
            x[m] = _mm512_sub_epi8(d.w[m], _mm512_set1_epi8(9));  // IQ1: u - 9
    }
    constexpr const NaturalPicks& picks = Picks<kOrder>::t;
    for (int r = 0; r < 4; ++r) {
        const __m512i idx = _mm512_load_si512(picks.idx[r].b);
        const __m512i low = _mm512_permutex2var_epi8(x[0], idx, x[1]);
        const __m512i high = _mm512_permutex2var_epi8(x[2], idx, x[3]);
        _mm512_storeu_si512(v + 64 * r, _mm512_mask_blend_epi8(picks.high[r], low, high));
    }
    return tile_scales(b, l);
}

template <typename T, Order kOrder, bool kScales32>
void codebook_tile_decode(int64_t blocks, const void* w, int64_t row_stride, int rows,
                          WeightTile& tile) {
    decode_tile<typename T::Block, 0, kScales32>(
        blocks, w, row_stride, rows, tile, [](const uint8_t*) { return 1.0f; },
        [](const typename T::Block& b, int8_t* v, int32_t* l) {
            return codebook_tile_row<T, kOrder>(b, v, l);
        });
}

// The kernel `dot` with its activation order and the tile path.
template <typename T, Order kOrder, bool kScales32>
QuantKernel codebook(VecDotFn dot, QuantizeActFn quantize) {
    return with_tile({dot, quantize, 256, 256, int64_t(sizeof(sy_block_q8_K))},
                     codebook_tile_decode<T, kOrder, kScales32>);
}

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
    quantize_act_q8_K_ordered(x, y, n,
                              [](int p) { return 32 * (p / 8 % 8) + 8 * (p / 64) + p % 8; });
}
// p = 64 k + e <- 4 e + k
void quantize_act_q8_K_iq3t_order(const float* x, void* y, int64_t n) {
    quantize_act_q8_K_ordered(x, y, n, [](int p) { return 4 * (p % 64) + p / 64; });
}
// p = 64 (2 h + n) + 8 j + t <- 128 h + 16 j + 8 n + t
void quantize_act_q8_K_iq3_order(const float* x, void* y, int64_t n) {
    quantize_act_q8_K_ordered(x, y, n, [](int p) {
        return 128 * (p / 128) + 16 * (p / 8 % 8) + 8 * (p / 64 % 2) + p % 8;
    });
}

}  // namespace

QuantKernel codebook_kernel(int32_t weight_type) {
    constexpr QuantizeActFn iq2 = quantize_act_q8_K_iq2_order, iq3t = quantize_act_q8_K_iq3t_order,
                            iq3 = quantize_act_q8_K_iq3_order;
    switch (weight_type) {
        case SY_TYPE_IQ2_XXS:
            return codebook<Iq2xxs, Order::kIq2, true>(vec_dot_iq2_xxs_codebook, iq2);
        case SY_TYPE_IQ2_XS:
            return codebook<Iq2xs, Order::kIq2, false>(vec_dot_iq2_xs_codebook, iq2);
        case SY_TYPE_IQ2_S: return codebook<Iq2s, Order::kIq2, false>(vec_dot_iq2_s_codebook, iq2);
        case SY_TYPE_IQ3_XXS:
            return codebook<Iq3xxs, Order::kIq3Entries, true>(vec_dot_iq3_xxs_codebook, iq3t);
        case SY_TYPE_IQ3_S:
            return codebook<Iq3s, Order::kIq3Entries, true>(vec_dot_iq3_s_codebook, iq3t);
        case SY_TYPE_IQ1_S: return codebook<Iq1s, Order::kIq3, true>(vec_dot_iq1_s_codebook, iq3);
        case SY_TYPE_IQ1_M: return codebook<Iq1m, Order::kIq3, false>(vec_dot_iq1_m_codebook, iq3);
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
