// deepseek2: the graph of one ubatch (DEEPSEEK2.md section 4), and the session that runs it.
//
// Shapes in ggml order. Per layer, with T tokens at positions n_past .. n_past + T - 1 and
// n_kv = n_past + T cached tokens after this ubatch:
//   q {qk_head, H, T} -> q_nope {qk_nope, H, T}, q_pe {qk_rope, H, T} (roped)
//   kv_a {kv_lora + qk_rope, T} -> c {kv_lora, T} (normed), k_pe {qk_rope, 1, T} (roped)
// and the attention scores of every mode are split into a "nope" and a "rope" product that
// are added, so no per-head copy of k_pe is ever made.
//
// A graph may hold S independent sequences of Tq = T / S tokens each, one after the other
// (perplexity's chunks, eval_sequences): everything but the attention is per token and runs
// over all T at once; the attention runs per sequence on its own stretch of n_ctx / S cache
// rows, with Tq queries and n_kv = n_past + Tq keys, and the outputs are concatenated.
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
    GraphBuilder(const Deepseek2Model& model, Deepseek2Cache& cache,
                 std::span<const DeviceWeights> weights, bool all_on_device, bool fused_moe,
                 bool flash, bool overlap, int64_t n_tokens, int64_t n_past, int64_t n_seqs)
        : m_(model),
          hp_(model.hparams()),
          o_(model.options()),
          cache_(cache),
          weights_(weights),
          all_on_device_(all_on_device),
          fused_moe_(fused_moe),
          flash_(flash),
          overlap_(overlap),
          T_(n_tokens),
          S_(n_seqs),
          Tq_(n_tokens / n_seqs),
          n_past_(n_past),
          n_kv_(n_past + n_tokens / n_seqs),
          seq_rows_(cache.n_ctx() / n_seqs) {}

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
        if (!all_logits && S_ > 1)  // the last token of each sequence
            x = g_.cont(g_.view(x, {hp_.n_embd, S_}, strides_of(x->nb(0), x->nb(1) * Tq_),
                                uint64_t(x->nb(1) * (Tq_ - 1))));
        else if (!all_logits && T_ > 1)
            x = g_.view(x, {hp_.n_embd, 1}, x->strides(), uint64_t(x->nb(1) * (T_ - 1)));
        out.logits = g_.mul_mat(w(m_.output()), norm(x, m_.output_norm()))->set_name("logits");
        g_.mark_output(out.logits);
        out.graph = std::move(g_);
        return out;
    }

  private:
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

    // Bytes of n elements of a K or V cache row (n whole blocks for a block type), and the
    // cache types' nb0 (an element's or a block's bytes).
    int64_t kb(int64_t n) const { return sdk::row_bytes(o_.cache_type_k, n); }
    int64_t vb(int64_t n) const { return sdk::row_bytes(o_.cache_type_v, n); }
    int64_t k_nb0() const { return sy_dtype_info(o_.cache_type_k).type_size; }
    int64_t v_nb0() const { return sy_dtype_info(o_.cache_type_v).type_size; }

    // The cache of layer il as graph tensors (external memory, written in place), as the
    // current sequence's rows: the whole cache with one sequence.
    Tensor* k_cache(uint32_t il) {
        Tensor* t = cache_input("cache_k-" + std::to_string(il), o_.cache_type_k,
                                {cache_.k_row_elements(), cache_.n_ctx()}, cache_.k(il),
                                cache_.k_buffer(il));
        return sequence_rows(t, 1);
    }
    Tensor* v_cache(uint32_t il) {  // transposed: {n_ctx, v_rows}
        Tensor* t = cache_input("cache_v-" + std::to_string(il), o_.cache_type_v,
                                {cache_.n_ctx(), cache_.v_rows()}, cache_.v(il),
                                cache_.v_buffer(il));
        return sequence_rows(t, 0);
    }
    // One input per cache tensor and graph (each sequence views it), so that the graph's
    // writes and reads of it are of one tensor.
    Tensor* cache_input(const std::string& name, int32_t type, const Shape& shape, void* host,
                        const Buffer* device) {
        if (const auto it = cache_inputs_.find(name); it != cache_inputs_.end()) return it->second;
        Tensor* t = g_.input(name, static_cast<sy_dtype>(type), shape);
        place(t, host, device);
        return cache_inputs_[name] = t;
    }
    // The current sequence's seq_rows_ tokens of a cache tensor whose dimension `d` counts
    // tokens.
    Tensor* sequence_rows(Tensor* t, int d) {
        return S_ == 1 ? t : narrow(t, d, seq_ * seq_rows_, seq_rows_);
    }
    // A cache tensor's memory: the device buffer when the cache lives there.
    static void place(Tensor* t, void* host, const Buffer* device) {
        if (device != nullptr) {
            t->set_data(*device, 0);
        } else {
            t->set_data(host);
        }
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
        Tensor* o;
        if (S_ == 1) {
            o = of_sequence(q_nope, q_pe, c, k_pe);
        } else {
            std::vector<Tensor*> parts;
            for (seq_ = 0; seq_ < S_; ++seq_) {
                const int64_t t0 = seq_ * Tq_;
                parts.push_back(of_sequence(narrow(q_nope, 2, t0, Tq_), narrow(q_pe, 2, t0, Tq_),
                                            narrow(c, 1, t0, Tq_), narrow(k_pe, 2, t0, Tq_)));
            }
            seq_ = 0;
            o = concat_pairwise(std::move(parts), 1);
        }
        // {vh, T, H} -> {vh, H, T} -> {vh*H, T}
        Tensor* merged = g_.reshape(g_.cont(g_.permute(o, {0, 2, 1, 3})), {vh * H, T_});
        return g_.mul_mat(w(l.attn_output), merged);
    }

    // mla 0: K rows [head 0: nope | rope][head 1 ...] and V transposed in the cache.
    Tensor* attention_standard(const Deepseek2Layer& l, uint32_t il, Tensor* q_nope, Tensor* q_pe,
                               Tensor* c, Tensor* k_pe) {
        const int64_t H = hp_.n_head, qk = hp_.qk_head(), nope = hp_.qk_nope, rope = hp_.qk_rope,
                      vh = hp_.v_head, f = sizeof(float);
        Tensor* kv = g_.mul_mat(w(l.kv_b), c);  // {H*(nope+vh), T}
        const Strides kv_strides =
            strides_of(f, (nope + vh) * f, H * (nope + vh) * f, H * (nope + vh) * f * Tq_);

        Tensor* kc = k_cache(il);
        const Strides kc_strides = strides_of(k_nb0(), kb(qk), H * kb(qk), H * kb(qk) * Tq_);
        const uint64_t at = uint64_t(n_past_ * H * kb(qk));
        g_.cpy(g_.view(kv, {nope, H, Tq_}, kv_strides, 0),
               g_.view(kc, {nope, H, Tq_}, kc_strides, at));
        // k_pe is shared by all heads: a view that repeats it (stride 0 over heads).
        g_.cpy(g_.view(k_pe, {rope, H, Tq_}, strides_of(f, 0, rope * f, rope * f * Tq_), 0),
               g_.view(kc, {rope, H, Tq_}, kc_strides, at + uint64_t(kb(nope))));

        const int64_t sv = sy_dtype_info(o_.cache_type_v).type_size, n_ctx = cache_.n_ctx();
        const Strides kr = strides_of(k_nb0(), H * kb(qk), kb(qk), H * kb(qk) * n_kv_);
        if (flash_) {
            // V rows {H*vh, n_ctx} (the same bytes as the transposed layout), read in place.
            Tensor* vc = sequence_rows(cache_input("cache_v-" + std::to_string(il),
                                                   o_.cache_type_v, {H * vh, n_ctx}, cache_.v(il),
                                                   cache_.v_buffer(il)),
                                       1);
            const Strides vr = strides_of(v_nb0(), H * vb(vh), vb(vh), H * vb(vh) * n_ctx);
            g_.cpy(
                g_.view(kv, {vh, H, Tq_}, kv_strides, uint64_t(nope * f)),
                g_.view(vc, {vh, H, Tq_}, strides_of(v_nb0(), vb(vh), H * vb(vh), H * vb(vh) * Tq_),
                        uint64_t(n_past_ * H * vb(vh))));
            Tensor* q = g_.concat(heads_as_batch(q_nope), heads_as_batch(q_pe), 0);  // {qk, T, H}
            return flash(q, g_.view(kc, {qk, n_kv_, H}, kr, 0), g_.view(vc, {vh, n_kv_, H}, vr, 0));
        }
        Tensor* vc = v_cache(il);  // {n_ctx, H*vh}: element (j, h*vh + d)
        Tensor* v_dst = g_.view(vc, {Tq_, vh, H},
                                strides_of(sv, n_ctx * sv, vh * n_ctx * sv, vh * n_ctx * sv * H),
                                uint64_t(n_past_ * sv));
        g_.cpy(g_.view(kv, {vh, H, Tq_}, kv_strides, uint64_t(nope * f)),
               g_.permute(v_dst, {2, 0, 1, 3}));

        Tensor* k_nope = g_.view(kc, {nope, n_kv_, H}, kr, 0);
        Tensor* k_rope = g_.view(kc, {rope, n_kv_, H}, kr, uint64_t(kb(nope)));
        Tensor* v_t = g_.view(vc, {n_kv_, vh, H},
                              strides_of(sv, n_ctx * sv, vh * n_ctx * sv, vh * n_ctx * sv * H), 0);
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

    // Writes this ubatch's latents: [k_pe | c] rows, and for mla 1 the transposed c.
    Tensor* store_latents(uint32_t il, Tensor* c, Tensor* k_pe) {
        const int64_t lat = hp_.latent_width(), kvl = hp_.kv_lora_rank, rope = hp_.qk_rope;
        Tensor* kc = k_cache(il);
        const uint64_t at = uint64_t(n_past_ * kb(lat));
        g_.cpy(k_pe,
               g_.view(kc, {rope, 1, Tq_}, strides_of(k_nb0(), kb(lat), kb(lat), kb(lat) * Tq_), at));
        g_.cpy(c, g_.view(kc, {kvl, Tq_}, strides_of(k_nb0(), kb(lat), kb(lat) * Tq_, kb(lat) * Tq_),
                          at + uint64_t(kb(rope))));
        if (o_.mla == 1) {
            Tensor* vc = v_cache(il);
            const int64_t sv = sy_dtype_info(o_.cache_type_v).type_size, n_ctx = cache_.n_ctx();
            Tensor* dst = g_.view(vc, {Tq_, kvl}, strides_of(sv, n_ctx * sv, n_ctx * sv * kvl),
                                  uint64_t(n_past_ * sv));
            g_.cpy(c, g_.transpose(dst));
            v_t_ = g_.view(vc, {n_kv_, kvl}, strides_of(sv, n_ctx * sv, n_ctx * sv * kvl), 0);
        }
        return kc;
    }

    // The cached [k_pe | c] rows of tokens 0 .. n_kv - 1: c part {kvl, n_kv}, rope part
    // {rope, n_kv, 1} (one "head" shared by all query heads).
    Tensor* cached_c(Tensor* kc) {
        const int64_t row = kb(hp_.latent_width());
        return g_.view(kc, {hp_.kv_lora_rank, n_kv_},
                       strides_of(k_nb0(), row, row * n_kv_, row * n_kv_),
                       uint64_t(kb(hp_.qk_rope)));
    }
    Tensor* cached_k_pe(Tensor* kc) {
        const int64_t row = kb(hp_.latent_width());
        return g_.view(kc, {hp_.qk_rope, n_kv_}, strides_of(k_nb0(), row, row * n_kv_, row * n_kv_),
                       0);
    }

    // mla 1, 2, 3 (generation): queries absorb W_UK, scores against the latents, W_UV after.
    Tensor* attention_latent(const Deepseek2Layer& l, uint32_t il, Tensor* q_nope, Tensor* q_pe,
                             Tensor* c, Tensor* k_pe) {
        Tensor* kc = store_latents(il, c, k_pe);
        Tensor* q_lat = g_.mul_mat(w(l.k_b), heads_as_batch(q_nope));  // {kvl, T, H}
        if (flash_) {
            // Queries ordered as the cache rows: [q_pe | q_lat].
            Tensor* q = g_.concat(heads_as_batch(q_pe), q_lat, 0);
            const int64_t lat = hp_.latent_width();
            Tensor* rows =
                g_.view(kc, {lat, n_kv_},
                        strides_of(k_nb0(), kb(lat), kb(lat) * n_kv_, kb(lat) * n_kv_), 0);
            Tensor* o_lat =
                g_.named(SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION, {q, rows}, SY_TYPE_F32,
                         {int64_t(hp_.kv_lora_rank), Tq_, int64_t(hp_.n_head)},
                         flash_params(static_cast<int32_t>(hp_.qk_rope)));
            return g_.mul_mat(w(l.v_b), o_lat);  // {vh, T, H}
        }
        // c transposed {n_kv, kvl}: the mla 1 copy, or made from the cache rows now (decoded
        // first when they are blocks, which cannot be transposed).
        Tensor* c_t = v_t_;
        if (o_.mla != 1) {
            Tensor* c_rows = cached_c(kc);
            if (sy_dtype_info(o_.cache_type_k).block_size > 1) c_rows = g_.cpy(c_rows, SY_TYPE_F32);
            c_t = g_.cont(g_.transpose(c_rows));
        }
        Tensor* c_rows = cached_c(kc);
        Tensor* k_pe_rows = cached_k_pe(kc);
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
        const int64_t nope = hp_.qk_nope, vh = hp_.v_head, rope = hp_.qk_rope,
                      lat = hp_.latent_width(), f = sizeof(float);
        Tensor* kc = store_latents(il, c, k_pe);
        Tensor* c_all = cached_c(kc);
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
                Tensor* k_pe_all =
                    g_.cpy(g_.view(kc, {rope, n_kv_, n}, strides_of(k_nb0(), kb(lat), 0, 0), 0),
                           SY_TYPE_F32);
                Tensor* k = g_.concat(k_nope, k_pe_all, 0);  // {qk, n_kv, n}
                Tensor* q = g_.concat(narrow(qn, 2, h0, n), narrow(qr, 2, h0, n), 0);
                return flash(q, k, v);
            }
            Tensor* kq = g_.add(
                g_.mul_mat(k_nope, narrow(qn, 2, h0, n))->set_name("kq-" + std::to_string(il)),
                g_.mul_mat(cached_k_pe(kc), narrow(qr, 2, h0, n))
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
    Deepseek2Cache& cache_;
    std::span<const DeviceWeights> weights_;  // not uploaded yet: weights in host memory
    bool all_on_device_;
    bool fused_moe_;
    bool flash_;
    bool overlap_;
    int64_t T_;            // tokens of the graph
    int64_t S_;            // sequences, each of Tq_ tokens
    int64_t Tq_;           // tokens (queries) of one sequence
    int64_t n_past_;       // cached tokens of each sequence before this graph
    int64_t n_kv_;         // keys of each sequence: n_past_ + Tq_
    int64_t seq_rows_;     // cache rows of each sequence
    int64_t seq_ = 0;      // the sequence whose attention is being built
    Graph g_;
    std::unordered_map<std::string, Tensor*> cache_inputs_;
    Tensor* pos_ = nullptr;
    Tensor* v_t_ = nullptr;
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
            infos_.back().measured = [costs = backends_.costs,
                                      name = infos_.back().name](const sy_node& node) {
                return costs->ns(name, node);
            };
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
        const uint64_t weights = weight_plan_.bytes_per_backend[b], free = infos_[b].props.memory_free;
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
    if (n_seqs < 1 || n_tokens % n_seqs != 0)
        throw Error("a graph of " + std::to_string(n_tokens) + " tokens cannot hold " +
                    std::to_string(n_seqs) + " equal sequences");
    GraphBuilder b(model_, cache_, weights_, !scheduler_, fused_moe_, flash_,
                   backends_.backends.size() > 1 && backends_.offload.overlap, n_tokens, n_past,
                   n_seqs);
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
    if (const Buffer* buffer = t.device_buffer()) return backend_of(buffer->owner(), buffer->device());
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
        throw Error("observing nodes (imatrix collection) needs a session on one backend; this one "
                    "runs on " + std::to_string(backends_.backends.size()));
    executor_.set_observer(observer);
}

void Deepseek2Session::rewind(int64_t n_past) {
    if (n_past < 0 || n_past > n_past_)
        throw Error("rewind to " + std::to_string(n_past) + " tokens: the cache holds " +
                    std::to_string(n_past_));
    n_past_ = n_past;
}

std::vector<float> Deepseek2Session::eval(std::span<const int32_t> tokens, bool all_logits) {
    return eval_sequences(tokens, 1, all_logits);
}

std::vector<float> Deepseek2Session::eval_sequences(std::span<const int32_t> tokens,
                                                    int64_t n_seqs, bool all_logits) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const uint32_t n_vocab = model_.hparams().n_vocab;
    if (n == 0) throw Error("eval: no tokens");
    if (n_seqs < 1 || n % n_seqs != 0)
        throw Error("eval: " + std::to_string(n) + " tokens are not " + std::to_string(n_seqs) +
                    " sequences of equal length");
    if (n_past_ > 0 && n_seqs != n_seqs_)
        throw Error("eval: the cache holds " + std::to_string(n_seqs_) + " sequences, not " +
                    std::to_string(n_seqs) + " (reset() first)");
    const int64_t per = n / n_seqs, seq_rows = cache_.n_ctx() / n_seqs;
    if (n_past_ + per > seq_rows)
        throw Error("the context is full: " + std::to_string(n_past_) + " cached + " +
                    std::to_string(per) + " new tokens exceed the context of " +
                    std::to_string(seq_rows) +
                    (n_seqs > 1 ? " per sequence (" + std::to_string(cache_.n_ctx()) + " / " +
                                      std::to_string(n_seqs) + ")"
                                : std::string()) +
                    " (raise it with -c)");
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || uint32_t(tokens[i]) >= n_vocab)
            throw Error("token " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                        " is outside the vocabulary of " + std::to_string(n_vocab));

    allocate();
    n_seqs_ = n_seqs;
    // Each graph takes `step` tokens of every sequence (sequence-major), at most n_ubatch in all.
    const int64_t step = std::max<int64_t>(1, model_.options().n_ubatch / n_seqs);
    std::vector<float> logits;
    if (n_seqs > 1) logits.resize(size_t(all_logits ? n : n_seqs) * n_vocab);
    std::vector<int32_t> positions, batch;
    for (int64_t start = 0; start < per; start += step) {
        const int64_t ts = std::min(step, per - start), t = ts * n_seqs;
        const bool last = start + ts == per;
        const auto t0 = Clock::now();
        if (profile_)
            profile_->begin_graph(t > 1 ? Profile::Phase::prompt : Profile::Phase::decode, t);
        UbatchGraph ug = build(t, n_past_, all_logits, n_seqs);
        positions.resize(size_t(t));
        for (int64_t s = 0; s < n_seqs; ++s)
            std::iota(positions.begin() + s * ts, positions.begin() + (s + 1) * ts,
                      static_cast<int32_t>(n_past_));
        if (n_seqs == 1) {
            ug.tokens->set_data(const_cast<int32_t*>(tokens.data() + start));
        } else {
            batch.resize(size_t(t));
            for (int64_t s = 0; s < n_seqs; ++s)
                std::copy_n(tokens.data() + s * per + start, ts, batch.begin() + s * ts);
            ug.tokens->set_data(batch.data());
        }
        ug.positions->set_data(positions.data());
        const auto t1 = Clock::now();
        double backend_seconds = 0, sync_seconds = 0, copy_seconds = 0, stage_seconds = 0;
        uint64_t staged = 0, compute_buffer = 0, staging_buffer = 0;
        if (scheduler_) {
            const OpPlan& placed = plan(ug.graph, t, n_past_);
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
        n_past_ += ts;
        if (all_logits || last) {
            const std::vector<float> part = scheduler_ ? scheduler_->read<float>(*ug.logits)
                                                       : executor_.read<float>(*ug.logits);
            if (n_seqs == 1) {
                logits.insert(logits.end(), part.begin(), part.end());
            } else {
                // The graph's rows are sequence-major, `rows` of each (ts tokens, or the
                // last); the result holds each sequence's `stride` rows together.
                const int64_t rows = all_logits ? ts : 1, stride = all_logits ? per : 1,
                              first = all_logits ? start : 0, v = n_vocab;
                for (int64_t s = 0; s < n_seqs; ++s)
                    std::copy_n(part.begin() + s * rows * v, rows * v,
                                logits.begin() + (s * stride + first) * v);
            }
        }
    }
    return logits;
}

}  // namespace sy::llm
