// ik_llama.cpp's Q6_0, IQ2_K ... IQ6_K and the row-scaled IQ2_KS ... IQ2_KL decoded into Sub32
// (included by blocks.cuh, whose Sub32, BlockTraits, load_words, load_half and set_scale it uses;
// layouts: quant_blocks.h and docs/ik-quants.md).
//
// An IQ*_K sub-block of 32 values is two 16-value scale groups: d[h] = d * scale (exact in f32,
// as in switchyard_quants) and the quants are the table values themselves, the `extra` bit's
// shifted half included, so value = d[h] * q rounds once, as the reference does.
#pragma once

#include "switchyard/quant_blocks.h"

namespace sy::cuda {

// The value tables as words of four int8 entries each, held in registers: a lookup is a byte
// permute per 8 entries and four values (`lookup`), where a table in global, constant or local
// memory would cost a load per value (32 per sub-block).
template <int N>
struct ValueTable {
    uint32_t w[N / 4];
};

template <int N>
__host__ __device__ constexpr ValueTable<N> value_table(const int8_t (&v)[N]) {
    ValueTable<N> t{};
    for (int i = 0; i < N / 4; ++i)
        t.w[i] = uint32_t(uint8_t(v[4 * i])) | uint32_t(uint8_t(v[4 * i + 1])) << 8 |
                 uint32_t(uint8_t(v[4 * i + 2])) << 16 | uint32_t(uint8_t(v[4 * i + 3])) << 24;
    return t;
}

__device__ inline ValueTable<8> iq2nl_table() {
    constexpr int8_t v[8] = SY_IQ2NL_VALUES_INIT;
    constexpr ValueTable<8> t = value_table(v);
    return t;
}
__device__ inline ValueTable<16> iq3nl_table() {
    constexpr int8_t v[16] = SY_IQ3NL_VALUES_INIT;
    constexpr ValueTable<16> t = value_table(v);
    return t;
}
__device__ inline ValueTable<32> iq4k_table() {
    constexpr int8_t v[32] = SY_IQ4K_VALUES_INIT;
    constexpr ValueTable<32> t = value_table(v);
    return t;
}
// Each byte of idx (an entry, < N) mapped through t: __byte_perm picks from 8 entries by the
// index's low 3 bits, then each further bit chooses between two such picks, byte by byte.
template <int N>
__device__ inline uint32_t lookup(const ValueTable<N>& t, uint32_t idx) {
    static_assert(N >= 8 && (N & (N - 1)) == 0, "8, 16, 32 ... entries");
    const uint32_t low3 = idx & 0x07070707u;
    const uint32_t u = low3 | (low3 >> 4);
    const uint32_t selector = (u & 0xFFu) | ((u >> 8) & 0xFF00u);
    uint32_t r[N / 8];
#pragma unroll
    for (int i = 0; i < N / 8; ++i) r[i] = __byte_perm(t.w[2 * i], t.w[2 * i + 1], selector);
#pragma unroll
    for (int bit = 3, n = N / 8; n > 1; ++bit, n /= 2) {
        const uint32_t take = ((idx >> bit) & 0x01010101u) * 0xFFu;
#pragma unroll
        for (int i = 0; i < n / 2; ++i) r[i] = (r[2 * i + 1] & take) | (r[2 * i] & ~take);
    }
    return r[0];
}

// The lookup in the first or second half of a table of 2N entries (the types' `extra` bit).
template <int N>
__device__ inline uint32_t lookup_half(const ValueTable<2 * N>& t, uint32_t half, uint32_t idx) {
    ValueTable<N> h;
#pragma unroll
    for (int i = 0; i < N / 4; ++i) h.w[i] = half ? t.w[N / 4 + i] : t.w[i];
    return lookup(h, idx);
}

// IQ4_K's value for a 5-bit index (the trellis types' sub-block scales).
__device__ inline int ik_iq4k(uint32_t i) {
    return int(int8_t(lookup(iq4k_table(), i) & 0xFFu));
}
// IQ5_K's and IQ6_K's tables (64 and 128 entries) are read from memory, a value at a time: in
// registers their 16 and 32 words and the byte permutes spill
// (docs/design-measurements.md#cuda-ik-tables-in-registers).
__device__ inline int ik_iq5nl(uint32_t i) {
    static const int8_t table[64] = SY_IQ5NL_VALUES_INIT;
    return __ldg(&table[i]);
}
__device__ inline int ik_iq6nl(uint32_t i) {
    static const int8_t table[128] = SY_IQ6NL_VALUES_INIT;
    return __ldg(&table[i]);
}
__device__ inline uint32_t ik_iq2kl(uint32_t i) {
    static const uint16_t table[32] = SY_IQ2KL_VALUES_INIT;
    return __ldg(&table[i]);
}

template <>
struct BlockTraits<SY_TYPE_Q6_0> {
    static constexpr int kValues = 32, kBytes = 26;
    static constexpr int kOffset = 32;
    static constexpr bool kHasMin = false;
};
template <int Bytes>
struct IkTraits {
    static constexpr int kValues = 256, kBytes = Bytes;
    static constexpr int kOffset = 0;
    static constexpr bool kHasMin = false;
};
template <>
struct BlockTraits<SY_TYPE_IQ2_K> : IkTraits<76> {};
template <>
struct BlockTraits<SY_TYPE_IQ3_K> : IkTraits<110> {};
template <>
struct BlockTraits<SY_TYPE_IQ4_K> : IkTraits<144> {};
template <>
struct BlockTraits<SY_TYPE_IQ5_K> : IkTraits<176> {};
template <>
struct BlockTraits<SY_TYPE_IQ6_K> : IkTraits<212> {};
template <>
struct BlockTraits<SY_TYPE_IQ2_KS> : IkTraits<70> {};
template <>
struct BlockTraits<SY_TYPE_IQ3_KS> : IkTraits<102> {};
template <>
struct BlockTraits<SY_TYPE_IQ4_KS> : IkTraits<136> {};
template <>
struct BlockTraits<SY_TYPE_IQ4_KSS> : IkTraits<128> {};
template <>
struct BlockTraits<SY_TYPE_IQ5_KS> : IkTraits<168> {};
template <>
struct BlockTraits<SY_TYPE_IQ2_KL> : IkTraits<86> {};
template <>
struct BlockTraits<SY_TYPE_IQ1_KT> : IkTraits<56> {};
template <>
struct BlockTraits<SY_TYPE_IQ2_KT> : IkTraits<68> {};
template <>
struct BlockTraits<SY_TYPE_IQ3_KT> : IkTraits<100> {};
template <>
struct BlockTraits<SY_TYPE_IQ4_KT> : IkTraits<128> {};
template <>
struct BlockTraits<SY_TYPE_IQ1_M_R4_ROWS> : IkTraits<56> {};
template <>
struct BlockTraits<SY_TYPE_Q8_KV> {
    static constexpr int kValues = 32, kBytes = 32;
    static constexpr int kOffset = 0;
    static constexpr bool kHasMin = false;
};

// The row-scaled types keep their scale d in front of each row: kBytes of it (2: f16, 4: f32),
// 0 for every other type. Their blocks decode with d (decode_scaled).
template <int Type>
struct RowScale {
    static constexpr int kBytes = 0;
};
template <>
struct RowScale<SY_TYPE_IQ2_KS> {
    static constexpr int kBytes = 2;
};
template <>
struct RowScale<SY_TYPE_IQ3_KS> {
    static constexpr int kBytes = 2;
};
template <>
struct RowScale<SY_TYPE_IQ2_KL> {
    static constexpr int kBytes = 2;
};
template <>
struct RowScale<SY_TYPE_IQ4_KS> {
    static constexpr int kBytes = 4;
};
template <>
struct RowScale<SY_TYPE_IQ4_KSS> {
    static constexpr int kBytes = 4;
};
template <>
struct RowScale<SY_TYPE_IQ5_KS> {
    static constexpr int kBytes = 4;
};
template <>
struct RowScale<SY_TYPE_IQ1_KT> {
    static constexpr int kBytes = 4;
};
template <>
struct RowScale<SY_TYPE_IQ2_KT> {
    static constexpr int kBytes = 4;
};
template <>
struct RowScale<SY_TYPE_IQ3_KT> {
    static constexpr int kBytes = 4;
};
template <>
struct RowScale<SY_TYPE_IQ4_KT> {
    static constexpr int kBytes = 4;
};
template <>
struct RowScale<SY_TYPE_IQ1_M_R4_ROWS> {
    static constexpr int kBytes = 2;
};
template <>
struct RowScale<SY_TYPE_Q8_KV> {  // f32 d, then the int32 sum of the row's q (unused here)
    static constexpr int kBytes = 8;
};

// IQ2_KT's and IQ3_KT's count 1.05 and 1.01 times, as ik_llama.cpp's products (and
// switchyard_quants) take them.
template <int Type>
__device__ inline float row_scale(const uint8_t* row) {
    if constexpr (RowScale<Type>::kBytes == 2) return load_half(row);
    const float d = *reinterpret_cast<const float*>(row);
    if constexpr (Type == SY_TYPE_IQ2_KT) return __fmul_rn(d, 1.05f);
    if constexpr (Type == SY_TYPE_IQ3_KT) return __fmul_rn(d, 1.01f);
    return d;
}

// Sub-block `sub` (0..7) of a row-scaled type's block at b, with the row's scale d.
template <int Type>
__device__ inline void decode_scaled(const uint8_t* b, int sub, float d, Sub32& s);

// Byte k of w.
__device__ inline uint32_t byte_of(uint32_t w, int k) {
    return (w >> (8 * k)) & 0xFFu;
}

// q[0..7] from 32 table indices: index(j) for value j (0..31) of the sub-block, looked up in
// value(extra half of j's group, index).
template <typename Index, typename Value>
__device__ inline void ik_quants(Sub32& s, uint32_t extra_lo, uint32_t extra_hi, Index index,
                                 Value value) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        uint32_t packed = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int e = 4 * j + k;
            const uint32_t half = e < 16 ? extra_lo : extra_hi;
            packed |= (uint32_t(value(half, index(e))) & 0xFFu) << (8 * k);
        }
        s.q[j] = int(packed);
    }
}

