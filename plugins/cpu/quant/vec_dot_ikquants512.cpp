// AVX-512 (BW, VBMI, VNNI) dot products of ik_llama.cpp's IQ2_K ... IQ6_K, IQ2_KS ... IQ5_KS,
// IQ4_KSS and IQ2_KL (and mainline IQ4_XS, whose table is IQ4_K's base half, and Q3_K, IQ3_K's
// planes without a table) against Q8_K: one 256-value super-block per step in four 512-bit
// registers, decoded into bytes laid out like the
// activations, so that every product is a plain 64-byte load of a.qs. Four register layouts,
// each with its activation order (quantize_activations.cpp):
//   planes (IQ2_K, IQ3_K, IQ2_KS, IQ3_KS, Q3_K; Q2_K's order, quantize_act_q8_K_q2k): the 2-bit
//     planes of qs[0, 64): register g = bits 2g..2g+1, bytes l < 32 are value 32 g + l, bytes
//     32 + l value 128 + 32 g + l; the third bit of IQ3_K is bit g (4 + g) of qh[l].
//   nibbles (IQ5_K, IQ6_K, IQ5_KS; Q4_K's order, quantize_act_q8_K_nibbles): register 2k + h =
//     the low (h = 0) or high nibbles of qs[64 k, 64 k + 64), i.e. the 32-value chunks 4k + h
//     (bytes 0-31) and 4k + 2 + h (bytes 32-63).
//   quarters (IQ4_K, IQ4_KS, IQ4_KSS, IQ4_XS; quantize_act_q8_K_quarters): register 2k + h = the
//     low or high nibbles of qs[64 k, 64 k + 64), 16-byte lane j = values 128 k + 32 j + 16 h +
//     [0, 16).
//   natural (IQ2_KL): register m = values 64 m .. 64 m + 63.
// Each 16-value sub-block covers 8 int16 lanes of the pair sums, so its scale is picked per lane
// with vpermw from the 16 scales (ik_block_traits.hpp decodes them into bytes).
//
// Values: IQ2_K's and IQ3_K's base halves plus an offset are unsigned and small (<= 110), so
// vpmaddubsw takes them as they are (pairs below 2^15). The IQ4_K ... IQ6_K tables span -127 ..
// 123: their absolute values are looked up (vpshufb, or vpermb for the 32- and 64-entry tables)
// and the activations negated where the value is negative (the tables are sorted, so that is an
// index below a type's constant). Shifted halves and offsets come in through the block sums, as
// in the 256-bit kernels. The pair sums go into two accumulators (registers 0, 2 and 1, 3), so
// that a step's four vpdpwssd are two chains of two.
#include "quant/quant_kernels.hpp"

#if defined(__AVX512VBMI__) && defined(__AVX512VNNI__) && defined(__AVX512BW__) && \
    defined(__AVX512F__) && defined(__F16C__)
#include <immintrin.h>

#include <type_traits>

#include "quant/column_sums512.hpp"
#include "quant/ik_block_traits.hpp"
#include "quant/tile512.hpp"

#define SY_CPU_WIDE_IKQUANTS 1
#endif

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

