// Per-column float accumulators of the AVX-512 quantized dot products (vec_dot_groups.cpp,
// vec_dot_kquants512.cpp): acc collects the scaled integer products, off the share of the
// weights' offsets or mins (from the activation block sums), subtracted once at the end. Only
// for translation units built with AVX-512F.
#pragma once

#include <immintrin.h>

#include "simd.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

inline float reduce256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

template <int C>
struct ColumnSums {
    __m512 acc[C];
    __m256 off[C];

    ColumnSums() {
        for (int c = 0; c < C; ++c) {
            acc[c] = _mm512_setzero_ps();
            off[c] = _mm256_setzero_ps();
        }
    }

    // out[c] = sum(acc[c]) - offset * sum(off[c]).
    void store(float offset, float* out) const {
        for (int c = 0; c < C; ++c)
            out[c] = _mm512_reduce_add_ps(acc[c]) - offset * reduce256(off[c]);
    }
};

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
