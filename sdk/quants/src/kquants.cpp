// The K-quants (256-element super-blocks of 16 or 32 sub-blocks with quantized scales) and the
// Q8_K activation format. Without an importance matrix: ggml's quantize_row_q{2..6}_K_ref and
// their scale searches make_qx_quants, make_q3_quants and make_qkx2_quants, bit for bit. With
// one: the method of ggml's quantize_row_q{2..6}_K_impl, which fits every sub-block with weights
// importance * sqrt(sigma2 + x^2) (make_qkx3_quants, make_qx_quants) and then fits the sub-block
// scales and mins themselves, weighted by each sub-block's total weight (make_qp_quants).
#include <algorithm>
#include <cmath>

#include "internal.hpp"

namespace sy::quants::detail {

namespace {

constexpr int QK_K = SY_QK_K;

// 6-bit scale and min j (0..7) of Q4_K/Q5_K's 12-byte scales.
void get_scale_min_k4(int j, const uint8_t* q, uint8_t& d, uint8_t& m) {
    if (j < 4) {
        d = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        d = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        m = uint8_t((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

// Sub-block scale j (0..15) of Q3_K, 6 bits, biased by 32.
int q3_K_scale(const uint8_t* scales, int j) {
    const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
    return (low | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

// Sum of a sub-block's fit weights: its weight in the fit of the sub-block scales.
float sum_of(const float* w, int n) {
    float s = 0;
    for (int i = 0; i < n; ++i) s += w[i];
    return s;
}

// Q2_K's final quants at the stored scales and mins (a sub-block whose scale is zero keeps the
// search's L), packed four to a byte.
void store_q2_K_quants(const float* x, sy_block_q2_K& y, uint8_t* L) {
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = from_half(y.d) * float(y.scales[j] & 0xF);
        if (!d) continue;
        const float dm = from_half(y.dmin) * float(y.scales[j] >> 4);
        for (int ii = 0; ii < 16; ++ii) {
            L[16 * j + ii] = uint8_t(std::clamp(nearest_int((x[16 * j + ii] + dm) / d), 0, 3));
        }
    }
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            y.qs[j / 4 + l] = uint8_t(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                      (L[j + l + 96] << 6));
        }
    }
}

// Stores Q3_K's sub-block scale j (l in 0..63, biased by 32): low 4 bits in scales[0..7], high
// 2 bits in scales[8..11]. The scales start zeroed.
void set_q3_K_scale(uint8_t* scales, int j, int l) {
    if (j < 8) {
        scales[j] = uint8_t(l & 0xF);
    } else {
        scales[j - 8] |= uint8_t((l & 0xF) << 4);
    }
    scales[j % 4 + 8] |= uint8_t((l >> 4) << (2 * (j / 4)));
}

// Q3_K's final quants at the stored scales (a sub-block whose scale is zero keeps the search's
// L): high bit of element j at bit j / 32 of hmask[j % 32], low 2 bits four to a byte.
void store_q3_K_quants(const float* x, sy_block_q3_K& y, int8_t* L) {
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = from_half(y.d) * float(q3_K_scale(y.scales, j));
        if (!d) continue;
        for (int ii = 0; ii < 16; ++ii) {
            L[16 * j + ii] = int8_t(std::clamp(nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
        }
    }
    std::memset(y.hmask, 0, QK_K / 8);
    for (int j = 0; j < QK_K; ++j) {
        if (L[j] > 3) {
            y.hmask[j % (QK_K / 8)] |= uint8_t(1u << (j / (QK_K / 8)));
            L[j] = int8_t(L[j] - 4);
        }
    }
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            y.qs[j / 4 + l] = uint8_t(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                      (L[j + l + 96] << 6));
        }
    }
}

// Packs the 6-bit scale ls and min lm of sub-block j (0..7) into Q4_K/Q5_K's 12 scale bytes
// (zeroed beforehand); get_scale_min_k4 reads them back.
void set_scale_min_k4(int j, uint8_t ls, uint8_t lm, uint8_t* q) {
    if (j < 4) {
        q[j] = ls;
        q[j + 4] = lm;
    } else {
        q[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
        q[j - 4] |= uint8_t((ls >> 4) << 6);
        q[j - 0] |= uint8_t((lm >> 4) << 6);
    }
}

// Q4_K/Q5_K's final quants in [0, nmax] at the stored scales and mins (a sub-block whose scale
// is zero keeps the search's L).
template <typename Block>
void requantize_k(const float* x, const Block& y, uint8_t* L, int nmax) {
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, y.scales, sc, m);
        const float d = from_half(y.d) * float(sc);
        if (!d) continue;
        const float dm = from_half(y.dmin) * float(m);
        for (int ii = 0; ii < 32; ++ii) {
            L[32 * j + ii] = uint8_t(std::clamp(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
        }
    }
}

// Q4_K and Q5_K share the scale search and packing; returns the final quants in L.
template <typename Block>
void quantize_k_scales_mins(const float* x, Block& y, uint8_t* L, int nmax, float rmin, int nstep) {
    uint8_t Laux[32];
    float weights[32], mins[QK_K / 32], scales[QK_K / 32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
        scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux,
                                     rmin, 0.1f, nstep, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < QK_K / 32; ++j) {
        const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
        const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
        set_scale_min_k4(j, ls, lm, y.scales);
    }
    y.d = to_half(max_scale / 63.f);
    y.dmin = to_half(max_min / 63.f);
    requantize_k(x, y, L, nmax);
}

// The same with an importance matrix (ggml's quantize_row_q4_K_impl / q5_K_impl): every
// sub-block fitted with weights importance * sqrt(sigma2 + x^2), sigma2 = 2 mean(x^2) over the
// super-block, then the scales and the mins each fitted on 6 bits, weighted by the sub-blocks'
// total weights.
template <typename Block>
void quantize_k_scales_mins_weighted(const float* x, const float* importance, Block& y, uint8_t* L,
                                     int nmax) {
    uint8_t Laux[32], Ls[QK_K / 32], Lm[QK_K / 32];
    float weights[32], sw[QK_K / 32], mins[QK_K / 32], scales[QK_K / 32];
    const float sigma2 = 2 * sum_of_squares(x, QK_K) / QK_K;
    for (int j = 0; j < QK_K / 32; ++j) {
        importance_weights(x + 32 * j, importance + 32 * j, sigma2, 32, weights);
        sw[j] = sum_of(weights, 32);
        scales[j] = make_qkx3_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux,
                                     -0.9f, 0.05f, 36, false);
    }
    y.d = to_half(make_qp_quants(QK_K / 32, 63, scales, Ls, sw));
    y.dmin = to_half(make_qp_quants(QK_K / 32, 63, mins, Lm, sw));
    for (int j = 0; j < QK_K / 32; ++j) set_scale_min_k4(j, Ls[j], Lm[j], y.scales);
    requantize_k(x, y, L, nmax);
}

void store_q4_K_quants(const uint8_t* L, sy_block_q4_K& y) {
    uint8_t* q = y.qs;
    for (int j = 0; j < QK_K; j += 64, q += 32) {
        for (int l = 0; l < 32; ++l) q[l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
    }
}

// Q5_K: low 4 bits two to a byte, the 5th bits of the pairs of 32-runs in qh bits 2k, 2k + 1.
void store_q5_K_quants(const uint8_t* L, sy_block_q5_K& y) {
    uint8_t* qh = y.qh;
    uint8_t* ql = y.qs;
    std::memset(qh, 0, QK_K / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int k = 0; k < QK_K; k += 64, ql += 32) {
        for (int j = 0; j < 32; ++j) {
            int l1 = L[k + j];
            if (l1 > 15) {
                l1 -= 16;
                qh[j] |= m1;
            }
            int l2 = L[k + j + 32];
            if (l2 > 15) {
                l2 -= 16;
                qh[j] |= m2;
            }
            ql[j] = uint8_t(l1 | (l2 << 4));
        }
        m1 = uint8_t(m1 << 2);
        m2 = uint8_t(m2 << 2);
    }
}

// One Q6_K super-block. Without importance each sub-block of 16 is fitted weighting by x^2
// (quantize_row_q6_K_ref); with it, by the importance itself, as ggml's quantize_row_q6_K_impl
// does (a sub-block whose importance is all zero falls back to x^2).
void quantize_q6_K_block(const float* x, sy_block_q6_K& y, const float* importance) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
        const float* w = importance ? importance + 16 * ib : nullptr;
        if (w && std::none_of(w, w + 16, [](float v) { return v > 0; })) w = nullptr;
        scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, w);
        const float abs_scale = std::fabs(scales[ib]);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = scales[ib];
        }
    }
    if (max_abs_scale < kGroupMaxEps) {
        std::memset(&y, 0, sizeof(sy_block_q6_K));
        y.d = to_half(0.f);
        return;
    }
    const float iscale = -128.f / max_scale;
    y.d = to_half(1 / iscale);
    for (int ib = 0; ib < QK_K / 16; ++ib) {
        y.scales[ib] = int8_t(std::min(127, nearest_int(iscale * scales[ib])));
    }
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = from_half(y.d) * float(y.scales[j]);
        if (!d) continue;
        for (int ii = 0; ii < 16; ++ii) {
            L[16 * j + ii] = int8_t(std::clamp(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
        }
    }
    uint8_t* ql = y.ql;
    uint8_t* qh = y.qh;
    for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
        for (int l = 0; l < 32; ++l) {
            const uint8_t q1 = L[j + l + 0] & 0xF;
            const uint8_t q2 = L[j + l + 32] & 0xF;
            const uint8_t q3 = L[j + l + 64] & 0xF;
            const uint8_t q4 = L[j + l + 96] & 0xF;
            ql[l + 0] = uint8_t(q1 | (q3 << 4));
            ql[l + 32] = uint8_t(q2 | (q4 << 4));
            qh[l] = uint8_t((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                            ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
        }
    }
}

}  // namespace

void quantize_q2_K(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<sy_block_q2_K*>(vy);
    constexpr float q4scale = 15.f;
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        uint8_t L[QK_K], Laux[16];
        float weights[16], mins[QK_K / 16], scales[QK_K / 16];
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
            scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                         -0.5f, 0.1f, 15, true);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) {
                y[i].scales[j] = uint8_t(nearest_int(iscale * scales[j]));
            }
            y[i].d = to_half(max_scale / q4scale);
        } else {
            std::fill(y[i].scales, y[i].scales + QK_K / 16, uint8_t(0));
            y[i].d = to_half(0.f);
        }
        if (max_min > 0) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < QK_K / 16; ++j) {
                y[i].scales[j] |= uint8_t(nearest_int(iscale * mins[j]) << 4);
            }
            y[i].dmin = to_half(max_min / q4scale);
        } else {
            y[i].dmin = to_half(0.f);
        }
        store_q2_K_quants(x, y[i], L);
    }
}