#if defined(SY_CPU_WIDE_IKQUANTS)
namespace {

// Constant tables built at compile time (no AVX-512 static initializers; see
// vec_dot_groups.cpp).
struct alignas(64) Words32 {
    int16_t w[32];
};
struct alignas(64) Bytes64 {
    int8_t b[64];
};

// The sub-block (0-15) of int16 pair-sum lane l of register t, per layout.
constexpr Words32 plane_lanes(int g) {
    Words32 t{};
    for (int l = 0; l < 32; ++l) t.w[l] = int16_t(8 * (l / 16) + 2 * g + l % 16 / 8);
    return t;
}
constexpr Words32 nibble_lanes(int reg) {
    Words32 t{};
    for (int l = 0; l < 32; ++l) {
        const int chunk = 4 * (reg / 2) + reg % 2 + 2 * (l / 16);
        t.w[l] = int16_t(2 * chunk + l % 16 / 8);
    }
    return t;
}
constexpr Words32 quarter_lanes(int reg) {
    Words32 t{};
    for (int l = 0; l < 32; ++l) t.w[l] = int16_t(8 * (reg / 2) + 2 * (l / 8) + reg % 2);
    return t;
}
// Bytes 0-31 = `low`, bytes 32-63 = `high`.
constexpr Bytes64 byte_halves(int low, int high) {
    Bytes64 t{};
    for (int l = 0; l < 64; ++l) t.b[l] = int8_t(l < 32 ? low : high);
    return t;
}
constexpr Words32 word_halves(int low, int high) {
    Words32 t{};
    for (int l = 0; l < 32; ++l) t.w[l] = int16_t(l < 16 ? low : high);
    return t;
}
// |table[i % n]| for the 64 bytes of a vpshufb (n = 16: each 16-byte lane) or vpermb table.
constexpr Bytes64 abs_table(const int8_t* table, int n) {
    Bytes64 t{};
    for (int l = 0; l < 64; ++l) {
        const int v = table[l % n];
        t.b[l] = int8_t(v < 0 ? -v : v);
    }
    return t;
}
constexpr Bytes64 repeat16(const int8_t* table) {
    Bytes64 t{};
    for (int l = 0; l < 64; ++l) t.b[l] = table[l % 16];
    return t;
}
// The value tables (base half first) as constants the tables below can be built from.
constexpr int8_t kIq4KValues[32] = SY_IQ4K_VALUES_INIT;
constexpr int8_t kIq5KValues[64] = SY_IQ5NL_VALUES_INIT;
constexpr int8_t kIq6KValues[128] = SY_IQ6NL_VALUES_INIT;
// The first index of each table whose value is >= 0 (the tables are sorted).
constexpr int first_nonnegative(const int8_t* table, int n) {
    int i = 0;
    while (i < n && table[i] < 0) ++i;
    return i;
}

constexpr Bytes64 kIq2Table = repeat16(kIq2Base), kIq3Table = repeat16(kIq3Base);
constexpr Bytes64 kIq4Abs = abs_table(kIq4KValues, 16), kIq5Abs = abs_table(kIq5KValues, 32),
                  kIq6Abs = abs_table(kIq6KValues, 64);
constexpr Words32 kPlaneLanes[4] = {plane_lanes(0), plane_lanes(1), plane_lanes(2), plane_lanes(3)};
constexpr Words32 kNibbleLanes[4] = {nibble_lanes(0), nibble_lanes(1), nibble_lanes(2),
                                     nibble_lanes(3)};
constexpr Words32 kQuarterLanes[4] = {quarter_lanes(0), quarter_lanes(1), quarter_lanes(2),
                                      quarter_lanes(3)};
// IQ3_K's third index bit of register g: bit g of qh (bytes 0-31), bit 4 + g (bytes 32-63).
constexpr Bytes64 kPlaneBit[4] = {byte_halves(1, 16), byte_halves(2, 32), byte_halves(4, 64),
                                  byte_halves(8, -128)};
// IQ5_K's fifth index bit of register 2k + h: bit 4k + h of qh (bytes 0-31), 4k + 2 + h (32-63).
constexpr Bytes64 kNibbleBit[4] = {byte_halves(1, 4), byte_halves(2, 8), byte_halves(16, 64),
                                   byte_halves(32, -128)};
// IQ6_K's bits 4-5 of register 2k + h: qh[32 k + l % 32] >> (2 h) (bytes 0-31), >> (4 + 2 h).
constexpr Words32 kIq6Shift[2] = {word_halves(0, 4), word_halves(2, 6)};

inline __m512i load(const Words32& t) {
    return _mm512_load_si512(t.w);
}
inline __m512i load(const Bytes64& t) {
    return _mm512_load_si512(t.b);
}
inline __m512i broadcast32(const uint8_t* p) {
    return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// One super-block decoded: u the four registers of (absolute) values in the activations' order,
// neg where the value is negative (signed types only).
struct Decoded {
    __m512i u[4];
    __mmask64 neg[4];
};

// Per type: its traits T (ik_block_traits.hpp), whether its values are signed, the activation
// order, the sub-block of each lane, and the decoder (constants loaded once per row).
template <typename T>
struct Planes2 {  // IQ2_K, IQ2_KS
    static constexpr bool kSigned = false;
    static constexpr const Words32* kLanes = kPlaneLanes;
    const __m512i table = load(kIq2Table), low2 = _mm512_set1_epi8(3);
    void decode(const typename T::Block& b, Decoded& d) const {
        const __m512i q = _mm512_loadu_si512(b.qs);
        for (int g = 0; g < 4; ++g)
            d.u[g] =
                _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(q, 2 * g), low2));
    }
};
// The third index bit's plane: IQ3_K's qh, Q3_K's hmask (the same layout).
inline const uint8_t* plane3(const sy_block_iq3_k& b) {
    return b.qh;
}
inline const uint8_t* plane3(const sy_block_iq3_ks& b) {
    return b.qh;
}
inline const uint8_t* plane3(const sy_block_q3_K& b) {
    return b.hmask;
}
// kLookup: through IQ3_K's table; else the 3-bit index is the value (Q3_K's, plus 4).
template <typename T, bool kLookup = true>
struct Planes3 {  // IQ3_K, IQ3_KS, Q3_K
    static constexpr bool kSigned = false;
    static constexpr const Words32* kLanes = kPlaneLanes;
    const __m512i table = load(kIq3Table), low2 = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
    void decode(const typename T::Block& b, Decoded& d) const {
        const __m512i q = _mm512_loadu_si512(b.qs);
        const __m512i qh = broadcast32(plane3(b));
        for (int g = 0; g < 4; ++g) {
            const __m512i low = _mm512_and_si512(_mm512_srli_epi16(q, 2 * g), low2);
            const __mmask64 high = _mm512_test_epi8_mask(qh, load(kPlaneBit[g]));
            const __m512i idx = _mm512_mask_add_epi8(low, high, low, four);
            d.u[g] = kLookup ? _mm512_shuffle_epi8(table, idx) : idx;
        }
    }
};
struct Iq4Wide {
    static constexpr bool kSigned = true;
    static constexpr const Words32* kLanes = kQuarterLanes;
    const __m512i table = load(kIq4Abs), low4 = _mm512_set1_epi8(0x0F), sign = _mm512_set1_epi8(8);
    // q: the block's 128 bytes of 4-bit indices (IQ4_K's, IQ4_KS's layout).
    void decode_qs(const __m512i (&q)[2], Decoded& d) const {
        for (int k = 0; k < 2; ++k) {
            const __m512i idx[2] = {_mm512_and_si512(q[k], low4),
                                    _mm512_and_si512(_mm512_srli_epi16(q[k], 4), low4)};
            for (int h = 0; h < 2; ++h) {
                d.u[2 * k + h] = _mm512_shuffle_epi8(table, idx[h]);
                d.neg[2 * k + h] = _mm512_testn_epi8_mask(idx[h], sign);  // indices 0-7 < 0
            }
        }
    }
    template <typename Block>
    void decode(const Block& b, Decoded& d) const {
        const __m512i q[2] = {_mm512_loadu_si512(b.qs), _mm512_loadu_si512(b.qs + 64)};
        decode_qs(q, d);
    }
};
// IQ4_KSS: each 16-bit word w of qs becomes a ^ (a >> 1), a = w & ~1, which are IQ4_KS's bytes
// in place (ik_block_traits.hpp's note on Iq4Kss).
struct Iq4KssWide : Iq4Wide {
    const __m512i not_bit0 = _mm512_set1_epi16(short(0xFFFE));
    void decode(const sy_block_iq4_kss& b, Decoded& d) const {
        __m512i q[2];
        for (int k = 0; k < 2; ++k) {
            const __m512i a = _mm512_and_si512(_mm512_loadu_si512(b.qs + 64 * k), not_bit0);
            q[k] = _mm512_xor_si512(a, _mm512_srli_epi16(a, 1));
        }
        decode_qs(q, d);
    }
};
struct Iq5Wide {
    static constexpr bool kSigned = true;
    static constexpr const Words32* kLanes = kNibbleLanes;
    const __m512i table = load(kIq5Abs), low4 = _mm512_set1_epi8(0x0F),
                  sixteen = _mm512_set1_epi8(16),
                  first_pos = _mm512_set1_epi8(char(first_nonnegative(kIq5KValues, 32)));
    template <typename Block>  // IQ5_K, IQ5_KS
    void decode(const Block& b, Decoded& d) const {
        const __m512i qh = broadcast32(b.qh);
        for (int k = 0; k < 2; ++k) {
            const __m512i q = _mm512_loadu_si512(b.qs + 64 * k);
            const __m512i low[2] = {_mm512_and_si512(q, low4),
                                    _mm512_and_si512(_mm512_srli_epi16(q, 4), low4)};
            for (int h = 0; h < 2; ++h) {
                const int r = 2 * k + h;
                const __mmask64 high = _mm512_test_epi8_mask(qh, load(kNibbleBit[r]));
                const __m512i idx = _mm512_mask_add_epi8(low[h], high, low[h], sixteen);
                d.u[r] = _mm512_permutexvar_epi8(idx, table);
                d.neg[r] = _mm512_cmplt_epu8_mask(idx, first_pos);
            }
        }
    }
};
struct Iq6Wide {
    static constexpr bool kSigned = true;
    static constexpr const Words32* kLanes = kNibbleLanes;
    const __m512i table = load(kIq6Abs), low4 = _mm512_set1_epi8(0x0F), low2 = _mm512_set1_epi8(3),
                  first_pos = _mm512_set1_epi8(char(first_nonnegative(kIq6KValues, 64)));
    void decode(const sy_block_iq6_k& b, Decoded& d) const {
        for (int k = 0; k < 2; ++k) {
            const __m512i q = _mm512_loadu_si512(b.qs + 64 * k);
            const __m512i qh = broadcast32(b.qh + 32 * k);
            const __m512i low[2] = {_mm512_and_si512(q, low4),
                                    _mm512_and_si512(_mm512_srli_epi16(q, 4), low4)};
            for (int h = 0; h < 2; ++h) {
                const int r = 2 * k + h;
                // Bits 4-5: (qh >> shift) & 3, then << 4 (no carry: the values are below 4).
                const __m512i high =
                    _mm512_and_si512(_mm512_srlv_epi16(qh, load(kIq6Shift[h])), low2);
                const __m512i idx = _mm512_or_si512(low[h], _mm512_slli_epi16(high, 4));
                d.u[r] = _mm512_permutexvar_epi8(idx, table);
                d.neg[r] = _mm512_cmplt_epu8_mask(idx, first_pos);
            }
        }
    }
};

