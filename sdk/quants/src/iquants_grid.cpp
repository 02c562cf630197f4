// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S: groups of 8 (IQ2) or 4 (IQ3) magnitudes as one
// codebook entry, signs stored beside them, a 4-bit scale per 16 or 32 values and an f16 scale
// per 256. Dequantization follows ggml's dequantize_row_iq* operation for operation (the same
// float results); quantization searches the codebooks as iquant_codebook.hpp describes.
//
// Sub-block search (search_magnitudes): the magnitudes |x| are fitted as s * v(entry) with the
// entries' level values v and one scale s >= 0. Where the format stores only 7 sign bits per 8
// values (the 8th is their parity: IQ2_XXS, IQ2_XS, IQ3_XXS), an odd count of negatives flips the
// stored sign of the value that costs least, w x^2, and that value's target becomes -|x|. Scales
// s = max|x| / v_top * (1 + i * step)^-1 are tried; for each, every coordinate is rounded to its
// nearest level, the lattice point (or, off the grid, its nearest codebook entries, chosen by
// the weighted error) taken, and s refitted by weighted least squares; the best fit is kept and
// its groups chosen once more at the refitted scale. The super-block scale d then puts the
// largest sub-block scale on the top 4-bit step, every sub-block scale is rounded to its step
// and d is refitted by least squares over the whole super-block.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "internal.hpp"
#include "iquant_codebook.hpp"
#include "switchyard/iquant_grids.h"

