// deepseek2: the graph of one ubatch (DEEPSEEK2.md section 4), and the session that runs it.
//
// Shapes in ggml order. Per layer, with T tokens at positions n_past .. n_past + T - 1 and
// n_kv = n_past + T cached tokens after this ubatch:
//   q {qk_head, H, T} -> q_nope {qk_nope, H, T}, q_pe {qk_rope, H, T} (roped)
//   kv_a {kv_lora + qk_rope, T} -> c {kv_lora, T} (normed), k_pe {qk_rope, 1, T} (roped)
// and the attention scores of every mode are split into a "nope" and a "rope" product that
// are added, so no per-head copy of k_pe is ever made.
//
// A graph may hold tokens of several sequences, one part after the other (decode(): each part
// Tq tokens of one sequence at its own n_past): everything but the attention is per token and
// runs over all T at once; the attention runs per part on its sequence's own cells of the
// cache, with Tq queries and n_kv = n_past + Tq keys, and the outputs are concatenated.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>

#include "switchyard/core/error.hpp"
#include "switchyard/core/memory_planner.hpp"
#include "switchyard/core/named_op_registry.hpp"
#include "switchyard/core/profile.hpp"
#include "switchyard/llm/deepseek2.hpp"
#include "switchyard/named_ops.h"
#include "switchyard/sdk.hpp"

namespace sy::llm {

namespace {

// Elements of one matrix of a weight {K, N, ...} (one expert's, for expert tensors).
uint64_t matrix_elements(const Tensor& t) {
    return static_cast<uint64_t>(t.ne(0) * t.ne(1));
}

using Clock = std::chrono::steady_clock;

Strides strides_of(int64_t nb0, int64_t nb1, int64_t nb2 = 0, int64_t nb3 = 0) {
    return {nb0, nb1, nb2, nb3};
}

// Builds one ubatch graph; every helper reads top to bottom like the math.
class GraphBuilder {
  public:
    // `weights`: the device copies of weights (those not there are read from host memory);
    // `all_on_device`: every weight must have a copy there (one backend on a device);
    // `overlap`: the scheduler may run independent nodes of two backends at once (moe()).
    // `parts`: the sequences' tokens in graph order; `cells`: each sequence's cache cells.
    GraphBuilder(const Deepseek2Model& model, Deepseek2Cache& cache,
                 std::span<const DeviceWeights> weights, bool all_on_device, bool fused_moe,
                 bool flash, bool overlap, std::span<const Deepseek2Session::UbatchPart> parts,
                 int64_t cells)
        : m_(model),
          hp_(model.hparams()),
          o_(model.options()),
          kv_(cache, g_, cells),
          weights_(weights),
          all_on_device_(all_on_device),
          fused_moe_(fused_moe),
          flash_(flash),
          overlap_(overlap),
          parts_(parts.begin(), parts.end()) {
        for (const auto& p : parts_) T_ += p.n_tokens;
    }

    Deepseek2Session::UbatchGraph build(bool all_logits) {
        Deepseek2Session::UbatchGraph out;
        out.tokens = g_.input("tokens", SY_TYPE_I32, {T_});
        out.positions = g_.input("positions", SY_TYPE_I32, {T_});
        pos_ = out.positions;
        Tensor* x = g_.get_rows(w(m_.token_embd()), out.tokens);  // {n_embd, T}
        for (uint32_t il = 0; il < hp_.n_layer; ++il) {
            const Deepseek2Layer& l = m_.layers()[il];
            Tensor* attn = attention(l, il, norm(x, l.attn_norm));
            x = g_.add(x, attn);
            Tensor* y = norm(x, l.ffn_norm);
            Tensor* ffn = l.dense ? swiglu(y, l.ffn_gate, l.ffn_up, l.ffn_down) : moe(l, y);
            x = g_.add(x, ffn)->set_name("l_out-" + std::to_string(il));
        }
        if (!all_logits) x = last_of_each_part(x, out);
        out.logits = g_.mul_mat(w(m_.output()), norm(x, m_.output_norm()))->set_name("logits");
        g_.mark_output(out.logits);
        out.graph = std::move(g_);
        return out;
    }

  private:
    // The rows of x {n_embd, T} that are each part's last token: a view for one part or equal
    // parts, else gathered by an input of row indices (UbatchGraph::output_rows).
    Tensor* last_of_each_part(Tensor* x, Deepseek2Session::UbatchGraph& out) {
        const int64_t S = int64_t(parts_.size()), Tq = parts_[0].n_tokens;
        const bool equal = std::all_of(parts_.begin(), parts_.end(),
                                       [&](const auto& p) { return p.n_tokens == Tq; });
        if (S == 1)
            return T_ == 1
                       ? x
                       : g_.view(x, {hp_.n_embd, 1}, x->strides(), uint64_t(x->nb(1) * (T_ - 1)));
        if (equal)
            return g_.cont(g_.view(x, {hp_.n_embd, S}, strides_of(x->nb(0), x->nb(1) * Tq),
                                   uint64_t(x->nb(1) * (Tq - 1))));
        out.output_rows = g_.input("output_rows", SY_TYPE_I32, {S});
        return g_.get_rows(x, out.output_rows);
    }

    // A weight of the model as a tensor of this graph (a view for strided weights).
    Tensor* w(const WeightRef& ref) {
        Tensor* t = g_.weight(ref.name, static_cast<sy_dtype>(ref.type), ref.base_shape);
        t->set_constant_id(m_.constant_id());
        if (const auto copy = device_copy(ref))
            t->set_data(*copy->first, copy->second);
        else
            t->set_data(const_cast<void*>(ref.data));
        return ref.viewed ? g_.view(t, ref.shape, ref.strides, ref.offset) : t;
    }

    // Where a device holds the weight, or nullopt for host memory (throws Error when every
    // weight must be on the device and this one is not).
    std::optional<std::pair<const Buffer*, uint64_t>> device_copy(const WeightRef& ref) const {
        for (const DeviceWeights& dw : weights_)
            if (const auto found = dw.try_find(ref.data)) return found;
        if (all_on_device_ && !weights_.empty() && weights_[0].uploaded())
            return weights_[0].find(ref.data, ref.name);  // throws: not copied
        return std::nullopt;
    }

    Tensor* norm(Tensor* x, const WeightRef& gain) {
        return g_.mul(g_.rms_norm(x, hp_.rms_eps), w(gain));
    }

    RopeParams rope_params() const {
        RopeParams p;
        p.n_dims = static_cast<int32_t>(hp_.qk_rope);
        p.mode = SY_ROPE_NORMAL;
        p.freq_base = hp_.rope_freq_base;
        p.freq_scale = hp_.rope_freq_scale;
        if (hp_.yarn) {
            p.ext_factor = 1.0f;
            p.n_ctx_orig = static_cast<int32_t>(hp_.yarn_orig_ctx);
            p.attn_factor = hp_.rope_attn_factor();
            p.beta_fast = 32.0f;
            p.beta_slow = 1.0f;
        }
        return p;
    }

    // {D, H, T} -> {D, T, H}: the per-head batch layout of mul_mat.
    Tensor* heads_as_batch(Tensor* t) { return g_.permute(t, {0, 2, 1, 3}); }

    // Elements [from, from + n) of dimension d of t, as a view.
    Tensor* narrow(Tensor* t, int d, int64_t from, int64_t n) {
        Shape shape = t->shape();
        shape.ne[d] = n;
        return g_.view(t, shape, t->strides(), uint64_t(from * t->nb(d)));
    }