// IQ2_KL (natural order): register m = the 16 pairs of chunk 2m (bytes 0-31) and of 2m + 1, each
// pair's 5-bit code looked up as one word of the pair table (vpermw). The table's values (-63 ..
// 47) plus 63 are unsigned, as IQ2_K's.
constexpr int kIq2KlOffset = 63;
struct alignas(64) KlPairs {
    uint16_t w[32];
};
constexpr KlPairs kl_pairs() {
    constexpr uint16_t pairs[32] = SY_IQ2KL_VALUES_INIT;
    KlPairs t{};
    for (int e = 0; e < 32; ++e) {
        const int lo = int8_t(pairs[e] & 0xFF) + kIq2KlOffset,
                  hi = int8_t(pairs[e] >> 8) + kIq2KlOffset;
        t.w[e] = uint16_t(lo | hi << 8);
    }
    return t;
}
constexpr KlPairs kKlPairs = kl_pairs();
constexpr Words32 natural_lanes(int reg) {
    Words32 t{};
    for (int l = 0; l < 32; ++l) t.w[l] = int16_t(4 * reg + l / 8);
    return t;
}
constexpr Words32 kNaturalLanes[4] = {natural_lanes(0), natural_lanes(1), natural_lanes(2),
                                      natural_lanes(3)};
