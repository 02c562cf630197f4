// The block traits of ik_llama.cpp's IQ2_K ... IQ6_K, IQ2_KS and IQ3_KS for the cpu plugin's dot
// products (vec_dot_ikquants.cpp, 256-bit; vec_dot_ikquants512.cpp, AVX-512): each type's block,
// row scale, block scale, sub-block scales, `extra` bits and 32-value chunk decoder.
//
// IQ*_K: each 16-value sub-block s has an integer scale l_s and an `extra` bit e_s that moves it
// to the shifted half of the value table, which is the base half plus a constant delta. So
//   sum_k l_s (base[idx_k] + delta e_s) a_k = sum_k l_s base[idx_k] a_k + delta sum_s l_s e_s
//   bsum_s
// with bsum_s the activations' sum over the sub-block (Q8_K keeps it): the vector part looks the
// indices up in the base half (byte shuffles), the shift costs 16 integer products per 256 values.
#pragma once

#include "quant/int8_simd.hpp"
#include "quant/quant_kernels.hpp"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {
namespace {

using namespace i8;

// The base halves plus an offset that makes them unsigned, padded to the 16 entries of a shuffle:
// IQ2_K's -31 .. 17 + 31, IQ3_K's -63 .. 47 + 63. Unsigned weights multiply the activations
// without the two sign instructions per chunk of signed ones (pairs stay below 2^15: 2 * 110 *
// 127); the offset's share, -offset * l_s * bsum_s, joins the shifted half's in one multiply-add.
constexpr int kIq2Offset = 31, kIq3Offset = 63;
constexpr int8_t kIq2Base[16] = {0, 18, 32, 48};
constexpr int8_t kIq3Base[16] = {0, 23, 40, 53, 64, 76, 91, 110};

// The 32 values of chunk c (values 32c .. 32c + 31, sub-blocks 2c and 2c + 1) as base-table
// entries (plus the type's offset), per type.
template <typename Block>
inline I8x32 iq2_k_chunk(const Block& b, int c) {
    const I8x32 idx = and8(shr8(load32(b.qs + 32 * (c / 4)), 2 * (c % 4)), 3);
    return lut16(kIq2Base, idx);
}
template <typename Block>
inline I8x32 iq3_k_chunk(const Block& b, int c) {
    const I8x32 lo = and8(shr8(load32(b.qs + 32 * (c / 4)), 2 * (c % 4)), 3);
    const I8x32 hi = shl8(plane1(b.qh, c), 2);
    return lut16(kIq3Base, or8(lo, hi));
}
inline I8x32 iq4_k_chunk(const sy_block_iq4_k& b, int c) {
    return lut16(sy_iq4k_values, nibbles16(b.qs + 16 * c));
}
inline I8x32 iq5_k_chunk(const sy_block_iq5_k& b, int c) {
    const I8x32 low = nibbles64(b.qs, c);
    const I8x32 high = mask_of(plane1(b.qh, c));
    return select8(high, lut16(sy_iq5nl_values, low), lut16(sy_iq5nl_values + 16, low));
}
inline I8x32 iq6_k_chunk(const sy_block_iq6_k& b, int c) {
    const I8x32 low = nibbles64(b.qs, c);
    const I8x32 high = and8(shr8(load32(b.qh + 32 * (c / 4)), 2 * (c % 4)), 3);
    const I8x32 bit0 = mask_of(and8(high, 1)), bit1 = mask_of(shr8(high, 1));
    const I8x32 v01 = select8(bit0, lut16(sy_iq6nl_values, low), lut16(sy_iq6nl_values + 16, low));
    const I8x32 v23 =
        select8(bit0, lut16(sy_iq6nl_values + 32, low), lut16(sy_iq6nl_values + 48, low));
    return select8(bit1, v01, v23);
}

inline int scale6(const uint8_t* scales_h, const uint8_t* scales_l, int s) {
    return (((scales_l[s / 2] >> 4 * (s % 2)) & 0xF) |
            (((scales_h[s / 4] >> 2 * (s % 4)) & 3) << 4)) -
           32;
}

#if defined(SY_CPU_INT8_AVX2)
// The 16 sub-block scales of a block as int8 lanes, decoded in vector registers: unpacking them
// one by one in scalar code cost as much as the block's products.
// 16 4-bit fields, two per byte, low nibble first: field s in byte s.
inline __m128i fields4(const uint8_t* p) {
    const __m128i x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    const __m128i m = _mm_set1_epi8(0x0F);
    return _mm_unpacklo_epi8(_mm_and_si128(x, m), _mm_and_si128(_mm_srli_epi16(x, 4), m));
}
// 16 2-bit fields, four per byte, lowest first: field s in byte s. A 16-bit shift by k moves
// bits of the next byte only to bit 8 - k >= 2 and up, which the mask drops.
inline __m128i fields2(const uint8_t* p) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    const __m128i v = _mm_cvtsi32_si128(int(w));
    const __m128i a = _mm_unpacklo_epi8(v, _mm_srli_epi16(v, 2));
    const __m128i b = _mm_unpacklo_epi8(_mm_srli_epi16(v, 4), _mm_srli_epi16(v, 6));
    return _mm_and_si128(_mm_unpacklo_epi16(a, b), _mm_set1_epi8(3));
}
// IQ4_K's and IQ5_K's 6-bit scales minus 32.
inline __m128i scales6(const uint8_t* scales_h, const uint8_t* scales_l) {
    const __m128i v = _mm_or_si128(fields4(scales_l), _mm_slli_epi16(fields2(scales_h), 4));
    return _mm_sub_epi8(v, _mm_set1_epi8(32));
}
#endif

