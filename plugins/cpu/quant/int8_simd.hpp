// Integer vector primitives of the quantized dot products: 32 bytes (I8x32), 8 int32 lanes
// (I32x8) and 8 floats (F32x8), i.e. one 32-element quant block per register. Chosen by the
// translation unit's flags like simd.hpp:
//   AVX-512 VNNI + VL   vpdpbusd on 256-bit registers (Zen 4 runs 512-bit ops as two halves, so
//                       256 bits lose nothing there and match the 32-element blocks)
//   AVX2                vpmaddubsw + vpmaddwd
//   otherwise           plain loops
// dot_us(acc, u, s): lane i of acc += sum_{j<4} u[4i+j] * s[4i+j], u unsigned, s signed bytes.
// With vpmaddubsw the pair sums saturate at int16, so callers keep u * s pairs below 2^15:
// unsigned weights stay <= 63, or they use dot_ss (|w| <= 128, |s| <= 127).
#pragma once

#include <cstdint>
#include <cstring>

#include "simd.hpp"
#include "switchyard/sdk.hpp"

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define SY_CPU_INT8_VNNI 1
#endif
#if defined(__AVX2__)
#define SY_CPU_INT8_AVX2 1
#endif

namespace sy::cpu::i8 {
inline namespace SY_CPU_SIMD_ISA {

// Software prefetch of `bytes` at p, kPrefetchAhead bytes ahead (past a row's end too: rows are
// usually contiguous and a prefetch never faults). With the hardware prefetchers alone too few
// cache-line fills are in flight for one core to stream weights at the memory's speed. 4 KiB
// ahead read a larger share of membw than 2 KiB; the GEMV kernels that read 4 rows side by side
// (4.6 KB for a Q4_0 row of 2048) need more than one such group ahead, and their expert products
// read faster with 8 KiB than with 4 KiB (docs/design-measurements.md#cpu-prefetch-distance).
constexpr int64_t kPrefetchAhead = 8192;
inline void prefetch_ahead(const void* p, int64_t bytes) {
    const char* c = static_cast<const char*>(p) + kPrefetchAhead;
    for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(c + o, 0, 3);
}

#if defined(SY_CPU_INT8_AVX2)

struct I8x32 {
    __m256i v;
};
struct I32x8 {
    __m256i v;
};
struct F32x8 {
    __m256 v;
};

inline I8x32 load32(const void* p) {
    return {_mm256_loadu_si256(static_cast<const __m256i*>(p))};
}
inline I8x32 splat8(int8_t x) {
    return {_mm256_set1_epi8(x)};
}
// Bytes 0..15: low nibbles of p[0..15]; bytes 16..31: their high nibbles.
inline I8x32 nibbles16(const uint8_t* p) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(x, 4), x);
    return {_mm256_and_si256(both, _mm256_set1_epi8(0x0F))};
}
inline I8x32 low_nibbles(I8x32 a) {
    return {_mm256_and_si256(a.v, _mm256_set1_epi8(0x0F))};
}
inline I8x32 high_nibbles(I8x32 a) {
    return {_mm256_and_si256(_mm256_srli_epi16(a.v, 4), _mm256_set1_epi8(0x0F))};
}
inline I8x32 and8(I8x32 a, uint8_t m) {
    return {_mm256_and_si256(a.v, _mm256_set1_epi8(char(m)))};
}
inline I8x32 or8(I8x32 a, I8x32 b) {
    return {_mm256_or_si256(a.v, b.v)};
}
inline I8x32 sub8(I8x32 a, I8x32 b) {
    return {_mm256_sub_epi8(a.v, b.v)};
}
inline I8x32 add8(I8x32 a, I8x32 b) {
    return {_mm256_add_epi8(a.v, b.v)};
}
// Per-byte shifts; shl8 assumes no bit crosses out of its byte (callers mask first).
inline I8x32 shr8(I8x32 a, int n) {
    return {_mm256_and_si256(_mm256_srl_epi16(a.v, _mm_cvtsi32_si128(n)),
                             _mm256_set1_epi8(char(0xFF >> n)))};
}
inline I8x32 shl8(I8x32 a, int n) {
    return {_mm256_sll_epi16(a.v, _mm_cvtsi32_si128(n))};
}
// Byte j = 0xFF when bit j of `bits` is set, else 0.
inline I8x32 bits32(uint32_t bits) {
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                           0x0101010101010101, 0x0000000000000000);
    __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)), shuf);
    const __m256i select = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
    b = _mm256_or_si256(b, select);
    return {_mm256_cmpeq_epi8(b, _mm256_set1_epi64x(-1))};
}
// Bytes 0..31 from four 8-byte codebook entries (a first), or eight 4-byte ones.
inline I8x32 from_u64x4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    return {_mm256_set_epi64x(int64_t(d), int64_t(c), int64_t(b), int64_t(a))};
}
inline I8x32 from_u32x8(const uint32_t (&v)[8]) {
    return {_mm256_set_epi32(int(v[7]), int(v[6]), int(v[5]), int(v[4]), int(v[3]), int(v[2]),
                             int(v[1]), int(v[0]))};
}
// -a where mask's byte is 0xFF, a where it is 0.
inline I8x32 negate_where(I8x32 a, I8x32 mask) {
    return {_mm256_sub_epi8(_mm256_xor_si256(a.v, mask.v), mask.v)};
}
// b where mask's byte is 0xFF, a where it is 0.
inline I8x32 select8(I8x32 mask, I8x32 a, I8x32 b) {
    return {_mm256_blendv_epi8(a.v, b.v, mask.v)};
}
// Eight 4-byte table entries table[idx[k] + 256 * (high >> k & 1)] (one gather).
inline I8x32 gather_u32x8(const uint32_t* table, const uint8_t* idx, unsigned high) {
    const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(idx)));
    const __m256i bit = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(int(high)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
        _mm256_set1_epi32(1));
    const __m256i index = _mm256_or_si256(lo, _mm256_slli_epi32(bit, 8));
    return {_mm256_i32gather_epi32(reinterpret_cast<const int*>(table), index, 4)};
}
// 8 4-bit fields of the 4 bytes at p, low nibbles first: field c in byte c (c < 4: the low
// nibble of p[c], c >= 4: the high nibble of p[c - 4]; the sub-block scales of IQ3_KS, IQ2_KL,
// IQ2_KT and IQ3_KT).
inline __m128i nibbles_low_high(const uint8_t* p) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    const __m128i x = _mm_cvtsi32_si128(int(w)), m = _mm_set1_epi8(0x0F);
    return _mm_unpacklo_epi32(_mm_and_si128(x, m), _mm_and_si128(_mm_srli_epi16(x, 4), m));
}
// table: 16 signed bytes; idx bytes in [0, 16).
inline I8x32 lut16(const int8_t* table, I8x32 idx) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table));
    return {_mm256_shuffle_epi8(_mm256_set_m128i(t, t), idx.v)};
}
inline I32x8 zero32() {
    return {_mm256_setzero_si256()};
}
inline I32x8 splat32(int32_t x) {
    return {_mm256_set1_epi32(x)};
}
inline I32x8 dot_us(I32x8 acc, I8x32 u, I8x32 s) {
#if defined(SY_CPU_INT8_VNNI)
    return {_mm256_dpbusd_epi32(acc.v, u.v, s.v)};
#else
    const __m256i p16 = _mm256_maddubs_epi16(u.v, s.v);
    return {_mm256_add_epi32(acc.v, _mm256_madd_epi16(p16, _mm256_set1_epi16(1)))};
#endif
}
// Signed x signed: |w| * (s with w's sign).
inline I32x8 dot_ss(I32x8 acc, I8x32 w, I8x32 s) {
    return dot_us(acc, {_mm256_sign_epi8(w.v, w.v)}, {_mm256_sign_epi8(s.v, w.v)});
}
inline I32x8 add32(I32x8 a, I32x8 b) {
    return {_mm256_add_epi32(a.v, b.v)};
}
// Lanes 0..3 times lo, lanes 4..7 times hi (per-16-element scales of a 32-element chunk).
inline I32x8 scale32(I32x8 a, int32_t lo, int32_t hi) {
    return {_mm256_mullo_epi32(a.v, _mm256_set_epi32(hi, hi, hi, hi, lo, lo, lo, lo))};
}
// Sub-block scales for dot_us_scaled: the first 16 bytes' products times lo, the next 16's
// times hi.
struct Scale16 {
    __m256i v;
};
inline Scale16 scales16(int16_t lo, int16_t hi) {
    return {_mm256_set_m128i(_mm_set1_epi16(hi), _mm_set1_epi16(lo))};
}
// acc + dot_us(u, s) with each 16-byte half's products times its scale: the byte pairs are summed
// in int16 (vpmaddubsw; callers keep 2 * u * |s| < 2^15) and the scales applied in the widening
// multiply-add (vpdpwssd / vpmaddwd), cheaper than dot_us then scale32.
inline I32x8 dot_us_scaled(I32x8 acc, I8x32 u, I8x32 s, Scale16 sc) {
    const __m256i p16 = _mm256_maddubs_epi16(u.v, s.v);
#if defined(SY_CPU_INT8_VNNI)
    return {_mm256_dpwssd_epi32(acc.v, p16, sc.v)};
#else
    return {_mm256_add_epi32(acc.v, _mm256_madd_epi16(p16, sc.v))};
#endif
}
// The same for signed weights (|w| <= 127).
inline I32x8 dot_ss_scaled(I32x8 acc, I8x32 w, I8x32 s, Scale16 sc) {
    return dot_us_scaled(acc, {_mm256_sign_epi8(w.v, w.v)}, {_mm256_sign_epi8(s.v, w.v)}, sc);
}
// f16 -> f32 in one instruction (F16C).
inline float h2f(uint16_t h) {
    return _cvtsh_ss(h);
}
inline F32x8 zerof() {
    return {_mm256_setzero_ps()};
}
inline F32x8 addf(F32x8 a, F32x8 b) {
    return {_mm256_add_ps(a.v, b.v)};
}
// acc + float(a) * d
inline F32x8 fma_i32(I32x8 a, float d, F32x8 acc) {
    return {_mm256_fmadd_ps(_mm256_cvtepi32_ps(a.v), _mm256_set1_ps(d), acc.v)};
}
inline float reduce(F32x8 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#else  // plain loops

struct I8x32 {
    int8_t b[32];
};
struct I32x8 {
    int32_t v[8];
};
struct F32x8 {
    float v[8];
};

inline I8x32 load32(const void* p) {
    I8x32 r;
    std::memcpy(r.b, p, 32);
    return r;
}
inline I8x32 splat8(int8_t x) {
    I8x32 r;
    for (int j = 0; j < 32; ++j) r.b[j] = x;
    return r;
}
inline I8x32 nibbles16(const uint8_t* p) {
    I8x32 r;
    for (int j = 0; j < 16; ++j) {
        r.b[j] = int8_t(p[j] & 15);
        r.b[j + 16] = int8_t(p[j] >> 4);
    }
    return r;
}
inline I8x32 low_nibbles(I8x32 a) {
    for (int j = 0; j < 32; ++j) a.b[j] = int8_t(uint8_t(a.b[j]) & 15);
    return a;
}
inline I8x32 high_nibbles(I8x32 a) {
    for (int j = 0; j < 32; ++j) a.b[j] = int8_t(uint8_t(a.b[j]) >> 4);
    return a;
}
inline I8x32 and8(I8x32 a, uint8_t m) {
    for (int j = 0; j < 32; ++j) a.b[j] = int8_t(uint8_t(a.b[j]) & m);
    return a;
}
inline I8x32 or8(I8x32 a, I8x32 b) {
    for (int j = 0; j < 32; ++j) a.b[j] = int8_t(uint8_t(a.b[j]) | uint8_t(b.b[j]));
    return a;
}
inline I8x32 sub8(I8x32 a, I8x32 b) {
    for (int j = 0; j < 32; ++j) a.b[j] = int8_t(uint8_t(a.b[j]) - uint8_t(b.b[j]));
    return a;
}
inline I8x32 add8(I8x32 a, I8x32 b) {
    for (int j = 0; j < 32; ++j) a.b[j] = int8_t(uint8_t(a.b[j]) + uint8_t(b.b[j]));
    return a;
}
inline I8x32 shr8(I8x32 a, int n) {
    for (int j = 0; j < 32; ++j) a.b[j] = int8_t(uint8_t(a.b[j]) >> n);
    return a;
}
inline I8x32 shl8(I8x32 a, int n) {
    for (int j = 0; j < 32; ++j) a.b[j] = int8_t(uint8_t(uint8_t(a.b[j]) << n));
    return a;
}
inline I8x32 bits32(uint32_t bits) {
    I8x32 r;
    for (int j = 0; j < 32; ++j) r.b[j] = (bits >> j) & 1 ? int8_t(-1) : int8_t(0);
    return r;
}
inline I8x32 from_u64x4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    I8x32 r;
    const uint64_t v[4] = {a, b, c, d};
    std::memcpy(r.b, v, 32);
    return r;
}
inline I8x32 from_u32x8(const uint32_t (&v)[8]) {
    I8x32 r;
    std::memcpy(r.b, v, 32);
    return r;
}
inline I8x32 negate_where(I8x32 a, I8x32 mask) {
    for (int j = 0; j < 32; ++j) a.b[j] = mask.b[j] ? int8_t(-a.b[j]) : a.b[j];
    return a;
}
inline I8x32 select8(I8x32 mask, I8x32 a, I8x32 b) {
    for (int j = 0; j < 32; ++j) a.b[j] = mask.b[j] ? b.b[j] : a.b[j];
    return a;
}
inline I8x32 gather_u32x8(const uint32_t* table, const uint8_t* idx, unsigned high) {
    I8x32 r;
    for (int k = 0; k < 8; ++k) {
        const uint32_t v = table[idx[k] | ((high >> k & 1) << 8)];
        std::memcpy(r.b + 4 * k, &v, 4);
    }
    return r;
}
inline I8x32 lut16(const int8_t* table, I8x32 idx) {
    for (int j = 0; j < 32; ++j) idx.b[j] = table[idx.b[j] & 15];
    return idx;
}
inline I32x8 zero32() {
    return I32x8{};
}
inline I32x8 splat32(int32_t x) {
    I32x8 r;
    for (int i = 0; i < 8; ++i) r.v[i] = x;
    return r;
}
inline I32x8 dot_us(I32x8 acc, I8x32 u, I8x32 s) {
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 4; ++j) acc.v[i] += int32_t(uint8_t(u.b[4 * i + j])) * s.b[4 * i + j];
    return acc;
}
inline I32x8 dot_ss(I32x8 acc, I8x32 w, I8x32 s) {
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 4; ++j) acc.v[i] += int32_t(w.b[4 * i + j]) * s.b[4 * i + j];
    return acc;
}
inline I32x8 add32(I32x8 a, I32x8 b) {
    for (int i = 0; i < 8; ++i) a.v[i] += b.v[i];
    return a;
}
inline I32x8 scale32(I32x8 a, int32_t lo, int32_t hi) {
    for (int i = 0; i < 8; ++i) a.v[i] *= i < 4 ? lo : hi;
    return a;
}
struct Scale16 {
    int16_t lo, hi;
};
inline Scale16 scales16(int16_t lo, int16_t hi) {
    return {lo, hi};
}
inline I32x8 dot_us_scaled(I32x8 acc, I8x32 u, I8x32 s, Scale16 sc) {
    return add32(acc, scale32(dot_us(zero32(), u, s), sc.lo, sc.hi));
}
inline I32x8 dot_ss_scaled(I32x8 acc, I8x32 w, I8x32 s, Scale16 sc) {
    return add32(acc, scale32(dot_ss(zero32(), w, s), sc.lo, sc.hi));
}
inline float h2f(uint16_t h) {
    return sdk::fp16_to_f32(h);
}
inline F32x8 zerof() {
    return F32x8{};
}
inline F32x8 addf(F32x8 a, F32x8 b) {
    for (int i = 0; i < 8; ++i) a.v[i] += b.v[i];
    return a;
}
inline F32x8 fma_i32(I32x8 a, float d, F32x8 acc) {
    for (int i = 0; i < 8; ++i) acc.v[i] += float(a.v[i]) * d;
    return acc;
}
inline float reduce(F32x8 a) {
    float s = 0;
    for (int i = 0; i < 8; ++i) s += a.v[i];
    return s;
}

#endif

// ---- built from the primitives above --------------------------------------------------------

// Bytes 0xFF where `bit` (bytes of 0 or 1) is 1, else 0.
inline I8x32 mask_of(I8x32 bit) {
    return sub8(splat8(0), bit);
}
// Bit c of the 32 bytes at qh, as 0 / 1 per byte (a high-bit plane: IQ3_K, IQ5_K, IQ3_KT ...).
inline I8x32 plane1(const uint8_t* qh, int c) {
    return and8(shr8(load32(qh), c), 1);
}
// The low nibbles of chunk c (32 values) where each 64 values share 32 bytes, low nibbles first
// (IQ5_K's and IQ6_K's order).
inline I8x32 nibbles64(const uint8_t* qs, int c) {
    const I8x32 bytes = load32(qs + 32 * (c / 2));
    return c % 2 ? high_nibbles(bytes) : low_nibbles(bytes);
}

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu::i8