    // -amb: how many heads one step of the attention may take when each head needs
    // `bytes_per_head` of compute buffer (all of them without a limit; at least one).
    int64_t heads_per_step(int64_t bytes_per_head) const {
        const int64_t H = hp_.n_head;
        if (o_.attn_max_bytes <= 0) return H;
        return std::clamp<int64_t>(o_.attn_max_bytes / std::max<int64_t>(bytes_per_head, 1), 1, H);
    }

    // The attention of every head, `step` heads at a time: step(h0, n) returns the output
    // {vh, T, n} of heads h0 .. h0 + n - 1; the parts are concatenated over heads.
    template <class Step>
    Tensor* by_head_groups(int64_t bytes_per_head, Step step) {
        const int64_t H = hp_.n_head, per = heads_per_step(bytes_per_head);
        std::vector<Tensor*> parts;
        for (int64_t h0 = 0; h0 < H; h0 += per) parts.push_back(step(h0, std::min(per, H - h0)));
        return concat_pairwise(std::move(parts), 2);
    }

    // The parts concatenated along dimension d, pairwise, so each output element is copied
    // about log2(parts) times.
    Tensor* concat_pairwise(std::vector<Tensor*> parts, int d) {
        while (parts.size() > 1) {
            std::vector<Tensor*> next;
            for (size_t i = 0; i + 1 < parts.size(); i += 2)
                next.push_back(g_.concat(parts[i], parts[i + 1], d));
            if (parts.size() % 2 == 1) next.push_back(parts.back());
            parts = std::move(next);
        }
        return parts[0];
    }

    // The scores of one head live three times at once: the nope and rope products and their
    // sum (the softmax and the product with V come after the two products are freed).
    int64_t kq_bytes_per_head() const { return 3 * n_kv_ * Tq_ * int64_t(sizeof(float)); }

    Tensor* softmax_scores(Tensor* kq) {
        SoftmaxParams sp;
        sp.scale = hp_.kq_scale();
        sp.causal = true;
        sp.causal_offset = static_cast<int32_t>(n_past_);
        return g_.softmax(kq, sp);
    }

    // attn.flash / attn.mla parameters: the softmax scale and the causal window.
    NamedOpParams flash_params(int32_t rope = 0) const {
        NamedOpParams p;
        p.fparams = {hp_.kq_scale()};
        p.iparams = {1, static_cast<int32_t>(n_past_), rope};
        return p;
    }

    // q {D, T, H} against K {D, n_kv, Hk} and V {Dv, n_kv, Hk}: {Dv, T, H}.
    Tensor* flash(Tensor* q, Tensor* k, Tensor* v) {
        return g_.named(SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION, {q, k, v}, SY_TYPE_F32,
                        {v->shape()[0], Tq_, q->shape()[2]}, flash_params());
    }

    Tensor* attention(const Deepseek2Layer& l, uint32_t il, Tensor* cur) {
        const int64_t H = hp_.n_head, qk = hp_.qk_head(), nope = hp_.qk_nope, rope = hp_.qk_rope,
                      kvl = hp_.kv_lora_rank, vh = hp_.v_head;
        Tensor* q;
        if (hp_.q_lora_rank > 0) {
            q = g_.mul_mat(w(l.q_a), cur);
            q = g_.mul_mat(w(l.q_b), norm(q, l.q_a_norm));
        } else {
            q = g_.mul_mat(w(l.q), cur);
        }
        // q {qk*H, T}: per head qk_nope values, then qk_rope.
        const int64_t f = sizeof(float);
        const Strides q_strides = strides_of(f, qk * f, qk * H * f, qk * H * T_ * f);
        Tensor* q_nope = g_.view(q, {nope, H, T_}, q_strides, 0);
        Tensor* q_pe =
            g_.rope(g_.view(q, {rope, H, T_}, q_strides, uint64_t(nope * f)), pos_, rope_params());

        Tensor* kv_a = g_.mul_mat(w(l.kv_a_mqa), cur);  // {kvl + rope, T}
        const Strides a_strides =
            strides_of(f, (kvl + rope) * f, (kvl + rope) * f, (kvl + rope) * f * T_);
        Tensor* c = norm(g_.view(kv_a, {kvl, T_}, a_strides, 0), l.kv_a_norm);  // {kvl, T}
        Tensor* k_pe = g_.rope(g_.view(kv_a, {rope, 1, T_}, a_strides, uint64_t(kvl * f)), pos_,
                               rope_params());  // {rope, 1, T}

        // {vh, T, H}: each sequence's queries against its own cache rows.
        const auto of_sequence = [&](Tensor* qn, Tensor* qr, Tensor* cs, Tensor* kr) {
            if (o_.mla == 0) return attention_standard(l, il, qn, qr, cs, kr);
            if (o_.mla == 3 && Tq_ >= kMla3DecompressTokens)
                return attention_decompressed(l, il, qn, qr, cs, kr);
            return attention_latent(l, il, qn, qr, cs, kr);
        };
        std::vector<Tensor*> outs;
        for (int64_t t0 = 0; const auto& part : parts_) {
            seq_ = part.seq;
            Tq_ = part.n_tokens;
            n_past_ = part.n_past;
            n_kv_ = part.n_past + part.n_tokens;
            if (parts_.size() == 1)
                outs.push_back(of_sequence(q_nope, q_pe, c, k_pe));
            else
                outs.push_back(of_sequence(narrow(q_nope, 2, t0, Tq_), narrow(q_pe, 2, t0, Tq_),
                                           narrow(c, 1, t0, Tq_), narrow(k_pe, 2, t0, Tq_)));
            t0 += Tq_;
        }
        Tensor* o = concat_pairwise(std::move(outs), 1);
        // {vh, T, H} -> {vh, H, T} -> {vh*H, T}
        Tensor* merged = g_.reshape(g_.cont(g_.permute(o, {0, 2, 1, 3})), {vh * H, T_});
        return g_.mul_mat(w(l.attn_output), merged);
    }

    // mla 0: K rows [head 0: nope | rope][head 1 ...] and V transposed in the cache.
    Tensor* attention_standard(const Deepseek2Layer& l, uint32_t il, Tensor* q_nope, Tensor* q_pe,
                               Tensor* c, Tensor* k_pe) {
        const int64_t H = hp_.n_head, nope = hp_.qk_nope, vh = hp_.v_head, f = sizeof(float);
        Tensor* kv = g_.mul_mat(w(l.kv_b), c);  // {H*(nope+vh), T}
        const Strides kv_strides =
            strides_of(f, (nope + vh) * f, H * (nope + vh) * f, H * (nope + vh) * f * Tq_);
        kv_.write_kv(il, seq_, n_past_, g_.view(kv, {nope, H, Tq_}, kv_strides, 0), k_pe,
                     g_.view(kv, {vh, H, Tq_}, kv_strides, uint64_t(nope * f)));
        if (flash_) {
            Tensor* q = g_.concat(heads_as_batch(q_nope), heads_as_batch(q_pe), 0);  // {qk, T, H}
            return flash(q, kv_.keys(il, seq_, n_kv_), kv_.values(il, seq_, n_kv_));
        }
        Tensor* k_nope = kv_.keys_nope(il, seq_, n_kv_);
        Tensor* k_rope = kv_.keys_rope(il, seq_, n_kv_);
        Tensor* v_t = kv_.values_transposed(il, seq_, n_kv_);
        Tensor* qn = heads_as_batch(q_nope);
        Tensor* qr = heads_as_batch(q_pe);
        return by_head_groups(kq_bytes_per_head(), [&](int64_t h0, int64_t n) {
            Tensor* kq = g_.add(g_.mul_mat(narrow(k_nope, 2, h0, n), narrow(qn, 2, h0, n))
                                    ->set_name("kq-" + std::to_string(il)),
                                g_.mul_mat(narrow(k_rope, 2, h0, n), narrow(qr, 2, h0, n))
                                    ->set_name("kq_rope-" + std::to_string(il)));  // {n_kv, T, n}
            return g_.mul_mat(narrow(v_t, 2, h0, n), softmax_scores(kq))
                ->set_name("kqv-" + std::to_string(il));  // {vh, T, n}
        });
    }

