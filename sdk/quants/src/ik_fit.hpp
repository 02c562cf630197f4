// The fitting pieces shared by the quantizers of ik_llama.cpp's types (ikquants.cpp,
// ikquants_rows.cpp): weighted least-squares fits of a sub-block on a non-linear value table, and
// the index layouts the types share.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "internal.hpp"

namespace sy::quants::detail::ik {

constexpr int kNtry = 7;

// A type's table (the base half of n entries, the shifted half after it), its integer sub-block
// scales ([lo, hi], odd only for IQ3_K), and for tables of 16 entries and more each half's
// constant-time lookup (nearest[0], nearest[1]; for 4 and 8 entries two or three halvings cost
// less). Literal, so that a quantizer's loops are compiled for its table's size.
struct Table {
    const int8_t* values;
    int n;
    int scale_lo, scale_hi;
    bool odd_scales;
    const NearestIndex* nearest = nullptr;
    // The index of the entry of half `half` nearest to x.
    [[gnu::always_inline]] int index(int half, float x) const {
        return nearest ? nearest[half](x) : best_index_int8(n, values + half * n, x);
    }
};

// The weighted fit of x (len values) on one table half at inverse scale id: indices into L, and
// sum w q x, sum w q^2.
[[gnu::always_inline]] inline void fit(int len, const float* x, const float* w, const Table& t,
                                       int half, float id, uint8_t* L, float& sumqx, float& sumq2) {
    const int8_t* values = t.values + half * t.n;
    sumqx = sumq2 = 0;
    for (int j = 0; j < len; ++j) {
        const int l = t.index(half, id * x[j]);
        L[j] = uint8_t(l);
        const float q = values[l];
        sumqx += w[j] * q * x[j];
        sumq2 += w[j] * q * q;
    }
}

// The best float scale of one sub-block of len (<= 32) values on table half `half`, and its
// score sumqx^2 / sumq2 (larger is better: the error is sum w x^2 minus it).
[[gnu::always_inline]] inline float best_scale(int len, const float* x, const float* w,
                                               const Table& t, int half, float& score) {
    const int8_t* values = t.values + half * t.n;
    const int n = t.n;
    float amax = 0, max = 0;
    for (int j = 0; j < len; ++j)
        if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
    score = 0;
    if (amax < kGroupMaxEps) return 0;
    uint8_t L[32];
    float best_d = 0;
    // The largest value on either end of the table, and scales around each.
    for (const int8_t end : {values[0], values[n - 1]}) {
        for (int itry = -kNtry; itry <= kNtry; ++itry) {
            const float id = (float(end) + float(itry) * float(std::abs(end)) / 64.f) / max;
            float sumqx, sumq2;
            fit(len, x, w, t, half, id, L, sumqx, sumq2);
            if (sumq2 > 0 && sumqx * sumqx > score * sumq2) {
                score = sumqx * sumqx / sumq2;
                best_d = sumqx / sumq2;
            }
        }
    }
    return best_d;
}

// The integer scale nearest to t within the type's range (odd values only for IQ3_K).
inline int round_scale(const Table& t, float v) {
    if (!t.odd_scales) return std::clamp(nearest_int(v), t.scale_lo, t.scale_hi);
    const int m = std::clamp(2 * nearest_int((std::fabs(v) - 1) / 2) + 1, 1, t.scale_hi);
    return v < 0 ? -m : m;
}

// Bits of index n (0..255) in the Q2_K plane order of IQ2_K/IQ3_K/IQ6_K: byte 32 (n / 128) +
// n % 32, shift 2 ((n / 32) % 4).
inline int plane_byte(int n) {
    return 32 * (n / 128) + n % 32;
}
inline int plane_shift(int n) {
    return 2 * ((n / 32) % 4);
}
// Low nibble of index n: IQ4_K per 32 values, IQ5_K/IQ6_K per 64.
inline int nibble_byte(int n, int group) {
    return (group / 2) * (n / group) + n % (group / 2);
}
inline int nibble_shift(int n, int group) {
    return n % group < group / 2 ? 0 : 4;
}

}  // namespace sy::quants::detail::ik