// ggml's quantize_row_q2_K_impl: sub-blocks of 16 fitted with weights
// importance * sqrt(sigma2 + x^2), sigma2 = mean(x^2) over the super-block, by the min-refitting
// search over 37 scales; the 4-bit scales and mins then fitted weighted by the sub-block totals.
void quantize_q2_K_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    if (!importance) {
        quantize_q2_K(x, vy, n);
        return;
    }
    auto* y = static_cast<sy_block_q2_K*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K, importance += QK_K) {
        uint8_t L[QK_K], Laux[16], Ls[QK_K / 16], Lm[QK_K / 16];
        float weights[16], sw[QK_K / 16], mins[QK_K / 16], scales[QK_K / 16];
        const float sigma2 = sum_of_squares(x, QK_K) / QK_K;
        for (int j = 0; j < QK_K / 16; ++j) {
            importance_weights(x + 16 * j, importance + 16 * j, sigma2, 16, weights);
            sw[j] = sum_of(weights, 16);
            scales[j] = make_qkx3_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                         -0.9f, 0.05f, 36, false);
        }
        y[i].d = to_half(make_qp_quants(QK_K / 16, 15, scales, Ls, sw));
        y[i].dmin = to_half(make_qp_quants(QK_K / 16, 15, mins, Lm, sw));
        for (int j = 0; j < QK_K / 16; ++j) y[i].scales[j] = uint8_t(Ls[j] | (Lm[j] << 4));
        store_q2_K_quants(x, y[i], L);
    }
}