namespace sy::quants::detail {
namespace {

constexpr int QK_K = SY_QK_K;

struct MagnitudeSearch {
    const LatticeCodebook& cb;
    int steps;        // scale candidates i in [-steps, steps]
    float step;       // relative change of the inverse scale per candidate
    bool even_signs;  // 7 stored sign bits per 8 values; the 8th is their parity
};

struct GroupChoice {
    uint16_t entry[8];  // per group of cb.dims values
    float q[32];        // the chosen level values (magnitudes)
};

// Rounds every group of `a` (n magnitudes) at inverse scale id to a codebook entry; off-grid
// lattice points go to the candidate with the least weighted error at scale 1 / id. D = dims.
template <int D>
void choose_groups_d(const LatticeCodebook& cb, const float* a, const float* w, int n, float id,
                     bool search, GroupChoice& out) {
    const float* mid = cb.level_mid;
    const float scale = 1 / id;
    for (int g = 0; g < n / D; ++g) {
        const float* ag = a + g * D;
        const float* wg = w + g * D;
        uint32_t packed = 0;
        for (int k = 0; k < D; ++k) {
            const float t = id * ag[k];
            int l = 0;
            while (l + 1 < cb.levels && t > mid[l]) ++l;
            packed |= uint32_t(l) << (cb.bits * k);
        }
        const uint16_t* list;
        uint16_t single;
        const int count = cb.candidates(packed, &list, &single);
        int best = list[0];
        if (count > 1 && search) {
            // Four lanes at a time (GCC vector extensions: SSE on the baseline target).
            typedef float V4 __attribute__((vector_size(16)));
            constexpr int kV = D / 4;
            V4 av[kV], wv[kV];
            std::memcpy(av, ag, sizeof(av));
            std::memcpy(wv, wg, sizeof(wv));
            float best_err = INFINITY;
            for (int c = 0; c < count; ++c) {
                V4 v[kV];
                std::memcpy(v, cb.values(list[c]), sizeof(v));
                V4 e = {0, 0, 0, 0};
                for (int h = 0; h < kV; ++h) {
                    const V4 d = scale * v[h] - av[h];
                    e += wv[h] * d * d;
                }
                const float err = (e[0] + e[1]) + (e[2] + e[3]);
                if (err < best_err) {
                    best_err = err;
                    best = list[c];
                }
            }
        }
        out.entry[g] = uint16_t(best);
        std::memcpy(out.q + g * D, cb.values(best), D * sizeof(float));
    }
}

// search = false takes an off-grid point's first (nearest in level space) neighbour unweighed.
void choose_groups(const LatticeCodebook& cb, const float* a, const float* w, int n, float id,
                   GroupChoice& out, bool search = true) {
    if (cb.dims == 8) {
        choose_groups_d<8>(cb, a, w, n, id, search, out);
    } else {
        choose_groups_d<4>(cb, a, w, n, id, search, out);
    }
}

// sum w a q and sum w q^2 of a choice.
void fit_sums(const float* a, const float* w, const float* q, int n, float& sumqx, float& sumq2) {
    sumqx = sumq2 = 0;
    for (int i = 0; i < n; ++i) {
        sumqx += w[i] * a[i] * q[i];
        sumq2 += w[i] * q[i] * q[i];
    }
}

// Fits n (16 or 32) values x with weights w; writes the entries and the sign byte of every 8
// values; returns the scale s >= 0 (x ~ s * v * sign).
float search_magnitudes(const MagnitudeSearch& m, const float* x, const float* w, int n,
                        uint16_t* entries, uint8_t* signs) {
    float a[32];
    for (int g = 0; g < n / 8; ++g) {
        uint8_t s = 0;
        for (int i = 0; i < 8; ++i) {
            a[8 * g + i] = std::fabs(x[8 * g + i]);
            if (x[8 * g + i] < 0) s = uint8_t(s | (1 << i));
        }
        if (m.even_signs && (__builtin_popcount(s) & 1)) {
            int imin = 0;
            for (int i = 1; i < 8; ++i)
                if (w[8 * g + i] * a[8 * g + i] * a[8 * g + i] <
                    w[8 * g + imin] * a[8 * g + imin] * a[8 * g + imin])
                    imin = i;
            a[8 * g + imin] = -a[8 * g + imin];
            s = uint8_t(s ^ (1 << imin));
        }
        signs[g] = s;
    }
    float max = 0;
    for (int i = 0; i < n; ++i) max = std::max(max, a[i]);
    const int groups = n / m.cb.dims;
    if (max < kGroupMaxEps) {
        std::fill(entries, entries + groups, m.cb.nearest_entry(0));
        return 0.f;
    }
    const float top = m.cb.level_value[m.cb.levels - 1];
    GroupChoice best{}, trial{};
    // The scan in two passes: every candidate scale with off-grid points taken at their nearest
    // neighbour, then the full neighbour search at the kRescan best of them. Against the full
    // search at every scale: 1.2-1.9x faster, RMS error on Gaussian rows up to 1% larger.
    constexpr int kRescan = 6;
    float top_score[kRescan], top_id[kRescan];
    std::fill(top_score, top_score + kRescan, -1.f);
    std::fill(top_id, top_id + kRescan, 0.f);
    for (int i = -m.steps; i <= m.steps; ++i) {
        const float id = top * (1 + float(i) * m.step) / max;
        choose_groups(m.cb, a, w, n, id, trial, false);
        float sumqx, sumq2;
        fit_sums(a, w, trial.q, n, sumqx, sumq2);
        const float score = sumq2 > 0 && sumqx > 0 ? sumqx * sumqx / sumq2 : 0.f;
        for (int r = 0; r < kRescan; ++r) {
            if (score > top_score[r]) {
                for (int q = kRescan - 1; q > r; --q) {
                    top_score[q] = top_score[q - 1];
                    top_id[q] = top_id[q - 1];
                }
                top_score[r] = score;
                top_id[r] = id;
                break;
            }
        }
    }
    float best_score = -1, scale = 0;
    for (int r = 0; r < kRescan; ++r) {
        if (top_id[r] <= 0) continue;
        choose_groups(m.cb, a, w, n, top_id[r], trial);
        float sumqx, sumq2;
        fit_sums(a, w, trial.q, n, sumqx, sumq2);
        if (sumq2 > 0 && sumqx > 0 && sumqx * sumqx > best_score * sumq2) {
            scale = sumqx / sumq2;
            best_score = scale * sumqx;
            best = trial;
        }
    }
    if (best_score > 0) {
        choose_groups(m.cb, a, w, n, 1 / scale, trial);
        float sumqx, sumq2;
        fit_sums(a, w, trial.q, n, sumqx, sumq2);
        if (sumq2 > 0 && sumqx > 0 && sumqx * sumqx > best_score * sumq2) {
            scale = sumqx / sumq2;
            best = trial;
        }
    } else {
        scale = 0;
        choose_groups(m.cb, a, w, n, top / max, best);
    }
    std::copy(best.entry, best.entry + groups, entries);
    return scale;
}

// The super-block's d: the largest sub-block scale on the top step of the 4-bit (or 3-bit) code,
// sub-block codes rounded, then d refitted over all values. step_value(l) is the factor a code l
// gives (d * step_value(l) is the sub-block's scale); `dequant` writes the super-block's values at
// d = 1 for the chosen codes.
struct SuperScale {
    float d;
    int codes[16];
};
template <typename StepValue>
SuperScale fit_super_scale(const float* scales, int n_sub, int max_code, StepValue step_value) {
    SuperScale out{};
    float max_scale = 0;
    for (int i = 0; i < n_sub; ++i) max_scale = std::max(max_scale, scales[i]);
    if (max_scale <= 0) return out;
    const float d = max_scale / step_value(max_code);
    for (int i = 0; i < n_sub; ++i) {
        int best = 0;
        float best_err = INFINITY;
        for (int l = 0; l <= max_code; ++l) {
            const float err = std::fabs(d * step_value(l) - scales[i]);
            if (err < best_err) {
                best_err = err;
                best = l;
            }
        }
        out.codes[i] = best;
    }
    out.d = d;
    return out;
}

// One super-block of a magnitude type, given the type's packing. Pack(sub, entries, signs, code)
// stores a sub-block; Dequant(y) writes the block at its stored d = 1.
template <typename Block, typename Pack, typename Dequant>
void quantize_super_block(const MagnitudeSearch& m, int sub_size, float sigma_factor,
                          const float* x, const float* importance, Block& y,
                          float (*step_value)(int), Pack pack, Dequant dequant_unit) {
    std::memset(&y, 0, sizeof(Block));
    float w[QK_K];
    const float sigma2 = sigma_factor * sum_of_squares(x, QK_K) / QK_K;
    subblock_weights(x, importance, sigma2, QK_K, sub_size, w);
    const int n_sub = QK_K / sub_size;
    float scales[16];
    uint16_t entries[16][8];
    uint8_t signs[16][4];
    for (int ib = 0; ib < n_sub; ++ib) {
        scales[ib] = search_magnitudes(m, x + ib * sub_size, w + ib * sub_size, sub_size,
                                       entries[ib], signs[ib]);
    }
    const SuperScale ss = fit_super_scale(scales, n_sub, 15, step_value);
    if (ss.d <= 0) return;  // all zero
    for (int ib = 0; ib < n_sub; ++ib) pack(ib, entries[ib], signs[ib], ss.codes[ib]);
    y.d = to_half(1.f);
    float y0[QK_K];
    dequant_unit(&y, y0);
    y.d = to_half(least_squares_factor(x, y0, w, QK_K, ss.d));
}

float step_iq2(int l) {
    return (0.5f + float(l)) * 0.25f;
}
float step_iq3xxs(int l) {
    return (0.5f + float(l)) * 0.5f;
}
float step_iq3s(int l) {
    return float(1 + 2 * l);
}

}  // namespace

// ---- IQ2_XXS ------------------------------------------------------------------------------------

void dequantize_iq2_xxs(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_iq2_xxs*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = from_half(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            uint32_t aux[2];
            std::memcpy(aux, x[i].qs + 4 * ib, sizeof(aux));
            const float db = d * (0.5f + float(aux[1] >> 28)) * 0.25f;
            for (int l = 0; l < 4; ++l, y += 8) {
                const auto* grid =
                    reinterpret_cast<const uint8_t*>(sy_iq2xxs_grid + ((aux[0] >> 8 * l) & 255));
                const uint8_t signs = sy_ksigns_iq2xs[(aux[1] >> 7 * l) & 127];
                for (int j = 0; j < 8; ++j)
                    y[j] = db * float(grid[j]) * (signs & (1 << j) ? -1.f : 1.f);
            }
        }
    }
}

