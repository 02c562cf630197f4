// ROPE: normal (pairs (2i, 2i+1)) and NeoX (pairs (i, i + n_dims/2)) with YaRN, the formula of
// ops.h. The angle is formed in double: at positions of 10^5 a float angle is off by 10^-2 rad.
// One thread per (pair or copied element, head, token).
#include <cmath>

#include "ops/ops.hpp"
#include "ops/tensor.cuh"
#include "switchyard/ops.h"

namespace sy::cuda {
namespace {

struct RopeParams {
    int n_dims;
    bool neox;
    double freq_base, freq_scale, ext_factor, attn_factor;
    double lo, hi;  // YaRN correction range (pair indices)
};

__global__ void rope_kernel(TensorDesc dst, TensorDesc x, TensorDesc pos, RopeParams r,
                            int64_t n) {
    const int64_t D = x.ne[0], half = r.n_dims / 2;
    // Work items per (head, token): the n_dims/2 pairs, then the D - n_dims copied elements.
    const int64_t per_row = half + (D - r.n_dims);
    for (int64_t w = global_thread(); w < n; w += grid_threads()) {
        const int64_t item = w % per_row, row = w / per_row;
        const int64_t h = row % x.ne[1], t = row / x.ne[1];
        const char* in = x.data + h * x.nb[1] + t * x.nb[2];
        char* out = dst.data + h * dst.nb[1] + t * dst.nb[2];
        if (item >= half) {
            const int64_t j = r.n_dims + (item - half);
            store_float(dst.type, out + j * dst.nb[0], load_float(x.type, in + j * x.nb[0]));
            continue;
        }
        const int64_t i = item;
        const double p = double(*reinterpret_cast<const int32_t*>(pos.data + t * pos.nb[0]));
        const double theta_extrap = p * pow(r.freq_base, -2.0 * double(i) / double(r.n_dims));
        const double theta_interp = r.freq_scale * theta_extrap;
        double theta = theta_interp, mscale = r.attn_factor;
        if (r.ext_factor != 0.0) {
            const double ramp =
                1.0 - fmin(fmax((double(i) - r.lo) / fmax(0.001, r.hi - r.lo), 0.0), 1.0);
            const double mix = ramp * r.ext_factor;
            theta = theta_interp * (1.0 - mix) + theta_extrap * mix;
            mscale = r.attn_factor * (1.0 + 0.1 * log(1.0 / r.freq_scale));
        }
        double s, c;
        sincos(theta, &s, &c);
        const int64_t j0 = r.neox ? i : 2 * i;
        const int64_t j1 = r.neox ? i + half : 2 * i + 1;
        const double a = load_float(x.type, in + j0 * x.nb[0]);
        const double b = load_float(x.type, in + j1 * x.nb[0]);
        store_float(dst.type, out + j0 * dst.nb[0], float((a * c - b * s) * mscale));
        store_float(dst.type, out + j1 * dst.nb[0], float((a * s + b * c) * mscale));
    }
}

}  // namespace

void launch_rope(const OpContext& ctx, const sy_node& node) {
    const TensorDesc dst = desc_of(*node.dst);
    const TensorDesc x = desc_of(*node.src[0]);
    RopeParams r{};
    r.n_dims = node.iparams[0];
    r.neox = node.iparams[1] == SY_ROPE_NEOX;
    r.freq_base = node.fparams[0];
    r.freq_scale = node.fparams[1];
    r.ext_factor = node.fparams[2];
    r.attn_factor = node.fparams[3];
    if (r.ext_factor != 0.0) {
        const double n_ctx_orig = node.iparams[2];
        auto corr = [&](double rot) {
            return double(r.n_dims) * std::log(n_ctx_orig / (rot * 2 * M_PI)) /
                   (2 * std::log(r.freq_base));
        };
        r.lo = std::fmax(0.0, std::floor(corr(node.fparams[4])));
        r.hi = std::fmin(double(r.n_dims - 1), std::ceil(corr(node.fparams[5])));
    }
    const int64_t per_row = r.n_dims / 2 + (x.ne[0] - r.n_dims);
    const int64_t n = per_row * x.ne[1] * x.ne[2];
    rope_kernel<<<grid_for(n), kThreads, 0, ctx.stream>>>(dst, x, desc_of(*node.src[1]), r, n);
    check_launch("rope");
}

}  // namespace sy::cuda
