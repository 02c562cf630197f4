// GGUF weight blocks decoded on the device, 32 values at a time (layouts: quant_blocks.h).
//
// Every supported type reduces to one form per 32-value sub-block: int8 quants q[0..31] (packed
// four to an int), a constant offset o of the type (BlockTraits::kOffset: 8 for Q4_0, 16 for
// Q5_0, 32 for Q6_K, else 0) and, for each half of 16 values, a scale d and an additive offset m:
//     value[e] = d[e / 16] * (q[e] - o) + m[e / 16].
// The dot products take o out of the loop: sum (q - o) x = sum q x - o sum x, with the sums of
// the activation quants computed once, when the activations are quantized.
// The 32-blocks (Q4_0 ... IQ4_NL) have one d for both halves; Q2_K, Q3_K and Q6_K carry a scale
// per 16 values; Q4_1, Q5_1, Q2_K, Q4_K and Q5_K have offsets (the K-quants' "- dmin * min" is
// m = -(dmin * min)). The codebook i-quants (IQ2_XXS ... IQ1_M) expand their grid entries to
// signed int8 values; IQ2_XS, IQ2_S and IQ1_M carry a scale per 16 values, and IQ1_S/IQ1_M's
// shift by delta = +-1/8 is folded into the quants (see iq1_group). Dot products then run on int8
// with __dp4a against activations quantized to ActRows, and dequantization forms each value with
// the same float operations, in the same order, as switchyard_quants (so GET_ROWS to F32 is
// bit-exact).
//
// Block fields are read as aligned 32-bit words (load_words): every block size and field offset
// is even, but not every one is a multiple of 4, so a field at an address 2 mod 4 is assembled
// from the words around it with funnel shifts (one load per word instead of two 16-bit ones).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "quant/iquant_grids.cuh"
#include "switchyard/plugin.h"

namespace sy::cuda {

struct Sub32 {
    int q[8];  // q[j] holds values 4j .. 4j+3, one int8 each (little-endian byte order)
    float d[2];
    float m[2];
};

// Activation rows quantized per 32 values (sub-block s of a row: x[32 s + e] ~= d[s] * q[e]),
// laid out for wide, coalesced loads by a warp whose lanes take 32 consecutive sub-blocks: the
// quants of sub-block s of row r are two 16-byte halves at
//     q + r * row_bytes() + (s / 32) * 1024 + half * 512 + (s % 32) * 16,
// so each half of a warp step is one contiguous 512-byte load; the scale and the sums of each
// half's quants are a separate array of 16-byte ActMeta, meta[r * subs + s].
struct alignas(16) ActMeta {
    float d;
    int sum[2];  // sum of q[0..15], of q[16..31]
    int unused;
};

struct ActRows {
    int8_t* q;
    ActMeta* meta;
    int64_t subs;  // sub-blocks per row (ne0 / 32)