// Per type: its block, the bytes of row scale in front of the blocks (kMeta) and that scale, the
// block's scale, the integer scale of 16-value sub-block s, the sub-blocks on the shifted table
// half (bit s of extra16), its chunk decoder, its table's shift; with AVX2 also all 16 scales at
// once (scales). The IQ*_K types have a scale per block and none per row.
struct BlockScaled {
    static constexpr int kMeta = 0;
    static float row_scale(const void*) { return 1.0f; }
};
struct Iq2K : BlockScaled {
    using Block = sy_block_iq2_k;
    static constexpr int kShift = SY_IQ2NL_SHIFT, kOffset = kIq2Offset;
    static float block_scale(const Block& b) { return h2f(b.d); }
    static unsigned extra16(const Block& b) { return b.extra; }
    static int scale(const Block& b, int s) { return ((b.scales[s / 2] >> 4 * (s % 2)) & 0xF) - 8; }
    static I8x32 chunk(const Block& b, int c) { return iq2_k_chunk(b, c); }
#if defined(SY_CPU_INT8_AVX2)
    static __m128i scales(const Block& b) {
        return _mm_sub_epi8(fields4(b.scales), _mm_set1_epi8(8));
    }
#endif
};
struct Iq3K : BlockScaled {
    using Block = sy_block_iq3_k;
    static constexpr int kShift = SY_IQ3NL_SHIFT, kOffset = kIq3Offset;
    static float block_scale(const Block& b) { return h2f(b.d); }
    static unsigned extra16(const Block& b) { return b.extra; }
    static int scale(const Block& b, int s) {
        const int m = 2 * ((b.scales_l[s / 2] >> 4 * (s % 2)) & 0xF) + 1;
        return (b.scales_h >> s) & 1 ? -m : m;
    }
    static I8x32 chunk(const Block& b, int c) { return iq3_k_chunk(b, c); }
#if defined(SY_CPU_INT8_AVX2)
    static __m128i scales(const Block& b) {
        const __m128i m =
            _mm_add_epi8(_mm_add_epi8(fields4(b.scales_l), fields4(b.scales_l)), _mm_set1_epi8(1));
        // Byte s: bit s of scales_h, as 0 or -1; m ^ -1 - -1 = -m.
        const __m128i h =
            _mm_shuffle_epi8(_mm_cvtsi32_si128(b.scales_h),
                             _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
        const __m128i bit =
            _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
        const __m128i neg = _mm_cmpeq_epi8(_mm_and_si128(h, bit), bit);
        return _mm_sub_epi8(_mm_xor_si128(m, neg), neg);
    }
#endif
};
struct Iq4K : BlockScaled {
    using Block = sy_block_iq4_k;
    static constexpr int kShift = SY_IQ4K_SHIFT, kOffset = 0;
    static float block_scale(const Block& b) { return h2f(b.d); }
    static unsigned extra16(const Block& b) { return b.extra; }
    static int scale(const Block& b, int s) { return scale6(b.scales_h, b.scales_l, s); }
    static I8x32 chunk(const Block& b, int c) { return iq4_k_chunk(b, c); }
#if defined(SY_CPU_INT8_AVX2)
    static __m128i scales(const Block& b) {
        return scales6(b.scales_h, b.scales_l);
    }
#endif
};
struct Iq5K : BlockScaled {
    using Block = sy_block_iq5_k;
    static constexpr int kShift = SY_IQ5NL_SHIFT, kOffset = 0;
    static float block_scale(const Block& b) { return h2f(b.d); }
    static unsigned extra16(const Block& b) { return b.extra; }
    static int scale(const Block& b, int s) { return scale6(b.scales_h, b.scales_l, s); }
    static I8x32 chunk(const Block& b, int c) { return iq5_k_chunk(b, c); }
#if defined(SY_CPU_INT8_AVX2)
    static __m128i scales(const Block& b) {
        return scales6(b.scales_h, b.scales_l);
    }
#endif
};
struct Iq6K : BlockScaled {
    using Block = sy_block_iq6_k;
    static constexpr int kShift = SY_IQ6NL_SHIFT, kOffset = 0;
    static float block_scale(const Block& b) { return h2f(b.d); }
    static unsigned extra16(const Block& b) { return b.extra; }
    static int scale(const Block& b, int s) { return b.scales[s]; }
    static I8x32 chunk(const Block& b, int c) { return iq6_k_chunk(b, c); }
#if defined(SY_CPU_INT8_AVX2)
    static __m128i scales(const Block& b) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    }
#endif
};

