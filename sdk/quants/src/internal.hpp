// Shared helpers of the quantizers: ggml's rounding and the per-type row functions that
// quants.cpp dispatches to. Internal to switchyard_quants.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "switchyard/quant_blocks.h"
#include "switchyard/sdk.hpp"

namespace sy::quants::detail {

// Groups whose largest magnitude is below this are treated as all zero (ggml GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest (ties to even) by adding 1.5 * 2^23: ggml's nearest_int, valid for
// |x| <= 4194303.
inline int nearest_int(float fval) {
    const float val = fval + 12582912.f;
    int32_t i;
    std::memcpy(&i, &val, sizeof(i));
    return (i & 0x007fffff) - 0x00400000;
}

inline uint16_t to_half(float f) {
    return sy::sdk::f32_to_fp16(f);
}
inline float from_half(uint16_t h) {
    return sy::sdk::fp16_to_f32(h);
}

// sum x[i]^2 in index order (ggml's sigma2 is a multiple of it over the row or super-block).
inline float sum_of_squares(const float* x, int64_t n) {
    float s = 0;
    for (int64_t i = 0; i < n; ++i) s += x[i] * x[i];
    return s;
}

// The fit weights of ggml's quantizers given an importance matrix (quant_weights):
// w[i] = importance[i] * sqrt(sigma2 + x[i]^2). A group whose importance is all zero (columns no
// calibration token reached) is weighted as if it were all one: ggml would zero such a group,
// as no weighting prefers any of its values, but the model may still meet them.
inline void importance_weights(const float* x, const float* importance, float sigma2, int n,
                               float* w) {
    bool any = false;
    for (int i = 0; i < n; ++i) any = any || importance[i] > 0;
    for (int i = 0; i < n; ++i)
        w[i] = (any ? importance[i] : 1.f) * std::sqrt(sigma2 + x[i] * x[i]);
}

// The i-quants' fit weights per sub-block of `sub` values: importance_weights with a matrix,
// else sqrt(sigma2 + x^2) (ggml weighs by x^2 there; on Gaussian rows that leaves a 20-25% larger
// plain RMS error for the same codebook).
inline void subblock_weights(const float* x, const float* importance, float sigma2, int n, int sub,
                             float* w) {
    for (int i = 0; i < n; i += sub) {
        if (importance) {
            importance_weights(x + i, importance + i, sigma2, sub, w + i);
        } else {
            for (int j = i; j < i + sub; ++j) w[j] = std::sqrt(sigma2 + x[j] * x[j]);
        }
    }
}

// The factor d minimising sum w (x - d y0)^2 (y0: a block dequantized at scale 1), in double;
// `fallback` where it would not be positive.
inline float least_squares_factor(const float* x, const float* y0, const float* w, int n,
                                  float fallback) {
    double sxy = 0, syy = 0;
    for (int i = 0; i < n; ++i) {
        sxy += double(w[i]) * x[i] * y0[i];
        syy += double(w[i]) * y0[i] * y0[i];
    }
    return syy > 0 && sxy > 0 ? float(sxy / syy) : fallback;
}

// Index of the entry of an ascending int8 table of n nearest to x (the upper one on ties): the
// non-linear types' (IQ4_NL/XS, ik_llama.cpp's IQ*_K) value lookup.
inline int best_index_int8(int n, const int8_t* val, float x) {
    if (x <= val[0]) return 0;
    if (x >= val[n - 1]) return n - 1;
    // The last ml with val[ml] <= x, by halving a range whose length depends only on n: the
    // selects compile to conditional moves, where a branch per step would be mispredicted about
    // half the time (the quantizers call this tens of times per value).
    int ml = 0, len = n - 1;
    while (len > 1) {
        const int half = len / 2;
        ml = x >= float(val[ml + half]) ? ml + half : ml;
        len -= half;
    }
    return x - val[ml] < val[ml + 1] - x ? ml : ml + 1;
}

// best_index_int8 of one table in constant time, for the searches that look every value up at
// dozens of trial scales. best_index_int8 finds ml, the last entry <= x (at most n - 2), then
// takes ml + 1 unless x - val[ml] < val[ml + 1] - x in float arithmetic (which rounds within an
// ulp of the midpoint, so the comparison itself is kept, not replaced by an exact one). The
// entries are integers, so val[i] <= x exactly when val[i] <= floor(x): a table over floor(x)
// in [-256, 255] gives ml. The same index as best_index_int8 for every x that is not NaN.
class NearestIndex {
  public:
    NearestIndex(int n, const int8_t* val) : val_(val) {
        for (int k = -256; k < 256; ++k) {
            int count = 0;
            for (int i = 0; i < n; ++i) count += int(val[i]) <= k;
            lut_[k + 256] = uint8_t(std::clamp(count - 1, 0, n - 2));
        }
    }
    int operator()(float x) const {
        // Clamped without std::fmin/fmax (library calls here); NaN goes to -256, not past
        // the table.
        float t = x >= -256.f ? x : -256.f;
        t = t <= 255.f ? t : 255.f;
        int k = int(t);     // toward zero ...
        k -= float(k) > t;  // ... then down: floor(t)
        const int ml = lut_[k + 256];
        return x - float(val_[ml]) < float(val_[ml + 1]) - x ? ml : ml + 1;
    }

