// The deepseek2 architecture (DeepSeek-V2, V2-Lite, V2.5, V3, R1, Kimi-K2-style GGUFs): its
// hyperparameters read from GGUF metadata, its weights bound in place from the memory-mapped
// file, the KV cache of each attention mode, and the compute graph of one ubatch built from the
// core's ops (docs/deepseek2.md holds the facts matched here).
//
//   Deepseek2Model model(gguf::Reader::open(path), options);  // checks every key and tensor
//   Session session(model, cpu_plugin);                       // session.hpp
//   std::vector<float> logits = session.eval(tokens);         // logits of the last token
//
// Attention modes (--mla, as ik_llama.cpp defines them):
//   0  standard attention: per-head K {n_head * (qk_nope + qk_rope)} and V (stored transposed)
//      in the cache, both decompressed from the latent with attn_kv_b as tokens arrive;
//   1  latent attention: the cache holds [k_rope | c_kv] rows plus a transposed copy of c_kv,
//      queries absorb W_UK (attn_k_b), outputs go through W_UV (attn_v_b);
//   2  as 1 without the transposed copy (c_kv is transposed from the cache rows per step);
//   3  as 2 for generation; ubatches of kMla3DecompressTokens tokens or more decompress the
//      cached latents with attn_kv_b and run standard attention (cheaper for prompts).
// Weight layouts: attn_kv_b alone, ik_llama.cpp's 2-D attn_k_b/attn_v_b, llama.cpp's 3-D ones
// (with its MLA head metadata: head_count_kv 1, key_length 576, value_length 512). Whatever a
// mode needs and the file lacks is derived at load: attn_k_b from attn_kv_b, attn_kv_b from
// attn_k_b + attn_v_b, in F32, BF16 or Q8_0 (never F16: W_UK overflows it).
//
// Routed experts: softmax or sigmoid gating, the selection-only bias exp_probs_b, weight
// normalization and scaling, group-limited routing where the metadata asks for it
// (expert_group_count / expert_group_used_count), and smart expert reduction (-ser K,t).
// Fused MoE is the plugin-provided named op moe.fused_up_gate; without it the graph uses
// mul_mat_id, silu and mul. Flash attention is attn.flash (mla 0, and mla 3's decompressed
// prompts) and attn.mla (latent attention): no K.Q matrix in the compute buffer; without them
// (or with --flash-attn off) the scores are materialized, soft-maxed and multiplied by V.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "switchyard/core/graph.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/llm/fused_ops.hpp"
#include "switchyard/llm/gguf.hpp"
#include "switchyard/llm/interleaved_tensors.hpp"
#include "switchyard/llm/model.hpp"

namespace sy::llm {

struct Deepseek2HParams {
    uint32_t n_layer = 0;  // the blocks the graph runs: block_count less n_nextn
    // nextn_predict_layers: the last blocks of block_count are MTP (multi-token prediction)
    // layers with blk.N.nextn.* tensors; left out, as llama.cpp runs block_count - n_nextn.
    uint32_t n_nextn = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_embd = 0;
    uint32_t n_ff = 0;  // leading dense blocks' FFN width
    uint32_t n_head = 0;
    uint32_t q_lora_rank = 0;  // 0: plain attn_q
    uint32_t kv_lora_rank = 0;
    uint32_t qk_nope = 0;
    uint32_t qk_rope = 0;
    uint32_t v_head = 0;
    uint32_t n_dense_lead = 0;
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_expert_shared = 0;
    uint32_t n_ff_exp = 0;
    uint32_t n_vocab = 0;
    float rms_eps = 1e-6f;
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor
    bool yarn = false;
    uint32_t yarn_orig_ctx = 0;
    float yarn_log_mul = 0.0f;
    float expert_weights_scale = 1.0f;
    bool expert_weights_norm = false;
    uint32_t gating_func = 1;  // 1 softmax, 2 sigmoid
    uint32_t expert_group_count = 0;
    uint32_t expert_group_used = 0;

    // Reads and checks every key; throws gguf::FormatError naming the file and the missing or
    // out-of-range key.
    static Deepseek2HParams from_gguf(const gguf::Reader& file);