void dequantize_q2_K(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_q2_K*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = from_half(x[i].d);
        const float min = from_half(x[i].dmin);
        const uint8_t* q = x[i].qs;
        int is = 0;
        for (int k = 0; k < QK_K; k += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; ++half) {
                    const uint8_t sc = x[i].scales[is++];
                    const float dl = d * float(sc & 0xF), ml = min * float(sc >> 4);
                    for (int l = 0; l < 16; ++l) {
                        *y++ = dl * float((q[l + 16 * half] >> shift) & 3) - ml;
                    }
                }
            }
        }
    }
}

void quantize_q3_K(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<sy_block_q3_K*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        int8_t L[QK_K];
        float scales[QK_K / 16];
        float max_scale = 0, amax = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
            const float scale = std::fabs(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }
        std::memset(y[i].scales, 0, 12);
        if (max_scale) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) {
                const int8_t l = int8_t(nearest_int(iscale * scales[j]));
                set_q3_K_scale(y[i].scales, j, std::clamp<int>(l, -32, 31) + 32);
            }
            y[i].d = to_half(1 / iscale);
        } else {
            y[i].d = to_half(0.f);
        }
        store_q3_K_quants(x, y[i], L);
    }
}

// ggml's quantize_row_q3_K_impl: sub-blocks of 16 fitted symmetrically with weights
// importance * sqrt(sigma2 + x^2), sigma2 = 2 mean(x^2) over the super-block; the 6-bit
// sub-block scales then fitted weighted by the sub-block totals.
void quantize_q3_K_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    if (!importance) {
        quantize_q3_K(x, vy, n);
        return;
    }
    auto* y = static_cast<sy_block_q3_K*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K, importance += QK_K) {
        int8_t L[QK_K], Ls[QK_K / 16];
        float weights[16], sw[QK_K / 16], scales[QK_K / 16];
        const float sigma2 = 2 * sum_of_squares(x, QK_K) / QK_K;
        for (int j = 0; j < QK_K / 16; ++j) {
            importance_weights(x + 16 * j, importance + 16 * j, sigma2, 16, weights);
            sw[j] = sum_of(weights, 16);
            scales[j] = make_qx_quants(16, 4, x + 16 * j, L + 16 * j, weights);
        }
        std::memset(y[i].scales, 0, 12);
        y[i].d = to_half(make_qx_quants(QK_K / 16, 32, scales, Ls, sw));
        for (int j = 0; j < QK_K / 16; ++j) set_q3_K_scale(y[i].scales, j, Ls[j]);
        store_q3_K_quants(x, y[i], L);
    }
}

