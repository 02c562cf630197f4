#include "switchyard/llm/fused_ops.hpp"

#include <algorithm>
#include <string>

#include "switchyard/core/error.hpp"
#include "switchyard/dtype.h"
#include "switchyard/named_ops.h"

namespace sy::llm {

Tensor* narrow(Graph& g, Tensor* t, int d, int64_t from, int64_t n) {
    Shape shape = t->shape();
    shape.ne[d] = n;
    return g.view(t, shape, t->strides(), uint64_t(from * t->nb(d)));
}

Tensor* concat_pairwise(Graph& g, std::vector<Tensor*> parts, int d) {
    while (parts.size() > 1) {
        std::vector<Tensor*> next;
        for (size_t i = 0; i + 1 < parts.size(); i += 2)
            next.push_back(g.concat(parts[i], parts[i + 1], d));
        if (parts.size() % 2 == 1) next.push_back(parts.back());
        parts = std::move(next);
    }
    return parts[0];
}

Tensor* FusedOps::expert_swiglu(Tensor* up, Tensor* gate, Tensor* x, Tensor* ids) {
    if (ops_.fused_moe)
        return g_.named(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
                        {up, gate, x, ids}, SY_TYPE_F32, {up->ne(1), ids->ne(0), ids->ne(1)});
    return g_.mul(g_.silu(g_.mul_mat_id(gate, x, ids)), g_.mul_mat_id(up, x, ids));
}

Tensor* FusedOps::swiglu(Tensor* up, Tensor* gate, Tensor* x) {
    if (!ops_.fused_moe || gate->type() != up->type())
        return g_.mul(g_.silu(g_.mul_mat(gate, x)), g_.mul_mat(up, x));
    const int64_t K = gate->ne(0), N = gate->ne(1), T = x->ne(1);
    Tensor* par = g_.named(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
                           {g_.reshape(up, {K, N, 1}), g_.reshape(gate, {K, N, 1}),
                            g_.reshape(x, {K, 1, T}), zero_ids(T)},
                           SY_TYPE_F32, {N, 1, T});
    return g_.reshape(par, {N, T});
}

Tensor* FusedOps::zero_ids(int64_t tokens) {
    static const int32_t kZero = 0;
    if (expert_zero_ == nullptr) {
        expert_zero_ = g_.input("expert_zero", SY_TYPE_I32, {1});
        expert_zero_->set_data(const_cast<int32_t*>(&kZero));
    }
    return g_.view(expert_zero_, {1, tokens}, {4, 0, 0, 0}, 0);
}

Tensor* FusedOps::softmax_scores(Tensor* kq, const AttentionParams& p) {
    SoftmaxParams sp;
    sp.scale = p.scale;
    sp.causal = true;
    sp.causal_offset = static_cast<int32_t>(p.n_past);
    return moves_with_n_past(g_.softmax(kq, sp));
}

Tensor* FusedOps::moves_with_n_past(Tensor* t) {
    if (moves_ != nullptr) moves_->params.push_back({t->producer(), 1, seq_});
    return t;
}

// attn.flash / attn.mla parameters: the softmax scale and the causal window.
NamedOpParams FusedOps::flash_params(const AttentionParams& p, int32_t rope) const {
    NamedOpParams np;
    np.fparams = {p.scale};
    np.iparams = {1, static_cast<int32_t>(p.n_past), rope};
    return np;
}

Tensor* FusedOps::heads(Tensor* t, int64_t h0, int64_t n, int64_t all) {
    if (t->ne(2) == 1 && all > 1) return t;  // one head's rows shared by all
    return h0 == 0 && n == all ? t : narrow(g_, t, 2, h0, n);
}

int64_t FusedOps::attention_bytes_per_head(int64_t T, int64_t n_kv, int64_t dn, int64_t dr,
                                           int64_t dv, bool k_whole, bool v_transposed) const {
    const int64_t f = sizeof(float);
    // attn.flash: k_rope copied to every head, then [k_nope | k_rope].
    if (ops_.flash) return k_whole ? 0 : n_kv * f * (dr + dn + dr);
    return 3 * n_kv * T * f + (v_transposed ? 0 : n_kv * f * dv);
}

Tensor* FusedOps::attention(const SplitHeads& h, const AttentionValues& v,
                            const AttentionParams& p) {
    const int64_t H = h.q_nope->ne(2), T = h.q_nope->ne(1), n_kv = h.k_nope->ne(1);
    if (ops_.flash) {
        if (v.rows == nullptr) throw Error("attn.flash needs V as rows");
        Tensor* q = g_.concat(h.q_nope, h.q_rope, 0);  // {Dn + Dr, T, H}
        Tensor* k = h.k;
        if (k == nullptr) {
            // k_rope for every head (stride 0 over heads when it is shared), copied per head.
            Tensor* k_rope = h.k_rope;
            if (k_rope->ne(2) == 1 && H > 1)
                k_rope = g_.view(k_rope, {k_rope->ne(0), n_kv, H},
                                 {k_rope->nb(0), k_rope->nb(1), 0, 0}, 0);
            k = g_.concat(h.k_nope, g_.cpy(k_rope, SY_TYPE_F32), 0);
        }
        return moves_with_n_past(g_.named(SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION,
                                          {q, k, v.rows}, SY_TYPE_F32, {v.rows->ne(0), T, H},
                                          flash_params(p, 0)));
    }
    const std::string l = std::to_string(p.layer);
    const int64_t per_head = attention_bytes_per_head(T, n_kv, h.k_nope->ne(0), h.k_rope->ne(0), 0,
                                                      true, true);  // the scores
    return by_head_groups(H, per_head, p.max_bytes, [&](int64_t h0, int64_t n) {
        Tensor* kq = g_.add(
            g_.mul_mat(heads(h.k_nope, h0, n, H), heads(h.q_nope, h0, n, H))->set_name("kq-" + l),
            g_.mul_mat(heads(h.k_rope, h0, n, H), heads(h.q_rope, h0, n, H))
                ->set_name("kq_rope-" + l));  // {n_kv, T, n}
        Tensor* v_t = v.transposed ? heads(v.transposed, h0, n, H)
                                   : g_.cont(g_.transpose(heads(v.rows, h0, n, H)));
        return g_.mul_mat(v_t, softmax_scores(kq, p))->set_name("kqv-" + l);  // {Dv, T, n}
    });
}

Tensor* FusedOps::latent_attention(const LatentHeads& h, const AttentionParams& p) {
    const int64_t H = h.q_lat->ne(2), T = h.q_lat->ne(1), L = h.q_lat->ne(0);
    if (ops_.flash) {
        // Queries ordered as the latent rows: [q_rope | q_lat].
        Tensor* q = g_.concat(h.q_rope, h.q_lat, 0);
        return moves_with_n_past(g_.named(SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION, {q, h.rows},
                                          SY_TYPE_F32, {L, T, H},
                                          flash_params(p, static_cast<int32_t>(h.q_rope->ne(0)))));
    }
    // c transposed {n_kv, L}: memory's copy, or made from the rows now (decoded first when they
    // are blocks, which cannot be transposed).
    const int64_t n_kv = h.rows->ne(1), Dr = h.q_rope->ne(0), f = sizeof(float);
    Tensor* c_t = h.c_t;
    if (c_t == nullptr) {
        Tensor* c = h.c;
        if (c == nullptr) {  // row-scaled rows: decoded whole, then their latent part
            Tensor* rows = g_.cpy(h.rows, SY_TYPE_F32);
            c = g_.view(rows, {L, n_kv}, rows->strides(), uint64_t(Dr * f));
        } else if (sy_dtype_info(c->type()).block_size > 1) {
            c = g_.cpy(c, SY_TYPE_F32);
        }
        c_t = g_.cont(g_.transpose(c));
    }
    // Scores against the parts of the rows, or (q8_KV, one scale per row) the whole rows against
    // the queries in the rows' order.
    Tensor* q_rows = h.c == nullptr ? g_.concat(h.q_rope, h.q_lat, 0) : nullptr;
    const std::string l = std::to_string(p.layer);
    return by_head_groups(H, 3 * n_kv * T * f, p.max_bytes, [&](int64_t h0, int64_t n) {
        Tensor* kq =
            q_rows != nullptr
                ? g_.mul_mat(h.rows, heads(q_rows, h0, n, H))->set_name("kq-" + l)
                : g_.add(g_.mul_mat(h.c, heads(h.q_lat, h0, n, H))->set_name("kq-" + l),
                         g_.mul_mat(h.k_pe, heads(h.q_rope, h0, n, H))->set_name("kq_rope-" + l));
        return g_.mul_mat(c_t, softmax_scores(kq, p))->set_name("kqv-" + l);  // {L, T, n}
    });
}

}  // namespace sy::llm