// Byte l: bit 2 (l / 16) + odd, the qh bit of chunk 2m + odd for 16-byte lane m.
constexpr Bytes64 kl_high_bits(int odd) {
    Bytes64 t{};
    for (int l = 0; l < 64; ++l) t.b[l] = int8_t(1 << (2 * (l / 16) + odd));
    return t;
}
constexpr Bytes64 kKlEvenBit = kl_high_bits(0), kKlOddBit = kl_high_bits(1);
struct alignas(64) Qwords8 {
    int64_t q[8];
};
// Registers 2j, 2j + 1 as qwords of [even | odd]: lanes j' = 2j, 2j + 1 of each, interleaved.
constexpr Qwords8 kl_lanes(int j) {
    Qwords8 t{};
    for (int k = 0; k < 8; ++k) t.q[k] = 8 * ((k / 2) % 2) + 2 * (2 * j + k / 4) + k % 2;
    return t;
}
constexpr Qwords8 kKlLanes[2] = {kl_lanes(0), kl_lanes(1)};
struct Iq2KlWide {
    static constexpr bool kSigned = false;
    static constexpr const Words32* kLanes = kNaturalLanes;
    const __m512i table = _mm512_load_si512(kKlPairs.w), low4 = _mm512_set1_epi8(0x0F),
                  sixteen = _mm512_set1_epi8(16);
    // The 5-bit codes as bytes, 16-byte lane m of `even` holding chunk 2m's (the low nibbles of
    // qs[16 m, 16 m + 16) and bit 2m of qh), of `odd` chunk 2m + 1's (high nibbles, bit 2m + 1);
    // then each register's 32 codes widened to words and looked up as pairs.
    void decode(const sy_block_iq2_kl& b, Decoded& d) const {
        const __m512i q = _mm512_loadu_si512(b.qs);
        const __m512i qh =
            _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh)));
        __m512i even = _mm512_and_si512(q, low4);
        __m512i odd = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
        even =
            _mm512_mask_add_epi8(even, _mm512_test_epi8_mask(qh, load(kKlEvenBit)), even, sixteen);
        odd = _mm512_mask_add_epi8(odd, _mm512_test_epi8_mask(qh, load(kKlOddBit)), odd, sixteen);
        for (int j = 0; j < 2; ++j) {
            const __m512i pair = _mm512_permutex2var_epi64(even, _mm512_load_si512(kKlLanes[j].q),
                                                           odd);  // [even 2j | odd 2j | ...]
            d.u[2 * j] =
                _mm512_permutexvar_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(pair)), table);
            d.u[2 * j + 1] = _mm512_permutexvar_epi16(
                _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(pair, 1)), table);
        }
    }
};