void dequantize_q3_K(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_q3_K*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d_all = from_half(x[i].d);
        const uint8_t* q = x[i].qs;
        const uint8_t* hm = x[i].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int k = 0; k < QK_K; k += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m = uint8_t(m << 1)) {
                for (int half = 0; half < 2; ++half) {
                    const float dl = d_all * float(q3_K_scale(x[i].scales, is++));
                    for (int l = 16 * half; l < 16 * half + 16; ++l) {
                        *y++ = dl * float(((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
                    }
                }
            }
        }
    }
}

void quantize_q4_K(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<sy_block_q4_K*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        uint8_t L[QK_K];
        std::memset(y[i].scales, 0, SY_K_SCALE_SIZE);
        quantize_k_scales_mins(x, y[i], L, 15, -1.f, 20);
        store_q4_K_quants(L, y[i]);
    }
}

void quantize_q4_K_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    if (!importance) {
        quantize_q4_K(x, vy, n);
        return;
    }
    auto* y = static_cast<sy_block_q4_K*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K, importance += QK_K) {
        uint8_t L[QK_K];
        std::memset(y[i].scales, 0, SY_K_SCALE_SIZE);
        quantize_k_scales_mins_weighted(x, importance, y[i], L, 15);
        store_q4_K_quants(L, y[i]);
    }
}

