// Vector math on top of simd.hpp: exp and the activations built from it, plus the per-row
// loops the elementwise kernels share. Same inline-namespace rule as simd.hpp.
#pragma once

#include <cstdint>

#include "simd.hpp"

namespace sy::cpu::simd {
inline namespace SY_CPU_SIMD_ISA {

// e^x, Cephes-style: x = n ln2 + r with |r| <= ln2/2, a degree-6 polynomial for e^r, and 2^n
// built in the exponent. About 1 ulp in the normal range; 0 below ln(FLT_MIN) (where the true
// value is a denormal), +inf above ln(FLT_MAX), NaN stays NaN.
inline F32x exp(F32x x) {
    const F32x lo = splat(-87.33654f);
    const F32x hi = splat(88.72283f);
    const F32x xc = min(hi, max(lo, x));
    const F32x n = round(mul(xc, splat(1.44269504088896341f)));
    // r = x - n ln2 with ln2 split in two so the subtraction is exact enough.
    F32x r = fma(n, splat(-0.693359375f), xc);
    r = fma(n, splat(2.12194440e-4f), r);
    F32x p = splat(1.9875691500e-4f);
    p = fma(p, r, splat(1.3981999507e-3f));
    p = fma(p, r, splat(8.3334519073e-3f));
    p = fma(p, r, splat(4.1665795894e-2f));
    p = fma(p, r, splat(1.6666665459e-1f));
    p = fma(p, r, splat(5.0000001201e-1f));
    p = fma(p, mul(r, r), add(r, splat(1.0f)));
    // n reaches 128 at the top of the range: scale by 2^(n-1) * 2 to stay inside pow2i's range.
    F32x y = mul(mul(p, pow2i(sub(n, splat(1.0f)))), splat(2.0f));
    y = select_lt(x, lo, zero(), y);
    y = select_lt(hi, x, splat(INFINITY), y);
    return y;
}

// 1 / (1 + e^-x)
inline F32x sigmoid(F32x x) {
    const F32x one = splat(1.0f);
    return div(one, add(one, exp(sub(zero(), x))));
}

// x / (1 + e^-x)
inline F32x silu(F32x x) {
    return div(x, add(splat(1.0f), exp(sub(zero(), x))));
}

// 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), computed as x * sigmoid(2u)
// (the same function: 0.5 (1 + tanh(u)) = 1 / (1 + e^-2u)), which avoids tanh's cancellation.
inline F32x gelu(F32x x) {
    const F32x x2 = mul(x, x);
    const F32x u = mul(x, fma(x2, splat(0.044715f), splat(1.0f)));
    const F32x minus_2u = mul(u, splat(-2.0f * 0.7978845608028654f));
    return div(x, add(splat(1.0f), exp(minus_2u)));
}

// Scalar forms through lane 0 of the vector ones, so that tails compute exactly what the bodies
// compute.
template <F32x (*Fn)(F32x)>
inline float scalar_via_vector(float x) {
    float buf[kLanes];
    store(buf, Fn(splat(x)));
    return buf[0];
}

// out[i] = Fn(in[i]) for n contiguous floats (in == out allowed).
template <F32x (*Fn)(F32x)>
inline void map(const float* in, float* out, int64_t n) {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) store(out + i, Fn(load(in + i)));
    if (i < n) {
        float buf[kLanes] = {};
        for (int64_t j = i; j < n; ++j) buf[j - i] = in[j];
        store(buf, Fn(load(buf)));
        for (int64_t j = i; j < n; ++j) out[j] = buf[j - i];
    }
}

inline float sum(const float* x, int64_t n) {
    F32x acc0 = zero(), acc1 = zero();
    int64_t i = 0;
    for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
        acc0 = add(acc0, load(x + i));
        acc1 = add(acc1, load(x + i + kLanes));
    }
    for (; i + kLanes <= n; i += kLanes) acc0 = add(acc0, load(x + i));
    float s = reduce_add(add(acc0, acc1));
    for (; i < n; ++i) s += x[i];
    return s;
}

inline float sum_of_squares(const float* x, int64_t n) {
    F32x acc0 = zero(), acc1 = zero();
    int64_t i = 0;
    for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
        const F32x a = load(x + i), b = load(x + i + kLanes);
        acc0 = fma(a, a, acc0);
        acc1 = fma(b, b, acc1);
    }
    for (; i + kLanes <= n; i += kLanes) {
        const F32x a = load(x + i);
        acc0 = fma(a, a, acc0);
    }
    float s = reduce_add(add(acc0, acc1));
    for (; i < n; ++i) s += x[i] * x[i];
    return s;
}

inline float max_of(const float* x, int64_t n) {
    float m = -INFINITY;
    int64_t i = 0;
    if (n >= kLanes) {
        F32x acc = splat(-INFINITY);
        for (; i + kLanes <= n; i += kLanes) acc = max(acc, load(x + i));
        m = reduce_max(acc);
    }
    for (; i < n; ++i) m = x[i] > m ? x[i] : m;
    return m;
}

// out[i] = in[i] * a + b
inline void scale_shift(const float* in, float* out, int64_t n, float a, float b) {
    const F32x va = splat(a), vb = splat(b);
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) store(out + i, fma(load(in + i), va, vb));
    for (; i < n; ++i) out[i] = in[i] * a + b;
}

// out[i] = e^(in[i] - shift); returns the sum of the outputs.
inline float exp_shifted(const float* in, float* out, int64_t n, float shift) {
    const F32x vs = splat(shift);
    F32x acc = zero();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        const F32x e = exp(sub(load(in + i), vs));
        store(out + i, e);
        acc = add(acc, e);
    }
    float s = reduce_add(acc);
    for (; i < n; ++i) {
        out[i] = scalar_via_vector<exp>(in[i] - shift);
        s += out[i];
    }
    return s;
}

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu::simd