void quantize_iq2_xxs_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    auto* y = static_cast<sy_block_iq2_xxs*>(vy);
    const MagnitudeSearch m{codebook(Codebook::kIq2xxs), 9, 0.02f, true};
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        const float* imp = importance ? importance + i * QK_K : nullptr;
        quantize_super_block(
            m, 32, 1.f, x, imp, y[i], step_iq2,
            [&](int ib, const uint16_t* e, const uint8_t* s, int code) {
                uint32_t aux[2] = {0, uint32_t(code) << 28};
                for (int k = 0; k < 4; ++k) {
                    aux[0] |= uint32_t(e[k]) << (8 * k);
                    aux[1] |= uint32_t(s[k] & 127) << (7 * k);
                }
                std::memcpy(y[i].qs + 4 * ib, aux, sizeof(aux));
            },
            [](const void* b, float* out) { dequantize_iq2_xxs(b, out, QK_K); });
    }
}

void quantize_iq2_xxs(const float* x, void* y, int64_t n) {
    quantize_iq2_xxs_weighted(x, y, n, nullptr);
}

// ---- IQ2_XS -------------------------------------------------------------------------------------

void dequantize_iq2_xs(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_iq2_xs*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = from_half(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const float db[2] = {d * (0.5f + float(x[i].scales[ib] & 0xf)) * 0.25f,
                                 d * (0.5f + float(x[i].scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; ++l, y += 8) {
                const uint16_t q = x[i].qs[4 * ib + l];
                const auto* grid = reinterpret_cast<const uint8_t*>(sy_iq2xs_grid + (q & 511));
                const uint8_t signs = sy_ksigns_iq2xs[q >> 9];
                for (int j = 0; j < 8; ++j)
                    y[j] = db[l / 2] * float(grid[j]) * (signs & (1 << j) ? -1.f : 1.f);
            }
        }
    }
}

void quantize_iq2_xs_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    auto* y = static_cast<sy_block_iq2_xs*>(vy);
    const MagnitudeSearch m{codebook(Codebook::kIq2xs), 9, 0.02f, true};
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        const float* imp = importance ? importance + i * QK_K : nullptr;
        quantize_super_block(
            m, 16, 1.f, x, imp, y[i], step_iq2,
            [&](int ib, const uint16_t* e, const uint8_t* s, int code) {
                for (int k = 0; k < 2; ++k)
                    y[i].qs[2 * ib + k] = uint16_t(e[k] | (uint16_t(s[k] & 127) << 9));
                y[i].scales[ib / 2] = uint8_t(y[i].scales[ib / 2] | (code << (4 * (ib % 2))));
            },
            [](const void* b, float* out) { dequantize_iq2_xs(b, out, QK_K); });
    }
}