  private:
    const int8_t* val_;
    uint8_t lut_[512];
};

// The scale searches the legacy and K-quant quantizers share (scale_search.cpp).
// make_qx_quants: symmetric, L[i] in [0, 2 nmax) with x ~ scale * (L - nmax), minimising
// sum w (x - scale (L - nmax))^2, w = weights[i] or, without weights, x^2 (ggml's rmse_type 1).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, const float* weights = nullptr);
// make_qkx3_quants: asymmetric, x ~ scale * L - the_min with L in [0, nmax] and the_min >= 0,
// minimising the weighted squared (absolute when use_mad) error over nstep + 1 scales
// (rmin + rdelta * is + nmax) / (max - min), the min refitted with each.
float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad);
// make_q3_quants: Q3_K's symmetric search, x^2-weighted, single quants moved while the fit
// improves (at most 5 passes).
float make_q3_quants(int n, int nmax, const float* x, int8_t* L);
// make_qkx2_quants: the reference K-quants' asymmetric scale + min search.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad);
// make_qp_quants: the weighted K-quants' fit of sub-block scales (or mins) x >= 0 as d * L.
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights);

// One function pair per type; n is a multiple of the block size.
#define SY_QUANTS_DECLARE(name)                               \
    void quantize_##name(const float* x, void* y, int64_t n); \
    void dequantize_##name(const void* x, float* y, int64_t n);

SY_QUANTS_DECLARE(f32)
SY_QUANTS_DECLARE(f16)
SY_QUANTS_DECLARE(bf16)
SY_QUANTS_DECLARE(q4_0)
SY_QUANTS_DECLARE(q4_1)
SY_QUANTS_DECLARE(q5_0)
SY_QUANTS_DECLARE(q5_1)
SY_QUANTS_DECLARE(q8_0)
SY_QUANTS_DECLARE(q8_1)
SY_QUANTS_DECLARE(q2_K)
SY_QUANTS_DECLARE(q3_K)
SY_QUANTS_DECLARE(q4_K)
SY_QUANTS_DECLARE(q5_K)
SY_QUANTS_DECLARE(q6_K)
SY_QUANTS_DECLARE(q8_K)
SY_QUANTS_DECLARE(iq4_nl)
SY_QUANTS_DECLARE(iq4_xs)

SY_QUANTS_DECLARE(iq2_xxs)
SY_QUANTS_DECLARE(iq2_xs)
SY_QUANTS_DECLARE(iq2_s)
SY_QUANTS_DECLARE(iq3_xxs)
SY_QUANTS_DECLARE(iq3_s)
SY_QUANTS_DECLARE(iq1_s)
SY_QUANTS_DECLARE(iq1_m)
SY_QUANTS_DECLARE(q6_0)
SY_QUANTS_DECLARE(iq2_k)
SY_QUANTS_DECLARE(iq3_k)
SY_QUANTS_DECLARE(iq4_k)
SY_QUANTS_DECLARE(iq5_k)
SY_QUANTS_DECLARE(iq6_k)
// The row-scaled types: n is one row (the row's scale in front of its blocks).
SY_QUANTS_DECLARE(iq2_ks)
SY_QUANTS_DECLARE(iq3_ks)
SY_QUANTS_DECLARE(iq4_ks)
SY_QUANTS_DECLARE(iq4_kss)
SY_QUANTS_DECLARE(iq5_ks)
SY_QUANTS_DECLARE(iq2_kl)
SY_QUANTS_DECLARE(iq1_kt)
SY_QUANTS_DECLARE(iq2_kt)
SY_QUANTS_DECLARE(iq3_kt)
SY_QUANTS_DECLARE(iq4_kt)
SY_QUANTS_DECLARE(q8_kv)