    __host__ __device__ int64_t row_bytes() const { return (subs + 31) / 32 * 1024; }
    // Bytes of the quants of `rows` rows; the ActMeta array follows them.
    static int64_t quant_bytes(int64_t rows, int64_t subs) {
        return rows * ((subs + 31) / 32 * 1024);
    }
    static int64_t bytes(int64_t rows, int64_t subs) {
        return quant_bytes(rows, subs) + rows * subs * int64_t(sizeof(ActMeta));
    }
};

// One quantized activation sub-block, as dot_sub takes it.
struct ActSub {
    int q[8];
    ActMeta meta;
};

__device__ inline ActSub load_act(const ActRows& a, int64_t row, int64_t s) {
    const int8_t* at = a.q + row * a.row_bytes() + (s / 32) * 1024 + (s % 32) * 16;
    const int4 lo = __ldg(reinterpret_cast<const int4*>(at));
    const int4 hi = __ldg(reinterpret_cast<const int4*>(at + 512));
    const int4 m = __ldg(reinterpret_cast<const int4*>(a.meta + row * a.subs + s));
    return ActSub{{lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w},
                  {__int_as_float(m.x), {m.y, m.z}, m.w}};
}

template <int Type>
struct BlockTraits;
template <>
struct BlockTraits<SY_TYPE_Q4_0> {
    static constexpr int kValues = 32, kBytes = 18;
    static constexpr int kOffset = 8;
    static constexpr bool kHasMin = false;
};
template <>
struct BlockTraits<SY_TYPE_Q4_1> {
    static constexpr int kValues = 32, kBytes = 20;
    static constexpr int kOffset = 0;
    static constexpr bool kHasMin = true;
};
template <>
struct BlockTraits<SY_TYPE_Q5_0> {
    static constexpr int kValues = 32, kBytes = 22;
    static constexpr int kOffset = 16;
    static constexpr bool kHasMin = false;
};
template <>
struct BlockTraits<SY_TYPE_Q5_1> {
    static constexpr int kValues = 32, kBytes = 24;
    static constexpr int kOffset = 0;
    static constexpr bool kHasMin = true;
};
template <>
struct BlockTraits<SY_TYPE_Q8_0> {
    static constexpr int kValues = 32, kBytes = 34;
    static constexpr int kOffset = 0;
    static constexpr bool kHasMin = false;
};
template <>
struct BlockTraits<SY_TYPE_IQ4_NL> {
    static constexpr int kValues = 32, kBytes = 18;
    static constexpr int kOffset = 0;
    static constexpr bool kHasMin = false;
};
template <>
struct BlockTraits<SY_TYPE_Q2_K> {
    static constexpr int kValues = 256, kBytes = 84;
    static constexpr int kOffset = 0;
    static constexpr bool kHasMin = true;
};
template <>
struct BlockTraits<SY_TYPE_Q3_K> {
    static constexpr int kValues = 256, kBytes = 110;
    static constexpr int kOffset = 0;
    static constexpr bool kHasMin = false;
};
template <>
struct BlockTraits<SY_TYPE_Q4_K> {
    static constexpr int kValues = 256, kBytes = 144;
    static constexpr int kOffset = 0;
    static constexpr bool kHasMin = true;
};
template <>
struct BlockTraits<SY_TYPE_Q5_K> {
    static constexpr int kValues = 256, kBytes = 176;
    static constexpr int kOffset = 0;
    static constexpr bool kHasMin = true;
};
template <>
struct BlockTraits<SY_TYPE_Q6_K> {
    static constexpr int kValues = 256, kBytes = 210;
    static constexpr int kOffset = 32;
    static constexpr bool kHasMin = false;
};
template <>
struct BlockTraits<SY_TYPE_IQ4_XS> {
    static constexpr int kValues = 256, kBytes = 136;
    static constexpr int kOffset = 0;
    static constexpr bool kHasMin = false;
};
// The codebook i-quants: 256 values, no offset, no minimum (block sizes: quant_blocks.h).
template <int Bytes>
struct CodebookTraits {
    static constexpr int kValues = 256, kBytes = Bytes;
    static constexpr int kOffset = 0;
    static constexpr bool kHasMin = false;
};
template <>
struct BlockTraits<SY_TYPE_IQ2_XXS> : CodebookTraits<66> {};
template <>
struct BlockTraits<SY_TYPE_IQ2_XS> : CodebookTraits<74> {};
template <>
struct BlockTraits<SY_TYPE_IQ2_S> : CodebookTraits<82> {};
template <>
struct BlockTraits<SY_TYPE_IQ3_XXS> : CodebookTraits<98> {};
template <>
struct BlockTraits<SY_TYPE_IQ3_S> : CodebookTraits<110> {};
template <>
struct BlockTraits<SY_TYPE_IQ1_S> : CodebookTraits<50> {};
template <>
struct BlockTraits<SY_TYPE_IQ1_M> : CodebookTraits<56> {};

// The N little-endian 32-bit words at p (an even address): aligned word loads, shifted into
// place when p is 2 mod 4. The word after the last is read only then, and only its low half is
// used (its high half lies in the same aligned word, so no load crosses an allocation's end).
template <int N>
__device__ inline void load_words(const uint8_t* p, uint32_t (&w)[N]) {
    const auto at = reinterpret_cast<uintptr_t>(p);
    const auto* base = reinterpret_cast<const uint32_t*>(at & ~uintptr_t(3));
    const uint32_t shift = uint32_t(at & 2) * 8;
    uint32_t raw[N + 1];
#pragma unroll
    for (int i = 0; i < N; ++i) raw[i] = base[i];
    raw[N] = shift != 0 ? base[N] : 0u;
#pragma unroll
    for (int i = 0; i < N; ++i) w[i] = __funnelshift_r(raw[i], raw[i + 1], shift);
}

__device__ inline float load_half(const uint8_t* p) {
    return __half2float(*reinterpret_cast<const __half*>(p));
}

// Bit b (0..3) of x moved to bit 4 of byte b.
__device__ inline uint32_t spread_bit4(uint32_t x) {
    return ((x & 1u) | ((x & 2u) << 7) | ((x & 4u) << 14) | ((x & 8u) << 21)) << 4;
}

// Each byte of `nibbles` (0..15) mapped through the IQ4_NL table, with two byte permutes on the
// table held in registers (a table in constant or local memory serializes the lanes' lookups).
__device__ inline int iq4_lookup(uint32_t nibbles) {
    // {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113} as bytes.
    constexpr uint32_t kT0 = 0xBFAD9881u, kT1 = 0xF6EADDCFu, kT2 = 0x26190D01u, kT3 = 0x71594535u;
    const uint32_t low3 = nibbles & 0x07070707u;
    const uint32_t t = low3 | (low3 >> 4);
    const uint32_t selector = (t & 0xFFu) | ((t >> 8) & 0xFF00u);
    const uint32_t lo = __byte_perm(kT0, kT1, selector);
    const uint32_t hi = __byte_perm(kT2, kT3, selector);
    const uint32_t take_hi = ((nibbles >> 3) & 0x01010101u) * 0xFFu;
    return int((hi & take_hi) | (lo & ~take_hi));
}

__device__ inline void set_scale(Sub32& s, float d, float m = 0.0f) {
    s.d[0] = s.d[1] = d;
    s.m[0] = s.m[1] = m;
}

// Sub-block `sub` (0 .. kValues/32 - 1) of the block at `b`.
template <int Type>
__device__ inline void decode(const uint8_t* b, int sub, Sub32& s);

template <>
__device__ inline void decode<SY_TYPE_Q8_0>(const uint8_t* b, int, Sub32& s) {
    uint32_t w[8];
    load_words(b + 2, w);
    for (int j = 0; j < 8; ++j) s.q[j] = int(w[j]);
    set_scale(s, load_half(b));
}

template <>
__device__ inline void decode<SY_TYPE_Q4_0>(const uint8_t* b, int, Sub32& s) {
    uint32_t qs[4];
    load_words(b + 2, qs);
    for (int j = 0; j < 4; ++j) {
        const uint32_t w = qs[j];
        s.q[j] = int(w & 0x0F0F0F0Fu);
        s.q[4 + j] = int((w >> 4) & 0x0F0F0F0Fu);
    }
    set_scale(s, load_half(b));
}

template <>
__device__ inline void decode<SY_TYPE_Q4_1>(const uint8_t* b, int, Sub32& s) {
    uint32_t qs[4];
    load_words(b + 4, qs);
    for (int j = 0; j < 4; ++j) {
        const uint32_t w = qs[j];
        s.q[j] = int(w & 0x0F0F0F0Fu);
        s.q[4 + j] = int((w >> 4) & 0x0F0F0F0Fu);
    }
    set_scale(s, load_half(b), load_half(b + 2));
}

template <>
__device__ inline void decode<SY_TYPE_Q5_0>(const uint8_t* b, int, Sub32& s) {
    uint32_t words[5];  // qh, then the quants
    load_words(b + 2, words);
    const uint32_t qh = words[0];
    for (int j = 0; j < 4; ++j) {
        const uint32_t w = words[1 + j];
        const uint32_t lo = (w & 0x0F0F0F0Fu) | spread_bit4((qh >> (4 * j)) & 0xF);
        const uint32_t hi = ((w >> 4) & 0x0F0F0F0Fu) | spread_bit4((qh >> (16 + 4 * j)) & 0xF);
        s.q[j] = int(lo);
        s.q[4 + j] = int(hi);
    }
    set_scale(s, load_half(b));
}

template <>
__device__ inline void decode<SY_TYPE_Q5_1>(const uint8_t* b, int, Sub32& s) {
    uint32_t words[5];  // qh, then the quants
    load_words(b + 4, words);
    const uint32_t qh = words[0];
    for (int j = 0; j < 4; ++j) {
        const uint32_t w = words[1 + j];
        s.q[j] = int((w & 0x0F0F0F0Fu) | spread_bit4((qh >> (4 * j)) & 0xF));
        s.q[4 + j] = int(((w >> 4) & 0x0F0F0F0Fu) | spread_bit4((qh >> (16 + 4 * j)) & 0xF));
    }
    set_scale(s, load_half(b), load_half(b + 2));
}

template <>
__device__ inline void decode<SY_TYPE_IQ4_NL>(const uint8_t* b, int, Sub32& s) {
    uint32_t qs[4];
    load_words(b + 2, qs);
    for (int j = 0; j < 4; ++j) {
        const uint32_t w = qs[j];
        s.q[j] = iq4_lookup(w & 0x0F0F0F0Fu);
        s.q[4 + j] = iq4_lookup((w >> 4) & 0x0F0F0F0Fu);
    }
    set_scale(s, load_half(b));
}

template <>
__device__ inline void decode<SY_TYPE_IQ4_XS>(const uint8_t* b, int sub, Sub32& s) {
    const float d = load_half(b);
    const uint32_t scales_h = *reinterpret_cast<const uint16_t*>(b + 2);
    const int ls =
        ((b[4 + sub / 2] >> (4 * (sub % 2))) & 0xF) | (((scales_h >> (2 * sub)) & 3) << 4);
    uint32_t qs[4];
    load_words(b + 8 + 16 * sub, qs);
    for (int j = 0; j < 4; ++j) {
        const uint32_t w = qs[j];
        s.q[j] = iq4_lookup(w & 0x0F0F0F0Fu);
        s.q[4 + j] = iq4_lookup((w >> 4) & 0x0F0F0F0Fu);
    }
    set_scale(s, __fmul_rn(d, float(ls - 32)));
}

// Q4_K / Q5_K: 6-bit scale and min of sub-block j from the 12 packed bytes.
__device__ inline void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

template <>
__device__ inline void decode<SY_TYPE_Q4_K>(const uint8_t* b, int sub, Sub32& s) {
    int sc, mn;
    scale_min_k4(sub, b + 4, sc, mn);
    uint32_t qs[8];
    load_words(b + 16 + 32 * (sub / 2), qs);
    const int shift = 4 * (sub % 2);
    for (int j = 0; j < 8; ++j) s.q[j] = int((qs[j] >> shift) & 0x0F0F0F0Fu);
    set_scale(s, __fmul_rn(load_half(b), float(sc)), -__fmul_rn(load_half(b + 2), float(mn)));
}

template <>
__device__ inline void decode<SY_TYPE_Q5_K>(const uint8_t* b, int sub, Sub32& s) {
    int sc, mn;
    scale_min_k4(sub, b + 4, sc, mn);
    uint32_t qh[8], qs[8];
    load_words(b + 16, qh);
    load_words(b + 48 + 32 * (sub / 2), qs);
    const int shift = 4 * (sub % 2);
    for (int j = 0; j < 8; ++j) {
        const uint32_t lo = (qs[j] >> shift) & 0x0F0F0F0Fu;
        const uint32_t hi = (qh[j] >> sub) & 0x01010101u;
        s.q[j] = int(lo | (hi << 4));
    }
    set_scale(s, __fmul_rn(load_half(b), float(sc)), -__fmul_rn(load_half(b + 2), float(mn)));
}

template <>
__device__ inline void decode<SY_TYPE_Q6_K>(const uint8_t* b, int sub, Sub32& s) {
    const int h = sub / 4, qq = sub % 4;
    uint32_t ql[8], qh[8];
    load_words(b + 64 * h + 32 * (qq & 1), ql);
    load_words(b + 128 + 32 * h, qh);
    const int shift = 4 * (qq >> 1);
    for (int j = 0; j < 8; ++j) {
        const uint32_t lo = (ql[j] >> shift) & 0x0F0F0F0Fu;
        const uint32_t hi = ((qh[j] >> (2 * qq)) & 0x03030303u) << 4;
        s.q[j] = int(lo | hi);
    }
    const float d = load_half(b + 208);
    const auto* scales = reinterpret_cast<const int8_t*>(b + 192 + 8 * h + 2 * qq);
    s.d[0] = __fmul_rn(d, float(scales[0]));
    s.d[1] = __fmul_rn(d, float(scales[1]));
    s.m[0] = s.m[1] = 0.0f;
}

template <>
__device__ inline void decode<SY_TYPE_Q2_K>(const uint8_t* b, int sub, Sub32& s) {
    const int n = sub / 4, shift = 2 * (sub % 4);
    uint32_t qs[8];
    load_words(b + 16 + 32 * n, qs);
    for (int j = 0; j < 8; ++j) s.q[j] = int((qs[j] >> shift) & 0x03030303u);
    const float d = load_half(b + 80), dmin = load_half(b + 82);
    for (int half = 0; half < 2; ++half) {
        const uint8_t sc = b[2 * sub + half];
        s.d[half] = __fmul_rn(d, float(sc & 0xF));
        s.m[half] = -__fmul_rn(dmin, float(sc >> 4));
    }
}

// Q3_K: scale j (0..15), 6 bits, biased by 32.
__device__ inline int q3_K_scale(const uint8_t* scales, int j) {
    const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
    return (low | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

template <>
__device__ inline void decode<SY_TYPE_Q3_K>(const uint8_t* b, int sub, Sub32& s) {
    const int n = sub / 4, j2 = sub % 4;
    uint32_t qs[8], hmask[8];
    load_words(b + 32 + 32 * n, qs);
    load_words(b, hmask);
    for (int j = 0; j < 8; ++j) {
        const uint32_t lo = (qs[j] >> (2 * j2)) & 0x03030303u;
        const uint32_t hm = (hmask[j] >> (4 * n + j2)) & 0x01010101u;
        s.q[j] = int(__vsub4(lo, (hm ^ 0x01010101u) << 2));
    }
    const float d = load_half(b + 108);
    s.d[0] = __fmul_rn(d, float(q3_K_scale(b + 96, 2 * sub)));
    s.d[1] = __fmul_rn(d, float(q3_K_scale(b + 96, 2 * sub + 1)));
    s.m[0] = s.m[1] = 0.0f;
}

// ---- the codebook i-quants (layouts and formulas: quant_blocks.h, sdk/quants iquants_*.cpp) ----
// Each sub-block of 32 values is four groups of 8: group l fills q[2l] (values 8l .. 8l+3) and
// q[2l+1] (8l+4 .. 8l+7) from one 8-byte grid entry (IQ2_*, IQ1_*) or two 4-byte ones (IQ3_*).

// The bytes of v negated where bit k (k = 0..3) of `signs` is set: byte k of the mask is 0xFF
// there, and (v ^ 0xFF) - 0xFF = -v per byte.
__device__ inline int negate_bytes(uint32_t v, uint32_t signs) {
    const uint32_t mask = __vcmpne4(((signs & 0xFu) * 0x01010101u) & 0x08040201u, 0u);
    return int(__vsub4(v ^ mask, mask));
}

// Group l from its magnitudes (bytes of lo: values 0..3, of hi: 4..7) and 8 sign bits (bit k:
// value k negative).
__device__ inline void signed_group(Sub32& s, int l, uint32_t lo, uint32_t hi, uint32_t signs) {
    s.q[2 * l] = negate_bytes(lo, signs);
    s.q[2 * l + 1] = negate_bytes(hi, signs >> 4);
}

// IQ2_XXS, IQ2_XS, IQ3_XXS store 7 sign bits per group; the 8th makes the count of set bits
// even (ggml's ksigns_iq2xs[s7]).
__device__ inline uint32_t even_signs(uint32_t s7) {
    return s7 | ((__popc(s7) & 1u) << 7);
}

// d * (0.5 + ls) * unit (unit 1/4 for IQ2, 1/2 for IQ3_XXS), in switchyard_quants' order.
__device__ inline float half_step_scale(float d, uint32_t ls, float unit) {
    return __fmul_rn(__fmul_rn(d, __fadd_rn(0.5f, float(ls))), unit);
}

template <>
__device__ inline void decode<SY_TYPE_IQ2_XXS>(const uint8_t* b, int sub, Sub32& s) {
    uint32_t w[2];  // four 8-bit grid indices; four 7-bit sign indices and the scale (bits 28-31)
    load_words(b + 2 + 8 * sub, w);
    for (int l = 0; l < 4; ++l) {
        const uint64_t g = iq2xxs_grid((w[0] >> (8 * l)) & 0xFF);
        signed_group(s, l, uint32_t(g), uint32_t(g >> 32), even_signs((w[1] >> (7 * l)) & 0x7F));
    }
    set_scale(s, half_step_scale(load_half(b), w[1] >> 28, 0.25f));
}

template <>
__device__ inline void decode<SY_TYPE_IQ2_XS>(const uint8_t* b, int sub, Sub32& s) {
    uint32_t w[2];  // four u16: 9-bit grid index | 7-bit sign index << 9
    load_words(b + 2 + 8 * sub, w);
    for (int l = 0; l < 4; ++l) {
        const uint32_t q = (w[l / 2] >> (16 * (l % 2))) & 0xFFFF;
        const uint64_t g = iq2xs_grid(q & 511);
        signed_group(s, l, uint32_t(g), uint32_t(g >> 32), even_signs(q >> 9));
    }
    const float d = load_half(b);
    const uint32_t scales = b[66 + sub];
    s.d[0] = half_step_scale(d, scales & 0xF, 0.25f);
    s.d[1] = half_step_scale(d, scales >> 4, 0.25f);
    s.m[0] = s.m[1] = 0.0f;
}

template <>
__device__ inline void decode<SY_TYPE_IQ2_S>(const uint8_t* b, int sub, Sub32& s) {
    uint32_t qs[1], signs[1];  // low 8 bits of four grid indices; four sign bytes
    load_words(b + 2 + 4 * sub, qs);
    load_words(b + 34 + 4 * sub, signs);
    const uint32_t qh = b[66 + sub];  // 2 high index bits per group
    for (int l = 0; l < 4; ++l) {
        const uint32_t index = ((qs[0] >> (8 * l)) & 0xFF) | (((qh >> (2 * l)) & 3) << 8);
        const uint64_t g = iq2s_grid(index);
        signed_group(s, l, uint32_t(g), uint32_t(g >> 32), (signs[0] >> (8 * l)) & 0xFF);
    }
    const float d = load_half(b);
    const uint32_t scales = b[74 + sub];
    s.d[0] = half_step_scale(d, scales & 0xF, 0.25f);
    s.d[1] = half_step_scale(d, scales >> 4, 0.25f);
    s.m[0] = s.m[1] = 0.0f;
}

template <>
__device__ inline void decode<SY_TYPE_IQ3_XXS>(const uint8_t* b, int sub, Sub32& s) {
    uint32_t qs[2], aux[1];  // eight grid indices; four 7-bit sign indices and the scale
    load_words(b + 2 + 8 * sub, qs);
    load_words(b + 66 + 4 * sub, aux);
    for (int l = 0; l < 4; ++l) {
        const uint32_t pair = qs[l / 2] >> (16 * (l % 2));
        signed_group(s, l, iq3xxs_grid(pair & 0xFF), iq3xxs_grid((pair >> 8) & 0xFF),
                     even_signs((aux[0] >> (7 * l)) & 0x7F));
    }
    set_scale(s, half_step_scale(load_half(b), aux[0] >> 28, 0.5f));
}

template <>
__device__ inline void decode<SY_TYPE_IQ3_S>(const uint8_t* b, int sub, Sub32& s) {
    uint32_t qs[2], signs[1];  // low 8 bits of eight grid indices; four sign bytes
    load_words(b + 2 + 8 * sub, qs);
    load_words(b + 74 + 4 * sub, signs);
    const uint32_t qh = b[66 + sub];  // bit k: the 9th index bit of entry k
    for (int l = 0; l < 4; ++l) {
        const uint32_t pair = qs[l / 2] >> (16 * (l % 2));
        const uint32_t lo = (pair & 0xFF) | (((qh >> (2 * l)) & 1) << 8);
        const uint32_t hi = ((pair >> 8) & 0xFF) | (((qh >> (2 * l + 1)) & 1) << 8);
        signed_group(s, l, iq3s_grid(lo), iq3s_grid(hi), (signs[0] >> (8 * l)) & 0xFF);
    }
    const uint32_t ls = (b[106 + sub / 2] >> (4 * (sub % 2))) & 0xF;
    set_scale(s, __fmul_rn(load_half(b), float(1 + 2 * ls)));
}

// IQ1_S / IQ1_M: group l is dl * (grid + delta), grid bytes -1, 0, 1 and delta = +-1/8. It is
// stored as int8 8 * (grid + delta) = 8 grid +- 1 with the scale dl / 8: (dl / 8) * (8 g +- 1)
// is the same real number as dl * (g +- 1/8), both exact operands (dl = d * (2 ls + 1) has at
// most 15 significant bits, so dl / 8 is exact), rounded once either way.
__device__ inline void iq1_group(Sub32& s, int l, uint64_t g, bool negative_delta) {
    const uint32_t delta = negative_delta ? 0xFFFFFFFFu : 0x01010101u;  // -1 or +1 per byte
    s.q[2 * l] = int(__vadd4((uint32_t(g) << 3) & 0xF8F8F8F8u, delta));
    s.q[2 * l + 1] = int(__vadd4((uint32_t(g >> 32) << 3) & 0xF8F8F8F8u, delta));
}

// dl / 8, dl = d * (2 ls + 1) as switchyard_quants forms it.
__device__ inline float iq1_scale(float d, uint32_t ls) {
    return __fmul_rn(__fmul_rn(d, float(2 * ls + 1)), 0.125f);
}

template <>
__device__ inline void decode<SY_TYPE_IQ1_S>(const uint8_t* b, int sub, Sub32& s) {
    uint32_t qs[1];  // low 8 bits of four grid indices
    load_words(b + 2 + 4 * sub, qs);
    // 3 high index bits per group (bits 0-11), the scale (12-14), delta's sign (15)
    const uint32_t qh = *reinterpret_cast<const uint16_t*>(b + 34 + 2 * sub);
    for (int l = 0; l < 4; ++l) {
        const uint32_t index = ((qs[0] >> (8 * l)) & 0xFF) | (((qh >> (3 * l)) & 7) << 8);
        iq1_group(s, l, iq1s_grid(index), (qh & 0x8000) != 0);
    }
    set_scale(s, iq1_scale(load_half(b), (qh >> 12) & 7));
}

template <>
__device__ inline void decode<SY_TYPE_IQ1_M>(const uint8_t* b, int sub, Sub32& s) {
    uint32_t qs[1], sc[2];  // low 8 bits of four grid indices; the four u16 scale words
    load_words(b + 4 * sub, qs);
    load_words(b + 48, sc);
    // Per group a nibble: 3 high index bits and delta's sign (bit 3).
    const uint32_t qh = *reinterpret_cast<const uint16_t*>(b + 32 + 2 * sub);
    for (int l = 0; l < 4; ++l) {
        const uint32_t nibble = (qh >> (4 * l)) & 0xF;
        const uint32_t index = ((qs[0] >> (8 * l)) & 0xFF) | ((nibble & 7) << 8);
        iq1_group(s, l, iq1s_grid(index), (nibble & 8) != 0);
    }
    // The f16 super-block scale: the top nibbles of the four scale words, lowest first.
    const uint32_t d_bits = ((sc[0] >> 12) & 0x000F) | ((sc[0] >> 24) & 0x00F0) |
                            ((sc[1] >> 4) & 0x0F00) | ((sc[1] >> 16) & 0xF000);
    const float d = __half2float(__ushort_as_half(uint16_t(d_bits)));
    // Scale word sub / 2, 6 bits per sub-block (sub % 2): a 3-bit scale per 16 values.
    const uint32_t word = sc[sub / 4] >> (16 * ((sub / 2) % 2) + 6 * (sub % 2));
    s.d[0] = iq1_scale(d, word & 7);
    s.d[1] = iq1_scale(d, (word >> 3) & 7);
    s.m[0] = s.m[1] = 0.0f;
}

}  // namespace sy::cuda

#include "quant/ik_blocks.cuh"  // Q6_0, IQ2_K ... IQ6_K, IQ2_KS ... IQ2_KL

namespace sy::cuda {

// Sub-block s of a row: its block and the sub-block within it.
// The row-scaled types read their row's scale first; their blocks start after it.
template <int Type>
__device__ inline void decode_row_sub(const uint8_t* row, int64_t s, Sub32& out) {
    constexpr int kSubs = BlockTraits<Type>::kValues / 32;
    constexpr int kMeta = RowScale<Type>::kBytes;
    if constexpr (kMeta > 0) {
        decode_scaled<Type>(row + kMeta + (s / kSubs) * BlockTraits<Type>::kBytes, int(s % kSubs),
                            row_scale<Type>(row), out);
    } else {
        decode<Type>(row + (s / kSubs) * BlockTraits<Type>::kBytes, int(s % kSubs), out);
    }
}

// sum_e value[e] * x[e] for one sub-block against one activation sub-block.
template <int Type>
__device__ inline float dot_sub(const Sub32& w, const ActSub& x) {
    using T = BlockTraits<Type>;
    int lo = __dp4a(w.q[3], x.q[3],
                    __dp4a(w.q[2], x.q[2], __dp4a(w.q[1], x.q[1], __dp4a(w.q[0], x.q[0], 0))));
    int hi = __dp4a(w.q[7], x.q[7],
                    __dp4a(w.q[6], x.q[6], __dp4a(w.q[5], x.q[5], __dp4a(w.q[4], x.q[4], 0))));
    if constexpr (T::kOffset != 0) {
        lo -= T::kOffset * x.meta.sum[0];
        hi -= T::kOffset * x.meta.sum[1];
    }
    float r = w.d[0] * float(lo) + w.d[1] * float(hi);
    if constexpr (T::kHasMin) r += w.m[0] * float(x.meta.sum[0]) + w.m[1] * float(x.meta.sum[1]);
    return x.meta.d * r;
}

// Value e (0..31) of a decoded sub-block, with switchyard_quants' rounding (no contraction).
template <int Type>
__device__ inline float sub_value(const Sub32& s, int e) {
    const int q = int(int8_t(uint32_t(s.q[e / 4]) >> (8 * (e % 4)))) - BlockTraits<Type>::kOffset;
    const float v = __fmul_rn(s.d[e / 16], float(q));
    if constexpr (BlockTraits<Type>::kHasMin) return __fadd_rn(v, s.m[e / 16]);
    return v;
}

// Calls f(std::integral_constant<int, Type>{}) for a decodable block type; false for others.
template <typename F>
__host__ bool with_block_type(int32_t type, F&& f) {
    switch (type) {
        case SY_TYPE_Q4_0: f(std::integral_constant<int, SY_TYPE_Q4_0>{}); return true;
        case SY_TYPE_Q4_1: f(std::integral_constant<int, SY_TYPE_Q4_1>{}); return true;
        case SY_TYPE_Q5_0: f(std::integral_constant<int, SY_TYPE_Q5_0>{}); return true;
        case SY_TYPE_Q5_1: f(std::integral_constant<int, SY_TYPE_Q5_1>{}); return true;
        case SY_TYPE_Q8_0: f(std::integral_constant<int, SY_TYPE_Q8_0>{}); return true;
        case SY_TYPE_IQ4_NL: f(std::integral_constant<int, SY_TYPE_IQ4_NL>{}); return true;
        case SY_TYPE_Q2_K: f(std::integral_constant<int, SY_TYPE_Q2_K>{}); return true;
        case SY_TYPE_Q3_K: f(std::integral_constant<int, SY_TYPE_Q3_K>{}); return true;
        case SY_TYPE_Q4_K: f(std::integral_constant<int, SY_TYPE_Q4_K>{}); return true;
        case SY_TYPE_Q5_K: f(std::integral_constant<int, SY_TYPE_Q5_K>{}); return true;
        case SY_TYPE_Q6_K: f(std::integral_constant<int, SY_TYPE_Q6_K>{}); return true;
        case SY_TYPE_IQ4_XS: f(std::integral_constant<int, SY_TYPE_IQ4_XS>{}); return true;
        case SY_TYPE_IQ2_XXS: f(std::integral_constant<int, SY_TYPE_IQ2_XXS>{}); return true;
        case SY_TYPE_IQ2_XS: f(std::integral_constant<int, SY_TYPE_IQ2_XS>{}); return true;
        case SY_TYPE_IQ2_S: f(std::integral_constant<int, SY_TYPE_IQ2_S>{}); return true;
        case SY_TYPE_IQ3_XXS: f(std::integral_constant<int, SY_TYPE_IQ3_XXS>{}); return true;
        case SY_TYPE_IQ3_S: f(std::integral_constant<int, SY_TYPE_IQ3_S>{}); return true;
        case SY_TYPE_IQ1_S: f(std::integral_constant<int, SY_TYPE_IQ1_S>{}); return true;
        case SY_TYPE_IQ1_M: f(std::integral_constant<int, SY_TYPE_IQ1_M>{}); return true;
        case SY_TYPE_Q6_0: f(std::integral_constant<int, SY_TYPE_Q6_0>{}); return true;
        case SY_TYPE_IQ2_K: f(std::integral_constant<int, SY_TYPE_IQ2_K>{}); return true;
        case SY_TYPE_IQ3_K: f(std::integral_constant<int, SY_TYPE_IQ3_K>{}); return true;
        case SY_TYPE_IQ4_K: f(std::integral_constant<int, SY_TYPE_IQ4_K>{}); return true;
        case SY_TYPE_IQ5_K: f(std::integral_constant<int, SY_TYPE_IQ5_K>{}); return true;
        case SY_TYPE_IQ6_K: f(std::integral_constant<int, SY_TYPE_IQ6_K>{}); return true;
        case SY_TYPE_IQ2_KS: f(std::integral_constant<int, SY_TYPE_IQ2_KS>{}); return true;
        case SY_TYPE_IQ3_KS: f(std::integral_constant<int, SY_TYPE_IQ3_KS>{}); return true;
        case SY_TYPE_IQ4_KS: f(std::integral_constant<int, SY_TYPE_IQ4_KS>{}); return true;
        case SY_TYPE_IQ4_KSS: f(std::integral_constant<int, SY_TYPE_IQ4_KSS>{}); return true;
        case SY_TYPE_IQ5_KS: f(std::integral_constant<int, SY_TYPE_IQ5_KS>{}); return true;
        case SY_TYPE_IQ2_KL: f(std::integral_constant<int, SY_TYPE_IQ2_KL>{}); return true;
        case SY_TYPE_IQ1_KT: f(std::integral_constant<int, SY_TYPE_IQ1_KT>{}); return true;
        case SY_TYPE_IQ2_KT: f(std::integral_constant<int, SY_TYPE_IQ2_KT>{}); return true;
        case SY_TYPE_IQ3_KT: f(std::integral_constant<int, SY_TYPE_IQ3_KT>{}); return true;
        case SY_TYPE_IQ4_KT: f(std::integral_constant<int, SY_TYPE_IQ4_KT>{}); return true;
        case SY_TYPE_Q8_KV: f(std::integral_constant<int, SY_TYPE_Q8_KV>{}); return true;
        case SY_TYPE_IQ1_M_R4_ROWS:
            f(std::integral_constant<int, SY_TYPE_IQ1_M_R4_ROWS>{});
            return true;
        default: return false;
    }
}

}  // namespace sy::cuda