    // mla 1, 2, 3 (generation): queries absorb W_UK, scores against the latents, W_UV after.
    Tensor* attention_latent(const Deepseek2Layer& l, uint32_t il, Tensor* q_nope, Tensor* q_pe,
                             Tensor* c, Tensor* k_pe) {
        kv_.write_latents(il, seq_, n_past_, c, k_pe);
        Tensor* q_lat = g_.mul_mat(w(l.k_b), heads_as_batch(q_nope));  // {kvl, T, H}
        if (flash_) {
            // Queries ordered as the cache rows: [q_pe | q_lat].
            Tensor* q = g_.concat(heads_as_batch(q_pe), q_lat, 0);
            Tensor* rows = kv_.latent_rows(il, seq_, n_kv_);
            Tensor* o_lat =
                g_.named(SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION, {q, rows}, SY_TYPE_F32,
                         {int64_t(hp_.kv_lora_rank), Tq_, int64_t(hp_.n_head)},
                         flash_params(static_cast<int32_t>(hp_.qk_rope)));
            return g_.mul_mat(w(l.v_b), o_lat);  // {vh, T, H}
        }
        // c transposed {n_kv, kvl}: the mla 1 copy, or made from the cache rows now (decoded
        // first when they are blocks, which cannot be transposed).
        Tensor* c_t;
        if (o_.mla == 1) {
            c_t = kv_.latents_transposed(il, seq_, n_kv_);
        } else {
            Tensor* c_rows = kv_.latents(il, seq_, n_kv_);
            if (sy_dtype_info(o_.cache_type_k).block_size > 1) c_rows = g_.cpy(c_rows, SY_TYPE_F32);
            c_t = g_.cont(g_.transpose(c_rows));
        }
        Tensor* c_rows = kv_.latents(il, seq_, n_kv_);
        Tensor* k_pe_rows = kv_.latent_k_pe(il, seq_, n_kv_);
        Tensor* qr = heads_as_batch(q_pe);
        Tensor* o_lat = by_head_groups(kq_bytes_per_head(), [&](int64_t h0, int64_t n) {
            Tensor* kq = g_.add(
                g_.mul_mat(c_rows, narrow(q_lat, 2, h0, n))->set_name("kq-" + std::to_string(il)),
                g_.mul_mat(k_pe_rows, narrow(qr, 2, h0, n))
                    ->set_name("kq_rope-" + std::to_string(il)));
            return g_.mul_mat(c_t, softmax_scores(kq))
                ->set_name("kqv-" + std::to_string(il));  // {kvl, T, n}
        });
        return g_.mul_mat(w(l.v_b), o_lat);  // {vh, T, H}
    }

    // mla 3 with a large ubatch: decompress every cached latent with attn_kv_b, then standard
    // attention over the result.
    Tensor* attention_decompressed(const Deepseek2Layer& l, uint32_t il, Tensor* q_nope,
                                   Tensor* q_pe, Tensor* c, Tensor* k_pe) {
        const int64_t nope = hp_.qk_nope, vh = hp_.v_head, rope = hp_.qk_rope, f = sizeof(float);
        kv_.write_latents(il, seq_, n_past_, c, k_pe);
        Tensor* c_all = kv_.latents(il, seq_, n_kv_);
        if (o_.cache_type_k != SY_TYPE_F32) c_all = g_.cpy(c_all, SY_TYPE_F32);
        Tensor* kv_b = w(l.kv_b);  // {kvl, H*(nope+vh)}: per head nope rows, then vh rows
        Tensor* qn = heads_as_batch(q_nope);
        Tensor* qr = heads_as_batch(q_pe);
        // Per head: its decompressed K and V {nope + vh, n_kv}, and then k_pe repeated and
        // K = [k_nope | k_pe] (flash), or the scores and V transposed.
        const int64_t per_head =
            n_kv_ * f * (nope + vh) +
            (flash_ ? n_kv_ * f * (rope + nope + rope) : kq_bytes_per_head() + n_kv_ * f * vh);
        return by_head_groups(per_head, [&](int64_t h0, int64_t n) {
            Tensor* kv = g_.mul_mat(narrow(kv_b, 1, h0 * (nope + vh), n * (nope + vh)),
                                    c_all);  // {n*(nope+vh), n_kv}
            const Strides kv_strides =
                strides_of(f, n * (nope + vh) * f, (nope + vh) * f, n * (nope + vh) * f * n_kv_);
            Tensor* k_nope = g_.view(kv, {nope, n_kv_, n}, kv_strides, 0);
            Tensor* v = g_.view(kv, {vh, n_kv_, n}, kv_strides, uint64_t(nope * f));
            if (flash_) {
                // K = [k_nope | k_pe] per head, k_pe repeated for every head (stride 0).
                Tensor* k_pe_all = g_.cpy(kv_.latent_k_pe_heads(il, seq_, n_kv_, n), SY_TYPE_F32);
                Tensor* k = g_.concat(k_nope, k_pe_all, 0);  // {qk, n_kv, n}
                Tensor* q = g_.concat(narrow(qn, 2, h0, n), narrow(qr, 2, h0, n), 0);
                return flash(q, k, v);
            }
            Tensor* kq = g_.add(
                g_.mul_mat(k_nope, narrow(qn, 2, h0, n))->set_name("kq-" + std::to_string(il)),
                g_.mul_mat(kv_.latent_k_pe(il, seq_, n_kv_), narrow(qr, 2, h0, n))
                    ->set_name("kq_rope-" + std::to_string(il)));
            return g_.mul_mat(g_.cont(g_.transpose(v)), softmax_scores(kq))
                ->set_name("kqv-" + std::to_string(il));  // {vh, T, n}
        });
    }

    // Expert ids {1, T} that are all 0: one I32 zero seen T times (stride 0).
    Tensor* expert_zero_ids() {
        static const int32_t kZero = 0;
        Tensor* zero = g_.input("expert_zero", SY_TYPE_I32, {1});
        zero->set_data(const_cast<int32_t*>(&kZero));
        return g_.view(zero, {1, T_}, strides_of(4, 0), 0);
    }

    // The dense FFN (leading layers, shared experts). With the fused MoE op (whose up and gate
    // share a type), up, gate, SiLU and multiply are that op on a single "expert" that every
    // token uses: one job over both matrices instead of two products, a SiLU and a multiply.
    Tensor* swiglu(Tensor* y, const WeightRef& gate, const WeightRef& up, const WeightRef& down) {
        Tensor* g = w(gate);
        Tensor* u = w(up);
        Tensor* par;
        if (fused_moe_ && g->type() == u->type()) {
            const int64_t K = g->ne(0), N = g->ne(1);
            par = g_.named(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
                           {g_.reshape(u, {K, N, 1}), g_.reshape(g, {K, N, 1}),
                            g_.reshape(y, {K, 1, T_}), expert_zero_ids()},
                           SY_TYPE_F32, {N, 1, T_});
            par = g_.reshape(par, {N, T_});
        } else {
            par = g_.mul(g_.silu(g_.mul_mat(g, y)), g_.mul_mat(u, y));
        }
        return g_.mul_mat(w(down), par);
    }