void dequantize_q4_K(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_q4_K*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = from_half(x[i].d);
        const float min = from_half(x[i].dmin);
        const uint8_t* q = x[i].qs;
        for (int is = 0; is < QK_K / 32; is += 2, q += 32) {
            uint8_t sc, m;
            get_scale_min_k4(is + 0, x[i].scales, sc, m);
            const float d1 = d * float(sc), m1 = min * float(m);
            get_scale_min_k4(is + 1, x[i].scales, sc, m);
            const float d2 = d * float(sc), m2 = min * float(m);
            for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * float(q[l] >> 4) - m2;
        }
    }
}

void quantize_q5_K(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<sy_block_q5_K*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        uint8_t L[QK_K];
        std::memset(y[i].scales, 0, SY_K_SCALE_SIZE);
        quantize_k_scales_mins(x, y[i], L, 31, -0.5f, 15);
        store_q5_K_quants(L, y[i]);
    }
}

void quantize_q5_K_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    if (!importance) {
        quantize_q5_K(x, vy, n);
        return;
    }
    auto* y = static_cast<sy_block_q5_K*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K, importance += QK_K) {
        uint8_t L[QK_K];
        std::memset(y[i].scales, 0, SY_K_SCALE_SIZE);
        quantize_k_scales_mins_weighted(x, importance, y[i], L, 31);
        store_q5_K_quants(L, y[i]);
    }
}

void dequantize_q5_K(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_q5_K*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = from_half(x[i].d);
        const float min = from_half(x[i].dmin);
        const uint8_t* ql = x[i].qs;
        const uint8_t* qh = x[i].qh;
        uint8_t u1 = 1, u2 = 2;
        for (int is = 0; is < QK_K / 32; is += 2, ql += 32) {
            uint8_t sc, m;
            get_scale_min_k4(is + 0, x[i].scales, sc, m);
            const float d1 = d * float(sc), m1 = min * float(m);
            get_scale_min_k4(is + 1, x[i].scales, sc, m);
            const float d2 = d * float(sc), m2 = min * float(m);
            for (int l = 0; l < 32; ++l) {
                *y++ = d1 * float((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            }
            for (int l = 0; l < 32; ++l) {
                *y++ = d2 * float((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
            }
            u1 = uint8_t(u1 << 2);
            u2 = uint8_t(u2 << 2);
        }
    }
}

void quantize_q6_K(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<sy_block_q6_K*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) quantize_q6_K_block(x, y[i], nullptr);
}

void quantize_q6_K_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    auto* y = static_cast<sy_block_q6_K*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        quantize_q6_K_block(x, y[i], importance ? importance + i * QK_K : nullptr);
    }
}

void dequantize_q6_K(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_q6_K*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = from_half(x[i].d);
        const uint8_t* ql = x[i].ql;
        const uint8_t* qh = x[i].qh;
        const int8_t* sc = x[i].scales;
        for (int k = 0; k < QK_K; k += 128, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l + 0] = d * float(sc[is + 0]) * float(q1);
                y[l + 32] = d * float(sc[is + 2]) * float(q2);
                y[l + 64] = d * float(sc[is + 4]) * float(q3);
                y[l + 96] = d * float(sc[is + 6]) * float(q4);
            }
        }
    }
}

void quantize_q8_K(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<sy_block_q8_K*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < QK_K; ++j) {
            const float ax = std::fabs(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (!amax) {
            std::memset(&y[i], 0, sizeof(sy_block_q8_K));
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < QK_K; ++j) {
            y[i].qs[j] = int8_t(std::min(127, nearest_int(iscale * x[j])));
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            int sum = 0;
            for (int ii = 0; ii < 16; ++ii) sum += y[i].qs[j * 16 + ii];
            y[i].bsums[j] = int16_t(sum);
        }
        y[i].d = 1 / iscale;
    }
}

void dequantize_q8_K(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_q8_K*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        for (int j = 0; j < QK_K; ++j) y[j] = x[i].d * float(x[i].qs[j]);
    }
}

}  // namespace sy::quants::detail
