// IQ1_S and IQ1_M: every value is one of three levels -1, 0, 1 shifted by a small delta of either
// sign (+-IQ1S_DELTA), groups of 8 levels one entry of the 2048-point iq1s_grid, a 3-bit scale per
// 32 (IQ1_S) or 16 (IQ1_M) values. Dequantization follows ggml's dequantize_row_iq1_s / _m
// operation for operation.
//
// Sub-block search: with three levels the weighted least-squares problem can be solved exactly
// over level assignments that are monotone in x: the values sorted ascending, the two boundaries
// between -1, 0 and 1 tried in all O(n^2) positions with prefix sums, for each choice of the delta
// signs (one per sub-block for IQ1_S, one per group of 8 for IQ1_M, i.e. four combinations of a
// 16-value sub-block). The best assignment's groups are then mapped to the codebook (an off-grid
// group to the candidate with the least weighted error at that scale) and the scale refitted.
// The super-block scale is chosen and refitted as for the other i-quants (iquants_grid.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "internal.hpp"
#include "iquant_codebook.hpp"
#include "row_scale.hpp"
#include "switchyard/iquant_grids.h"

namespace sy::quants::detail {
namespace {

constexpr int QK_K = SY_QK_K;

struct OneBitFit {
    float scale = 0;
    uint16_t entry[4]{};
    bool negative_delta[4]{};  // per group of 8
};

// Fits n (16 or 32) values; `delta_groups` is the number of values sharing one delta sign (n for
// IQ1_S, 8 for IQ1_M).
OneBitFit fit_one_bit(const float* x, const float* w, int n, int delta_groups) {
    const LatticeCodebook& cb = codebook(Codebook::kIq1s);
    OneBitFit out;
    float max = 0;
    for (int i = 0; i < n; ++i) max = std::max(max, std::fabs(x[i]));
    if (max < kGroupMaxEps) {
        std::fill(out.entry, out.entry + n / 8, cb.nearest_entry(0x5555));  // all values 0
        return out;
    }
    int order[32];
    std::iota(order, order + n, 0);
    std::sort(order, order + n, [&](int a, int b) { return x[a] < x[b]; });
    const int n_delta = n / delta_groups;  // 1 or 2 delta signs
    float best_score = 0;
    int best_i1 = -1, best_i2 = -1, best_combo = 0;
    float best_scale = 0;
    for (int combo = 0; combo < (1 << n_delta); ++combo) {
        auto delta_of = [&](int i) {
            return (combo >> (i / delta_groups)) & 1 ? -SY_IQ1S_DELTA : SY_IQ1S_DELTA;
        };
        // Prefix sums over the sorted values: w x, w, w delta; and the combination's constants
        // sum w x delta, sum w delta^2.
        float sx[33], sw[33], swd[33];
        sx[0] = sw[0] = swd[0] = 0;
        float const_x = 0, const_q2 = 0;
        for (int j = 0; j < n; ++j) {
            const int i = order[j];
            const float dl = delta_of(i);
            sx[j + 1] = sx[j] + w[i] * x[i];
            sw[j + 1] = sw[j] + w[i];
            swd[j + 1] = swd[j] + w[i] * dl;
            const_x += w[i] * x[i] * dl;
            const_q2 += w[i] * dl * dl;
        }
        // Level c over [a, b): sum w x (c + delta) adds c (sx[b] - sx[a]); sum w (c + delta)^2
        // adds c^2 (sw[b] - sw[a]) + 2 c (swd[b] - swd[a]).
        for (int i1 = 0; i1 <= n; ++i1) {
            for (int i2 = i1; i2 <= n; ++i2) {
                const float sumqx = const_x - (sx[i1] - sx[0]) + (sx[n] - sx[i2]);
                const float sumq2 = const_q2 + (sw[i1] - sw[0]) - 2 * (swd[i1] - swd[0]) +
                                    (sw[n] - sw[i2]) + 2 * (swd[n] - swd[i2]);
                if (sumqx > 0 && sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                    best_scale = sumqx / sumq2;
                    best_score = best_scale * sumqx;
                    best_i1 = i1;
                    best_i2 = i2;
                    best_combo = combo;
                }
            }
        }
    }
    if (best_i1 < 0) {  // no assignment correlates with x (not reached for max > 0)
        std::fill(out.entry, out.entry + n / 8, cb.nearest_entry(0x5555));
        return out;
    }
    int level[32];
    for (int j = 0; j < n; ++j) level[order[j]] = j < best_i1 ? 0 : j < best_i2 ? 1 : 2;
    float q[32];
    for (int g = 0; g < n / 8; ++g) {
        const bool neg = (best_combo >> (8 * g / delta_groups)) & 1;
        const float dl = neg ? -SY_IQ1S_DELTA : SY_IQ1S_DELTA;
        out.negative_delta[g] = neg;
        uint32_t packed = 0;
        for (int k = 0; k < 8; ++k) packed |= uint32_t(level[8 * g + k]) << (2 * k);
        const uint16_t* list;
        uint16_t single;
        const int count = cb.candidates(packed, &list, &single);
        int best = list[0];
        if (count > 1) {
            float best_err = INFINITY;
            for (int c = 0; c < count; ++c) {
                const uint8_t* p = cb.point(list[c]);
                float err = 0;
                for (int k = 0; k < 8; ++k) {
                    const float d = best_scale * (cb.level_value[p[k]] + dl) - x[8 * g + k];
                    err += w[8 * g + k] * d * d;
                }
                if (err < best_err) {
                    best_err = err;
                    best = list[c];
                }
            }
        }
        out.entry[g] = uint16_t(best);
        for (int k = 0; k < 8; ++k) q[8 * g + k] = cb.level_value[cb.point(best)[k]] + dl;
    }
    float sumqx = 0, sumq2 = 0;
    for (int i = 0; i < n; ++i) {
        sumqx += w[i] * x[i] * q[i];
        sumq2 += w[i] * q[i] * q[i];
    }
    out.scale = sumqx > 0 && sumq2 > 0 ? sumqx / sumq2 : 0.f;
    return out;
}

// Nearest 3-bit code l of a sub-block scale, with d * (2 l + 1) the code's scale.
int scale_code(float scale, float d) {
    return std::clamp(int(std::lround((scale / d - 1) / 2)), 0, 7);
}

}  // namespace

// ---- IQ1_S --------------------------------------------------------------------------------------

void dequantize_iq1_s(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_iq1_s*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = from_half(x[i].d);
        const uint8_t* qs = x[i].qs;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4) {
            const uint16_t qh = x[i].qh[ib];
            const float dl = d * float(2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -SY_IQ1S_DELTA : SY_IQ1S_DELTA;
            for (int l = 0; l < 4; ++l, y += 8) {
                const auto* grid = reinterpret_cast<const int8_t*>(
                    sy_iq1s_grid + (qs[l] | (((qh >> 3 * l) & 7) << 8)));
                for (int j = 0; j < 8; ++j) y[j] = dl * (float(grid[j]) + delta);
            }
        }
    }
}

