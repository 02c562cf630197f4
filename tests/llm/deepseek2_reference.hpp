// A naive deepseek2 forward pass for the tests: plain loops in double precision, written from
// the math of docs/deepseek2.md (sections 3-5), reading the GGUF metadata and weights
// itself. It shares no code with the runtime (llm/src/deepseek2_*.cpp or any plugin); only the
// container reader and the quant formats' dequantizers, which define the file's values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "switchyard/llm/gguf.hpp"
#include "switchyard/quants.hpp"

namespace sy::llm::test {

class ReferenceDeepseek2 {
  public:
    explicit ReferenceDeepseek2(const gguf::Reader& f) : f_(f) {
        const std::string a = "deepseek2.";
        n_layer = f.get_u64(a + "block_count");
        n_embd = f.get_u64(a + "embedding_length");
        n_head = f.get_u64(a + "attention.head_count");
        kv_lora = f.get_u64(a + "attention.kv_lora_rank");
        rope = f.get_u64(a + "rope.dimension_count");
        nope = f.get_u64(a + "attention.key_length") - rope;
        v_head = f.get_u64(a + "attention.value_length");
        q_lora = f.find(a + "attention.q_lora_rank") ? f.get_u64(a + "attention.q_lora_rank") : 0;
        n_dense = f.get_u64(a + "leading_dense_block_count");
        n_expert = f.get_u64(a + "expert_count");
        n_used = f.get_u64(a + "expert_used_count");
        n_shared = f.get_u64(a + "expert_shared_count");
        eps = f.get_f64(a + "attention.layer_norm_rms_epsilon");
        freq_base = f.get_f64(a + "rope.freq_base");
        factor = f.get_f64(a + "rope.scaling.factor");
        orig_ctx = f.get_u64(a + "rope.scaling.original_context_length");
        log_mul = f.get_f64(a + "rope.scaling.yarn_log_multiplier");
        w_scale = f.get_f64(a + "expert_weights_scale");
        w_norm = f.find(a + "expert_weights_norm") && f.find(a + "expert_weights_norm")->as_bool();
        gating = f.find(a + "expert_gating_func") ? f.get_u64(a + "expert_gating_func") : 1;
        groups = f.find(a + "expert_group_count") ? f.get_u64(a + "expert_group_count") : 0;
        groups_used =
            f.find(a + "expert_group_used_count") ? f.get_u64(a + "expert_group_used_count") : 0;
        n_vocab = f.tensor("token_embd.weight")->ne[1];
    }

    // -ser Kmin,t (Kmin 0: off); the forward pass counts the expert slots it dropped.
    uint64_t ser_min = 0;
    double ser_threshold = 1.0;
    mutable uint64_t ser_dropped = 0, ser_slots = 0;

    // Logits {n_vocab} of every position of `tokens` (causal attention over the sequence).
    std::vector<std::vector<double>> forward(const std::vector<int32_t>& tokens) const {
        const size_t T = tokens.size();
        std::vector<std::vector<double>> x(T);
        for (size_t t = 0; t < T; ++t) x[t] = row("token_embd.weight", tokens[t]);
        for (uint64_t il = 0; il < n_layer; ++il) {
            const std::string p = "blk." + std::to_string(il) + ".";
            // attention: every token's q, and every token's k/v per head
            std::vector<std::vector<double>> q(T), k(T), v(T);
            for (size_t t = 0; t < T; ++t) {
                const auto a = norm(x[t], p + "attn_norm.weight");
                std::vector<double> qt =
                    q_lora ? matvec(p + "attn_q_b.weight", norm(matvec(p + "attn_q_a.weight", a),
                                                                p + "attn_q_a_norm.weight"))
                           : matvec(p + "attn_q.weight", a);
                const auto kva = matvec(p + "attn_kv_a_mqa.weight", a);
                std::vector<double> c(kva.begin(), kva.begin() + long(kv_lora));
                c = norm(c, p + "attn_kv_a_norm.weight");
                std::vector<double> kpe(kva.begin() + long(kv_lora), kva.end());
                rotate(kpe.data(), double(t));
                const uint64_t qk = nope + rope;
                for (uint64_t h = 0; h < n_head; ++h) rotate(qt.data() + h * qk + nope, double(t));
                std::vector<double> kt(n_head * qk), vt(n_head * v_head);
                for (uint64_t h = 0; h < n_head; ++h) {
                    for (uint64_t d = 0; d < nope; ++d) kt[h * qk + d] = k_up(p, h, d, c);
                    for (uint64_t d = 0; d < rope; ++d) kt[h * qk + nope + d] = kpe[d];
                    for (uint64_t j = 0; j < v_head; ++j) vt[h * v_head + j] = v_up(p, h, j, c);
                }
                q[t] = std::move(qt);
                k[t] = std::move(kt);
                v[t] = std::move(vt);
            }
            const double mscale = 1.0 + log_mul * std::log(factor);
            const double kq_scale = mscale * mscale / std::sqrt(double(nope + rope));
            for (size_t t = 0; t < T; ++t) {
                std::vector<double> o(n_head * v_head, 0.0);
                const uint64_t qk = nope + rope;
                for (uint64_t h = 0; h < n_head; ++h) {
                    std::vector<double> s(t + 1);
                    for (size_t j = 0; j <= t; ++j) {
                        double dot = 0;
                        for (uint64_t d = 0; d < qk; ++d)
                            dot += q[t][h * qk + d] * k[j][h * qk + d];
                        s[j] = dot * kq_scale;
                    }
                    softmax(s);
                    for (size_t j = 0; j <= t; ++j)
                        for (uint64_t d = 0; d < v_head; ++d)
                            o[h * v_head + d] += s[j] * v[j][h * v_head + d];
                }
                add(x[t], matvec(p + "attn_output.weight", o));
            }
            for (size_t t = 0; t < T; ++t) {
                const auto y = norm(x[t], p + "ffn_norm.weight");
                add(x[t], il < n_dense ? ffn(p + "ffn_", "", y) : moe(p, y));
            }
        }
        std::vector<std::vector<double>> logits(T);
        for (size_t t = 0; t < T; ++t)
            logits[t] = matvec("output.weight", norm(x[t], "output_norm.weight"));
        return logits;
    }