#undef SY_QUANTS_DECLARE

// The quantizers that take an importance matrix: `importance` holds n weights (or is null).
#define SY_QUANTS_DECLARE_WEIGHTED(name) \
    void quantize_##name##_weighted(const float* x, void* y, int64_t n, const float* importance);
SY_QUANTS_DECLARE_WEIGHTED(q4_0)
SY_QUANTS_DECLARE_WEIGHTED(q4_1)
SY_QUANTS_DECLARE_WEIGHTED(q5_0)
SY_QUANTS_DECLARE_WEIGHTED(q5_1)
SY_QUANTS_DECLARE_WEIGHTED(q2_K)
SY_QUANTS_DECLARE_WEIGHTED(q3_K)
SY_QUANTS_DECLARE_WEIGHTED(q4_K)
SY_QUANTS_DECLARE_WEIGHTED(q5_K)
SY_QUANTS_DECLARE_WEIGHTED(q6_K)
SY_QUANTS_DECLARE_WEIGHTED(iq4_nl)
SY_QUANTS_DECLARE_WEIGHTED(iq4_xs)
SY_QUANTS_DECLARE_WEIGHTED(iq2_xxs)
SY_QUANTS_DECLARE_WEIGHTED(iq2_xs)
SY_QUANTS_DECLARE_WEIGHTED(iq2_s)
SY_QUANTS_DECLARE_WEIGHTED(iq3_xxs)
SY_QUANTS_DECLARE_WEIGHTED(iq3_s)
SY_QUANTS_DECLARE_WEIGHTED(iq1_s)
// IQ1_M_R4's de-interleaved rows (row-scaled: x / y is the row's start).
void quantize_iq1_m_r4_rows(const float* x, void* y, int64_t n);
void quantize_iq1_m_r4_rows_weighted(const float* x, void* y, int64_t n, const float* importance);
void dequantize_iq1_m_r4_rows(const void* x, float* y, int64_t n);
// IQ1_S rows with one scale per row (quants.hpp quantize_rows_one_scale).
void quantize_iq1_s_one_scale(const float* x, void* y, int64_t n);
void quantize_iq1_s_one_scale_weighted(const float* x, void* y, int64_t n, const float* importance);
SY_QUANTS_DECLARE_WEIGHTED(iq1_m)
SY_QUANTS_DECLARE_WEIGHTED(q6_0)
SY_QUANTS_DECLARE_WEIGHTED(iq2_k)
SY_QUANTS_DECLARE_WEIGHTED(iq3_k)
SY_QUANTS_DECLARE_WEIGHTED(iq4_k)
SY_QUANTS_DECLARE_WEIGHTED(iq5_k)
SY_QUANTS_DECLARE_WEIGHTED(iq6_k)
SY_QUANTS_DECLARE_WEIGHTED(iq2_ks)
SY_QUANTS_DECLARE_WEIGHTED(iq3_ks)
SY_QUANTS_DECLARE_WEIGHTED(iq4_ks)
SY_QUANTS_DECLARE_WEIGHTED(iq4_kss)
SY_QUANTS_DECLARE_WEIGHTED(iq5_ks)
SY_QUANTS_DECLARE_WEIGHTED(iq2_kl)
SY_QUANTS_DECLARE_WEIGHTED(iq1_kt)
SY_QUANTS_DECLARE_WEIGHTED(iq2_kt)
SY_QUANTS_DECLARE_WEIGHTED(iq3_kt)
SY_QUANTS_DECLARE_WEIGHTED(iq4_kt)
#undef SY_QUANTS_DECLARE_WEIGHTED

}  // namespace sy::quants::detail