    // The experts each token uses {k, T} and their selection scores, with group-limited
    // routing when the file asks for it.
    Tensor* select_experts(Tensor* sel, int64_t k) {
        const int64_t E = hp_.n_expert;
        const int64_t G = hp_.expert_group_count;
        if (!o_.group_routing || G <= 1) return g_.top_k(sel, k);
        // Group score = sum of its two best experts; keep the best expert_group_used groups,
        // then take the top k among their experts.
        const int64_t per = E / G, used = hp_.expert_group_used;
        Tensor* sel3 = g_.reshape(sel, {per, G, T_});
        const int64_t best = std::min<int64_t>(2, per);
        Tensor* top2 = g_.top_k(sel3, best);                                     // {best, G, T}
        Tensor* top2_val = g_.get_rows(g_.reshape(sel, {1, per, G, T_}), top2);  // {1,best,G,T}
        Tensor* group_score = g_.reshape(g_.sum_rows(g_.reshape(top2_val, {best, G, T_})), {G, T_});
        Tensor* groups = g_.top_k(group_score, used);  // {used, T}
        // Candidates: the selected groups' experts (scores and global ids, gathered as rows).
        Tensor* cand = g_.get_rows(sel3, groups);  // {per, used, T}
        Tensor* table = g_.input("expert_ids", SY_TYPE_I32, {per, G});
        table->set_data(const_cast<int32_t*>(m_.expert_ids().data()));
        Tensor* table_t = g_.view(table, {per, G, T_}, strides_of(4, 4 * per, 0, 0), 0);
        Tensor* cand_ids = g_.get_rows(table_t, groups, SY_TYPE_I32);     // {per, used, T}
        Tensor* local = g_.top_k(g_.reshape(cand, {per * used, T_}), k);  // {k, T}
        Tensor* ids = g_.get_rows(g_.reshape(cand_ids, {1, per * used, T_}), local,
                                  SY_TYPE_I32);  // {1, k, T}
        return g_.reshape(ids, {k, T_});
    }

    Tensor* moe(const Deepseek2Layer& l, Tensor* y) {
        const int64_t E = hp_.n_expert, embd = hp_.n_embd, ffe = hp_.n_ff_exp;
        // -ser Kmin,t: t >= 1 keeps exactly Kmin experts; t < 1 keeps the Kmin best and those
        // of the rest whose score is above t times the best one's (the others SY_ID_NONE,
        // which get weight 0 and are not computed).
        const int64_t kmin = o_.ser_min_experts;
        const bool fixed = kmin > 0 && o_.ser_threshold >= 1.0f;
        const bool dynamic = kmin > 0 && !fixed && kmin < int64_t(hp_.n_expert_used);
        const int64_t k = fixed ? kmin : hp_.n_expert_used;
        Tensor* logits = g_.mul_mat(w(l.gate_inp), y);  // {E, T}
        Tensor* probs = hp_.gating_func == 2 ? g_.sigmoid(logits) : g_.softmax(logits);
        // exp_probs_b only steers the choice; the weights are the unbiased probabilities.
        Tensor* sel = l.exp_probs_b.present() ? g_.add(probs, w(l.exp_probs_b)) : probs;
        Tensor* ids = select_experts(sel, k);  // {k, T}
        if (dynamic) {
            Tensor* scores = g_.get_rows(g_.reshape(sel, {1, E, T_}), ids);  // {1, k, T}
            ids = g_.drop_ids(ids, g_.reshape(scores, {k, T_}), kmin, o_.ser_threshold);
        }
        Tensor* weights = g_.get_rows(g_.reshape(probs, {1, E, T_}), ids);  // {1, k, T}
        if (hp_.expert_weights_norm) {
            Tensor* w2 = g_.reshape(weights, {k, T_});
            weights = g_.reshape(g_.div(w2, g_.sum_rows(w2)), {1, k, T_});
        }
        if (std::fabs(hp_.expert_weights_scale - 1.0f) > 1e-5f)
            weights = g_.scale(weights, hp_.expert_weights_scale);

        Tensor* y3 = g_.reshape(y, {embd, 1, T_});
        Tensor* par;  // {ffe, k, T}
        if (fused_moe_) {
            par = g_.named(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
                           {w(l.up_exps), w(l.gate_exps), y3, ids}, SY_TYPE_F32, {ffe, k, T_});
        } else {
            par = g_.mul(g_.silu(g_.mul_mat_id(w(l.gate_exps), y3, ids)),
                         g_.mul_mat_id(w(l.up_exps), y3, ids));
        }
        Tensor* down = g_.mul_mat_id(w(l.down_exps), par, ids);  // {embd, k, T}
        // With overlap, the shared experts come right after the routed experts' products,
        // before anything reads those: with the routed experts on one backend and the rest on
        // another, the scheduler runs them at the same time (Scheduler::set_overlap). Otherwise
        // after the routed sum, which frees `down` ({embd, k, T}) first.
        const auto shared_experts = [&] {
            return swiglu(y, l.gate_shexp, l.up_shexp, l.down_shexp);
        };
        Tensor* shared = overlap_ && hp_.n_expert_shared > 0 ? shared_experts() : nullptr;
        Tensor* experts = g_.mul(down, weights);  // {embd, k, T}
        // Sum over the k experts: rows of the transposed view.
        Tensor* routed = g_.reshape(g_.sum_rows(g_.transpose(experts)), {embd, T_});
        if (hp_.n_expert_shared == 0) return routed;
        return g_.add(routed, shared ? shared : shared_experts());
    }

