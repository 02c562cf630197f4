// Rotary position embedding, normal and NeoX, with YaRN (the formula of ops.h, in doubles).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "contract.hpp"

namespace sy::reference::detail {

namespace {

struct RopeParams {
    int64_t n_dims;
    bool neox;
    double n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
};

// The rotation angle and magnitude scale of pair i at position p.
void rope_angle(const RopeParams& r, int64_t i, double p, double& theta, double& mscale) {
    const double theta_extrap = p * std::pow(r.freq_base, -2.0 * double(i) / double(r.n_dims));
    const double theta_interp = r.freq_scale * theta_extrap;
    if (r.ext_factor == 0) {
        theta = theta_interp;
        mscale = r.attn_factor;
        return;
    }
    auto corr = [&](double rot) {
        return double(r.n_dims) * std::log(r.n_ctx_orig / (rot * 2 * std::numbers::pi)) /
               (2 * std::log(r.freq_base));
    };
    const double lo = std::max(0.0, std::floor(corr(r.beta_fast)));
    const double hi = std::min(double(r.n_dims - 1), std::ceil(corr(r.beta_slow)));
    const double ramp = 1 - std::clamp((double(i) - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
    const double mix = ramp * r.ext_factor;
    theta = theta_interp * (1 - mix) + theta_extrap * mix;
    mscale = r.attn_factor * (1 + 0.1 * std::log(1 / r.freq_scale));
}

}  // namespace

std::vector<double> rope(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& x = source(node, 0, "src0");
    const sy_tensor& pos = source(node, 1, "src1 (positions)");
    RopeParams r{};
    r.n_dims = node.iparams[0];
    r.neox = node.iparams[1] == SY_ROPE_NEOX;
    r.n_ctx_orig = node.iparams[2];
    r.freq_base = node.fparams[0];
    r.freq_scale = node.fparams[1];
    r.ext_factor = node.fparams[2];
    r.attn_factor = node.fparams[3];
    r.beta_fast = node.fparams[4];
    r.beta_slow = node.fparams[5];

    Result out(dst);
    const int64_t half = r.n_dims / 2;
    for (int64_t t = 0; t < x.ne[2]; ++t) {
        const double p = at(pos, t, 0, 0, 0);
        for (int64_t h = 0; h < x.ne[1]; ++h) {
            for (int64_t j = r.n_dims; j < x.ne[0]; ++j) out.at(j, h, t, 0) = at(x, j, h, t, 0);
            for (int64_t i = 0; i < half; ++i) {
                double theta = 0, mscale = 0;
                rope_angle(r, i, p, theta, mscale);
                const int64_t ja = r.neox ? i : 2 * i;
                const int64_t jb = r.neox ? i + half : 2 * i + 1;
                const double a = at(x, ja, h, t, 0), b = at(x, jb, h, t, 0);
                out.at(ja, h, t, 0) = (a * std::cos(theta) - b * std::sin(theta)) * mscale;
                out.at(jb, h, t, 0) = (a * std::sin(theta) + b * std::cos(theta)) * mscale;
            }
        }
    }
    return out.values;
}

}  // namespace sy::reference::detail