    uint32_t qk_head() const { return qk_nope + qk_rope; }
    uint32_t latent_width() const { return kv_lora_rank + qk_rope; }  // one latent cache row
    // softmax scale of the attention scores: mscale^2 / sqrt(qk_nope + qk_rope), mscale =
    // 1 + yarn_log_mul * ln(1 / freq_scale) (DEEPSEEK2.md section 6).
    float kq_scale() const;
    // The rope op's attn_factor that keeps rotary magnitudes at 1 under YaRN.
    float rope_attn_factor() const;
};

// Validates option values against the model; throws sy::Error naming the flag.
void validate(const ContextOptions& options, const Deepseek2HParams& hp);

inline constexpr int64_t kMla3DecompressTokens = 128;

struct Deepseek2Layer {
    WeightRef attn_norm, q_a, q_a_norm, q_b, q;
    WeightRef kv_a_mqa, kv_a_norm;
    WeightRef kv_b;  // {kv_lora, n_head * (qk_nope + v_head)}: per head qk_nope rows, v_head rows
    WeightRef k_b;   // {qk_nope, kv_lora, n_head}: W_UK^T per head
    WeightRef v_b;   // {kv_lora, v_head, n_head}: W_UV per head
    WeightRef attn_output;
    WeightRef ffn_norm;
    WeightRef ffn_gate, ffn_up, ffn_down;  // leading dense blocks
    WeightRef gate_inp, exp_probs_b;
    WeightRef gate_exps, up_exps, down_exps;
    WeightRef gate_shexp, up_shexp, down_shexp;
    bool dense = false;
};

class Deepseek2Model final : public Model {
  public:
    // Takes the file, checks every hyperparameter and every tensor's type and shape (errors name
    // the tensor), and derives what `options.mla` needs that the file lacks.
    Deepseek2Model(gguf::Reader file, const ContextOptions& options);
    Deepseek2Model(const Deepseek2Model&) = delete;
    Deepseek2Model& operator=(const Deepseek2Model&) = delete;

    const Deepseek2HParams& hparams() const { return hp_; }

    // --- Model ----------------------------------------------------------------------------
    std::string_view architecture() const override { return "deepseek2"; }
    const gguf::Reader& file() const override { return file_; }
    const ContextOptions& options() const override { return options_; }
    uint32_t n_vocab() const override { return hp_.n_vocab; }
    uint32_t n_layer() const override { return hp_.n_layer; }
    std::string summary() const override;
    std::vector<std::string> notes() const override;
    uint64_t constant_id() const override { return constant_id_; }
    // Bytes of weights one token's forward pass reads (routed experts: n_expert_used of them).
    uint64_t weight_bytes_per_token() const override;
    uint64_t cache_bytes_per_token() const override;
    // attn.flash and attn.mla together, moe.fused_up_gate, as the options ask and the plugin
    // provides; a block-quantized mla 0 V cache needs flash attention.
    NamedOps choose_named_ops(const Plugin& plugin) const override;
    std::unique_ptr<KvCache> make_cache(const NamedOps& ops, Plugin* plugin,
                                        int32_t device) const override;
    std::string cache_anchor(uint32_t il) const override;  // blk.IL.attn_kv_a_mqa.weight
    // The graph of one ubatch (llm/models/deepseek2.cpp).
    UbatchGraph build(const GraphRequest& request) const override;

    // --- the weights, as the graph reads them ---------------------------------------------
    const std::vector<Deepseek2Layer>& layers() const { return layers_; }
    const WeightRef& token_embd() const { return token_embd_; }
    const WeightRef& output_norm() const { return output_norm_; }
    const WeightRef& output() const { return output_; }
    // 0, 1, ..., n_expert - 1: the table group-limited routing gathers expert ids from.
    const std::vector<int32_t>& expert_ids() const { return expert_ids_; }
    // Bytes of weights derived at load (attn_k_b or attn_kv_b), 0 when the file had them all.
    uint64_t derived_bytes() const;
    // --expert-parallel N: part r's experts [first, first + count) (E * r / N .. E * (r+1) / N),
    // and the tables its graph reads (make_part_tables).
    struct ExpertPart {
        int64_t first = 0, count = 0;
    };
    ExpertPart expert_part(int r) const;
    const int32_t* part_ids(int r) const { return part_ids_.data() + r * int64_t(hp_.n_expert); }
    const float* part_local(int r) const { return part_local_.data() + r * int64_t(hp_.n_expert); }
    const std::vector<int32_t>& token_rows() const { return token_rows_; }
    const std::vector<float>& halves() const { return halves_; }

  private:
    WeightRef file_weight(const std::string& name, std::initializer_list<int64_t> shape,
                          bool required = true) const;
    void derive_attention(Deepseek2Layer& layer, uint32_t il);
    void make_part_tables();

    gguf::Reader file_;
    Deepseek2HParams hp_;
    ContextOptions options_;
    std::vector<Deepseek2Layer> layers_;
    WeightRef token_embd_, output_norm_, output_;
    std::vector<std::unique_ptr<std::vector<std::byte>>> derived_;
    // Tensors of ik_llama.cpp's row-interleaved layouts, converted to their base type when first
    // read.
    mutable std::unordered_map<const gguf::TensorInfo*, DeinterleavedTensor> deinterleaved_;
    std::vector<int32_t> expert_ids_;
    std::vector<int32_t> part_ids_, token_rows_;
    std::vector<float> part_local_, halves_;
    uint64_t constant_id_ = new_constant_id();
};

// The KV cache of deepseek2, per layer by attention mode (docs/deepseek2.md):
//   mla 0: K {n_head * (qk_nope + qk_rope), n_ctx}, V transposed {n_ctx, n_head * v_head}
//          (as rows {n_head * v_head, n_ctx} with flash attention, which reads them in place;
//          a q8_0 V cache exists only as these rows);
//   mla 1: K {qk_rope + kv_lora, n_ctx} ([k_rope | c_kv] rows), c_kv transposed {n_ctx, kv_lora};
//   mla 2, 3: the K rows only.
// A graph sees it through Views, by meaning (the latents of a layer, a sequence's keys): the
// byte layout stays in here.
class Deepseek2Cache final : public KvCache {
  public:
    // `v_rows`: mla 0's V as rows (flash attention) instead of transposed.
    Deepseek2Cache(const Deepseek2HParams& hp, const ContextOptions& options, bool v_rows = false,
                   Plugin* plugin = nullptr, int32_t device = 0);