// Mainline Q3_K on the same kernel: IQ3_K's bit planes (hmask for qh) whose 3-bit index minus 4
// is the value (no table: the 4 is the offset), and 16 6-bit scales minus 32 packed in 12 bytes:
// scale j's low 4 bits are the low (j < 8) or high nibble of byte j % 8, its high 2 bits are
// bits 2 (j / 4) of byte 8 + j % 4. As four 32-bit words of four scales each:
inline void q3_K_scale_words(const uint8_t* packed, uint32_t (&w)[4]) {
    uint32_t p[3];
    std::memcpy(p, packed, 12);
    const uint32_t low2 = 0x03030303, low4 = 0x0F0F0F0F;
    w[0] = (p[0] & low4) | (p[2] & low2) << 4;
    w[1] = (p[1] & low4) | ((p[2] >> 2) & low2) << 4;
    w[2] = ((p[0] >> 4) & low4) | ((p[2] >> 4) & low2) << 4;
    w[3] = ((p[1] >> 4) & low4) | ((p[2] >> 6) & low2) << 4;
}
struct Q3K : BlockScaled {
    using Block = sy_block_q3_K;
    static constexpr int kShift = 0, kOffset = 4;
    static float block_scale(const Block& b) { return h2f(b.d); }
    static unsigned extra16(const Block&) { return 0; }
    static int scale(const Block& b, int s) {
        uint32_t w[4];
        q3_K_scale_words(b.scales, w);
        return int((w[s / 4] >> 8 * (s % 4)) & 0xFF) - 32;
    }
    static I8x32 chunk(const Block& b, int c) {
        const I8x32 low = and8(shr8(load32(b.qs + 32 * (c / 4)), 2 * (c % 4)), 3);
        return or8(low, shl8(plane1(b.hmask, c), 2));
    }
#if defined(SY_CPU_INT8_AVX2)
    static __m128i scales(const Block& b) {
        uint32_t w[4];
        q3_K_scale_words(b.scales, w);
        return _mm_sub_epi8(_mm_setr_epi32(int(w[0]), int(w[1]), int(w[2]), int(w[3])),
                            _mm_set1_epi8(32));
    }
#endif
};