    const Deepseek2Model& m_;
    const Deepseek2HParams& hp_;
    const Deepseek2Options& o_;
    Graph g_;
    Deepseek2Cache::Views kv_;
    std::span<const DeviceWeights> weights_;  // not uploaded yet: weights in host memory
    bool all_on_device_;
    bool fused_moe_;
    bool flash_;
    bool overlap_;
    std::vector<Deepseek2Session::UbatchPart> parts_;
    int64_t T_ = 0;  // tokens of the graph
    // The part whose attention is being built: its sequence, tokens (queries), cached tokens
    // before this graph, and keys (n_past_ + Tq_).
    int64_t seq_ = 0, Tq_ = 0, n_past_ = 0, n_kv_ = 0;
    Tensor* pos_ = nullptr;
};

bool choose_flash(const Deepseek2Options& o, const Plugin& plugin) {
    const bool provided = plugin.provides(SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION) &&
                          plugin.provides(SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION);
    if (o.flash_attn == 1 && !provided)
        throw Error("--flash-attn 1: backend '" + plugin.name() + "' does not provide " +
                    SY_NAMED_ATTN_FLASH + " v" + std::to_string(SY_NAMED_ATTN_FLASH_VERSION) +
                    " and " + SY_NAMED_ATTN_MLA + " v" + std::to_string(SY_NAMED_ATTN_MLA_VERSION));
    const bool flash = o.flash_attn != 0 && provided;
    // Without flash attention the mla 0 V cache is transposed: one element per row per token.
    if (!flash && o.mla == 0 && sy_dtype_info(o.cache_type_v).block_size > 1)
        throw Error(std::string("-ctv ") + sy_dtype_info(o.cache_type_v).name +
                    ": a block-quantized V cache needs flash attention (" +
                    (o.flash_attn == 0 ? "--flash-attn is off"
                                       : "backend '" + plugin.name() + "' does not provide " +
                                             SY_NAMED_ATTN_FLASH) +
                    "); use -ctv f16");
    return flash;
}

bool choose_fused_moe(const Deepseek2Options& o, const Plugin& plugin) {
    const bool provided =
        plugin.provides(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION);
    if (o.fused_moe == 1 && !provided)
        throw Error("--fused-moe 1: backend '" + plugin.name() + "' does not provide " +
                    SY_NAMED_MOE_FUSED_UP_GATE + " v" +
                    std::to_string(SY_NAMED_MOE_FUSED_UP_GATE_VERSION));
    return o.fused_moe != 0 && provided;
}

SessionBackends one_backend(Plugin& plugin, int32_t device) {
    SessionBackends b;
    b.backends = {{&plugin, device}};
    return b;
}

// The backend that holds the KV cache: placement.default_backend, else the first.
size_t primary_backend(const SessionBackends& b) {
    if (b.backends.empty()) throw Error("a session needs at least one backend");
    std::string loaded;
    for (const Scheduler::Backend& x : b.backends) {
        if (x.plugin == nullptr) throw Error("a session backend has no plugin");
        loaded += (loaded.empty() ? "" : ", ") + backend_name(*x.plugin, x.device);
    }
    if (b.placement.default_backend.empty()) return 0;
    for (size_t i = 0; i < b.backends.size(); ++i)
        if (backend_name(*b.backends[i].plugin, b.backends[i].device) ==
            b.placement.default_backend)
            return i;
    throw Error("placement: the default backend '" + b.placement.default_backend +
                "' is not loaded (loaded: " + loaded + ")");
}

}  // namespace

Deepseek2Session::Deepseek2Session(const Deepseek2Model& model, Plugin& plugin, int32_t device)
    : Deepseek2Session(model, one_backend(plugin, device), 0) {}

Deepseek2Session::Deepseek2Session(const Deepseek2Model& model, const SessionBackends& backends)
    : Deepseek2Session(model, backends, primary_backend(backends)) {}

Deepseek2Session::Deepseek2Session(const Deepseek2Model& model, const SessionBackends& backends,
                                   size_t primary)
    : model_(model),
      backends_(backends),
      primary_(primary),
      plugin_(*backends.backends.at(primary).plugin),
      device_(backends.backends.at(primary).device),
      fused_moe_(choose_fused_moe(model.options(), plugin_)),
      flash_(choose_flash(model.options(), plugin_)),
      executor_(plugin_, device_),
      cache_(model.hparams(), model.options(), &plugin_, device_) {
    // mla 0's V cache: rows that flash attention reads in place, else transposed.
    cache_.set_v_rows(flash_ && model.options().mla == 0);
    // Every node of a generation step and of a full prompt ubatch (mla 3 differs between
    // them) must be one a backend supports, with this model's weight and cache types; at
    // the end of the context, where -amb splits the attention into steps.
    const int64_t ubatch = std::min(model.options().n_ubatch, cache_.n_ctx());
    std::vector<UbatchGraph> graphs;
    for (int64_t t : {int64_t{1}, ubatch}) graphs.push_back(build(t, cache_.n_ctx() - t, false));
    const Graph* g[] = {&graphs[0].graph, &graphs[1].graph};
    for (const Scheduler::Backend& b : backends_.backends) {
        infos_.push_back(backend_info(*b.plugin, b.device));
        if (backends_.costs)
            infos_.back().measured = [costs = backends_.costs, name = infos_.back().name](
                                         const sy_node& node) { return costs->ns(name, node); };
        for (size_t i = 0; i + 1 < infos_.size(); ++i)
            if (infos_[i].name == infos_.back().name)
                throw Error("backend '" + infos_.back().name + "' is given twice");
    }
    // Every weight the graphs read, once, then its home (with one backend: the rules are
    // checked and the total reported).
    std::vector<const void*> hosts;
    std::unordered_map<const void*, size_t> index;
    for (const Graph* graph : g)
        for (const auto& t : graph->tensors()) {
            if (t->kind() != TensorKind::weight || t->host_data() == nullptr) continue;
            const auto bytes = static_cast<uint64_t>(t->bytes());
            const auto [it, fresh] = index.try_emplace(t->host_data(), weight_infos_.size());
            if (fresh) {
                weight_infos_.push_back({t->name(), bytes});
                hosts.push_back(t->host_data());
            } else {
                weight_infos_[it->second].bytes = std::max(weight_infos_[it->second].bytes, bytes);
            }
        }
    // --fit leaves room on the default backend for the KV cache, a full ubatch's compute buffer
    // (as if every node ran there: an upper bound) and the device reserve that
    // check_session_memory asks for (of any weight matrix: an upper bound too); on the other
    // devices for the reserve. A device that does not compute on host memory also keeps room
    // for the staging buffer of the host-resident weights the scheduler may offload to it: what
    // the executor needs over its staging limit, where weights share room by when they are
    // read (as if every node ran there with every weight on the host: one layer's routed
    // experts, about), unless the policy never offloads.
    std::vector<uint64_t> reserved(infos_.size(), 0);
    if (backends_.placement.fit) {
        uint64_t largest = 0, staging = 0;
        for (const Graph* graph : g) {
            for (const auto& t : graph->tensors())
                if (t->kind() == TensorKind::weight)
                    largest = std::max(largest, matrix_elements(*t));
            // The caches (inputs without host memory yet) live in a device's memory, not staged.
            const auto cache = [](const Tensor& t) { return t.host_data() == nullptr; };
            staging = std::max(
                staging, Executor::staging_layout(*graph, graph->all_nodes(), {}, 1, cache).bytes);
        }
        for (size_t b = 0; b < reserved.size(); ++b) {
            reserved[b] = device_reserve(largest) + cache_.bytes_on(backends_.backends[b].plugin,
                                                                    backends_.backends[b].device);
            if (!infos_[b].host_memory() && backends_.offload.mode != OffloadMode::never)
                reserved[b] += staging;
        }
        reserved[primary_] += plan_memory(graphs[1].graph).peak_bytes;
    }
    weight_plan_ =
        place_weights(weight_infos_, backends_.placement, infos_, infos_[primary_].name, reserved);
    for (size_t i = 0; i < hosts.size(); ++i)
        weight_home_[hosts[i]] = weight_plan_.homes[i].backend;
    if (backends_.backends.size() == 1) {
        check_graphs(graphs);
        // On a device with its own memory, these two graphs' weights (every weight any ubatch
        // reads) are copied there once, by allocate().
        if (cache_.on_device()) weights_.emplace_back(plugin_, device_, g);
        return;
    }
    // Each layer's KV cache goes with its attention (the home of attn_kv_a_mqa, whose output it
    // holds): -ngl's layers, a rule's, --tensor-split's share. --fit keeps it on the default
    // backend, where it reserved the room.
    if (!backends_.placement.fit) {
        std::vector<Deepseek2Cache::Home> homes;
        for (uint32_t il = 0; il < model.hparams().n_layer; ++il) {
            const std::string name = "blk." + std::to_string(il) + ".attn_kv_a_mqa.weight";
            size_t b = primary_;
            for (size_t i = 0; i < weight_infos_.size(); ++i)
                if (weight_infos_[i].name == name) b = size_t(weight_plan_.homes[i].backend);
            homes.push_back({backends_.backends[b].plugin, backends_.backends[b].device});
        }
        cache_.set_homes(std::move(homes));
    }
    // A device's weights and the cache layers it holds (place_weights checked the weights).
    for (size_t b = 0; b < infos_.size(); ++b) {
        const uint64_t cache =
            cache_.bytes_on(backends_.backends[b].plugin, backends_.backends[b].device);
        const uint64_t weights = weight_plan_.bytes_per_backend[b],
                       free = infos_[b].props.memory_free;
        if (infos_[b].host_memory() || cache == 0 || free == 0 || weights + cache <= free) continue;
        throw Error(fmt::format(
            "{}: the weights placed there ({:.0f} MiB) and the KV cache of its layers ({:.0f} "
            "MiB) do not fit in its {:.0f} MiB free: lower -c or offload fewer layers (-ngl)",
            infos_[b].name, double(weights) / 1048576.0, double(cache) / 1048576.0,
            double(free) / 1048576.0));
    }
    for (size_t b = 0; b < infos_.size(); ++b) {
        if (infos_[b].host_memory() || weight_plan_.bytes_per_backend[b] == 0) continue;
        const auto homed_here = [this, b](const Tensor& t) {
            const auto it = weight_home_.find(t.host_data());
            return it != weight_home_.end() && it->second == int32_t(b);
        };
        weights_.emplace_back(*backends_.backends[b].plugin, backends_.backends[b].device, g,
                              homed_here);
    }
    scheduler_ = std::make_unique<Scheduler>(backends_.backends);
    scheduler_->set_staging_limit(backends_.offload.staging_limit);
    scheduler_->set_overlap(backends_.offload.overlap);
    check_graphs(graphs);
}

void Deepseek2Session::check_graphs(std::vector<UbatchGraph>& graphs) {
    for (UbatchGraph& ug : graphs) {
        const int64_t t = ug.tokens->ne(0);
        try {
            if (scheduler_)
                place_ops(ug.graph, infos_, backends_.offload,
                          {t > 1 ? Phase::prompt : Phase::decode, t,
                           [this](const Tensor& x) { return home_of(x); }});
            else
                check_supported(plugin_, device_, ug.graph);
        } catch (const Error& e) {
            throw Error(std::string(e.what()) + " (in the graph of " + std::to_string(t) +
                        (t == 1 ? " token" : " tokens") +
                        "; the weight types, -ctk/-ctv, -mla or -fa decide its nodes)");
        }
    }
}

uint64_t Deepseek2Session::cache_bytes_on(size_t b) const {
    if (!infos_.empty() && !infos_.at(b).host_memory())
        return cache_.bytes_on(backends_.backends[b].plugin, backends_.backends[b].device);
    size_t host = primary_;
    for (size_t i = 0; i < infos_.size() && !infos_[host].host_memory(); ++i)
        if (infos_[i].host_memory()) host = i;
    return b == host ? cache_.bytes_on(nullptr) : 0;
}

uint64_t Deepseek2Session::device_weight_bytes() const {
    uint64_t total = 0;
    for (const DeviceWeights& w : weights_) total += w.bytes();
    return total;
}

uint64_t Deepseek2Session::largest_weight_elements() const {
    uint64_t largest = 0;
    for (const DeviceWeights& w : weights_)
        largest = std::max(largest, w.largest_matrix_elements());
    return largest;
}

void Deepseek2Session::allocate() {
    for (DeviceWeights& w : weights_)
        if (!w.uploaded()) w.upload();
    cache_.allocate();
}

Deepseek2Session::UbatchGraph Deepseek2Session::build(int64_t n_tokens, int64_t n_past,
                                                      bool all_logits, int64_t n_seqs) {
    if (n_seqs < 1 || n_tokens % n_seqs != 0 || n_seqs > cache_.n_ctx())
        throw Error("a graph of " + std::to_string(n_tokens) + " tokens cannot hold " +
                    std::to_string(n_seqs) + " equal sequences");
    std::vector<UbatchPart> parts;
    for (int64_t s = 0; s < n_seqs; ++s) parts.push_back({s, n_tokens / n_seqs, n_past});
    return build(parts, cache_.n_ctx() / n_seqs, all_logits);
}

Deepseek2Session::UbatchGraph Deepseek2Session::build(std::span<const UbatchPart> parts,
                                                      int64_t cells, bool all_logits) {
    if (parts.empty()) throw Error("a graph needs at least one token");
    for (const UbatchPart& p : parts)
        if (p.n_tokens < 1 || p.n_past < 0 || p.seq < 0 || p.n_past + p.n_tokens > cells ||
            (p.seq + 1) * cells > cache_.n_ctx())
            throw Error("a graph part of " + std::to_string(p.n_tokens) + " tokens at " +
                        std::to_string(p.n_past) + " of sequence " + std::to_string(p.seq) +
                        " does not fit its " + std::to_string(cells) + " cache cells");
    GraphBuilder b(model_, cache_, weights_, !scheduler_, fused_moe_, flash_,
                   backends_.backends.size() > 1 && backends_.offload.overlap, parts, cells);
    return b.build(all_logits);
}

// A backend index for memory in a plugin's buffer (the weights and the cache on devices), else
// host memory. Before allocate() the same answer from where they will be: a weight's home from
// the placement, a layer's cache (the builder's "cache_" inputs, without memory yet) from the
// cache's homes, so that plans made before (`switchyard plan`) and after allocation agree.
int32_t Deepseek2Session::home_of(const Tensor& t) const {
    const auto backend_of = [this](const Plugin* plugin, int32_t device) {
        for (size_t b = 0; b < backends_.backends.size(); ++b)
            if (backends_.backends[b].plugin == plugin && backends_.backends[b].device == device)
                return int32_t(b);
        return kHostInput;
    };
    if (const Buffer* buffer = t.device_buffer())
        return backend_of(buffer->owner(), buffer->device());
    if (t.kind() == TensorKind::weight && t.host_data() != nullptr) {
        const auto it = weight_home_.find(t.host_data());
        if (it != weight_home_.end() && !infos_[size_t(it->second)].host_memory())
            return it->second;
    } else if (t.kind() == TensorKind::input && t.host_data() == nullptr &&
               t.name().starts_with("cache_")) {
        // The builder's "cache_k-IL" / "cache_v-IL": layer IL's home.
        const size_t dash = t.name().rfind('-');
        const Deepseek2Cache::Home& home =
            cache_.layer_home(uint32_t(std::stoul(t.name().substr(dash + 1))));
        if (home.plugin != nullptr) return backend_of(home.plugin, home.device);
    }
    return kHostInput;
}

// Placing a node asks every backend whether it supports the node and what it would cost; on a
// real device that adds up to a sizeable share of a decode step when every step is placed anew
// (docs/design-measurements.md#placement-reuse). The graphs of successive decode steps differ
// only in the sizes that follow the cache length, so a placement is kept for graphs of the same
// structure, batch and power-of-two range of cached tokens (the costs that grow with the cache
// are re-weighed when it doubles).
const OpPlan& Deepseek2Session::plan(const Graph& graph, int64_t n_tokens, int64_t n_past) {
    const std::vector<int32_t> all = graph.all_nodes();
    std::string key = fmt::format("{}/{}/", n_tokens, std::bit_width(uint64_t(n_past))) +
                      graph.structure_signature(all);
    for (const auto& t : graph.tensors())
        if (t->is_external()) key += std::to_string(home_of(*t)) + ",";
    if (const auto it = plans_.find(key); it != plans_.end()) return it->second;
    if (plans_.size() >= 16) plans_.clear();  // many shapes: start again
    stats_.placements += 1;
    OpPlan p = place_ops(graph, infos_, backends_.offload,
                         {n_tokens > 1 ? Phase::prompt : Phase::decode, n_tokens,
                          [this](const Tensor& x) { return home_of(x); }});
    return plans_.emplace(std::move(key), std::move(p)).first->second;
}

DeviceWeights::DeviceWeights(Plugin& plugin, int32_t device, std::span<const Graph* const> graphs,
                             const std::function<bool(const Tensor&)>& include)
    : plugin_(&plugin), device_(device) {
    // The largest extent read from each host address (one weight may be seen as two shapes).
    for (const Graph* g : graphs)
        for (const auto& t : g->tensors()) {
            if (t->kind() != TensorKind::weight || t->host_data() == nullptr) continue;
            if (include && !include(*t)) continue;
            Range& r = ranges_.try_emplace(t->host_data(), Range{0, 0}).first->second;
            r.bytes = std::max(r.bytes, static_cast<uint64_t>(t->bytes()));
            largest_ = std::max(largest_, matrix_elements(*t));
        }
    for (auto& [host, r] : ranges_) {
        r.offset = bytes_;
        bytes_ += aligned_size(r.bytes);
    }
}

void DeviceWeights::upload() {
    if (uploaded() || bytes_ == 0) return;
    Buffer buffer = plugin_->alloc(device_, bytes_);
    for (const auto& [host, r] : ranges_) plugin_->set(buffer, r.offset, host, r.bytes);
    buffer_ = std::move(buffer);
}

std::pair<const Buffer*, uint64_t> DeviceWeights::find(const void* host,
                                                       const std::string& name) const {
    const auto it = ranges_.find(host);
    if (it == ranges_.end() || !buffer_)
        throw Error(
            "weight " + name +
            " has no copy on the device (not in the graphs checked when the session started)");
    return {&buffer_, it->second.offset};
}

std::optional<std::pair<const Buffer*, uint64_t>> DeviceWeights::try_find(const void* host) const {
    const auto it = ranges_.find(host);
    if (it == ranges_.end() || !buffer_) return std::nullopt;
    return std::make_pair(&buffer_, it->second.offset);
}

void Deepseek2Session::set_profile(Profile* profile) {
    profile_ = profile;
    executor_.set_profile(profile);
    if (scheduler_) scheduler_->set_profile(profile);
}

void Deepseek2Session::set_node_observer(const Executor::NodeObserver* observer) {
    if (observer != nullptr && scheduler_)
        throw Error(
            "observing nodes (imatrix collection) needs a session on one backend; this one "
            "runs on " +
            std::to_string(backends_.backends.size()));
    executor_.set_observer(observer);
}

void Deepseek2Session::check_sequence(int64_t seq, const char* what) const {
    if (seq < 0 || seq >= sequences())
        throw Error(std::string(what) + ": sequence " + std::to_string(seq) +
                    " does not exist (the session has " + std::to_string(sequences()) +
                    (sequences() == 1 ? " sequence" : " sequences") + ")");
}

void Deepseek2Session::set_sequences(int64_t n) {
    if (n == sequences()) return;
    if (std::any_of(seq_len_.begin(), seq_len_.end(), [](int64_t l) { return l > 0; }))
        throw Error("the cache holds " + std::to_string(sequences()) + " sequences, not " +
                    std::to_string(n) + " (reset() first)");
    cache_.set_sequences(n);
    seq_len_.assign(size_t(n), 0);
}

int64_t Deepseek2Session::sequence_length(int64_t seq) const {
    check_sequence(seq, "sequence_length");
    return seq_len_[size_t(seq)];
}

void Deepseek2Session::truncate(int64_t seq, int64_t n_keep) {
    check_sequence(seq, "truncate");
    if (n_keep < 0 || n_keep > seq_len_[size_t(seq)])
        throw Error("truncate sequence " + std::to_string(seq) + " to " + std::to_string(n_keep) +
                    " tokens: it holds " + std::to_string(seq_len_[size_t(seq)]));
    seq_len_[size_t(seq)] = n_keep;
}

void Deepseek2Session::copy_prefix(int64_t src, int64_t dst, int64_t n) {
    check_sequence(src, "copy_prefix");
    check_sequence(dst, "copy_prefix");
    if (n < 0 || n > seq_len_[size_t(src)])
        throw Error("copy_prefix: " + std::to_string(n) + " tokens of sequence " +
                    std::to_string(src) + ", which holds " + std::to_string(seq_len_[size_t(src)]));
    allocate();
    cache_.copy_sequence(src, dst, n);
    seq_len_[size_t(dst)] = n;
}

void Deepseek2Session::rewind(int64_t n_past) {
    for (const int64_t len : seq_len_)
        if (n_past < 0 || n_past > len)
            throw Error("rewind to " + std::to_string(n_past) + " tokens: the cache holds " +
                        std::to_string(len));
    std::fill(seq_len_.begin(), seq_len_.end(), n_past);
}

std::vector<float> Deepseek2Session::eval(std::span<const int32_t> tokens, bool all_logits) {
    const SequenceTokens one{0, tokens};
    return decode({&one, 1}, all_logits);
}

std::vector<float> Deepseek2Session::eval_sequences(std::span<const int32_t> tokens, int64_t n_seqs,
                                                    bool all_logits) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (n == 0) throw Error("eval: no tokens");
    if (n_seqs < 1 || n % n_seqs != 0)
        throw Error("eval: " + std::to_string(n) + " tokens are not " + std::to_string(n_seqs) +
                    " sequences of equal length");
    set_sequences(n_seqs);
    std::vector<SequenceTokens> batch;
    const size_t per = size_t(n / n_seqs);
    for (int64_t s = 0; s < n_seqs; ++s) batch.push_back({s, tokens.subspan(size_t(s) * per, per)});
    return decode(batch, all_logits);
}