__device__ inline void ik_scales(Sub32& s, float d, int lo, int hi) {
    s.d[0] = __fmul_rn(d, float(lo));
    s.d[1] = __fmul_rn(d, float(hi));
    s.m[0] = s.m[1] = 0.0f;
}

__device__ inline uint32_t ik_extra(const uint8_t* b, int sub, int half) {
    const uint32_t extra = *reinterpret_cast<const uint16_t*>(b + 2);
    return (extra >> (2 * sub + half)) & 1u;
}

template <>
__device__ inline void decode<SY_TYPE_Q6_0>(const uint8_t* b, int, Sub32& s) {
    uint32_t qh[2], qs[4];
    load_words(b + 2, qh);
    load_words(b + 10, qs);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        uint32_t lo = 0, hi = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int e = 4 * j + k;  // values e and e + 16 share qs byte e
            const uint32_t q = byte_of(qs[e / 4], e % 4);
            const uint32_t h = byte_of(qh[(e % 8) / 4], (e % 8) % 4) >> (4 * (e / 8));
            lo |= ((q & 0xFu) | ((h & 3u) << 4)) << (8 * k);
            hi |= ((q >> 4) | (((h >> 2) & 3u) << 4)) << (8 * k);
        }
        s.q[j] = int(lo);
        s.q[4 + j] = int(hi);
    }
    set_scale(s, load_half(b));
}