// IQ2_KS and IQ3_KS: IQ2_K's and IQ3_K's tables and index planes, with one integer scale and one
// table half per 32 values and an f16 scale per row instead of per block. As 16-value
// sub-blocks: sub-block s has chunk s / 2's scale and half.
struct RowScaledF16 {
    static constexpr int kMeta = 2;
    static float row_scale(const void* w) {
        uint16_t h;
        std::memcpy(&h, w, 2);
        return h2f(h);
    }
    template <typename Block>
    static float block_scale(const Block&) {
        return 1.0f;
    }
    // Bit c of the 8 bits to bits 2c and 2c + 1.
    static unsigned doubled(unsigned bits) {
        unsigned x = bits & 0xFF;
        x = (x | x << 4) & 0x0F0F;
        x = (x | x << 2) & 0x3333;
        x = (x | x << 1) & 0x5555;
        return x | x << 1;
    }
#if defined(SY_CPU_INT8_AVX2)
    // Byte c: 16 where bit c of bits is set, else 0.
    static __m128i bit4_of(unsigned bits) {
        const __m128i pow2 = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 0, 0, 0, 0, 0, 0, 0, 0);
        const __m128i on = _mm_cmpeq_epi8(_mm_and_si128(_mm_set1_epi8(char(bits)), pow2), pow2);
        return _mm_and_si128(on, _mm_set1_epi8(16));
    }
    // The 8 chunk scales (bytes 0-7) spread over the 16 sub-blocks, minus 16.
    static __m128i spread(__m128i per_chunk) {
        return _mm_sub_epi8(_mm_unpacklo_epi8(per_chunk, per_chunk), _mm_set1_epi8(16));
    }
#endif
};
struct Iq2Ks : RowScaledF16 {
    using Block = sy_block_iq2_ks;
    static constexpr int kShift = SY_IQ2NL_SHIFT, kOffset = kIq2Offset;
    static unsigned extra16(const Block& b) { return doubled(b.extra); }
    static int scale(const Block& b, int s) {
        const int c = s / 2;
        return (((b.scales[c / 2] >> 4 * (c % 2)) & 0xF) | ((b.extra >> (8 + c)) & 1) << 4) - 16;
    }
    static I8x32 chunk(const Block& b, int c) { return iq2_k_chunk(b, c); }
#if defined(SY_CPU_INT8_AVX2)
    static __m128i scales(const Block& b) {
        // fields4 reads 8 bytes from scales: its 4 and 4 of qs, whose fields land in bytes 8-15.
        return spread(_mm_or_si128(fields4(b.scales), bit4_of(b.extra >> 8)));
    }
#endif
};
struct Iq3Ks : RowScaledF16 {
    using Block = sy_block_iq3_ks;
    static constexpr int kShift = SY_IQ3NL_SHIFT, kOffset = kIq3Offset;
    static unsigned extra16(const Block& b) { return doubled(b.extra >> 8); }
    static int scale(const Block& b, int s) {
        const int c = s / 2;
        return (((b.scales[c % 4] >> 4 * (c / 4)) & 0xF) | ((b.extra >> c) & 1) << 4) - 16;
    }
    static I8x32 chunk(const Block& b, int c) { return iq3_k_chunk(b, c); }
#if defined(SY_CPU_INT8_AVX2)
    static __m128i scales(const Block& b) {
        // Chunks 0-3: the low nibbles of scales[0..3], chunks 4-7 their high nibbles.
        const __m128i low4 = nibbles_low_high(b.scales);
        return spread(_mm_or_si128(low4, bit4_of(b.extra)));
    }
#endif
};

}  // namespace
}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
