// IQ4_NL and IQ4_XS: 4-bit indices into the non-linear table sy_kvalues_iq4nl, with the scale
// search of ggml's quantize_row_iq4_nl_impl (ntry = 7): weighted by x^2 without an importance
// matrix, by importance * sqrt(sigma2 + x^2) with one (sigma2 = 2 mean(x^2) over the super-block).
#include <algorithm>
#include <cmath>

#include "internal.hpp"

namespace sy::quants::detail {
namespace {

constexpr int kNtry = 7;
const NearestIndex kIq4nlNearest(16, sy_kvalues_iq4nl);

// One super-block of `super_block_size` values in sub-blocks of 32. With one sub-block (IQ4_NL)
// the scale is stored as is; with several (IQ4_XS) each sub-block scale becomes a 6-bit multiple
// of d = -max_scale / 32, stored in scales_l (4 bits) and scales_h (2 bits). `importance` holds
// the super-block's importance (or is null).
void quantize_iq4_block(int super_block_size, const float* x, const float* importance, uint16_t* dh,
                        uint8_t* q4, uint16_t* scales_h, uint8_t* scales_l) {
    constexpr int block_size = 32;
    const int8_t* values = sy_kvalues_iq4nl;
    float scales[SY_QK_K / 32];
    float weight[block_size];
    uint8_t L[SY_QK_K] = {};

    std::memset(q4, 0, size_t(super_block_size / 2));
    dh[0] = to_half(0.f);
    const float sigma2 =
        importance ? 2 * sum_of_squares(x, super_block_size) / float(super_block_size) : 0.f;

    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < super_block_size / block_size; ++ib) {
        const float* xb = x + ib * block_size;
        uint8_t* Lb = L + ib * block_size;
        if (importance) {
            importance_weights(xb, importance + ib * block_size, sigma2, block_size, weight);
        } else {
            for (int j = 0; j < block_size; ++j) weight[j] = xb[j] * xb[j];
        }
        float amax = 0, max = 0;
        for (int j = 0; j < block_size; ++j) {
            const float ax = std::fabs(xb[j]);
            if (ax > amax) {
                amax = ax;
                max = xb[j];
            }
        }
        if (amax < kGroupMaxEps) {
            scales[ib] = 0;
            continue;
        }
        float d = -max / values[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < block_size; ++j) {
            const int l = kIq4nlNearest(id * xb[j]);
            Lb[j] = uint8_t(l);
            const float q = values[l];
            sumqx += weight[j] * q * xb[j];
            sumq2 += weight[j] * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        for (int itry = -kNtry; itry <= kNtry; ++itry) {
            id = float(itry + values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < block_size; ++j) {
                const float q = values[kIq4nlNearest(id * xb[j])];
                sumqx += weight[j] * q * xb[j];
                sumq2 += weight[j] * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        if (std::fabs(d) > amax_scale) {
            amax_scale = std::fabs(d);
            max_scale = d;
        }
    }

    if (super_block_size / block_size > 1) {
        const int nb = super_block_size / block_size;
        std::memset(scales_h, 0, size_t((nb + 7) / 8) * sizeof(uint16_t));
        const float d = -max_scale / 32;
        dh[0] = to_half(d);
        const float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < nb; ++ib) {
            int l = std::clamp(nearest_int(id * scales[ib]), -32, 31);
            const float dl = d * float(l);
            const float idl = dl ? 1 / dl : 0.f;
            uint8_t* Lb = L + ib * block_size;
            const float* xb = x + ib * block_size;
            for (int j = 0; j < block_size; ++j) {
                Lb[j] = uint8_t(kIq4nlNearest(idl * xb[j]));
            }
            l += 32;
            const uint8_t l_l = uint8_t(l & 0xf);
            const uint8_t l_h = uint8_t(l >> 4);
            if (ib % 2 == 0) {
                scales_l[ib / 2] = l_l;
            } else {
                scales_l[ib / 2] |= uint8_t(l_l << 4);
            }
            scales_h[ib / 8] = uint16_t(scales_h[ib / 8] | (l_h << 2 * (ib % 8)));
        }
    } else {
        dh[0] = to_half(scales[0]);
        const float id = scales[0] ? 1 / scales[0] : 0;
        for (int j = 0; j < super_block_size; ++j) {
            L[j] = uint8_t(kIq4nlNearest(id * x[j]));
        }
    }

    for (int i = 0; i < super_block_size / 32; ++i) {
        for (int j = 0; j < 16; ++j) {
            q4[16 * i + j] = uint8_t(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
        }
    }
}

}  // namespace

void quantize_iq4_nl(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<sy_block_iq4_nl*>(vy);
    uint16_t unused_h;
    uint8_t unused_l;
    for (int64_t i = 0; i < n / SY_QK4_NL; ++i, x += SY_QK4_NL) {
        quantize_iq4_block(SY_QK4_NL, x, nullptr, &y[i].d, y[i].qs, &unused_h, &unused_l);
    }
}

void quantize_iq4_nl_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    auto* y = static_cast<sy_block_iq4_nl*>(vy);
    uint16_t unused_h;
    uint8_t unused_l;
    for (int64_t i = 0; i < n / SY_QK4_NL; ++i, x += SY_QK4_NL) {
        const float* w = importance ? importance + i * SY_QK4_NL : nullptr;
        quantize_iq4_block(SY_QK4_NL, x, w, &y[i].d, y[i].qs, &unused_h, &unused_l);
    }
}

void dequantize_iq4_nl(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_iq4_nl*>(vx);
    for (int64_t i = 0; i < n / SY_QK4_NL; ++i, y += SY_QK4_NL) {
        const float d = from_half(x[i].d);
        for (int j = 0; j < SY_QK4_NL / 2; ++j) {
            y[j] = d * float(sy_kvalues_iq4nl[x[i].qs[j] & 0xf]);
            y[j + SY_QK4_NL / 2] = d * float(sy_kvalues_iq4nl[x[i].qs[j] >> 4]);
        }
    }
}

void quantize_iq4_xs(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<sy_block_iq4_xs*>(vy);
    for (int64_t i = 0; i < n / SY_QK_K; ++i, x += SY_QK_K) {
        uint16_t scales_h = 0;
        quantize_iq4_block(SY_QK_K, x, nullptr, &y[i].d, y[i].qs, &scales_h, y[i].scales_l);
        y[i].scales_h = scales_h;
    }
}

void quantize_iq4_xs_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    auto* y = static_cast<sy_block_iq4_xs*>(vy);
    for (int64_t i = 0; i < n / SY_QK_K; ++i, x += SY_QK_K) {
        uint16_t scales_h = 0;
        const float* w = importance ? importance + i * SY_QK_K : nullptr;
        quantize_iq4_block(SY_QK_K, x, w, &y[i].d, y[i].qs, &scales_h, y[i].scales_l);
        y[i].scales_h = scales_h;
    }
}

void dequantize_iq4_xs(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_iq4_xs*>(vx);
    for (int64_t i = 0; i < n / SY_QK_K; ++i) {
        const uint8_t* qs = x[i].qs;
        const float d = from_half(x[i].d);
        for (int ib = 0; ib < SY_QK_K / 32; ++ib, y += 32, qs += 16) {
            const int ls = ((x[i].scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) |
                           (((x[i].scales_h >> 2 * ib) & 3) << 4);
            const float dl = d * float(ls - 32);
            for (int j = 0; j < 16; ++j) {
                y[j + 0] = dl * float(sy_kvalues_iq4nl[qs[j] & 0xf]);
                y[j + 16] = dl * float(sy_kvalues_iq4nl[qs[j] >> 4]);
            }
        }
    }
}

}  // namespace sy::quants::detail