template <>
__device__ inline void decode<SY_TYPE_IQ2_K>(const uint8_t* b, int sub, Sub32& s) {
    uint32_t qs[8];
    load_words(b + 12 + 32 * (sub / 4), qs);
    const int shift = 2 * (sub % 4);
    const ValueTable<8> table = iq2nl_table();
    const uint32_t halves[2] = {ik_extra(b, sub, 0) * 0x04040404u,
                                ik_extra(b, sub, 1) * 0x04040404u};
#pragma unroll
    for (int j = 0; j < 8; ++j)
        s.q[j] = int(lookup(table, ((qs[j] >> shift) & 0x03030303u) | halves[j / 4]));
    const uint32_t sc = b[4 + sub];
    ik_scales(s, load_half(b), int(sc & 0xF) - 8, int(sc >> 4) - 8);
}

template <>
__device__ inline void decode<SY_TYPE_IQ3_K>(const uint8_t* b, int sub, Sub32& s) {
    uint32_t qs[8], qh[8];
    load_words(b + 14 + 32 * (sub / 4), qs);
    load_words(b + 78, qh);
    const int shift = 2 * (sub % 4);
    const ValueTable<16> table = iq3nl_table();
    const uint32_t halves[2] = {ik_extra(b, sub, 0) * 0x08080808u,
                                ik_extra(b, sub, 1) * 0x08080808u};
#pragma unroll
    for (int j = 0; j < 8; ++j)
        s.q[j] = int(lookup(table, ((qs[j] >> shift) & 0x03030303u) |
                                       (((qh[j] >> sub) & 0x01010101u) << 2) | halves[j / 4]));
    const uint32_t signs = *reinterpret_cast<const uint16_t*>(b + 4);
    const uint32_t sc = b[6 + sub];
    const int lo = 2 * int(sc & 0xF) + 1, hi = 2 * int(sc >> 4) + 1;
    ik_scales(s, load_half(b), (signs >> (2 * sub)) & 1u ? -lo : lo,
              (signs >> (2 * sub + 1)) & 1u ? -hi : hi);
}