    // What the cache holds per token (all layers): the formulas of docs/deepseek2.md.
    static uint64_t bytes_per_token(const Deepseek2HParams& hp, const ContextOptions& options);
    int64_t k_row_elements() const { return k_row_; }  // elements of one token's K row
    int64_t v_rows() const { return v_rows_; }         // rows of V (0: none)
    bool v_rows_layout() const { return v_as_rows_; }

    // The cache in one graph: each layer's K and V are one input of the graph (external
    // memory, written in place), and every method returns views of them for one sequence.
    // Writes take the ubatch's tokens of that sequence at positions n_past ..; reads take the
    // first n_kv tokens. Shapes in ggml order; T is the sequence's tokens in the ubatch.
    class Views {
      public:
        // `cells`: each sequence's cells in this graph (the cache's sequence_cells(), or a
        // hypothetical split for planning).
        Views(Deepseek2Cache& cache, Graph& graph, int64_t cells);
        // Lists the cache writes that follow a sequence's n_past (a reusable graph).
        void record_moves(StepMoves* moves) { moves_ = moves; }

        // mla 1-3: stores [k_pe | c] rows (c {kv_lora, T}, k_pe {qk_rope, 1, T}), and for
        // mla 1 the transposed copy of c.
        void write_latents(uint32_t il, int64_t seq, int64_t n_past, Tensor* c, Tensor* k_pe);
        Tensor* latent_rows(uint32_t il, int64_t seq, int64_t n_kv);  // {qk_rope + kv_lora, n_kv}
        Tensor* latents(uint32_t il, int64_t seq, int64_t n_kv);      // c {kv_lora, n_kv}
        Tensor* latent_k_pe(uint32_t il, int64_t seq, int64_t n_kv);  // {qk_rope, n_kv}
        // k_pe once per head {qk_rope, n_kv, heads}: the same rows for every head (stride 0).
        Tensor* latent_k_pe_heads(uint32_t il, int64_t seq, int64_t n_kv, int64_t heads);
        // mla 1's transposed copy of c {n_kv, kv_lora}.
        Tensor* latents_transposed(uint32_t il, int64_t seq, int64_t n_kv);

        // mla 0: stores per head K = [k_nope | k_pe] (k_nope {qk_nope, H, T}, k_pe {qk_rope, 1,
        // T} shared by the heads) and V {v_head, H, T}.
        void write_kv(uint32_t il, int64_t seq, int64_t n_past, Tensor* k_nope, Tensor* k_pe,
                      Tensor* v);
        Tensor* keys(uint32_t il, int64_t seq, int64_t n_kv);       // {qk_head, n_kv, H}
        Tensor* keys_nope(uint32_t il, int64_t seq, int64_t n_kv);  // {qk_nope, n_kv, H}
        Tensor* keys_rope(uint32_t il, int64_t seq, int64_t n_kv);  // {qk_rope, n_kv, H}
        // V as the cache holds it: rows {v_head, n_kv, H} (flash attention's layout) or
        // transposed {n_kv, v_head, H}.
        AttentionValues values(uint32_t il, int64_t seq, int64_t n_kv);

      private:
        Tensor* k_input(uint32_t il);
        Tensor* v_input(uint32_t il);
        Tensor* key_heads(uint32_t il, int64_t seq, int64_t n_kv, int64_t from, int64_t width);
        uint64_t k_row_at(int64_t seq, int64_t pos) const;  // K bytes before cell (seq, pos)
        int64_t kb(int64_t n) const;                        // bytes of n K elements
        int64_t vb(int64_t n) const;
        // g_.cpy(src, dst), dst listed as moving `per_token` bytes per token of seq's n_past.
        void write(Tensor* src, Tensor* dst, int64_t seq, int64_t per_token);

        Deepseek2Cache& cache_;
        Graph& g_;
        int64_t cells_;
        StepMoves* moves_ = nullptr;
        std::unordered_map<uint32_t, Tensor*> k_, v_;
    };

  private:
    Deepseek2HParams hp_;
    int32_t type_k_ = SY_TYPE_F16, type_v_ = SY_TYPE_F16;
    int mla_ = 3;
    int64_t k_row_ = 0;
    int64_t v_rows_ = 0;
    bool v_as_rows_ = false;
};

}  // namespace sy::llm