    uint64_t n_layer, n_embd, n_head, kv_lora, rope, nope, v_head, q_lora, n_dense, n_expert,
        n_used, n_shared, orig_ctx, gating, groups, groups_used;
    int64_t n_vocab;
    double eps, freq_base, factor, log_mul, w_scale;
    bool w_norm;

  private:
    // Row r of a tensor (of its 2-D view {ne0, rows}), dequantized.
    std::vector<double> row(const std::string& name, int64_t r) const {
        const gguf::TensorInfo* t = f_.tensor(name);
        if (t == nullptr) throw std::runtime_error("reference: no tensor " + name);
        std::vector<float> tmp(size_t(t->ne[0]));
        quants::dequantize_row(t->type, t->data + r * quants::row_size(t->type, t->ne[0]),
                               tmp.data(), t->ne[0]);
        return {tmp.begin(), tmp.end()};
    }
    bool has(const std::string& name) const { return f_.tensor(name) != nullptr; }

    // y[n] = sum_k W[k, n] x[k] for W {K, N} (or the rows [r0, r0 + N) of a bigger tensor).
    std::vector<double> matvec(const std::string& name, const std::vector<double>& x,
                               int64_t r0 = 0, int64_t n = -1) const {
        const gguf::TensorInfo* t = f_.tensor(name);
        if (n < 0) n = t->ne[1];
        std::vector<double> y(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            const auto w = row(name, r0 + i);
            double acc = 0;
            for (size_t k = 0; k < x.size(); ++k) acc += w[k] * x[k];
            y[size_t(i)] = acc;
        }
        return y;
    }

    std::vector<double> norm(const std::vector<double>& x, const std::string& gain) const {
        double ss = 0;
        for (double v : x) ss += v * v;
        const double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
        const auto g = row(gain, 0);
        std::vector<double> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * g[i];
        return y;
    }

    static void add(std::vector<double>& x, const std::vector<double>& y) {
        for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    }

    static void softmax(std::vector<double>& s) {
        const double mx = *std::max_element(s.begin(), s.end());
        double sum = 0;
        for (double& v : s) sum += (v = std::exp(v - mx));
        for (double& v : s) v /= sum;
    }

    static double silu(double x) { return x / (1.0 + std::exp(-x)); }

