// The scale searches of the legacy and K-quant quantizers (internal.hpp declares them), as
// ggml's make_qx_quants, make_q3_quants, make_qkx2_quants, make_qkx3_quants and make_qp_quants:
// bit for bit where the reference quantizers use them without an importance matrix.
#include <algorithm>
#include <cmath>

#include "internal.hpp"

namespace sy::quants::detail {

float make_qx_quants(int n, int nmax, const float* x, int8_t* L, const float* weights) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, int8_t(0));
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = int8_t(l + nmax);
        const float w = weights ? weights[i] : x[i] * x[i];
        sumlx += w * x[i] * float(l);
        suml2 += w * float(l) * float(l);
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(float(nmax) + 0.1f * float(is)) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = weights ? weights[i] : x[i] * x[i];
            sumlx += w * x[i] * float(l);
            suml2 += w * float(l) * float(l);
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                L[i] = int8_t(nmax + std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max <= min) {
        std::fill(L, L + n, uint8_t(0));
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
        float diff = scale * float(L[i]) + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        // Rounded from the best min so far, which can sit at or near max: v may be huge or inf.
        iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const float v = iscale * (x[i] - min);
            const int l = v > 0 ? nearest_int(std::min(v, float(nmax))) : 0;
            Laux[i] = uint8_t(l);
            const float w = weights[i];
            sum_l += w * float(l);
            sum_l2 += w * float(l) * float(l);
            sum_xl += w * float(l) * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * float(Laux[i]) + this_min - x[i];
                diff = use_mad ? std::fabs(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                std::copy(Laux, Laux + n, L);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

// Q3_K's scale search: start from the max-magnitude scale, then move single quants while the
// x^2-weighted fit improves (at most 5 passes).
float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, int8_t(0));
        return 0.f;
    }
    const float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = int8_t(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * float(l);
        suml2 += w * float(l) * float(l);
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * float(L[i]);
            if (slx > 0) {
                float sl2 = suml2 - w * float(L[i]) * float(L[i]);
                const int new_l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * float(new_l);
                    sl2 += w * float(new_l) * float(new_l);
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = int8_t(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
    return sumlx / suml2;
}

// Asymmetric scale + min search: x ~ scale * L - the_min, L in [0, nmax], minimizing the
// weighted error (absolute when use_mad) over nstep + 1 candidate scales.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::fill(L, L + n, uint8_t(0));
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = uint8_t(std::clamp(l, 0, nmax));
        float diff = scale * float(L[i]) + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = uint8_t(l);
            const float w = weights[i];
            sum_l += w * float(l);
            sum_l2 += w * float(l) * float(l);
            sum_xl += w * float(l) * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * float(Laux[i]) + this_min - x[i];
                diff = use_mad ? std::fabs(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                std::copy(Laux, Laux + n, L);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

// The weighted K-quants' fit of their sub-block scales (or mins) x >= 0 as d * L, L in
// [0, nmax], minimising sum w (x - d L)^2 with w = quant_weights (each sub-block's total fit
// weight): L rounded at the best of nmax / max and 8 neighbours (nmax + 0.1 is) / max, then
// single levels moved while the fit improves (at most 5 passes); d is the least-squares fit.
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
    if (max < kGroupMaxEps) {
        std::fill(L, L + n, uint8_t(0));
        return 0.f;
    }
    auto level = [nmax](float v) { return std::clamp(nearest_int(v), 0, nmax); };
    float iscale = nmax / max;
    const float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * float(level(iscale * x[i]));
        best_mse += quant_weights[i] * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * float(is) + float(nmax)) / max;
        const float scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            const float diff = x[i] - scale_is * float(level(iscale_is * x[i]));
            mse += quant_weights[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = level(iscale * x[i]);
        L[i] = uint8_t(l);
        sumlx += quant_weights[i] * x[i] * float(l);
        suml2 += quant_weights[i] * float(l) * float(l);
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = quant_weights[i];
            float slx = sumlx - w * x[i] * float(L[i]);
            float sl2 = suml2 - w * float(L[i]) * float(L[i]);
            if (slx > 0 && sl2 > 0) {
                const int new_l = level(x[i] * sl2 / slx);
                if (new_l != L[i]) {
                    slx += w * x[i] * float(new_l);
                    sl2 += w * float(new_l) * float(new_l);
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = uint8_t(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

}  // namespace sy::quants::detail