std::vector<float> Deepseek2Session::decode(std::span<const SequenceTokens> batch,
                                            bool all_logits) {
    const uint32_t n_vocab = model_.hparams().n_vocab;
    const int64_t cells = cache_.sequence_cells();
    if (batch.empty()) throw Error("eval: no tokens");
    std::vector<bool> seen(seq_len_.size(), false);
    for (const SequenceTokens& e : batch) {
        check_sequence(e.seq, "eval");
        if (seen[size_t(e.seq)])
            throw Error("eval: sequence " + std::to_string(e.seq) + " is given twice in a batch");
        seen[size_t(e.seq)] = true;
        if (e.tokens.empty()) throw Error("eval: no tokens for sequence " + std::to_string(e.seq));
        const int64_t len = seq_len_[size_t(e.seq)], n = int64_t(e.tokens.size());
        if (len + n > cells)
            throw Error("the context is full: " + std::to_string(len) + " cached + " +
                        std::to_string(n) + " new tokens exceed the context of " +
                        std::to_string(cells) +
                        (sequences() > 1 ? " per sequence (" + std::to_string(cache_.n_ctx()) +
                                               " / " + std::to_string(sequences()) + ")"
                                         : std::string()) +
                        " (raise it with -c)");
        for (size_t i = 0; i < e.tokens.size(); ++i)
            if (e.tokens[i] < 0 || uint32_t(e.tokens[i]) >= n_vocab)
                throw Error("token " + std::to_string(e.tokens[i]) + " at index " +
                            std::to_string(i) +
                            (batch.size() > 1 ? " of sequence " + std::to_string(e.seq) : "") +
                            " is outside the vocabulary of " + std::to_string(n_vocab));
    }
    allocate();

    // Where each entry's logits go in the result: all its tokens', or its last token's.
    const size_t V = n_vocab;
    std::vector<size_t> out_at(batch.size() + 1, 0);
    for (size_t i = 0; i < batch.size(); ++i)
        out_at[i + 1] = out_at[i] + (all_logits ? batch[i].tokens.size() : 1) * V;
    std::vector<float> logits(out_at.back());

    std::vector<int64_t> done(batch.size(), 0);  // tokens of each entry run so far
    std::vector<UbatchPart> parts;
    std::vector<size_t> part_entry;
    std::vector<int32_t> tokens;
    for (;;) {
        // Each entry with tokens left takes an equal share of n_ubatch (at least one token);
        // what the short ones leave goes to the others in order.
        std::vector<size_t> active;
        for (size_t i = 0; i < batch.size(); ++i)
            if (done[i] < int64_t(batch[i].tokens.size())) active.push_back(i);
        if (active.empty()) break;
        const int64_t share =
            std::max<int64_t>(1, model_.options().n_ubatch / int64_t(active.size()));
        std::vector<int64_t> take(active.size());
        int64_t spare = 0;
        for (size_t k = 0; k < active.size(); ++k) {
            const int64_t left = int64_t(batch[active[k]].tokens.size()) - done[active[k]];
            take[k] = std::min(left, share);
            spare += share - take[k];
        }
        for (size_t k = 0; k < active.size() && spare > 0; ++k) {
            const int64_t left = int64_t(batch[active[k]].tokens.size()) - done[active[k]];
            const int64_t more = std::min(left - take[k], spare);
            take[k] += more;
            spare -= more;
        }
        parts.clear();
        part_entry.clear();
        tokens.clear();
        for (size_t k = 0; k < active.size(); ++k) {
            const SequenceTokens& e = batch[active[k]];
            parts.push_back({e.seq, take[k], seq_len_[size_t(e.seq)]});
            part_entry.push_back(active[k]);
            const auto from = e.tokens.begin() + done[active[k]];
            tokens.insert(tokens.end(), from, from + take[k]);
        }
        bool finishes = all_logits;
        for (size_t k = 0; k < parts.size(); ++k)
            finishes |= done[part_entry[k]] + parts[k].n_tokens ==
                        int64_t(batch[part_entry[k]].tokens.size());
        const std::vector<float> out = run_ubatch(parts, tokens, all_logits, finishes);
        // The graph's logits: every token's in part order, or each part's last token's.
        size_t row = 0;
        for (size_t k = 0; k < parts.size(); ++k) {
            const size_t i = part_entry[k];
            const int64_t before = done[i];
            done[i] += parts[k].n_tokens;
            seq_len_[size_t(parts[k].seq)] += parts[k].n_tokens;
            const size_t rows = all_logits ? size_t(parts[k].n_tokens) : 1;
            if (all_logits)
                std::copy_n(out.begin() + row * V, rows * V,
                            logits.begin() + out_at[i] + size_t(before) * V);
            else if (done[i] == int64_t(batch[i].tokens.size()))
                std::copy_n(out.begin() + row * V, V, logits.begin() + out_at[i]);
            row += rows;
        }
    }
    return logits;
}