// The row-scaled types whose 32-value sub-blocks each have one scale and one table half
// (ik_block_traits.hpp has IQ2_KS and IQ3_KS): scales(b) gives the 16-value sub-blocks' scales as
// bytes, extra16 their table halves.
struct RowScaledF32 {
    static constexpr int kMeta = 4;
    static float row_scale(const void* w) {
        float d;
        std::memcpy(&d, w, 4);
        return d;
    }
    template <typename Block>
    static float block_scale(const Block&) {
        return 1.0f;
    }
    // 8 bytes s_c (sub-block c's byte: bit 0 the half, scale (s & 254) - 127): the scales of the
    // 16 sub-blocks of 16 values, and the halves as the 8 bits of byte c's bit 0.
    static __m128i scales_of(__m128i s8) {
        const __m128i l =
            _mm_sub_epi8(_mm_and_si128(s8, _mm_set1_epi8(char(254))), _mm_set1_epi8(127));
        return _mm_unpacklo_epi8(l, l);
    }
    static unsigned halves_of(__m128i s8) {
        return unsigned(_mm_movemask_epi8(_mm_slli_epi16(s8, 7))) & 0xFF;
    }
};
struct Iq4KsT : RowScaledF32 {
    using Block = sy_block_iq4_ks;
    static constexpr int kShift = SY_IQ4K_SHIFT, kOffset = 0;
    static __m128i bytes(const Block& b) {
        return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.scales));
    }
    static __m128i scales(const Block& b) { return scales_of(bytes(b)); }
    static unsigned extra16(const Block& b) { return RowScaledF16::doubled(halves_of(bytes(b))); }
};
struct Iq5KsT : RowScaledF32 {
    using Block = sy_block_iq5_ks;
    static constexpr int kShift = SY_IQ5NL_SHIFT, kOffset = 0;
    static __m128i bytes(const Block& b) {
        return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.scales));
    }
    static __m128i scales(const Block& b) { return scales_of(bytes(b)); }
    static unsigned extra16(const Block& b) { return RowScaledF16::doubled(halves_of(bytes(b))); }
};
struct Iq4KssT : RowScaledF32 {
    using Block = sy_block_iq4_kss;
    static constexpr int kShift = SY_IQ4K_SHIFT, kOffset = 0;
    // Sub-block c's byte: bit 0 of its 8 words (one 32-bit mask per 64 bytes).
    static __m128i bytes(const Block& b) {
        const __m512i bit0 = _mm512_set1_epi16(1);
        const uint64_t lo = _mm512_test_epi16_mask(_mm512_loadu_si512(b.qs), bit0);
        const uint64_t hi = _mm512_test_epi16_mask(_mm512_loadu_si512(b.qs + 64), bit0);
        return _mm_cvtsi64_si128(int64_t(lo | hi << 32));
    }
    static __m128i scales(const Block& b) { return scales_of(bytes(b)); }
    static unsigned extra16(const Block& b) { return RowScaledF16::doubled(halves_of(bytes(b))); }
};
// Mainline IQ4_XS: IQ4_K's indices and base table with a 6-bit scale per 32 values (its fields
// as IQ4_K's per 16) and no table halves.
struct Iq4XsT : BlockScaled {
    using Block = sy_block_iq4_xs;
    static constexpr int kShift = 0, kOffset = 0;
    static float block_scale(const Block& b) { return h2f(b.d); }
    static unsigned extra16(const Block&) { return 0; }
    static __m128i scales(const Block& b) {
        const __m128i l = scales6(reinterpret_cast<const uint8_t*>(&b.scales_h), b.scales_l);
        return _mm_unpacklo_epi8(l, l);
    }
};
// Mainline Q3_K: IQ3_K's planes (hmask for qh) whose 3-bit index minus 4 is the value, 16 6-bit
// scales minus 32 packed in 12 bytes, no halves.
struct Q3KT : BlockScaled {
    using Block = sy_block_q3_K;
    static constexpr int kShift = 0, kOffset = 4;
    static float block_scale(const Block& b) { return h2f(b.d); }
    static unsigned extra16(const Block&) { return 0; }
    // Scale j: low 4 bits the low (j < 8) or high nibble of byte j % 8; high 2 bits at bit
    // 2 (j / 4) of byte 8 + j % 4.
    static __m128i scales(const Block& b) {
        // The 16 bytes that end with the scales (the last 4 of qs first), moved down by 4: no
        // read past the block, and no copy through memory (a store of 12 bytes cannot be
        // forwarded to a 16-byte load).
        const __m128i x =
            _mm_srli_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales - 4)), 4);
        const __m128i m4 = _mm_set1_epi8(0x0F);
        const __m128i low =
            _mm_unpacklo_epi64(_mm_and_si128(x, m4), _mm_and_si128(_mm_srli_epi16(x, 4), m4));
        const __m128i top = _mm_shuffle_epi8(
            x, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11));
        const __m128i high = _mm_and_si128(
            _mm_srlv_epi16(top, _mm_setr_epi16(0, 0, 2, 2, 4, 4, 6, 6)), _mm_set1_epi8(3));
        return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32));
    }
};
struct Iq2KlT : RowScaledF16 {
    using Block = sy_block_iq2_kl;
    static constexpr int kShift = 0, kOffset = kIq2KlOffset;
    static __m128i scales(const Block& b) {
        // Chunk c: the nibble c / 4 of scales_l[c % 4], and bits 2c .. 2c + 1 of scales_h.
        const __m128i low4 = i8::nibbles_low_high(b.scales_l);
        const __m128i l = _mm_sub_epi8(
            _mm_or_si128(low4,
                         _mm_slli_epi16(fields2(reinterpret_cast<const uint8_t*>(&b.scales_h)), 4)),
            _mm_set1_epi8(32));
        return _mm_unpacklo_epi8(l, l);
    }
    static unsigned extra16(const Block&) { return 0; }
};