    // YaRN rotation of `rope` dims (pairs (2i, 2i+1)) at position pos; magnitude 1.
    void rotate(double* x, double pos) const {
        const double pi = 3.14159265358979323846;
        auto corr = [&](double r) {
            return double(rope) * std::log(double(orig_ctx) / (r * 2 * pi)) /
                   (2 * std::log(freq_base));
        };
        const double lo = std::max(0.0, std::floor(corr(32.0)));
        const double hi = std::min(double(rope) - 1, std::ceil(corr(1.0)));
        for (uint64_t i = 0; i < rope / 2; ++i) {
            const double extrap = pos * std::pow(freq_base, -2.0 * double(i) / double(rope));
            const double interp = extrap / factor;
            const double ramp =
                1.0 - std::clamp((double(i) - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
            const double theta = interp * (1 - ramp) + extrap * ramp;
            const double a = x[2 * i], b = x[2 * i + 1];
            x[2 * i] = a * std::cos(theta) - b * std::sin(theta);
            x[2 * i + 1] = a * std::sin(theta) + b * std::cos(theta);
        }
    }

    // Head h's k_nope[d] and v[j] from the latent c: attn_kv_b, or the split attn_k_b/attn_v_b.
    double k_up(const std::string& p, uint64_t h, uint64_t d, const std::vector<double>& c) const {
        if (has(p + "attn_kv_b.weight")) {
            const auto w = row(p + "attn_kv_b.weight", int64_t(h * (nope + v_head) + d));
            return std::inner_product(w.begin(), w.end(), c.begin(), 0.0);
        }
        double acc = 0;  // attn_k_b row (h*kv_lora + i) holds W_UK^h[d, i] over d
        for (uint64_t i = 0; i < kv_lora; ++i)
            acc += row(p + "attn_k_b.weight", int64_t(h * kv_lora + i))[d] * c[i];
        return acc;
    }
    double v_up(const std::string& p, uint64_t h, uint64_t j, const std::vector<double>& c) const {
        const auto w = has(p + "attn_kv_b.weight")
                           ? row(p + "attn_kv_b.weight", int64_t(h * (nope + v_head) + nope + j))
                           : row(p + "attn_v_b.weight", int64_t(h * v_head + j));
        return std::inner_product(w.begin(), w.end(), c.begin(), 0.0);
    }

    // down(silu(gate y) * up y); `expert` selects the 2-D slice of a 3-D expert tensor.
    std::vector<double> ffn(const std::string& prefix, const std::string& suffix,
                            const std::vector<double>& y, int64_t expert = -1) const {
        const std::string gate = prefix + "gate" + suffix + ".weight",
                          up = prefix + "up" + suffix + ".weight",
                          down = prefix + "down" + suffix + ".weight";
        const int64_t n_ff = f_.tensor(gate)->ne[1];
        const int64_t r0 = expert < 0 ? 0 : expert * n_ff;
        const auto g = matvec(gate, y, r0, n_ff), u = matvec(up, y, r0, n_ff);
        std::vector<double> par(static_cast<size_t>(n_ff));
        for (int64_t i = 0; i < n_ff; ++i) par[size_t(i)] = silu(g[size_t(i)]) * u[size_t(i)];
        const int64_t out = f_.tensor(down)->ne[1];
        return matvec(down, par, expert < 0 ? 0 : expert * out, out);
    }

    std::vector<double> moe(const std::string& p, const std::vector<double>& y) const {
        const auto logits = matvec(p + "ffn_gate_inp.weight", y);
        std::vector<double> probs = logits;
        if (gating == 2)
            for (double& v : probs) v = 1.0 / (1.0 + std::exp(-v));
        else
            softmax(probs);
        std::vector<double> sel = probs;
        if (has(p + "exp_probs_b.bias")) add(sel, row(p + "exp_probs_b.bias", 0));
        std::vector<bool> allowed(n_expert, true);
        if (groups > 1) {  // keep the groups whose two best experts sum highest
            const uint64_t per = n_expert / groups;
            std::vector<std::pair<double, uint64_t>> score;
            for (uint64_t g = 0; g < groups; ++g) {
                std::vector<double> s(sel.begin() + long(g * per),
                                      sel.begin() + long((g + 1) * per));
                std::sort(s.rbegin(), s.rend());
                score.push_back({s[0] + (per > 1 ? s[1] : 0.0), g});
            }
            std::stable_sort(score.begin(), score.end(),
                             [](auto a, auto b) { return a.first > b.first; });
            std::fill(allowed.begin(), allowed.end(), false);
            for (uint64_t i = 0; i < groups_used; ++i)
                for (uint64_t e = 0; e < per; ++e) allowed[score[i].second * per + e] = true;
        }
        std::vector<uint64_t> order;
        for (uint64_t e = 0; e < n_expert; ++e)
            if (allowed[e]) order.push_back(e);
        std::stable_sort(order.begin(), order.end(),
                         [&](uint64_t a, uint64_t b) { return sel[a] > sel[b]; });
        order.resize(n_used);
        if (ser_min > 0) {  // smart expert reduction: the k-th (k >= Kmin) only above t * best
            std::vector<uint64_t> kept;
            for (size_t j = 0; j < order.size(); ++j)
                if (j < ser_min || sel[order[j]] > ser_threshold * sel[order[0]])
                    kept.push_back(order[j]);
            ser_dropped += order.size() - kept.size();
            ser_slots += order.size();
            order = kept;
        }
        double sum = 0;
        for (uint64_t e : order) sum += probs[e];
        std::vector<double> out(n_embd, 0.0);
        for (uint64_t e : order) {
            double w = probs[e];
            if (w_norm) w /= sum;
            w *= w_scale;
            const auto ye = ffn(p + "ffn_", "_exps", y, int64_t(e));
            for (size_t i = 0; i < out.size(); ++i) out[i] += w * ye[i];
        }
        if (n_shared > 0) add(out, ffn(p + "ffn_", "_shexp", y));
        return out;
    }

    const gguf::Reader& f_;
};

}  // namespace sy::llm::test