std::vector<float> Deepseek2Session::run_ubatch(std::span<const UbatchPart> parts,
                                                std::span<const int32_t> tokens, bool all_logits,
                                                bool read_logits) {
    const int64_t t = int64_t(tokens.size());
    int64_t n_past = 0;
    for (const UbatchPart& p : parts) n_past = std::max(n_past, p.n_past);
    const auto t0 = Clock::now();
    if (profile_) profile_->begin_graph(t > 1 ? Profile::Phase::prompt : Profile::Phase::decode, t);
    UbatchGraph ug = build(parts, cache_.sequence_cells(), all_logits);
    std::vector<int32_t> positions, rows;
    for (int64_t end = 0; const UbatchPart& p : parts) {
        for (int64_t j = 0; j < p.n_tokens; ++j) positions.push_back(int32_t(p.n_past + j));
        end += p.n_tokens;
        rows.push_back(int32_t(end - 1));
    }
    ug.tokens->set_data(const_cast<int32_t*>(tokens.data()));
    ug.positions->set_data(positions.data());
    if (ug.output_rows) ug.output_rows->set_data(rows.data());
    const auto t1 = Clock::now();
    double backend_seconds = 0, sync_seconds = 0, copy_seconds = 0, stage_seconds = 0;
    uint64_t staged = 0, compute_buffer = 0, staging_buffer = 0;
    if (scheduler_) {
        const OpPlan& placed = plan(ug.graph, t, n_past);
        stats_.placement_seconds += std::chrono::duration<double>(Clock::now() - t1).count();
        const ScheduleReport& r = scheduler_->run(ug.graph, placed);
        stats_.setup_seconds += r.setup_seconds;
        backend_seconds = r.backend_seconds;
        sync_seconds = r.sync_seconds;
        copy_seconds = r.copy_seconds;
        stage_seconds = r.stage_seconds;
        stats_.overlapped_nodes += int64_t(r.overlapped);
        staged = r.staged_bytes + r.link_bytes;
        for (uint64_t b : r.compute_buffer_bytes) compute_buffer += b;
        for (uint64_t b : r.staging_buffer_bytes) staging_buffer += b;
    } else {
        const RunReport& r = executor_.run(ug.graph);
        stats_.setup_seconds += r.setup_seconds;
        backend_seconds = r.backend_seconds;
        sync_seconds = r.sync_seconds;
        stage_seconds = r.stage_seconds;
        staged = r.staged_bytes;
        compute_buffer = r.compute_buffer_bytes;
        staging_buffer = r.staging_buffer_bytes;
    }
    const auto t2 = Clock::now();
    stats_.graph_build_seconds += std::chrono::duration<double>(t1 - t0).count();
    const double run_seconds = std::chrono::duration<double>(t2 - t1).count();
    stats_.compute_seconds += run_seconds;
    stats_.backend_seconds += backend_seconds;
    stats_.sync_seconds += sync_seconds;
    stats_.copy_seconds += copy_seconds;
    stats_.stage_seconds += stage_seconds;
    stats_.plan_bind_seconds +=
        std::max(0.0, run_seconds - backend_seconds - copy_seconds - stage_seconds);
    if (profile_)
        profile_->end_graph(std::chrono::duration<double>(t1 - t0).count(),
                            std::chrono::duration<double>(t2 - t1).count());
    stats_.graphs += 1;
    stats_.staged_bytes += staged;
    stats_.compute_buffer_bytes = std::max(stats_.compute_buffer_bytes, compute_buffer);
    stats_.staging_buffer_bytes = std::max(stats_.staging_buffer_bytes, staging_buffer);
    if (!read_logits) return {};
    return scheduler_ ? scheduler_->read<float>(*ug.logits) : executor_.read<float>(*ug.logits);
}

}  // namespace sy::llm