// out[c] = sum over the row of weight x activation c, for T's traits and W's decoder.
template <typename T, typename W, int C>
void ik_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const auto* x =
        reinterpret_cast<const typename T::Block*>(static_cast<const uint8_t*>(w) + T::kMeta);
    const sy_block_q8_K* a[C];
    for (int c = 0; c < C; ++c) a[c] = static_cast<const sy_block_q8_K*>(act[c]);
    ColumnSums<C> sums;
    const W decoder;
    const __m512i lanes[4] = {load(W::kLanes[0]), load(W::kLanes[1]), load(W::kLanes[2]),
                              load(W::kLanes[3])};
    const __m256i pow2 = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
                                           8192, 16384, short(0x8000));
    const __m512i zero = _mm512_setzero_si512();
    for (int64_t i = 0; i < blocks; ++i) {
        const typename T::Block& b = x[i];
        i8::prefetch_ahead(&b, sizeof b);
        Decoded d;
        decoder.decode(b, d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(T::scales(b));
        const __m512i sc512 = _mm512_castsi256_si512(sc16);
        __m512i sc[4];
        for (int t = 0; t < 4; ++t) sc[t] = _mm512_permutexvar_epi16(lanes[t], sc512);
        // l_s * (shift e_s - offset) per sub-block (|.| <= 32 * 63, IQ2_KL's, the largest), times
        // its block sum.
        const unsigned extra = T::extra16(b);
        const bool corrected = T::kOffset != 0 || extra != 0;
        __m512i corr = zero;
        if (corrected) {
            const __m256i on =
                _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_set1_epi16(short(extra)), pow2), pow2);
            const __m256i per = _mm256_sub_epi16(_mm256_and_si256(on, _mm256_set1_epi16(T::kShift)),
                                                 _mm256_set1_epi16(T::kOffset));
            corr = _mm512_zextsi256_si512(_mm256_mullo_epi16(sc16, per));
        }
        const float scale = T::block_scale(b);
        for (int c = 0; c < C; ++c) {
            const sy_block_q8_K& ac = a[c][i];
            // The correction starts the second chain (the block sums in the low 256 bits).
            __m512i s[2] = {zero, zero};
            if (corrected) {
                const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ac.bsums));
                s[1] = _mm512_madd_epi16(corr, _mm512_zextsi256_si512(bs));
            }
            for (int t = 0; t < 4; ++t) {
                __m512i q = _mm512_loadu_si512(ac.qs + 64 * t);
                if constexpr (W::kSigned) q = _mm512_mask_sub_epi8(q, d.neg[t], zero, q);
                s[t % 2] = _mm512_dpwssd_epi32(s[t % 2], _mm512_maddubs_epi16(d.u[t], q), sc[t]);
            }
            const __m512i sum = _mm512_add_epi32(s[0], s[1]);
            sums.acc[c] =
                _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(scale * ac.d), sums.acc[c]);
        }
    }
    sums.store(1.0f, out);
    if constexpr (T::kMeta != 0) {
        const float row = T::row_scale(w);
        for (int c = 0; c < C; ++c) out[c] *= row;
    }
}

// The tile path (tile512.hpp): a block decoded as above, then each register's 16-byte pieces,
// one 16-value sub-block each (pair lanes 8 L .. 8 L + 7 of the layout's kLanes for piece L),
// made true values (negated where negative, plus shift e_j - offset) and stored at the
// sub-block's natural place.
// Byte k of register t: the sub-block of its piece k / 16.
constexpr Bytes64 piece_sub_blocks(const Words32& lanes) {
    Bytes64 t{};
    for (int k = 0; k < 64; ++k) t.b[k] = int8_t(lanes.w[8 * (k / 16)]);
    return t;
}
template <typename W>
struct PieceSubBlocks {
    static constexpr Bytes64 idx[4] = {
        piece_sub_blocks(W::kLanes[0]), piece_sub_blocks(W::kLanes[1]),
        piece_sub_blocks(W::kLanes[2]), piece_sub_blocks(W::kLanes[3])};
};