void quantize_iq1_s_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    auto* y = static_cast<sy_block_iq1_s*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        std::memset(&y[i], 0, sizeof(y[i]));
        float w[QK_K];
        subblock_weights(x, importance ? importance + i * QK_K : nullptr,
                         2 * sum_of_squares(x, QK_K) / QK_K, QK_K, 32, w);
        OneBitFit fits[QK_K / 32];
        float max_scale = 0;
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            fits[ib] = fit_one_bit(x + 32 * ib, w + 32 * ib, 32, 32);
            max_scale = std::max(max_scale, fits[ib].scale);
        }
        if (max_scale <= 0) continue;
        const float d = max_scale / 15;
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const OneBitFit& f = fits[ib];
            uint16_t qh = uint16_t(scale_code(f.scale, d) << 12);
            if (f.negative_delta[0]) qh |= 0x8000;
            for (int k = 0; k < 4; ++k) {
                y[i].qs[4 * ib + k] = uint8_t(f.entry[k] & 255);
                qh = uint16_t(qh | ((f.entry[k] >> 8) << (3 * k)));
            }
            y[i].qh[ib] = qh;
        }
        y[i].d = to_half(1.f);
        float y0[QK_K];
        dequantize_iq1_s(&y[i], y0, QK_K);
        y[i].d = to_half(least_squares_factor(x, y0, w, QK_K, d));
    }
}