// IQ4_K / IQ5_K: the 6-bit scale of group g (0..15), S - 32.
__device__ inline int ik_scale6(const uint8_t* b, int g) {
    const int low = (b[8 + g / 2] >> (4 * (g % 2))) & 0xF;
    const int high = (b[4 + g / 4] >> (2 * (g % 4))) & 3;
    return (low | high << 4) - 32;
}

template <>
__device__ inline void decode<SY_TYPE_IQ4_K>(const uint8_t* b, int sub, Sub32& s) {
    uint32_t qs[4];
    load_words(b + 16 + 16 * sub, qs);
    const ValueTable<32> table = iq4k_table();
    const uint32_t lo = ik_extra(b, sub, 0), hi = ik_extra(b, sub, 1);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        s.q[j] = int(lookup_half<16>(table, lo, qs[j] & 0x0F0F0F0Fu));
        s.q[4 + j] = int(lookup_half<16>(table, hi, (qs[j] >> 4) & 0x0F0F0F0Fu));
    }
    ik_scales(s, load_half(b), ik_scale6(b, 2 * sub), ik_scale6(b, 2 * sub + 1));
}

template <>
__device__ inline void decode<SY_TYPE_IQ5_K>(const uint8_t* b, int sub, Sub32& s) {
    uint32_t qs[8], qh[8];
    load_words(b + 16 + 32 * (sub / 2), qs);
    load_words(b + 144, qh);
    const int nibble = 4 * (sub % 2);
    ik_quants(
        s, ik_extra(b, sub, 0), ik_extra(b, sub, 1),
        [&](int e) {
            return ((byte_of(qs[e / 4], e % 4) >> nibble) & 0xFu) |
                   (((byte_of(qh[e / 4], e % 4) >> sub) & 1u) << 4);
        },
        [](uint32_t half, uint32_t i) { return ik_iq5nl(32 * half + i); });
    ik_scales(s, load_half(b), ik_scale6(b, 2 * sub), ik_scale6(b, 2 * sub + 1));
}

template <>
__device__ inline void decode<SY_TYPE_IQ6_K>(const uint8_t* b, int sub, Sub32& s) {
    uint32_t qs[8], qh[8];
    load_words(b + 20 + 32 * (sub / 2), qs);
    load_words(b + 148 + 32 * (sub / 4), qh);
    const int nibble = 4 * (sub % 2), shift = 2 * (sub % 4);
    ik_quants(
        s, ik_extra(b, sub, 0), ik_extra(b, sub, 1),
        [&](int e) {
            return ((byte_of(qs[e / 4], e % 4) >> nibble) & 0xFu) |
                   (((byte_of(qh[e / 4], e % 4) >> shift) & 3u) << 4);
        },
        [](uint32_t half, uint32_t i) { return ik_iq6nl(64 * half + i); });
    const auto* scales = reinterpret_cast<const int8_t*>(b + 4);
    ik_scales(s, load_half(b), scales[2 * sub], scales[2 * sub + 1]);
}