// Register t's four 16-byte pieces at their natural places (piece L at 16 kLanes[t].w[8 L]),
// as one store where they are consecutive, else two or four.
template <typename W, int t>
inline void store_pieces(int8_t* v, __m512i x) {
    constexpr int p0 = W::kLanes[t].w[0], p1 = W::kLanes[t].w[8], p2 = W::kLanes[t].w[16],
                  p3 = W::kLanes[t].w[24];
    if constexpr (p1 == p0 + 1 && p2 == p0 + 2 && p3 == p0 + 3) {
        _mm512_storeu_si512(v + 16 * p0, x);
    } else if constexpr (p1 == p0 + 1 && p3 == p2 + 1) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + 16 * p0), _mm512_castsi512_si256(x));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + 16 * p2),
                            _mm512_extracti64x4_epi64(x, 1));
    } else {
        _mm_store_si128(reinterpret_cast<__m128i*>(v + 16 * p0), _mm512_castsi512_si128(x));
        _mm_store_si128(reinterpret_cast<__m128i*>(v + 16 * p1), _mm512_extracti32x4_epi32(x, 1));
        _mm_store_si128(reinterpret_cast<__m128i*>(v + 16 * p2), _mm512_extracti32x4_epi32(x, 2));
        _mm_store_si128(reinterpret_cast<__m128i*>(v + 16 * p3), _mm512_extracti32x4_epi32(x, 3));
    }
}

// One row's block into v[256] (natural order) and l[16]; returns the block's float scale.
template <typename T, typename W>
float ik_tile_row(const W& decoder, const typename T::Block& b, int8_t* v, int32_t* l) {
    Decoded d;
    decoder.decode(b, d);
    _mm512_store_si512(l, _mm512_cvtepi8_epi32(T::scales(b)));
    // Byte j: e_j * shift - offset, in every 128-bit lane.
    const __m128i per =
        _mm_mask_blend_epi8(__mmask16(T::extra16(b)), _mm_set1_epi8(char(-T::kOffset)),
                            _mm_set1_epi8(char(T::kShift - T::kOffset)));
    const __m512i shift = _mm512_broadcast_i32x4(per);
    const __m512i zero = _mm512_setzero_si512();
    __m512i x[4];
    for (int t = 0; t < 4; ++t) {
        x[t] = d.u[t];
        if constexpr (W::kSigned) x[t] = _mm512_mask_sub_epi8(x[t], d.neg[t], zero, x[t]);
        x[t] = _mm512_add_epi8(x[t], _mm512_shuffle_epi8(shift, load(PieceSubBlocks<W>::idx[t])));
    }
    store_pieces<W, 0>(v, x[0]);
    store_pieces<W, 1>(v, x[1]);
    store_pieces<W, 2>(v, x[2]);
    store_pieces<W, 3>(v, x[3]);
    return T::block_scale(b);
}

// The types with a scale per 32 values (each written twice).
template <typename T>
constexpr bool kScalesPer32 = std::is_base_of_v<RowScaledF16, T> ||
                              std::is_base_of_v<RowScaledF32, T> || std::is_same_v<T, Iq4XsT>;

template <typename T, typename W>
void ik_tile_decode(int64_t blocks, const void* w, int64_t row_stride, int rows, WeightTile& tile) {
    const W decoder;
    decode_tile<typename T::Block, T::kMeta, kScalesPer32<T>>(
        blocks, w, row_stride, rows, tile, [](const uint8_t* p) { return T::row_scale(p); },
        [&](const typename T::Block& b, int8_t* v, int32_t* l) {
            return ik_tile_row<T, W>(decoder, b, v, l);
        });
}

template <int C>
void iq2_k_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Iq2K, Planes2<Iq2K>, C>(blocks, w, act, out);
}
template <int C>
void iq3_k_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Iq3K, Planes3<Iq3K>, C>(blocks, w, act, out);
}
template <int C>
void iq4_k_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Iq4K, Iq4Wide, C>(blocks, w, act, out);
}
template <int C>
void iq5_k_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Iq5K, Iq5Wide, C>(blocks, w, act, out);
}
template <int C>
void iq6_k_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Iq6K, Iq6Wide, C>(blocks, w, act, out);
}
template <int C>
void iq2_ks_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Iq2Ks, Planes2<Iq2Ks>, C>(blocks, w, act, out);
}
template <int C>
void iq3_ks_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Iq3Ks, Planes3<Iq3Ks>, C>(blocks, w, act, out);
}

