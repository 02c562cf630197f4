// ROPE, rotary position embedding with YaRN scaling, exactly the formula of ops.h:
//   pair i in [0, n_dims/2) at position p:
//   theta_extrap = p * base^(-2i/n_dims), theta_interp = freq_scale * theta_extrap,
//   with ext_factor != 0: theta = mix of the two by the ramp over [lo, hi] of the correction
//   dims, mscale = attn_factor * (1 + 0.1 ln(1/freq_scale)); otherwise theta = theta_interp,
//   mscale = attn_factor;  (a, b) -> (a cos - b sin, a sin + b cos) * mscale.
// Pairs are (2i, 2i+1) in normal mode and (i, i + n_dims/2) in NeoX mode; dims from n_dims on are
// copied. The angles depend only on the token, so each token's cos/sin table is computed once (in
// double: positions reach 1e5 and an f32 angle would be off by ~1e-2 rad) and applied to every
// head.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/ops.hpp"
#include "row_copy.hpp"
#include "tensor_access.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {
namespace {

struct RopeParams {
    int64_t n_dims;
    bool neox;
    double freq_base, freq_scale, ext_factor, mscale;
    double ramp_lo, ramp_hi;  // the correction-dim range of YaRN (used when ext_factor != 0)
};

double yarn_corr_dim(double n_dims, double n_ctx_orig, double rotations, double base) {
    return n_dims * std::log(n_ctx_orig / (rotations * 2.0 * M_PI)) / (2.0 * std::log(base));
}

RopeParams rope_params(const sy_node& node) {
    RopeParams p{};
    p.n_dims = node.iparams[0];
    p.neox = node.iparams[1] == SY_ROPE_NEOX;
    p.freq_base = node.fparams[0];
    p.freq_scale = node.fparams[1];
    p.ext_factor = node.fparams[2];
    const double attn_factor = node.fparams[3];
    p.mscale = attn_factor;
    if (p.ext_factor != 0.0) {
        const double n_ctx_orig = node.iparams[2];
        const double beta_fast = node.fparams[4], beta_slow = node.fparams[5];
        p.ramp_lo = std::max(
            0.0, std::floor(yarn_corr_dim(double(p.n_dims), n_ctx_orig, beta_fast, p.freq_base)));
        p.ramp_hi = std::min(
            double(p.n_dims - 1),
            std::ceil(yarn_corr_dim(double(p.n_dims), n_ctx_orig, beta_slow, p.freq_base)));
        p.mscale = attn_factor * (1.0 + 0.1 * std::log(1.0 / p.freq_scale));
    }
    return p;
}

// cos/sin of every pair's angle at position `pos`, already multiplied by mscale.
void angle_table(const RopeParams& p, int32_t pos, std::vector<float>& cos_t,
                 std::vector<float>& sin_t) {
    const int64_t pairs = p.n_dims / 2;
    for (int64_t i = 0; i < pairs; ++i) {
        const double theta_extrap =
            double(pos) * std::pow(p.freq_base, -2.0 * double(i) / double(p.n_dims));
        const double theta_interp = p.freq_scale * theta_extrap;
        double theta = theta_interp;
        if (p.ext_factor != 0.0) {
            const double y = (double(i) - p.ramp_lo) / std::max(0.001, p.ramp_hi - p.ramp_lo);
            const double ramp = 1.0 - std::clamp(y, 0.0, 1.0);
            const double mix = ramp * p.ext_factor;
            theta = theta_interp * (1.0 - mix) + theta_extrap * mix;
        }
        cos_t[size_t(i)] = float(std::cos(theta) * p.mscale);
        sin_t[size_t(i)] = float(std::sin(theta) * p.mscale);
    }
}

}  // namespace

void compute_rope(ThreadPool& pool, const sy_node& node) {
    const sy_tensor& src = *node.src[0];
    const sy_tensor& positions = *node.src[1];
    const sy_tensor& dst = *node.dst;
    const RopeParams p = rope_params(node);
    const int64_t D = src.ne[0], H = src.ne[1], T = src.ne[2];
    const int64_t pairs = p.n_dims / 2;
    // Element j of pair i: (2i, 2i+1) normal, (i, i + n_dims/2) NeoX.
    const int64_t first_step = p.neox ? 1 : 2;
    const int64_t second_offset = p.neox ? pairs : 1;
    const int64_t min_tokens = 4096 / (D * H > 0 ? D * H : 1) + 1;
    pool.parallel_ranges(T, min_tokens, [&](int64_t t0, int64_t t1) {
        std::vector<float> cos_t(static_cast<size_t>(pairs)), sin_t(static_cast<size_t>(pairs));
        for (int64_t t = t0; t < t1; ++t) {
            int32_t pos;
            std::memcpy(&pos, static_cast<const char*>(positions.data) + t * positions.nb[0], 4);
            angle_table(p, pos, cos_t, sin_t);
            for (int64_t h = 0; h < H; ++h) {
                const char* in = row_at(src, h, t, 0);
                char* out = row_at(dst, h, t, 0);
                for (int64_t i = 0; i < pairs; ++i) {
                    const int64_t j0 = i * first_step, j1 = j0 + second_offset;
                    const float a = sdk::load_f32(src.type, in + j0 * src.nb[0]);
                    const float b = sdk::load_f32(src.type, in + j1 * src.nb[0]);
                    sdk::store_f32(dst.type, out + j0 * dst.nb[0],
                                   a * cos_t[size_t(i)] - b * sin_t[size_t(i)]);
                    sdk::store_f32(dst.type, out + j1 * dst.nb[0],
                                   a * sin_t[size_t(i)] + b * cos_t[size_t(i)]);
                }
                if (in != out)  // in place, the unrotated tail is already where it belongs
                    copy_row(src.type, in + p.n_dims * src.nb[0], src.nb[0], dst.type,
                             out + p.n_dims * dst.nb[0], dst.nb[0], D - p.n_dims);
            }
        }
    });
}

}  // namespace sy::cpu