// ---- the row-scaled types: one scale and one table half per 32-value sub-block ----------------

template <>
__device__ inline void decode_scaled<SY_TYPE_IQ2_KS>(const uint8_t* b, int sub, float d, Sub32& s) {
    uint32_t qs[8];
    load_words(b + 6 + 32 * (sub / 4), qs);
    const uint32_t extra = *reinterpret_cast<const uint16_t*>(b);
    const uint32_t half = (extra >> sub) & 1u;
    const int shift = 2 * (sub % 4);
    const ValueTable<8> table = iq2nl_table();
#pragma unroll
    for (int j = 0; j < 8; ++j)
        s.q[j] = int(lookup(table, ((qs[j] >> shift) & 0x03030303u) | half * 0x04040404u));
    const int S = int((b[2 + sub / 2] >> (4 * (sub % 2))) & 0xF) | int((extra >> (8 + sub)) & 1u)
                                                                       << 4;
    ik_scales(s, d, S - 16, S - 16);
}

template <>
__device__ inline void decode_scaled<SY_TYPE_IQ3_KS>(const uint8_t* b, int sub, float d, Sub32& s) {
    uint32_t qs[8], qh[8];
    load_words(b + 6 + 32 * (sub / 4), qs);
    load_words(b + 70, qh);
    const uint32_t extra = *reinterpret_cast<const uint16_t*>(b);
    const uint32_t half = (extra >> (8 + sub)) & 1u;
    const int shift = 2 * (sub % 4);
    const ValueTable<16> table = iq3nl_table();
#pragma unroll
    for (int j = 0; j < 8; ++j)
        s.q[j] = int(lookup(table, ((qs[j] >> shift) & 0x03030303u) |
                                       (((qh[j] >> sub) & 0x01010101u) << 2) | half * 0x08080808u));
    const int S = int((b[2 + sub % 4] >> (4 * (sub / 4))) & 0xF) | int((extra >> sub) & 1u) << 4;
    ik_scales(s, d, S - 16, S - 16);
}

template <>
__device__ inline void decode_scaled<SY_TYPE_IQ4_KS>(const uint8_t* b, int sub, float d, Sub32& s) {
    uint32_t qs[4];
    load_words(b + 8 + 16 * sub, qs);
    const uint32_t sc = b[sub];
    const ValueTable<32> table = iq4k_table();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        s.q[j] = int(lookup_half<16>(table, sc & 1u, qs[j] & 0x0F0F0F0Fu));
        s.q[4 + j] = int(lookup_half<16>(table, sc & 1u, (qs[j] >> 4) & 0x0F0F0F0Fu));
    }
    ik_scales(s, d, int(sc & 254u) - 127, int(sc & 254u) - 127);
}

// IQ4_KSS: word k (16 bits) of the sub-block, a = word & ~1, gives v = a ^ (a >> 1), IQ4_KS's
// bytes 2k and 2k + 1; bit 0 of word k is bit k of the IQ4_KS scale byte.
template <>
__device__ inline void decode_scaled<SY_TYPE_IQ4_KSS>(const uint8_t* b, int sub, float d,
                                                      Sub32& s) {
    uint32_t w[4];
    load_words(b + 16 * sub, w);
    uint32_t sc = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        sc |= (w[j] & 1u) << (2 * j) | ((w[j] >> 16) & 1u) << (2 * j + 1);
        const uint32_t a = w[j] & 0xFFFEFFFEu;
        w[j] = a ^ ((a >> 1) & 0x7FFF7FFFu);
    }
    const ValueTable<32> table = iq4k_table();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        s.q[j] = int(lookup_half<16>(table, sc & 1u, w[j] & 0x0F0F0F0Fu));
        s.q[4 + j] = int(lookup_half<16>(table, sc & 1u, (w[j] >> 4) & 0x0F0F0F0Fu));
    }
    ik_scales(s, d, int(sc & 254u) - 127, int(sc & 254u) - 127);
}

