// Named ops with their decomposition beside them, as MLX keeps a fused op's fallback next to it:
// each function gives the named node when the backend that runs the session's graphs provides
// the op (NamedOps, chosen once per session by Model::choose_named_ops) and the same computation
// from core ops otherwise. A model asks here and does not branch on the choice itself.
//
// Shapes in ggml order. Attention is per head, causal: T queries at positions n_past .. against
// the first n_kv = n_past + T keys.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "switchyard/core/graph.hpp"
#include "switchyard/llm/model.hpp"

namespace sy::llm {

// Elements [from, from + n) of dimension d of t, as a view.
Tensor* narrow(Graph& g, Tensor* t, int d, int64_t from, int64_t n);
// The parts concatenated along dimension d, pairwise, so each output element is copied about
// log2(parts) times.
Tensor* concat_pairwise(Graph& g, std::vector<Tensor*> parts, int d);

struct AttentionParams {
    float scale = 1.0f;     // of the scores
    int64_t n_past = 0;     // keys before the queries' own (the causal window)
    int64_t max_bytes = 0;  // -amb: the decomposition's buffer per step of heads, 0: no limit
    int layer = -1;         // names the decomposition's nodes kq-L, kq_rope-L, kqv-L
};

// Heads whose query and key have two parts, the scores being the sum of the parts' products
// (DeepSeek's position-free "nope" part and its rotary part, whose key is shared by the heads
// and never copied per head for the decomposition).
struct SplitHeads {
    Tensor* q_nope = nullptr;  // {Dn, T, H}
    Tensor* q_rope = nullptr;  // {Dr, T, H}
    Tensor* k_nope = nullptr;  // {Dn, n_kv, H}
    Tensor* k_rope = nullptr;  // {Dr, n_kv, H}, or {Dr, n_kv} shared by every head
    Tensor* k = nullptr;       // [k_nope | k_rope] {Dn + Dr, n_kv, H} where memory holds it so
                               // (a cache's rows); else made for attn.flash when it runs
};

// V as its memory holds it: rows {Dv, n_kv, H} (what attn.flash reads) or transposed
// {n_kv, Dv, H} (what the decomposition's product reads); one of the two.
struct AttentionValues {
    Tensor* rows = nullptr;
    Tensor* transposed = nullptr;
};

// Latent attention (MLA with absorbed weights): every head's query [q_rope | q_lat] against
// the latent rows [k_pe | c] that all heads share; the values are c.
struct LatentHeads {
    Tensor* q_rope = nullptr;  // {Dr, T, H}
    Tensor* q_lat = nullptr;   // {L, T, H}
    Tensor* rows = nullptr;    // [k_pe | c] {Dr + L, n_kv}
    // Views of the rows' parts; null for a row-scaled cache (q8_KV), whose parts are no rows.
    Tensor* c = nullptr;     // {L, n_kv}
    Tensor* k_pe = nullptr;  // {Dr, n_kv}
    Tensor* c_t = nullptr;   // {n_kv, L} where memory holds c transposed, else null
};

class FusedOps {
  public:
    FusedOps(Graph& graph, const NamedOps& ops) : g_(graph), ops_(ops) {}

    // SwiGLU of the experts each token selected (moe.fused_up_gate):
    //   silu(gate_e x) * (up_e x) for every selected e;
    //   up, gate {K, N, E}; x {K, 1, T}; ids {k, T} I32 -> {N, k, T}.
    // Decomposed: two mul_mat_id products, silu and mul.
    Tensor* expert_swiglu(Tensor* up, Tensor* gate, Tensor* x, Tensor* ids);

    // The same for a dense FFN: up, gate {K, N}; x {K, T} -> {N, T}. Fused as one "expert" that
    // every token uses (one job over both matrices instead of two products, a SiLU and a
    // multiply) when up and gate share a type, as the op requires.
    Tensor* swiglu(Tensor* up, Tensor* gate, Tensor* x);

    // softmax(scale * q.k + causal mask) v per head (attn.flash) -> {Dv, T, H}. Decomposed: the
    // two parts' score products added, soft-maxed and multiplied by V transposed, -amb's
    // max_bytes worth of heads at a time.
    Tensor* attention(const SplitHeads& h, const AttentionValues& v, const AttentionParams& p);
    // Compute buffer attention() needs per head beyond its inputs, for T queries over n_kv keys
    // of dn + dr dimensions and values of dv: the scores (three copies live at once: the two
    // products and their sum) and V transposed when it is not (decomposed), or K assembled from
    // its parts when not given whole (attn.flash).
    int64_t attention_bytes_per_head(int64_t T, int64_t n_kv, int64_t dn, int64_t dr, int64_t dv,
                                     bool k_whole, bool v_transposed) const;

    // attn.mla: latent attention -> {L, T, H} (multiplied by W_UV after). Decomposed: scores
    // against c and k_pe added, soft-maxed and multiplied by c transposed (made from the rows
    // when memory has no transposed copy), -amb's max_bytes worth of heads at a time.
    Tensor* latent_attention(const LatentHeads& h, const AttentionParams& p);

    bool flash() const { return ops_.flash; }

    // step(h0, n) for heads h0 .. h0 + n - 1 of H, as many heads a step as max_bytes allows
    // when each needs bytes_per_head (all of them without a limit; at least one); the steps'
    // outputs concatenated over heads (dimension 2).
    template <class Step>
    Tensor* by_head_groups(int64_t H, int64_t bytes_per_head, int64_t max_bytes, Step step) {
        const int64_t per =
            max_bytes <= 0
                ? H
                : std::clamp<int64_t>(max_bytes / std::max<int64_t>(bytes_per_head, 1), 1, H);
        std::vector<Tensor*> parts;
        for (int64_t h0 = 0; h0 < H; h0 += per) parts.push_back(step(h0, std::min(per, H - h0)));
        return concat_pairwise(g_, std::move(parts), 2);
    }

    // A reusable graph's list of causal offsets (StepMoves::params), and the sequence of the
    // attention built next; nullptr: the graph is not reused.
    void record_moves(StepMoves* moves, int64_t seq) {
        moves_ = moves;
        seq_ = seq;
    }

  private:
    // Lists node `t`'s causal offset (integer parameter 1) as one that moves with n_past.
    Tensor* moves_with_n_past(Tensor* t);
    // Expert ids {1, T} that are all 0: one I32 zero seen T times (stride 0), one input per graph
    // (each input is a transfer per step where the graph runs on a device).
    Tensor* zero_ids(int64_t tokens);
    Tensor* softmax_scores(Tensor* kq, const AttentionParams& p);
    NamedOpParams flash_params(const AttentionParams& p, int32_t rope) const;
    // t's heads h0 .. h0 + n - 1 (dimension 2), t itself when that is all of them or t has
    // one head shared by all.
    Tensor* heads(Tensor* t, int64_t h0, int64_t n, int64_t all);

    Graph& g_;
    NamedOps ops_;
    Tensor* expert_zero_ = nullptr;
    StepMoves* moves_ = nullptr;
    int64_t seq_ = 0;
};

}  // namespace sy::llm
