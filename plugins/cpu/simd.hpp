// A small vector abstraction for the arithmetic kernels: one type, F32x, holding kLanes floats,
// and the handful of operations the kernels need. The implementation is chosen by the compiler
// flags of the translation unit:
//   __AVX512F__             16 lanes, __m512   (F16 via vcvtph2ps, BF16 via a 16-bit shift)
//   __AVX2__ + FMA + F16C    8 lanes, __m256
//   otherwise                8 lanes of plain floats; the lane loops are simple enough for the
//                           compiler to map onto SSE2.
// Every definition lives in an inline namespace named after the instruction set, so the three
// builds never share a mangled name (kernels of different variants must not be merged by the
// linker) while the code still spells them sy::cpu::simd::load etc.
//
// min/max follow the x86 convention `a < b ? a : b`: when one operand is NaN the second is
// returned, so min(hi, max(lo, x)) keeps a NaN x.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "switchyard/sdk.hpp"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
// GCC 12.2's AVX-512 headers build some results from _mm512_undefined_*() and then warn "__Y may
// be used uninitialized" at every inlined use (GCC bug 105593, fixed in 12.3 and 13). The
// warning is attributed to the header's lines, so silencing it around the include is enough.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#if defined(__AVX512F__)
#define SY_CPU_SIMD_ISA avx512
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define SY_CPU_SIMD_ISA avx2
#else
#define SY_CPU_SIMD_ISA scalar
#endif

namespace sy::cpu::simd {
inline namespace SY_CPU_SIMD_ISA {

#if defined(__AVX512F__)

constexpr int kLanes = 16;
struct F32x {
    __m512 v;
};

inline F32x zero() {
    return {_mm512_setzero_ps()};
}
inline F32x splat(float x) {
    return {_mm512_set1_ps(x)};
}
inline F32x load(const float* p) {
    return {_mm512_loadu_ps(p)};
}
inline void store(float* p, F32x a) {
    _mm512_storeu_ps(p, a.v);
}
inline F32x load_f16(const uint16_t* p) {
    return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}
// bf16 is the top half of an f32: widen to 32 bits and shift into place.
inline F32x load_bf16(const uint16_t* p) {
    const __m512i h =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return {_mm512_castsi512_ps(_mm512_slli_epi32(h, 16))};
}
inline F32x load_i8(const int8_t* p) {
    return {_mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))))};
}
inline F32x add(F32x a, F32x b) {
    return {_mm512_add_ps(a.v, b.v)};
}
inline F32x sub(F32x a, F32x b) {
    return {_mm512_sub_ps(a.v, b.v)};
}
inline F32x mul(F32x a, F32x b) {
    return {_mm512_mul_ps(a.v, b.v)};
}
inline F32x div(F32x a, F32x b) {
    return {_mm512_div_ps(a.v, b.v)};
}
inline F32x fma(F32x a, F32x b, F32x c) {
    return {_mm512_fmadd_ps(a.v, b.v, c.v)};
}
inline F32x min(F32x a, F32x b) {
    return {_mm512_min_ps(a.v, b.v)};
}
inline F32x max(F32x a, F32x b) {
    return {_mm512_max_ps(a.v, b.v)};
}
inline F32x round(F32x a) {
    return {_mm512_roundscale_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
}
inline F32x abs(F32x a) {
    return {_mm512_abs_ps(a.v)};
}
// Lanes holding integers in [-128, 127] as bytes at p.
inline void store_i8(int8_t* p, F32x a) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(a.v)));
}
// 2^n for integral n in [-126, 127], built directly in the exponent field.
inline F32x pow2i(F32x n) {
    const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n.v), _mm512_set1_epi32(127));
    return {_mm512_castsi512_ps(_mm512_slli_epi32(e, 23))};
}
// a < b ? yes : no, per lane (false for NaN).
inline F32x select_lt(F32x a, F32x b, F32x yes, F32x no) {
    return {_mm512_mask_blend_ps(_mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ), no.v, yes.v)};
}
inline float reduce_add(F32x a) {
    return _mm512_reduce_add_ps(a.v);
}
inline float reduce_max(F32x a) {
    return _mm512_reduce_max_ps(a.v);
}

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

constexpr int kLanes = 8;
struct F32x {
    __m256 v;
};