template <>
__device__ inline void decode_scaled<SY_TYPE_IQ5_KS>(const uint8_t* b, int sub, float d, Sub32& s) {
    uint32_t qs[8], qh[8];
    load_words(b + 8 + 32 * (sub / 2), qs);
    load_words(b + 136, qh);
    const uint32_t sc = b[sub];
    const int nibble = 4 * (sub % 2);
    ik_quants(
        s, sc & 1u, sc & 1u,
        [&](int e) {
            return ((byte_of(qs[e / 4], e % 4) >> nibble) & 0xFu) |
                   (((byte_of(qh[e / 4], e % 4) >> sub) & 1u) << 4);
        },
        [](uint32_t h, uint32_t i) { return ik_iq5nl(32 * h + i); });
    ik_scales(s, d, int(sc & 254u) - 127, int(sc & 254u) - 127);
}

// IQ2_KL: value e is byte e % 2 of the pair table's entry for pair e / 2.
template <>
__device__ inline void decode_scaled<SY_TYPE_IQ2_KL>(const uint8_t* b, int sub, float d, Sub32& s) {
    uint32_t qs[4], qh[4];
    load_words(b + 6 + 16 * (sub / 2), qs);
    load_words(b + 70, qh);
    const int nibble = 4 * (sub % 2);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        uint32_t packed = 0;
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int p = 2 * j + k;
            const uint32_t code = ((byte_of(qs[p / 4], p % 4) >> nibble) & 0xFu) |
                                  (((byte_of(qh[p / 4], p % 4) >> sub) & 1u) << 4);
            packed |= ik_iq2kl(code) << (16 * k);
        }
        s.q[j] = int(packed);
    }
    const uint32_t scales_h = *reinterpret_cast<const uint16_t*>(b);
    const int S = int((b[2 + sub % 4] >> (4 * (sub / 4))) & 0xF) | int((scales_h >> (2 * sub)) & 3u)
                                                                       << 4;
    ik_scales(s, d, S - 32, S - 32);
}

// ---- the trellis types: values generated from codes (quant_blocks.h) ---------------------------

// The generator's next value from state x (updated): sum of the bytes of x & 0x3F3F3F3F - 126.
// The four bytes are at most 63, so one __dp4a against ones adds them.
__device__ inline int kt_next(uint32_t& x) {
    x *= SY_KT_MULT;
    return __dp4a(int(x & 0x3F3F3F3Fu), 0x01010101, -126);
}

// q[j] from 8 generator starts of 4 values each (starts[g] covers values 4g .. 4g + 3), or 4
// starts of 8 values (G = 8); `sign(e)` negates value e of |v| where given (IQ3_KT).
template <int G, typename Value>
__device__ inline void kt_quants(Sub32& s, const uint32_t* starts, Value value) {
#pragma unroll
    for (int g = 0; g < 32 / G; ++g) {
        uint32_t x = starts[g];
#pragma unroll
        for (int t = 0; t < G; t += 4) {
            uint32_t packed = 0;
#pragma unroll
            for (int k = 0; k < 4; ++k)
                packed |= (uint32_t(value(G * g + t + k, kt_next(x))) & 0xFFu) << (8 * k);
            s.q[(G * g + t) / 4] = int(packed);
        }
    }
}

template <>
__device__ inline void decode_scaled<SY_TYPE_IQ2_KT>(const uint8_t* b, int sub, float d, Sub32& s) {
    uint32_t starts[4];
#pragma unroll
    for (int g = 0; g < 4; ++g)
        starts[g] =
            uint32_t(b[4 + 8 * sub + 2 * g] | b[4 + 8 * sub + 2 * g + 1] << 8) + SY_KT_OFFSET;
    kt_quants<8>(s, starts, [](int, int v) { return v; });
    const int l = ik_iq4k((b[sub % 4] >> (4 * (sub / 4))) & 0xF);
    ik_scales(s, d, l, l);
}