void quantize_iq1_s(const float* x, void* y, int64_t n) {
    quantize_iq1_s_weighted(x, y, n, nullptr);
}

// One scale for the whole row (every block's d the same: ik_llama.cpp's IQ1_S_R4): the 32-value
// sub-blocks fitted as above, d = the row's largest sub-block scale / 15 for the codes, then d
// refitted by least squares over the row.
void quantize_iq1_s_one_scale_weighted(const float* x, void* vy, int64_t n,
                                       const float* importance) {
    auto* y = static_cast<sy_block_iq1_s*>(vy);
    const int64_t nb = n / QK_K;
    std::vector<float> w(static_cast<size_t>(n)), y0(static_cast<size_t>(n));
    std::vector<OneBitFit> fits(static_cast<size_t>(n / 32));
    float max_scale = 0;
    for (int64_t i = 0; i < nb; ++i) {
        const float* xb = x + i * QK_K;
        subblock_weights(xb, importance ? importance + i * QK_K : nullptr,
                         2 * sum_of_squares(xb, QK_K) / QK_K, QK_K, 32, w.data() + i * QK_K);
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            OneBitFit& f = fits[size_t(i * 8 + ib)];
            f = fit_one_bit(xb + 32 * ib, w.data() + i * QK_K + 32 * ib, 32, 32);
            max_scale = std::max(max_scale, f.scale);
        }
    }
    std::memset(y, 0, size_t(nb) * sizeof(sy_block_iq1_s));
    if (max_scale <= 0) return;
    const float d = max_scale / 15;
    for (int64_t i = 0; i < nb; ++i) {
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const OneBitFit& f = fits[size_t(i * 8 + ib)];
            uint16_t qh = uint16_t(scale_code(f.scale, d) << 12);
            if (f.negative_delta[0]) qh |= 0x8000;
            for (int k = 0; k < 4; ++k) {
                y[i].qs[4 * ib + k] = uint8_t(f.entry[k] & 255);
                qh = uint16_t(qh | ((f.entry[k] >> 8) << (3 * k)));
            }
            y[i].qh[ib] = qh;
        }
        y[i].d = to_half(1.f);
    }
    dequantize_iq1_s(y, y0.data(), n);
    const uint16_t row_d = to_half(least_squares_factor(x, y0.data(), w.data(), int(n), d));
    for (int64_t i = 0; i < nb; ++i) y[i].d = row_d;
}

void quantize_iq1_s_one_scale(const float* x, void* y, int64_t n) {
    quantize_iq1_s_one_scale_weighted(x, y, n, nullptr);
}

// ---- IQ1_M --------------------------------------------------------------------------------------

namespace {
// The f16 super-block scale of IQ1_M, spread over the top nibbles of its four scale words.
uint16_t iq1m_scale_bits(const uint16_t* sc) {
    return SY_IQ1M_D_BITS(sc);
}
void set_iq1m_scale(sy_block_iq1_m& b, uint16_t h) {
    uint16_t sc[4];
    std::memcpy(sc, b.scales, sizeof(sc));
    for (int k = 0; k < 4; ++k) sc[k] &= 0x0fff;
    sc[0] = uint16_t(sc[0] | ((h & 0x000f) << 12));
    sc[1] = uint16_t(sc[1] | ((h & 0x00f0) << 8));
    sc[2] = uint16_t(sc[2] | ((h & 0x0f00) << 4));
    sc[3] = uint16_t(sc[3] | (h & 0xf000));
    std::memcpy(b.scales, sc, sizeof(sc));
}
}  // namespace