inline F32x zero() {
    return {_mm256_setzero_ps()};
}
inline F32x splat(float x) {
    return {_mm256_set1_ps(x)};
}
inline F32x load(const float* p) {
    return {_mm256_loadu_ps(p)};
}
inline void store(float* p, F32x a) {
    _mm256_storeu_ps(p, a.v);
}
inline F32x load_f16(const uint16_t* p) {
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))};
}
inline F32x load_bf16(const uint16_t* p) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return {_mm256_castsi256_ps(_mm256_slli_epi32(h, 16))};
}
inline F32x load_i8(const int8_t* p) {
    return {_mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))))};
}
inline F32x add(F32x a, F32x b) {
    return {_mm256_add_ps(a.v, b.v)};
}
inline F32x sub(F32x a, F32x b) {
    return {_mm256_sub_ps(a.v, b.v)};
}
inline F32x mul(F32x a, F32x b) {
    return {_mm256_mul_ps(a.v, b.v)};
}
inline F32x div(F32x a, F32x b) {
    return {_mm256_div_ps(a.v, b.v)};
}
inline F32x fma(F32x a, F32x b, F32x c) {
    return {_mm256_fmadd_ps(a.v, b.v, c.v)};
}
inline F32x min(F32x a, F32x b) {
    return {_mm256_min_ps(a.v, b.v)};
}
inline F32x max(F32x a, F32x b) {
    return {_mm256_max_ps(a.v, b.v)};
}
inline F32x round(F32x a) {
    return {_mm256_round_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
}
inline F32x abs(F32x a) {
    return {_mm256_andnot_ps(_mm256_set1_ps(-0.0f), a.v)};
}
inline void store_i8(int8_t* p, F32x a) {
    const __m256i i = _mm256_cvtps_epi32(a.v);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packs_epi16(w, w));
}
inline F32x pow2i(F32x n) {
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n.v), _mm256_set1_epi32(127));
    return {_mm256_castsi256_ps(_mm256_slli_epi32(e, 23))};
}
inline F32x select_lt(F32x a, F32x b, F32x yes, F32x no) {
    return {_mm256_blendv_ps(no.v, yes.v, _mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ))};
}
inline float reduce_add(F32x a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
inline float reduce_max(F32x a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#else

constexpr int kLanes = 8;
struct F32x {
    float lane[kLanes];
};

template <typename Op>
inline F32x lanewise(Op op) {
    F32x r;
    for (int i = 0; i < kLanes; ++i) r.lane[i] = op(i);
    return r;
}

inline F32x zero() {
    return lanewise([](int) { return 0.0f; });
}
inline F32x splat(float x) {
    return lanewise([x](int) { return x; });
}
inline F32x load(const float* p) {
    F32x r;
    std::memcpy(r.lane, p, sizeof r.lane);
    return r;
}
inline void store(float* p, F32x a) {
    std::memcpy(p, a.lane, sizeof a.lane);
}
inline F32x load_f16(const uint16_t* p) {
    return lanewise([p](int i) { return sy::sdk::fp16_to_f32(p[i]); });
}
inline F32x load_bf16(const uint16_t* p) {
    return lanewise([p](int i) { return sy::sdk::bf16_to_f32(p[i]); });
}
inline F32x load_i8(const int8_t* p) {
    return lanewise([p](int i) { return float(p[i]); });
}
inline F32x add(F32x a, F32x b) {
    return lanewise([&](int i) { return a.lane[i] + b.lane[i]; });
}
inline F32x sub(F32x a, F32x b) {
    return lanewise([&](int i) { return a.lane[i] - b.lane[i]; });
}
inline F32x mul(F32x a, F32x b) {
    return lanewise([&](int i) { return a.lane[i] * b.lane[i]; });
}
inline F32x div(F32x a, F32x b) {
    return lanewise([&](int i) { return a.lane[i] / b.lane[i]; });
}
inline F32x fma(F32x a, F32x b, F32x c) {
    return lanewise([&](int i) { return a.lane[i] * b.lane[i] + c.lane[i]; });
}
inline F32x min(F32x a, F32x b) {
    return lanewise([&](int i) { return a.lane[i] < b.lane[i] ? a.lane[i] : b.lane[i]; });
}
inline F32x max(F32x a, F32x b) {
    return lanewise([&](int i) { return a.lane[i] > b.lane[i] ? a.lane[i] : b.lane[i]; });
}
inline F32x round(F32x a) {
    return lanewise([&](int i) { return std::nearbyint(a.lane[i]); });
}
inline F32x abs(F32x a) {
    return lanewise([&](int i) { return std::fabs(a.lane[i]); });
}
inline void store_i8(int8_t* p, F32x a) {
    for (int i = 0; i < kLanes; ++i) p[i] = int8_t(a.lane[i]);
}
inline F32x pow2i(F32x n) {
    return lanewise([&](int i) {
        const float v = n.lane[i];
        const int32_t e = v == v ? int32_t(v) : 0;  // a NaN lane stays NaN through the caller
        return sy::sdk::bits_to_f32(uint32_t(e + 127) << 23);
    });
}
inline F32x select_lt(F32x a, F32x b, F32x yes, F32x no) {
    return lanewise([&](int i) { return a.lane[i] < b.lane[i] ? yes.lane[i] : no.lane[i]; });
}
inline float reduce_add(F32x a) {
    float s = 0.0f;
    for (float v : a.lane) s += v;
    return s;
}
inline float reduce_max(F32x a) {
    float m = a.lane[0];
    for (float v : a.lane) m = v > m ? v : m;
    return m;
}

#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu::simd