template <int C>
void iq4_ks_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Iq4KsT, Iq4Wide, C>(blocks, w, act, out);
}
template <int C>
void iq5_ks_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Iq5KsT, Iq5Wide, C>(blocks, w, act, out);
}
template <int C>
void iq4_kss_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Iq4KssT, Iq4KssWide, C>(blocks, w, act, out);
}
template <int C>
void q3_K_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Q3KT, Planes3<Q3KT, false>, C>(blocks, w, act, out);
}
template <int C>
void iq4_xs_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Iq4XsT, Iq4Wide, C>(blocks, w, act, out);
}
template <int C>
void iq2_kl_wide_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_wide_cols<Iq2KlT, Iq2KlWide, C>(blocks, w, act, out);
}

SY_CPU_DEFINE_VEC_DOT(iq2_k_wide)
SY_CPU_DEFINE_VEC_DOT(iq3_k_wide)
SY_CPU_DEFINE_VEC_DOT(iq4_k_wide)
SY_CPU_DEFINE_VEC_DOT(iq5_k_wide)
SY_CPU_DEFINE_VEC_DOT(iq6_k_wide)
SY_CPU_DEFINE_VEC_DOT(iq2_ks_wide)
SY_CPU_DEFINE_VEC_DOT(iq3_ks_wide)
SY_CPU_DEFINE_VEC_DOT(iq4_ks_wide)
SY_CPU_DEFINE_VEC_DOT(iq5_ks_wide)
SY_CPU_DEFINE_VEC_DOT(iq4_kss_wide)
SY_CPU_DEFINE_VEC_DOT(iq2_kl_wide)
SY_CPU_DEFINE_VEC_DOT(iq4_xs_wide)
SY_CPU_DEFINE_VEC_DOT(q3_K_wide)

// The kernel `dot` on Q8_K activations in F's order, with the tile path of traits T, decoder W.
template <typename T, typename W, QuantizeActFn F>
QuantKernel wide(VecDotFn dot) {
    return with_tile({dot, F, 256, 256, int64_t(sizeof(sy_block_q8_K))}, ik_tile_decode<T, W>);
}

}  // namespace

QuantKernel wide_ikquant_kernel(int32_t weight_type) {
    constexpr QuantizeActFn planes = quantize_act_q8_K_q2k, nibbles = quantize_act_q8_K_nibbles,
                            quarters = quantize_act_q8_K_quarters, natural = quantize_act_q8_K_row;
    switch (weight_type) {
        case SY_TYPE_IQ2_K: return wide<Iq2K, Planes2<Iq2K>, planes>(vec_dot_iq2_k_wide);
        case SY_TYPE_IQ3_K: return wide<Iq3K, Planes3<Iq3K>, planes>(vec_dot_iq3_k_wide);
        case SY_TYPE_IQ4_K: return wide<Iq4K, Iq4Wide, quarters>(vec_dot_iq4_k_wide);
        case SY_TYPE_IQ5_K: return wide<Iq5K, Iq5Wide, nibbles>(vec_dot_iq5_k_wide);
        case SY_TYPE_IQ6_K: return wide<Iq6K, Iq6Wide, nibbles>(vec_dot_iq6_k_wide);
        case SY_TYPE_IQ2_KS: return wide<Iq2Ks, Planes2<Iq2Ks>, planes>(vec_dot_iq2_ks_wide);
        case SY_TYPE_IQ3_KS: return wide<Iq3Ks, Planes3<Iq3Ks>, planes>(vec_dot_iq3_ks_wide);
        case SY_TYPE_IQ4_KS: return wide<Iq4KsT, Iq4Wide, quarters>(vec_dot_iq4_ks_wide);
        case SY_TYPE_IQ5_KS: return wide<Iq5KsT, Iq5Wide, nibbles>(vec_dot_iq5_ks_wide);
        case SY_TYPE_Q3_K: return wide<Q3KT, Planes3<Q3KT, false>, planes>(vec_dot_q3_K_wide);
        case SY_TYPE_IQ4_XS: return wide<Iq4XsT, Iq4Wide, quarters>(vec_dot_iq4_xs_wide);
        case SY_TYPE_IQ4_KSS: return wide<Iq4KssT, Iq4KssWide, quarters>(vec_dot_iq4_kss_wide);
        case SY_TYPE_IQ2_KL: return wide<Iq2KlT, Iq2KlWide, natural>(vec_dot_iq2_kl_wide);
        default: return {nullptr, nullptr, 0, 0, 0};
    }
}

#else

QuantKernel wide_ikquant_kernel(int32_t) {
    return {nullptr, nullptr, 0, 0, 0};
}

#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
