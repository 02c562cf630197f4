// Per-column float accumulators of the AVX-512 quantized dot products (vec_dot_groups.cpp,
// vec_dot_kquants512.cpp): acc collects the scaled integer products, off the share of the
// weights' offsets or mins (from the activation block sums), subtracted once at the end. Only
// for translation units built with AVX-512F.
#pragma once

#include <immintrin.h>

#include "simd.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

template <int C>
struct ColumnSums {
    static_assert(C >= 1 && C <= 4, "store() reduces up to 4 columns at once");
    __m512 acc[C];
    __m256 off[C];

    ColumnSums() {
        for (int c = 0; c < C; ++c) {
            acc[c] = _mm512_setzero_ps();
            off[c] = _mm256_setzero_ps();
        }
    }

    // out[c] = sum(acc[c]) - offset * sum(off[c]), the columns reduced side by side: each
    // column's 16 + 8 lanes fold to 8 (acc's halves added, offset * off subtracted), then three
    // rounds of pairwise adds take 4 columns to 4 sums at once. Every column goes through the
    // same tree whatever C is, so a value does not depend on its neighbours. (Reducing each
    // column alone took about 16 instructions per column; the several-rows GEMV stores a result
    // every 2 to 8 steps of about 25.)
    void store(float offset, float* out) const {
        const __m256 o = _mm256_set1_ps(offset);
        __m256 t[4];
        for (int c = 0; c < 4; ++c) {
            if (c < C) {
                const __m256 lo = _mm512_castps512_ps256(acc[c]);
                const __m256 hi =
                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[c]), 1));
                t[c] = _mm256_fnmadd_ps(o, off[c], _mm256_add_ps(lo, hi));
            } else {
                t[c] = _mm256_setzero_ps();
            }
        }
        const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(t[0], t[1]), _mm256_hadd_ps(t[2], t[3]));
        const __m128 sums = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        if constexpr (C == 4) {
            _mm_storeu_ps(out, sums);
        } else {
            alignas(16) float r[4];
            _mm_store_ps(r, sums);
            for (int c = 0; c < C; ++c) out[c] = r[c];
        }
    }
};

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