void dequantize_iq1_m(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_iq1_m*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        uint16_t sc[4];
        std::memcpy(sc, x[i].scales, sizeof(sc));
        const float d = from_half(iq1m_scale_bits(sc));
        const uint8_t* qs = x[i].qs;
        const uint8_t* qh = x[i].qh;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, qh += 2) {
            const float dl[2] = {d * float(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 7) + 1),
                                 d * float(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1)};
            const int idx[4] = {qs[0] | ((qh[0] << 8) & 0x700), qs[1] | ((qh[0] << 4) & 0x700),
                                qs[2] | ((qh[1] << 8) & 0x700), qs[3] | ((qh[1] << 4) & 0x700)};
            const float delta[4] = {qh[0] & 0x08 ? -SY_IQ1S_DELTA : SY_IQ1S_DELTA,
                                    qh[0] & 0x80 ? -SY_IQ1S_DELTA : SY_IQ1S_DELTA,
                                    qh[1] & 0x08 ? -SY_IQ1S_DELTA : SY_IQ1S_DELTA,
                                    qh[1] & 0x80 ? -SY_IQ1S_DELTA : SY_IQ1S_DELTA};
            for (int l = 0; l < 4; ++l, y += 8) {
                const auto* grid = reinterpret_cast<const int8_t*>(sy_iq1s_grid + idx[l]);
                for (int j = 0; j < 8; ++j) y[j] = dl[l / 2] * (float(grid[j]) + delta[l]);
            }
        }
    }
}

void quantize_iq1_m_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    auto* y = static_cast<sy_block_iq1_m*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        std::memset(&y[i], 0, sizeof(y[i]));
        float w[QK_K];
        subblock_weights(x, importance ? importance + i * QK_K : nullptr,
                         2 * sum_of_squares(x, QK_K) / QK_K, QK_K, 16, w);
        OneBitFit fits[QK_K / 16];
        float max_scale = 0;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            fits[ib] = fit_one_bit(x + 16 * ib, w + 16 * ib, 16, 8);
            max_scale = std::max(max_scale, fits[ib].scale);
        }
        if (max_scale <= 0) continue;
        const float d = max_scale / 15;
        uint16_t sc[4] = {0, 0, 0, 0};
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const OneBitFit& f = fits[ib];
            sc[ib / 4] = uint16_t(sc[ib / 4] | (scale_code(f.scale, d) << (3 * (ib % 4))));
            y[i].qs[2 * ib + 0] = uint8_t(f.entry[0] & 255);
            y[i].qs[2 * ib + 1] = uint8_t(f.entry[1] & 255);
            y[i].qh[ib] =
                uint8_t((f.entry[0] >> 8) | ((f.entry[1] >> 8) << 4) |
                        (f.negative_delta[0] ? 0x08 : 0) | (f.negative_delta[1] ? 0x80 : 0));
        }
        std::memcpy(y[i].scales, sc, sizeof(sc));
        set_iq1m_scale(y[i], to_half(1.f));
        float y0[QK_K];
        dequantize_iq1_m(&y[i], y0, QK_K);
        set_iq1m_scale(y[i], to_half(least_squares_factor(x, y0, w, QK_K, d)));
    }
}

void quantize_iq1_m(const float* x, void* y, int64_t n) {
    quantize_iq1_m_weighted(x, y, n, nullptr);
}

// ---- IQ1_M_R4's rows
// ----------------------------------------------------------------------------- One f16 d per row,
// then IQ1_M's codes with a plain 4-bit scale l per 16 values (quant_blocks.h).

