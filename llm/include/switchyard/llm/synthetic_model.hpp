// Synthetic DeepSeek2-architecture GGUF files: llama.cpp's deepseek2 metadata keys and tensor
// names/shapes exactly (docs/deepseek2.md §1-2), random but well-scaled weights that are
// a pure function of (seed, tensor name, element index), and a byte-level BPE vocabulary. For
// tests and benchmarks without downloading a model.
//
// q LoRA: llama.cpp and ik_llama.cpp infer "Lite, plain attn_q" from a block count of 26 or 27
// alone, so the 3- and 4-layer presets carry attn_q_a/attn_q_a_norm/attn_q_b and only the
// 27-layer `lite` preset uses attn_q.
//
// Split layout (`KvLayout::split`): attn_kv_b is replaced by ik_llama.cpp's 2-D attn_k_b
// {qk_nope, n_head*kv_lora} and attn_v_b {kv_lora, n_head*v_head}, with unchanged head metadata
// (head_count_kv = n_head, key_length 192-style): ik loads it directly (it computes k_b/v_b
// itself from kv_b otherwise); mainline's 3-D layout needs its MLA metadata (head_count_kv 1,
// key_length 576), which ik accepts only with DeepSeek's real head sizes. The k_b/v_b values are
// the kv_b values of the same seed rearranged, so both layouts describe the same model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/llm/gguf.hpp"

namespace sy::llm {

struct Deepseek2Config {
    std::string name;      // general.name
    uint32_t n_layer = 0;  // block_count, less n_nextn
    // nextn_predict_layers: MTP blocks after the n_layer others (blk.{n_layer}...), each a MoE
    // block plus its nextn.* tensors, as DeepSeek-V3 files carry them; block_count counts them.
    uint32_t n_nextn = 0;
    uint32_t n_ctx_train = 163840;  // context_length
    uint32_t n_embd = 0;            // embedding_length
    uint32_t n_ff = 0;              // feed_forward_length (leading dense layers)
    uint32_t n_head = 0;            // head_count (= head_count_kv)
    uint32_t q_lora_rank = 0;       // 0: plain attn_q, no q_lora_rank key
    uint32_t kv_lora_rank = 0;
    uint32_t qk_nope = 0;
    uint32_t qk_rope = 0;  // rope.dimension_count
    uint32_t v_head = 0;
    uint32_t n_dense_lead = 1;  // leading_dense_block_count
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_expert_shared = 0;
    uint32_t n_ff_exp = 0;  // expert_feed_forward_length
    float expert_weights_scale = 1.0f;
    bool expert_weights_norm = false;
    uint32_t gating_func = 1;  // 1 softmax (V2), 2 sigmoid + exp_probs_b (V3)
    uint32_t n_vocab = 0;
    float rms_eps = 1e-6f;
    float rope_freq_base = 10000.0f;
    float yarn_factor = 40.0f;
    uint32_t yarn_orig_ctx = 4096;
    float yarn_log_mul = 0.0707f;  // 0.1 * mscale_all_dim
    std::string tokenizer_pre = "deepseek-llm";
};

// "tiny" (a few MB; V3-style sigmoid routing with exp_probs_b), "mini" (V2-Lite layer widths,
// 4 layers, 4096-token vocabulary), "lite" (DeepSeek-V2-Lite's full shape). Throws
// std::invalid_argument for another name.
Deepseek2Config deepseek2_preset(std::string_view preset);

enum class KvLayout { kv_b, split };

// How a tensor's values are drawn.
enum class Init {
    normal,       // N(0, scale)
    norm_gain,    // 1 + N(0, scale): RMSNorm weights
    k_b_of_kv_b,  // attn_k_b: rearranged attn_kv_b values (split layout)
    v_b_of_kv_b,  // attn_v_b: rearranged attn_kv_b values (split layout)
};

struct PlannedTensor {
    std::string name;
    std::vector<int64_t> ne;  // ggml order, ne[0] contiguous
    int32_t type = 0;         // what is written
    int32_t requested = 0;    // what the user asked for (differs when a rule or fallback chose)
    Init init = Init::normal;
    float scale = 0.0f;
    // For k_b_of_kv_b / v_b_of_kv_b: the attn_kv_b tensor the values come from and its head
    // widths (kv_b row h*(qk_nope+v_head)+j is head h's k_nope row j, then its v rows).
    std::string source;
    int64_t qk_nope = 0, v_head = 0, kv_lora = 0;
    int64_t elements() const;
    uint64_t nbytes() const;
};

struct ModelPlan {
    std::vector<gguf::KeyValue> metadata;
    std::vector<PlannedTensor> tensors;
    uint64_t parameters() const;
    uint64_t data_bytes() const;
};

// Everything make-model writes, without any tensor data: testable for the big presets.
ModelPlan plan_deepseek2(const Deepseek2Config& cfg, int32_t type, KvLayout layout);

// Number of tensors plan_deepseek2 declares (the formula the tests check against).
size_t deepseek2_tensor_count(const Deepseek2Config& cfg, KvLayout layout);

struct WriteProgress {
    size_t index = 0;  // tensor being written, 0-based
    size_t count = 0;
    const PlannedTensor* tensor = nullptr;
    uint64_t bytes_done = 0;  // data bytes written before this tensor
    uint64_t bytes_total = 0;
};

// Writes the plan to `path` (atomically, one tensor in memory at a time), values from `seed`.
// `threads` <= 0: all hardware threads. Output is identical for any thread count.
void write_synthetic_model(const std::filesystem::path& path, const ModelPlan& plan, uint64_t seed,
                           int threads,
                           const std::function<void(const WriteProgress&)>& progress = {});

// The f32 values of rows [row0, row0 + rows) of a planned tensor (what write_synthetic_model
// quantizes); `out` holds rows * ne[0] floats.
void synthetic_rows(const PlannedTensor& t, uint64_t seed, int64_t row0, int64_t rows, float* out);

}  // namespace sy::llm