void quantize_iq2_xs(const float* x, void* y, int64_t n) {
    quantize_iq2_xs_weighted(x, y, n, nullptr);
}

// ---- IQ2_S --------------------------------------------------------------------------------------

void dequantize_iq2_s(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_iq2_s*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = from_half(x[i].d);
        const uint8_t* qs = x[i].qs;
        const uint8_t* signs = x[i].qs + QK_K / 8;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, signs += 4) {
            const float db[2] = {d * (0.5f + float(x[i].scales[ib] & 0xf)) * 0.25f,
                                 d * (0.5f + float(x[i].scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; ++l, y += 8) {
                const int index = qs[l] | ((x[i].qh[ib] << (8 - 2 * l)) & 0x300);
                const auto* grid = reinterpret_cast<const uint8_t*>(sy_iq2s_grid + index);
                for (int j = 0; j < 8; ++j)
                    y[j] = db[l / 2] * float(grid[j]) * (signs[l] & (1 << j) ? -1.f : 1.f);
            }
        }
    }
}

void quantize_iq2_s_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    auto* y = static_cast<sy_block_iq2_s*>(vy);
    const MagnitudeSearch m{codebook(Codebook::kIq2s), 9, 0.02f, false};
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        const float* imp = importance ? importance + i * QK_K : nullptr;
        quantize_super_block(
            m, 16, 2.f, x, imp, y[i], step_iq2,
            [&](int ib, const uint16_t* e, const uint8_t* s, int code) {
                for (int k = 0; k < 2; ++k) {
                    const int i8 = 2 * ib + k;
                    y[i].qs[i8] = uint8_t(e[k] & 255);
                    y[i].qh[i8 / 4] = uint8_t(y[i].qh[i8 / 4] | ((e[k] >> 8) << (2 * (i8 % 4))));
                    y[i].qs[QK_K / 8 + i8] = s[k];
                }
                y[i].scales[ib / 2] = uint8_t(y[i].scales[ib / 2] | (code << (4 * (ib % 2))));
            },
            [](const void* b, float* out) { dequantize_iq2_s(b, out, QK_K); });
    }
}

void quantize_iq2_s(const float* x, void* y, int64_t n) {
    quantize_iq2_s_weighted(x, y, n, nullptr);
}

// ---- IQ3_XXS ------------------------------------------------------------------------------------

