// deepseek2: the graph of one ubatch (docs/deepseek2.md), as the paper and the naive reference
// in tests/llm/deepseek2_reference.hpp write it.
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
#include "switchyard/llm/models/deepseek2.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "switchyard/core/error.hpp"
#include "switchyard/llm/fused_ops.hpp"
#include "switchyard/named_ops.h"
#include "switchyard/quants.hpp"
#include "switchyard/sdk.hpp"

namespace sy::llm {

namespace {

Strides strides_of(int64_t nb0, int64_t nb1, int64_t nb2 = 0, int64_t nb3 = 0) {
    return {nb0, nb1, nb2, nb3};
}

// Builds one ubatch graph; every helper reads top to bottom like the math.
class GraphBuilder {
  public:
    GraphBuilder(const Deepseek2Model& model, const Model::GraphRequest& r, Deepseek2Cache& cache)
        : m_(model),
          hp_(model.hparams()),
          o_(model.options()),
          kv_(cache, g_, r.cells),
          bind_weight_(r.bind_weight),
          fused_(g_, r.ops),
          overlap_(r.overlap),
          parts_(r.parts.begin(), r.parts.end()),
          cells_(r.cells),
          reusable_(r.reusable) {
        for (const UbatchPart& p : parts_) T_ += p.n_tokens;
        if (reusable_) kv_.record_moves(&moves_);
    }

    // embedding -> per layer: attention(norm) + residual, FFN or MoE(norm) + residual -> output
    UbatchGraph build(bool all_logits) {
        UbatchGraph out;
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
        if (reusable_) {
            out.parts = parts_;
            out.moves = std::move(moves_);
        }
        return out;
    }

