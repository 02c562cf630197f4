// Cases of rope: normal and NeoX, full and partial rotation, with and without YaRN, strided
// sources (a view into a fused QKV buffer, heads and tokens permuted).
#include "case_table.hpp"

namespace sy::conformance::detail {

namespace {

struct RopeShape {
    int64_t D, H, T, n_dims;
};

}  // namespace

std::vector<Case> rope_cases(const Types& t) {
    const int32_t a = t.src[0], d = t.dst;
    std::vector<Case> out;
    // layout 0 plain, 1 padded rows (a view into a wider buffer), 2 heads/tokens permuted,
    // 3 padded dst.
    auto add = [&](RopeShape s, int mode, bool yarn, int layout, float freq_base = 10000.0f) {
        TensorSpec sx = tensor(a, {s.D, s.H, s.T});
        TensorSpec sd = tensor(d, {s.D, s.H, s.T});
        if (layout == 1) sx = padded(sx, 16, 8);
        if (layout == 2) sx = with_order(sx, 0, 2, 1, 3);
        if (layout == 3) sd = padded(sd, 3, 1);
        std::string variant = "D " + std::to_string(s.D) + " H " + std::to_string(s.H) + " T " +
                              std::to_string(s.T) + " n_dims " + std::to_string(s.n_dims) +
                              (mode == SY_ROPE_NEOX ? " neox" : " normal") + (yarn ? " yarn" : "");
        if (freq_base != 10000.0f) variant += " base " + std::to_string(int64_t(freq_base));
        const char* layouts[] = {"", " padded src0", " permuted src0", " padded dst"};
        variant += layouts[layout];
        Case c = make_case(SY_OP_ROPE, variant,
                           {data(sx), source(tensor(t.src[1], {s.T}), Fill::Indices, 0, 512)}, sd);
        c.iparams[0] = int32_t(s.n_dims);
        c.iparams[1] = mode;
        c.fparams[0] = freq_base;
        c.fparams[1] = 1.0f;  // freq_scale
        c.fparams[3] = 1.0f;  // attn_factor
        if (yarn) {
            c.iparams[2] = 4096;    // n_ctx_orig
            c.fparams[1] = 0.025f;  // freq_scale
            c.fparams[2] = 1.0f;    // ext_factor
            c.fparams[4] = 32.0f;   // beta_fast
            c.fparams[5] = 1.0f;    // beta_slow
        }
        out.push_back(std::move(c));
    };
    add({64, 2, 3, 64}, SY_ROPE_NORMAL, false, 0);
    for (int mode : {SY_ROPE_NORMAL, SY_ROPE_NEOX}) {
        for (bool yarn : {false, true}) {
            add({64, 4, 5, 64}, mode, yarn, 0);
            add({128, 3, 7, 128}, mode, yarn, 0);
            add({96, 3, 7, 64}, mode, yarn, 0);
            add({7, 1, 1, 6}, mode, yarn, 0);
            add({130, 2, 33, 130}, mode, yarn, 0);
            add({64, 4, 5, 32}, mode, yarn, 1);
            add({64, 4, 5, 64}, mode, yarn, 2);
            add({48, 3, 4, 48}, mode, yarn, 3);
        }
        add({128, 2, 9, 128}, mode, false, 0, 500000.0f);
    }
    return out;
}

}  // namespace sy::conformance::detail