template <>
__device__ inline void decode_scaled<SY_TYPE_IQ3_KT>(const uint8_t* b, int sub, float d, Sub32& s) {
    uint32_t starts[4], qh[8];
#pragma unroll
    for (int g = 0; g < 4; ++g)
        starts[g] =
            uint32_t(b[4 + 8 * sub + 2 * g] | b[4 + 8 * sub + 2 * g + 1] << 8) + SY_KT_OFFSET;
    load_words(b + 68, qh);
    kt_quants<8>(s, starts, [&](int e, int v) {
        const int a = v < 0 ? -v : v;
        return (byte_of(qh[e / 4], e % 4) >> sub) & 1u ? -a : a;
    });
    const int l = (b[sub % 4] >> (4 * (sub / 4))) & 0xF;
    ik_scales(s, d, l, l);
}

template <>
__device__ inline void decode_scaled<SY_TYPE_IQ1_KT>(const uint8_t* b, int sub, float d, Sub32& s) {
    uint32_t starts[4];
    const uint32_t sh = b[sub];
#pragma unroll
    for (int i = 0; i < 4; ++i)
        starts[i] = (uint32_t(b[8 + 4 * sub + i]) |
                     ((uint32_t(b[40 + 4 * (sub % 4) + i]) >> (4 * (sub / 4))) & 0xFu) << 8 |
                     ((sh >> (4 + i)) & 1u) << 12) +
                    SY_KT_OFFSET;
    kt_quants<8>(s, starts, [](int, int v) { return v; });
    const int l = ik_iq4k(sh & 0xF);
    ik_scales(s, d, l, l);
}

template <>
__device__ inline void decode_scaled<SY_TYPE_IQ4_KT>(const uint8_t* b, int sub, float d, Sub32& s) {
    uint32_t shb[1];
    load_words(b + 4 * sub, shb);
    const uint32_t offset = SY_KT_OFFSET + (shb[0] & 1u ? SY_KT_OFFSET4 : 0u);
    uint32_t starts[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int j = 8 * sub + i;
        starts[i] =
            (uint32_t(b[32 + j]) | ((uint32_t(b[96 + j % 32]) >> (4 * (j / 32))) & 0xFu) << 8 |
             ((shb[0] >> (8 + 3 * i)) & 7u) << 12) +
            offset;
    }
    kt_quants<4>(s, starts, [](int, int v) { return v; });
    const int l = int((shb[0] & 0xFFu) >> 1) - 64;
    ik_scales(s, d, l, l);
}

// IQ1_M_R4's rows (the de-interleaved IQ1_M_R4): IQ1_M's codes, sign-of-delta nibbles and
// grid, with a plain 4-bit scale l per 16 values (byte 48 + sub, low nibble first) and value
// d * l * (grid +- 1/8), formed as IQ1_S/IQ1_M's (d * l / 8) * (8 grid +- 1).
template <>
__device__ inline void decode_scaled<SY_TYPE_IQ1_M_R4_ROWS>(const uint8_t* b, int sub, float d,
                                                            Sub32& s) {
    uint32_t qs[1];
    load_words(b + 4 * sub, qs);
    const uint32_t qh = *reinterpret_cast<const uint16_t*>(b + 32 + 2 * sub);
    for (int l = 0; l < 4; ++l) {
        const uint32_t nibble = (qh >> (4 * l)) & 0xF;
        const uint32_t index = ((qs[0] >> (8 * l)) & 0xFF) | ((nibble & 7) << 8);
        iq1_group(s, l, iq1s_grid(index), (nibble & 8) != 0);
    }
    const uint32_t sc = b[48 + sub];
    s.d[0] = __fmul_rn(__fmul_rn(d, float(sc & 0xF)), 0.125f);
    s.d[1] = __fmul_rn(__fmul_rn(d, float(sc >> 4)), 0.125f);
    s.m[0] = s.m[1] = 0.0f;
}

// Q8_KV: 32 int8 values, the row's d.
template <>
__device__ inline void decode_scaled<SY_TYPE_Q8_KV>(const uint8_t* b, int, float d, Sub32& s) {
    uint32_t q[8];
    load_words(b, q);
#pragma unroll
    for (int i = 0; i < 8; ++i) s.q[i] = int(q[i]);
    s.d[0] = s.d[1] = d;
    s.m[0] = s.m[1] = 0.0f;
}

}  // namespace sy::cuda