  private:
    // The rows of x {n_embd, T} that are each part's last token: a view for one part or equal
    // parts, else gathered by an input of row indices (UbatchGraph::output_rows).
    Tensor* last_of_each_part(Tensor* x, UbatchGraph& out) {
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

    // A weight of the model as a tensor of this graph (a view for strided weights), read where
    // the session keeps it.
    Tensor* w(const WeightRef& ref) {
        Tensor* t = g_.weight(ref.name, static_cast<sy_dtype>(ref.type), ref.base_shape);
        t->set_constant_id(m_.constant_id());
        t->set_data(const_cast<void*>(ref.data));
        if (bind_weight_) bind_weight_(*t);
        return ref.viewed ? g_.view(t, ref.shape, ref.strides, ref.offset) : t;
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
    // A K cache with one scale per row (q8_KV): read as whole rows, never as their parts.
    bool row_scaled_cache() const { return sy_dtype_info(o_.cache_type_k).row_meta_size > 0; }

    Tensor* narrow(Tensor* t, int d, int64_t from, int64_t n) {
        return llm::narrow(g_, t, d, from, n);
    }

    // The attention's parameters for the part being built: the softmax scale, the causal
    // window, -amb.
    AttentionParams attention_params(uint32_t il) const {
        return {hp_.kq_scale(), n_past_, o_.attn_max_bytes, int(il)};
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
            n_kv_ = reusable_ ? reusable_keys(part.n_past, part.n_tokens, cells_)
                              : part.n_past + part.n_tokens;
            if (reusable_) fused_.record_moves(&moves_, seq_);
            if (parts_.size() == 1)
                outs.push_back(of_sequence(q_nope, q_pe, c, k_pe));
            else
                outs.push_back(of_sequence(narrow(q_nope, 2, t0, Tq_), narrow(q_pe, 2, t0, Tq_),
                                           narrow(c, 1, t0, Tq_), narrow(k_pe, 2, t0, Tq_)));
            t0 += Tq_;
        }
        Tensor* o = concat_pairwise(g_, std::move(outs), 1);
        // {vh, T, H} -> {vh, H, T} -> {vh*H, T}
        Tensor* merged = g_.reshape(g_.cont(g_.permute(o, {0, 2, 1, 3})), {vh * H, T_});
        return g_.mul_mat(w(l.attn_output), merged);
    }

    // mla 0: K = [k_nope | k_pe] per head and V in the cache, both decompressed from the
    // latent with attn_kv_b as tokens arrive.
    Tensor* attention_standard(const Deepseek2Layer& l, uint32_t il, Tensor* q_nope, Tensor* q_pe,
                               Tensor* c, Tensor* k_pe) {
        const int64_t H = hp_.n_head, nope = hp_.qk_nope, vh = hp_.v_head, f = sizeof(float);
        Tensor* kv = g_.mul_mat(w(l.kv_b), c);  // {H*(nope+vh), T}
        const Strides kv_strides =
            strides_of(f, (nope + vh) * f, H * (nope + vh) * f, H * (nope + vh) * f * Tq_);
        kv_.write_kv(il, seq_, n_past_, g_.view(kv, {nope, H, Tq_}, kv_strides, 0), k_pe,
                     g_.view(kv, {vh, H, Tq_}, kv_strides, uint64_t(nope * f)));
        SplitHeads h;
        h.k_nope = kv_.keys_nope(il, seq_, n_kv_);
        h.k_rope = kv_.keys_rope(il, seq_, n_kv_);
        h.k = kv_.keys(il, seq_, n_kv_);
        h.q_nope = heads_as_batch(q_nope);
        h.q_rope = heads_as_batch(q_pe);
        return fused_.attention(h, kv_.values(il, seq_, n_kv_), attention_params(il));
    }

    // mla 1, 2, 3 (generation): queries absorb W_UK, scores against the latents, W_UV after.
    Tensor* attention_latent(const Deepseek2Layer& l, uint32_t il, Tensor* q_nope, Tensor* q_pe,
                             Tensor* c, Tensor* k_pe) {
        kv_.write_latents(il, seq_, n_past_, c, k_pe);
        LatentHeads h;
        h.q_rope = heads_as_batch(q_pe);
        h.q_lat = g_.mul_mat(w(l.k_b), heads_as_batch(q_nope));  // {kvl, T, H}
        h.rows = kv_.latent_rows(il, seq_, n_kv_);
        if (!row_scaled_cache()) {
            h.c = kv_.latents(il, seq_, n_kv_);
            h.k_pe = kv_.latent_k_pe(il, seq_, n_kv_);
        }
        if (o_.mla == 1) h.c_t = kv_.latents_transposed(il, seq_, n_kv_);
        return g_.mul_mat(w(l.v_b),
                          fused_.latent_attention(h, attention_params(il)));  // {vh, T, H}
    }

    // mla 3 with a large ubatch: decompress every cached latent with attn_kv_b, then standard
    // attention over the result, as many heads a step as -amb allows.
    Tensor* attention_decompressed(const Deepseek2Layer& l, uint32_t il, Tensor* q_nope,
                                   Tensor* q_pe, Tensor* c, Tensor* k_pe) {
        const int64_t H = hp_.n_head, nope = hp_.qk_nope, vh = hp_.v_head, f = sizeof(float);
        kv_.write_latents(il, seq_, n_past_, c, k_pe);
        Tensor* c_all = nullptr;
        Tensor* k_pe_rows = nullptr;  // shared by the heads
        if (row_scaled_cache()) {
            // q8_KV rows decoded whole, then viewed as their two parts.
            Tensor* rows = g_.cpy(kv_.latent_rows(il, seq_, n_kv_), SY_TYPE_F32);
            c_all = g_.view(rows, {hp_.kv_lora_rank, n_kv_}, rows->strides(),
                            uint64_t(hp_.qk_rope * f));
            k_pe_rows = g_.view(rows, {hp_.qk_rope, n_kv_}, rows->strides(), 0);
        } else {
            c_all = kv_.latents(il, seq_, n_kv_);
            if (o_.cache_type_k != SY_TYPE_F32) c_all = g_.cpy(c_all, SY_TYPE_F32);
            k_pe_rows = kv_.latent_k_pe(il, seq_, n_kv_);
        }
        Tensor* kv_b = w(l.kv_b);  // {kvl, H*(nope+vh)}: per head nope rows, then vh rows
        Tensor* qn = heads_as_batch(q_nope);
        Tensor* qr = heads_as_batch(q_pe);
        // The compute buffer of one head: its decompressed K and V, and what attention adds.
        const int64_t per_head =
            n_kv_ * f * (nope + vh) +
            fused_.attention_bytes_per_head(Tq_, n_kv_, nope, hp_.qk_rope, vh, false, false);
        AttentionParams p = attention_params(il);
        const int64_t max_bytes = p.max_bytes;
        p.max_bytes = 0;  // the steps are taken here, over the decompression too
        // Heads h0 .. h0 + n - 1: their K and V {nope + vh, n_kv} decompressed, then attention.
        return fused_.by_head_groups(H, per_head, max_bytes, [&](int64_t h0, int64_t n) {
            Tensor* kv = g_.mul_mat(narrow(kv_b, 1, h0 * (nope + vh), n * (nope + vh)),
                                    c_all);  // {n*(nope+vh), n_kv}
            const Strides kv_strides =
                strides_of(f, n * (nope + vh) * f, (nope + vh) * f, n * (nope + vh) * f * n_kv_);
            SplitHeads h;
            h.k_nope = g_.view(kv, {nope, n_kv_, n}, kv_strides, 0);
            h.k_rope = k_pe_rows;
            h.q_nope = narrow(qn, 2, h0, n);
            h.q_rope = narrow(qr, 2, h0, n);
            const AttentionValues v{g_.view(kv, {vh, n_kv_, n}, kv_strides, uint64_t(nope * f)),
                                    nullptr};
            return fused_.attention(h, v, p);  // {vh, T, n}
        });
    }

    // The dense FFN (leading layers, shared experts): down(silu(gate y) * (up y)).
    Tensor* swiglu(Tensor* y, const WeightRef& gate, const WeightRef& up, const WeightRef& down) {
        Tensor* g = w(gate);
        Tensor* u = w(up);
        return g_.mul_mat(w(down), fused_.swiglu(u, g, y));
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
        const int64_t E = hp_.n_expert, embd = hp_.n_embd;
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
        Tensor* scores = nullptr;              // {k, T}: the chosen experts' scores
        if (dynamic) {
            scores = g_.reshape(g_.get_rows(g_.reshape(sel, {1, E, T_}), ids), {k, T_});
            ids = g_.drop_ids(ids, scores, kmin, o_.ser_threshold);
        }
        Tensor* weights = g_.get_rows(g_.reshape(probs, {1, E, T_}), ids);  // {1, k, T}
        if (hp_.expert_weights_norm) {
            Tensor* w2 = g_.reshape(weights, {k, T_});
            weights = g_.reshape(g_.div(w2, g_.sum_rows(w2)), {1, k, T_});
        }
        if (std::fabs(hp_.expert_weights_scale - 1.0f) > 1e-5f)
            weights = g_.scale(weights, hp_.expert_weights_scale);

        const auto shared_experts = [&] {
            return swiglu(y, l.gate_shexp, l.up_shexp, l.down_shexp);
        };
        // The shared experts come right after the routed experts' weighted sum, before anything
        // reads it: with the routed experts on one backend and the rest on another, the
        // scheduler runs them at the same time (Scheduler::set_overlap), and the layer is two
        // splits: the routed experts and their sum on one backend (one copy in of the normed
        // input and the router's logits, one copy out of the sum), the rest on the other; the sum
        // first also frees `down` ({embd, k, T}) first. With --expert-parallel and overlap, they
        // come between the other ranks' parts and rank 0's own (expert_parallel).
        Tensor* shared = nullptr;
        const auto overlapped_shared = [&] {
            if (overlap_ && hp_.n_expert_shared > 0) shared = shared_experts();
        };
        Tensor* routed = nullptr;
        if (o_.expert_parallel > 1) {
            routed = expert_parallel(l, y, ids, weights, scores, overlapped_shared);
        } else {
            Tensor* up = w(l.up_exps);
            Tensor* gate = w(l.gate_exps);
            Tensor* par = fused_.expert_swiglu(up, gate, g_.reshape(y, {embd, 1, T_}), ids);
            Tensor* down = g_.mul_mat_id(w(l.down_exps), par, ids);  // {embd, k, T}
            routed = weighted_sum(down, weights);
        }
        if (hp_.n_expert_shared == 0) return routed;
        return g_.add(routed, shared ? shared : shared_experts());
    }

    // Sum over the k experts of their outputs {embd, k, T} times the routing weights {1, k, T}:
    // rows of the transposed view -> {embd, T}.
    Tensor* weighted_sum(Tensor* down, Tensor* weights) {
        Tensor* experts = g_.mul(down, weights);
        return g_.reshape(g_.sum_rows(g_.transpose(experts)), {hp_.n_embd, T_});
    }

    // --expert-parallel N: part r computes its experts' products for the tokens routed to them
    // and their weighted sum; the parts' sums are added. The other parts (1 .. N-1, which
    // placement puts on other ranks) are built first, then rank 0's overlapped shared experts
    // and part 0, so that rank 0 computes while the others do.
    //   ids_r {k, T}: ids of part r's experts in its own numbering, SY_ID_NONE for the others'
    //                 (no product computed: mul_mat_id's dropped slot);
    //   y_r {embd, T}: y with the tokens routed to none of them zeroed (SY_ID_NONE rows of a
    //                 get_rows), which the link to a rank does not carry.
    Tensor* expert_parallel(const Deepseek2Layer& l, Tensor* y, Tensor* ids, Tensor* weights,
                            Tensor* scores, const std::function<void()>& overlapped_shared) {
        const int n = o_.expert_parallel;
        const int64_t k = ids->ne(0);
        if (T_ > int64_t(m_.halves().size()))
            throw Error(fmt::format("--expert-parallel: a graph of {} tokens, more than -ub {}", T_,
                                    m_.halves().size()));
        const auto parts = static_cast<size_t>(n);
        std::vector<Tensor*> part_ids(parts), part_y(parts, y), sums(parts);
        for (int r = 0; r < n; ++r) {
            Tensor* t = table(fmt::format("expert_part_ids-{}", r), SY_TYPE_I32, m_.part_ids(r));
            part_ids[size_t(r)] = g_.reshape(g_.get_rows(t, ids, SY_TYPE_I32), {k, T_});
            if (scores)  // the slots -ser dropped, dropped again (their lookup gave id 0)
                part_ids[size_t(r)] =
                    g_.drop_ids(part_ids[size_t(r)], scores, o_.ser_min_experts, o_.ser_threshold);
            if (r > 0) part_y[size_t(r)] = routed_tokens(y, ids, r);
        }
        for (int r = 1; r < n; ++r)
            sums[size_t(r)] = part_sum(l, r, part_y[size_t(r)], part_ids[size_t(r)], weights);
        overlapped_shared();
        sums[0] = part_sum(l, 0, y, part_ids[0], weights);
        Tensor* routed = sums[0];
        for (int r = 1; r < n; ++r) routed = g_.add(routed, sums[size_t(r)]);
        if (!o_.expert_parallel_exact) return routed;
        // Each slot is another part's zero everywhere but in its own part (x + 0 is x), so this
        // is one process's {embd, k, T}, summed over the slots as it does.
        return g_.reshape(g_.sum_rows(g_.transpose(routed)), {hp_.n_embd, T_});
    }

    // A per-expert table of the model {E} as a {1, E, T} source of get_rows (the same row for
    // every token).
    Tensor* table(const std::string& name, sy_dtype type, const void* data) {
        const int64_t E = hp_.n_expert, size = sy_dtype_info(type).type_size;
        Tensor* t = g_.input(name, type, {E});
        t->set_data(const_cast<void*>(data));
        return g_.view(t, {1, E, T_}, strides_of(size, size, 0, 0), 0);
    }

    // y {embd, T} with the columns of tokens that use none of part r's experts zeroed: per
    // token, the count of its experts in the part against 0.5 picks row 1 (its own index) or
    // row 0 (SY_ID_NONE) of the pair (SY_ID_NONE, t), and get_rows gathers by those.
    Tensor* routed_tokens(Tensor* y, Tensor* ids, int r) {
        const int64_t k = ids->ne(0);
        Tensor* local = g_.get_rows(
            table(fmt::format("expert_part_local-{}", r), SY_TYPE_F32, m_.part_local(r)),
            ids);                                                 // {1, k, T}
        Tensor* count = g_.sum_rows(g_.reshape(local, {k, T_}));  // {1, T}
        Tensor* halves = g_.input("halves", SY_TYPE_F32, {1, T_});
        halves->set_data(const_cast<float*>(m_.halves().data()));
        Tensor* pick = g_.top_k(g_.concat(halves, count, 0), 1);  // {1, T}: 1 where routed
        Tensor* pairs = g_.input("token_rows", SY_TYPE_I32, {2, T_});
        pairs->set_data(const_cast<int32_t*>(m_.token_rows().data()));
        Tensor* rows = g_.get_rows(g_.reshape(pairs, {1, 2, T_}), pick, SY_TYPE_I32);  // {1,1,T}
        return g_.get_rows(y, g_.reshape(rows, {T_}));
    }

    // Part r's weighted sum {embd, T} (with --expert-parallel-exact its weighted outputs per
    // slot, {embd, k, T}): its experts' products on y_r by ids_r.
    Tensor* part_sum(const Deepseek2Layer& l, int r, Tensor* y_r, Tensor* ids_r, Tensor* weights) {
        Tensor* up = w(part(l.up_exps, r));
        Tensor* gate = w(part(l.gate_exps, r));
        Tensor* par = fused_.expert_swiglu(up, gate, g_.reshape(y_r, {hp_.n_embd, 1, T_}), ids_r);
        Tensor* down = g_.mul_mat_id(w(part(l.down_exps, r)), par, ids_r);
        if (o_.expert_parallel_exact) return g_.mul(down, weights);  // {embd, k, T}
        return weighted_sum(down, weights);
    }

    // The weights of part r of an expert tensor {K, N, E}: its experts' bytes, as a weight of
    // their own named NAME[r/N] (placement rules and plans see that name).
    WeightRef part(const WeightRef& experts, int r) const {
        const Deepseek2Model::ExpertPart p = m_.expert_part(r);
        WeightRef out = experts;
        const Shape& s = experts.base_shape;
        const auto expert_bytes = uint64_t(quants::row_size(experts.type, s[0]) * s[1]);
        out.name = fmt::format("{}[{}/{}]", experts.name, r, o_.expert_parallel);
        out.base_shape[2] = p.count;
        out.data = static_cast<const std::byte*>(experts.data) + uint64_t(p.first) * expert_bytes;
        return out;
    }

    const Deepseek2Model& m_;
    const Deepseek2HParams& hp_;
    const ContextOptions& o_;
    Graph g_;
    Deepseek2Cache::Views kv_;
    const std::function<void(Tensor&)>& bind_weight_;
    FusedOps fused_;  // moe.fused_up_gate or its decomposition
    bool overlap_;
    std::vector<UbatchPart> parts_;
    int64_t T_ = 0;  // tokens of the graph
    // The part whose attention is being built: its sequence, tokens (queries), cached tokens
    // before this graph, and keys (n_past_ + Tq_).
    int64_t seq_ = 0, Tq_ = 0, n_past_ = 0, n_kv_ = 0;
    int64_t cells_ = 0;
    bool reusable_ = false;
    StepMoves moves_;
    Tensor* pos_ = nullptr;
};

bool choose_flash(const ContextOptions& o, const Plugin& plugin) {
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

bool choose_fused_moe(const ContextOptions& o, const Plugin& plugin) {
    const bool provided =
        plugin.provides(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION);
    if (o.fused_moe == 1 && !provided)
        throw Error("--fused-moe 1: backend '" + plugin.name() + "' does not provide " +
                    SY_NAMED_MOE_FUSED_UP_GATE + " v" +
                    std::to_string(SY_NAMED_MOE_FUSED_UP_GATE_VERSION));
    return o.fused_moe != 0 && provided;
}

}  // namespace

NamedOps Deepseek2Model::choose_named_ops(const Plugin& plugin) const {
    return {choose_fused_moe(options_, plugin), choose_flash(options_, plugin)};
}

std::unique_ptr<KvCache> Deepseek2Model::make_cache(const NamedOps& ops, Plugin* plugin,
                                                    int32_t device) const {
    return std::make_unique<Deepseek2Cache>(hp_, options_, ops.flash, plugin, device);
}

std::string Deepseek2Model::cache_anchor(uint32_t il) const {
    return "blk." + std::to_string(il) + ".attn_kv_a_mqa.weight";
}

uint64_t Deepseek2Model::cache_bytes_per_token() const {
    return Deepseek2Cache::bytes_per_token(hp_, options_);
}

std::string Deepseek2Model::summary() const {
    return fmt::format("{} layers, {} experts ({} used), mla {}", hp_.n_layer, hp_.n_expert,
                       hp_.n_expert_used, options_.mla);
}

std::vector<std::string> Deepseek2Model::notes() const {
    if (hp_.n_nextn == 0) return {};
    return {
        fmt::format("the file's last {} of {} blocks are MTP (NextN) layers (nextn_predict_layers; "
                    "blk.{}.nextn.*...): left out, as llama.cpp does; the model runs {} layers",
                    hp_.n_nextn, hp_.n_layer + hp_.n_nextn, hp_.n_layer, hp_.n_layer)};
}

UbatchGraph Deepseek2Model::build(const GraphRequest& request) const {
    auto* cache = dynamic_cast<Deepseek2Cache*>(request.cache);
    if (cache == nullptr) throw Error("deepseek2: a graph needs the KV cache this model made");
    return GraphBuilder(*this, request, *cache).build(request.all_logits);
}

}  // namespace sy::llm