void dequantize_iq1_m_r4_rows(const void* vx, float* y, int64_t n) {
    const float d = row_d_f16(vx);
    const auto* x = row_blocks<sy_block_iq1_m_r4_rows>(vx, 2);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const uint8_t* qs = x[i].qs;
        const uint8_t* qh = x[i].qh;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, qh += 2) {
            const float dl[2] = {d * float(x[i].scales[ib] & 15), d * float(x[i].scales[ib] >> 4)};
            const int idx[4] = {qs[0] | ((qh[0] << 8) & 0x700), qs[1] | ((qh[0] << 4) & 0x700),
                                qs[2] | ((qh[1] << 8) & 0x700), qs[3] | ((qh[1] << 4) & 0x700)};
            const float delta[4] = {qh[0] & 0x08 ? -SY_IQ1M_DELTA : SY_IQ1M_DELTA,
                                    qh[0] & 0x80 ? -SY_IQ1M_DELTA : SY_IQ1M_DELTA,
                                    qh[1] & 0x08 ? -SY_IQ1M_DELTA : SY_IQ1M_DELTA,
                                    qh[1] & 0x80 ? -SY_IQ1M_DELTA : SY_IQ1M_DELTA};
            for (int l = 0; l < 4; ++l, y += 8) {
                const auto* grid = reinterpret_cast<const int8_t*>(sy_iq1s_grid + idx[l]);
                for (int j = 0; j < 8; ++j) y[j] = dl[l / 2] * (float(grid[j]) + delta[l]);
            }
        }
    }
}

// Each 16 values fitted as for IQ1_M; d = the row's largest sub-block scale / 15 for the 4-bit
// codes, then refitted by least squares over the row.
void quantize_iq1_m_r4_rows_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    auto* y = row_blocks<sy_block_iq1_m_r4_rows>(vy, 2);
    const int64_t nb = n / QK_K;
    std::vector<float> w(static_cast<size_t>(n)), y0(static_cast<size_t>(n));
    std::vector<OneBitFit> fits(static_cast<size_t>(n / 16));
    float max_scale = 0;
    for (int64_t i = 0; i < nb; ++i) {
        const float* xb = x + i * QK_K;
        subblock_weights(xb, importance ? importance + i * QK_K : nullptr,
                         2 * sum_of_squares(xb, QK_K) / QK_K, QK_K, 16, w.data() + i * QK_K);
        for (int j = 0; j < QK_K / 16; ++j) {
            OneBitFit& f = fits[size_t(i * 16 + j)];
            f = fit_one_bit(xb + 16 * j, w.data() + i * QK_K + 16 * j, 16, 8);
            max_scale = std::max(max_scale, f.scale);
        }
    }
    std::memset(y, 0, size_t(nb) * sizeof(sy_block_iq1_m_r4_rows));
    store_d(vy, 0.f, true);
    if (max_scale <= 0) return;
    const float d = max_scale / 15;
    for (int64_t i = 0; i < nb; ++i) {
        for (int j = 0; j < QK_K / 16; ++j) {
            const OneBitFit& f = fits[size_t(i * 16 + j)];
            const int l = std::clamp(int(std::lround(f.scale / d)), 0, 15);
            y[i].scales[j / 2] = uint8_t(y[i].scales[j / 2] | l << (4 * (j % 2)));
            y[i].qs[2 * j + 0] = uint8_t(f.entry[0] & 255);
            y[i].qs[2 * j + 1] = uint8_t(f.entry[1] & 255);
            y[i].qh[j] =
                uint8_t((f.entry[0] >> 8) | ((f.entry[1] >> 8) << 4) |
                        (f.negative_delta[0] ? 0x08 : 0) | (f.negative_delta[1] ? 0x80 : 0));
        }
    }
    store_d(vy, 1.f, true);
    dequantize_iq1_m_r4_rows(vy, y0.data(), n);
    store_d(vy, least_squares_factor(x, y0.data(), w.data(), int(n), d), true);
}

void quantize_iq1_m_r4_rows(const float* x, void* y, int64_t n) {
    quantize_iq1_m_r4_rows_weighted(x, y, n, nullptr);
}

}  // namespace sy::quants::detail