void dequantize_iq3_xxs(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_iq3_xxs*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = from_half(x[i].d);
        const uint8_t* qs = x[i].qs;
        const uint8_t* scales_and_signs = x[i].qs + QK_K / 4;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 8) {
            uint32_t aux;
            std::memcpy(&aux, scales_and_signs + 4 * ib, sizeof(aux));
            const float db = d * (0.5f + float(aux >> 28)) * 0.5f;
            for (int l = 0; l < 4; ++l, y += 8) {
                const uint8_t signs = sy_ksigns_iq2xs[(aux >> 7 * l) & 127];
                const auto* g1 = reinterpret_cast<const uint8_t*>(sy_iq3xxs_grid + qs[2 * l + 0]);
                const auto* g2 = reinterpret_cast<const uint8_t*>(sy_iq3xxs_grid + qs[2 * l + 1]);
                for (int j = 0; j < 4; ++j) {
                    y[j + 0] = db * float(g1[j]) * (signs & (1 << j) ? -1.f : 1.f);
                    y[j + 4] = db * float(g2[j]) * (signs & (1 << (j + 4)) ? -1.f : 1.f);
                }
            }
        }
    }
}

void quantize_iq3_xxs_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    auto* y = static_cast<sy_block_iq3_xxs*>(vy);
    const MagnitudeSearch m{codebook(Codebook::kIq3xxs), 15, 0.0133f, true};
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        const float* imp = importance ? importance + i * QK_K : nullptr;
        quantize_super_block(
            m, 32, 2.f, x, imp, y[i], step_iq3xxs,
            [&](int ib, const uint16_t* e, const uint8_t* s, int code) {
                uint32_t aux = uint32_t(code) << 28;
                for (int k = 0; k < 8; ++k) y[i].qs[8 * ib + k] = uint8_t(e[k]);
                for (int k = 0; k < 4; ++k) aux |= uint32_t(s[k] & 127) << (7 * k);
                std::memcpy(y[i].qs + QK_K / 4 + 4 * ib, &aux, sizeof(aux));
            },
            [](const void* b, float* out) { dequantize_iq3_xxs(b, out, QK_K); });
    }
}

void quantize_iq3_xxs(const float* x, void* y, int64_t n) {
    quantize_iq3_xxs_weighted(x, y, n, nullptr);
}

// ---- IQ3_S --------------------------------------------------------------------------------------

void dequantize_iq3_s(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_iq3_s*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = from_half(x[i].d);
        const uint8_t* qs = x[i].qs;
        const uint8_t* signs = x[i].signs;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 8, signs += 4) {
            const float db = d * float(1 + 2 * ((x[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xf));
            const uint8_t qh = x[i].qh[ib];
            for (int l = 0; l < 4; ++l, y += 8) {
                const auto* g1 = reinterpret_cast<const uint8_t*>(
                    sy_iq3s_grid + (qs[2 * l + 0] | ((qh << (8 - 2 * l)) & 256)));
                const auto* g2 = reinterpret_cast<const uint8_t*>(
                    sy_iq3s_grid + (qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)));
                for (int j = 0; j < 4; ++j) {
                    y[j + 0] = db * float(g1[j]) * (signs[l] & (1 << j) ? -1.f : 1.f);
                    y[j + 4] = db * float(g2[j]) * (signs[l] & (1 << (j + 4)) ? -1.f : 1.f);
                }
            }
        }
    }
}

void quantize_iq3_s_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    auto* y = static_cast<sy_block_iq3_s*>(vy);
    const MagnitudeSearch m{codebook(Codebook::kIq3s), 9, 0.0133f, false};
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        const float* imp = importance ? importance + i * QK_K : nullptr;
        quantize_super_block(
            m, 32, 2.f, x, imp, y[i], step_iq3s,
            [&](int ib, const uint16_t* e, const uint8_t* s, int code) {
                for (int k = 0; k < 8; ++k) {
                    y[i].qs[8 * ib + k] = uint8_t(e[k] & 255);
                    y[i].qh[ib] = uint8_t(y[i].qh[ib] | ((e[k] >> 8) << k));
                }
                for (int k = 0; k < 4; ++k) y[i].signs[4 * ib + k] = s[k];
                y[i].scales[ib / 2] = uint8_t(y[i].scales[ib / 2] | (code << (4 * (ib % 2))));
            },
            [](const void* b, float* out) { dequantize_iq3_s(b, out, QK_K); });
    }
}

void quantize_iq3_s(const float* x, void* y, int64_t n) {
    quantize_iq3_s_weighted(x, y, n, nullptr);
}

}  // namespace sy::quants::detail
