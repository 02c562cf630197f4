// deepseek2: hyperparameters, options, weights (checked and bound in place) and derived attention
// tensors. The KV cache is in deepseek2_cache.cpp, the graph in deepseek2.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <string_view>
#include <thread>

#include "switchyard/core/error.hpp"
#include "switchyard/interleaved.hpp"
#include "switchyard/llm/interleaved_tensors.hpp"
#include "switchyard/llm/models/deepseek2.hpp"
#include "switchyard/quant_blocks.h"
#include "switchyard/quants.hpp"
#include "switchyard/sdk.hpp"

namespace sy::llm {

namespace {

const std::string kArch = "deepseek2.";

std::string file_name(const gguf::Reader& file) {
    return file.files().empty() ? std::string("model") : file.files().front().string();
}

[[noreturn]] void key_error(const gguf::Reader& file, const std::string& key,
                            const std::string& what) {
    throw gguf::FormatError(file_name(file) + ": metadata key '" + key + "' " + what);
}

// A u32-like value: a scalar, or an array whose items are all equal (llama.cpp writes per-layer
// arrays for some head counts). nullopt when absent and not required.
std::optional<uint64_t> count_key(const gguf::Reader& file, const std::string& key, bool required) {
    const gguf::Value* v = file.find(key);
    if (v == nullptr) {
        if (required) key_error(file, key, "is missing (the deepseek2 graph needs it)");
        return std::nullopt;
    }
    auto scalar = [&](const gguf::Value& x) -> uint64_t {
        if (!x.is_integer()) key_error(file, key, "must be an integer");
        const int64_t s = x.as_i64();
        if (s < 0 || s > std::numeric_limits<uint32_t>::max())
            key_error(file, key, "is out of range (" + std::to_string(s) + ")");
        return static_cast<uint64_t>(s);
    };
    if (v->type() != gguf::ValueType::ARRAY) return scalar(*v);
    const gguf::Array& a = v->as_array();
    if (a.empty()) key_error(file, key, "is an empty array");
    const uint64_t first = scalar(a.front());
    for (const gguf::Value item : a)
        if (scalar(item) != first) key_error(file, key, "differs between layers (unsupported)");
    return first;
}

// The most any count or width of the model may be (layers, heads, experts, ranks, widths,
// vocabulary): 2^20, 4 to 100 times what real models use, so that a product of three of them
// stays far inside int64 and nothing is sized from a number no file could back.
constexpr uint64_t kMaxCount = uint64_t(1) << 20;

uint32_t u32_key(const gguf::Reader& file, const std::string& key, uint32_t min = 0,
                 uint64_t max = kMaxCount) {
    const uint64_t v = *count_key(file, key, true);
    if (v < min)
        key_error(file, key,
                  "is " + std::to_string(v) + ", must be at least " + std::to_string(min));
    if (v > max)
        key_error(file, key,
                  "is " + std::to_string(v) + ", more than the " + std::to_string(max) +
                      " any deepseek2 model could use");
    return static_cast<uint32_t>(v);
}

// An optional count (0 when absent), bounded like u32_key's.
uint32_t optional_count(const gguf::Reader& file, const std::string& key) {
    const uint64_t v = count_key(file, key, false).value_or(0);
    if (v > kMaxCount)
        key_error(file, key,
                  "is " + std::to_string(v) + ", more than the " + std::to_string(kMaxCount) +
                      " any deepseek2 model could use");
    return static_cast<uint32_t>(v);
}

// 1 + the largest N of the file's "blk.N." tensors (0 when it has none).
uint64_t blocks_in_tensors(const gguf::Reader& file) {
    uint64_t blocks = 0;
    for (const gguf::TensorInfo& t : file.tensors()) {
        if (t.name.compare(0, 4, "blk.") != 0) continue;
        uint64_t n = 0;
        size_t i = 4;
        while (i < t.name.size() && t.name[i] >= '0' && t.name[i] <= '9' && n <= kMaxCount)
            n = n * 10 + uint64_t(t.name[i++] - '0');
        if (i > 4 && i < t.name.size() && t.name[i] == '.') blocks = std::max(blocks, n + 1);
    }
    return blocks;
}

float float_key(const gguf::Reader& file, const std::string& key, std::optional<float> fallback) {
    const gguf::Value* v = file.find(key);
    if (v == nullptr) {
        if (!fallback) key_error(file, key, "is missing (the deepseek2 graph needs it)");
        return *fallback;
    }
    if (!v->is_float() && !v->is_integer()) key_error(file, key, "must be a number");
    const double d = v->as_f64();
    if (!std::isfinite(d)) key_error(file, key, "is not finite");
    return static_cast<float>(d);
}

bool is_weight_type(int32_t type) {
    return sdk::is_float_type(type) || quants::can_dequantize(type);
}

std::string shape_str(std::span<const int64_t> ne) {
    std::string s = "{";
    for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "}";
}

// Row r of a packed tensor of `type` with rows of n values, as floats.
void row_f32(int32_t type, const void* base, int64_t n, int64_t r, float* out) {
    const auto* row = static_cast<const uint8_t*>(base) + r * quants::row_size(type, n);
    quants::dequantize_row(type, row, out, n);
}

// What a derived attention tensor is stored as: F32/BF16 as the source, Q8_0 for quantized
// sources whose rows hold whole Q8_0 blocks, F32 otherwise. Never F16 (DEEPSEEK2.md section 7).
int32_t derived_type(int32_t source_type, int64_t row) {
    if (source_type == SY_TYPE_BF16) return SY_TYPE_BF16;
    if (source_type == SY_TYPE_F32 || source_type == SY_TYPE_F16) return SY_TYPE_F32;
    return row % 32 == 0 ? SY_TYPE_Q8_0 : SY_TYPE_F32;
}

}  // namespace

Deepseek2HParams Deepseek2HParams::from_gguf(const gguf::Reader& file) {
    const gguf::Value* arch = file.find("general.architecture");
    if (arch == nullptr || arch->type() != gguf::ValueType::STRING)
        key_error(file, "general.architecture", "is missing or not a string");
    if (arch->as_string() != "deepseek2")
        key_error(file, "general.architecture",
                  "is '" + arch->as_string() + "'; this graph runs 'deepseek2' models");

    Deepseek2HParams hp;
    hp.n_layer = u32_key(file, kArch + "block_count", 1);
    hp.n_nextn = optional_count(file, kArch + "nextn_predict_layers");
    if (hp.n_nextn >= hp.n_layer)
        key_error(file, kArch + "nextn_predict_layers",
                  "(" + std::to_string(hp.n_nextn) + ") leaves none of the " +
                      std::to_string(hp.n_layer) + " blocks (block_count) to run");
    hp.n_layer -= hp.n_nextn;
    // Every block that runs has tensors; checked before anything is sized per block.
    if (const uint64_t present = blocks_in_tensors(file); hp.n_layer > present)
        key_error(file, kArch + "block_count",
                  "is " + std::to_string(hp.n_layer + hp.n_nextn) + " (" +
                      std::to_string(hp.n_layer) + " to run), but the file's tensors describe " +
                      (present == 0 ? std::string("no blocks")
                                    : "blocks 0-" + std::to_string(present - 1) + " only"));
    // Any u32: a context is sized only when asked for (-c 0), after its memory is checked.
    hp.n_ctx_train = u32_key(file, kArch + "context_length", 1, UINT32_MAX);
    hp.n_embd = u32_key(file, kArch + "embedding_length", 1);
    hp.n_ff = u32_key(file, kArch + "feed_forward_length", 0);
    hp.n_head = u32_key(file, kArch + "attention.head_count", 1);
    hp.q_lora_rank = optional_count(file, kArch + "attention.q_lora_rank");
    hp.kv_lora_rank = u32_key(file, kArch + "attention.kv_lora_rank", 1);
    hp.qk_rope = u32_key(file, kArch + "rope.dimension_count", 2);
    if (hp.qk_rope % 2 != 0) key_error(file, kArch + "rope.dimension_count", "must be even");
    // llama.cpp's MLA files state the latent widths in key/value_length and the per-head ones
    // in key_length_mla / value_length_mla.
    const bool mainline_mla = file.find(kArch + "attention.key_length_mla") != nullptr;
    const std::string key_len =
        kArch + (mainline_mla ? "attention.key_length_mla" : "attention.key_length");
    const std::string value_len =
        kArch + (mainline_mla ? "attention.value_length_mla" : "attention.value_length");
    const uint32_t qk_head = u32_key(file, key_len, 1);
    if (qk_head <= hp.qk_rope)
        key_error(file, key_len,
                  "is " + std::to_string(qk_head) + ", not more than rope.dimension_count " +
                      std::to_string(hp.qk_rope));
    hp.qk_nope = qk_head - hp.qk_rope;
    hp.v_head = u32_key(file, value_len, 1);
    if (!mainline_mla) {
        const uint32_t kv_heads = u32_key(file, kArch + "attention.head_count_kv", 1);
        if (kv_heads == 1 && hp.n_head > 1 && qk_head == hp.kv_lora_rank + hp.qk_rope)
            key_error(file, kArch + "attention.key_length_mla",
                      "is missing: head_count_kv 1 and key_length " + std::to_string(qk_head) +
                          " describe llama.cpp's MLA layout, which also needs the per-head "
                          "widths");
    }
    hp.n_dense_lead = u32_key(file, kArch + "leading_dense_block_count", 0);
    hp.n_dense_lead = std::min(hp.n_dense_lead, hp.n_layer);
    const bool has_moe = hp.n_dense_lead < hp.n_layer;
    hp.n_expert = u32_key(file, kArch + "expert_count", has_moe ? 1 : 0);
    hp.n_expert_used = u32_key(file, kArch + "expert_used_count", has_moe ? 1 : 0);
    if (hp.n_expert_used > hp.n_expert)
        key_error(file, kArch + "expert_used_count",
                  "is " + std::to_string(hp.n_expert_used) + ", more than expert_count " +
                      std::to_string(hp.n_expert));
    hp.n_expert_shared = u32_key(file, kArch + "expert_shared_count", 0);
    hp.n_ff_exp = u32_key(file, kArch + "expert_feed_forward_length", has_moe ? 1 : 0);
    if (hp.n_dense_lead > 0 && hp.n_ff == 0)
        key_error(file, kArch + "feed_forward_length", "is 0 but the model has dense blocks");
    hp.rms_eps = float_key(file, kArch + "attention.layer_norm_rms_epsilon", std::nullopt);
    if (!(hp.rms_eps > 0))
        key_error(file, kArch + "attention.layer_norm_rms_epsilon", "must be positive");
    hp.rope_freq_base = float_key(file, kArch + "rope.freq_base", 10000.0f);
    if (!(hp.rope_freq_base > 0)) key_error(file, kArch + "rope.freq_base", "must be positive");

    std::string scaling = "none";
    if (const gguf::Value* v = file.find(kArch + "rope.scaling.type")) {
        if (v->type() != gguf::ValueType::STRING)
            key_error(file, kArch + "rope.scaling.type", "must be a string");
        scaling = v->as_string();
    }
    if (scaling == "yarn") {
        const float factor = float_key(file, kArch + "rope.scaling.factor", std::nullopt);
        if (!(factor >= 1.0f)) key_error(file, kArch + "rope.scaling.factor", "must be at least 1");
        hp.rope_freq_scale = 1.0f / factor;
        hp.yarn = true;
        hp.yarn_orig_ctx =
            u32_key(file, kArch + "rope.scaling.original_context_length", 1, UINT32_MAX);
        hp.yarn_log_mul = float_key(file, kArch + "rope.scaling.yarn_log_multiplier", 0.0f);
    } else if (scaling == "linear") {
        const float factor = float_key(file, kArch + "rope.scaling.factor", std::nullopt);
        if (!(factor > 0)) key_error(file, kArch + "rope.scaling.factor", "must be positive");
        hp.rope_freq_scale = 1.0f / factor;
    } else if (scaling != "none") {
        key_error(file, kArch + "rope.scaling.type",
                  "is '" + scaling + "'; expected yarn, linear or none");
    }

    hp.expert_weights_scale = float_key(file, kArch + "expert_weights_scale", 1.0f);
    if (const gguf::Value* v = file.find(kArch + "expert_weights_norm")) {
        if (v->type() != gguf::ValueType::BOOL)
            key_error(file, kArch + "expert_weights_norm", "must be a bool");
        hp.expert_weights_norm = v->as_bool();
    }
    // Files from before the key (V2, V2.5) route with softmax.
    hp.gating_func =
        static_cast<uint32_t>(count_key(file, kArch + "expert_gating_func", false).value_or(1));
    if (hp.gating_func != 1 && hp.gating_func != 2)
        key_error(file, kArch + "expert_gating_func",
                  "is " + std::to_string(hp.gating_func) + "; expected 1 (softmax) or 2 (sigmoid)");
    hp.expert_group_count = optional_count(file, kArch + "expert_group_count");
    hp.expert_group_used = optional_count(file, kArch + "expert_group_used_count");
    if (hp.expert_group_count > 1) {
        if (hp.n_expert % hp.expert_group_count != 0)
            key_error(file, kArch + "expert_group_count",
                      "(" + std::to_string(hp.expert_group_count) +
                          ") does not divide expert_count " + std::to_string(hp.n_expert));
        if (hp.expert_group_used < 1 || hp.expert_group_used > hp.expert_group_count)
            key_error(file, kArch + "expert_group_used_count",
                      "must be in [1, expert_group_count]");
        if (hp.n_expert_used > hp.expert_group_used * (hp.n_expert / hp.expert_group_count))
            key_error(file, kArch + "expert_group_used_count",
                      "leaves fewer experts than expert_used_count");
    }

    const gguf::TensorInfo* embd = file.tensor("token_embd.weight");
    if (const gguf::Value* v = file.find(kArch + "vocab_size")) {
        hp.n_vocab = u32_key(file, kArch + "vocab_size", 1);
        (void)v;
    } else if (embd != nullptr) {
        if (uint64_t(embd->ne[1]) > kMaxCount)
            throw gguf::FormatError(file_name(file) + ": tensor 'token_embd.weight' has " +
                                    std::to_string(embd->ne[1]) +
                                    " rows, more vocabulary than any deepseek2 model could use");
        hp.n_vocab = static_cast<uint32_t>(embd->ne[1]);
    } else {
        key_error(file, kArch + "vocab_size", "is missing and there is no token_embd.weight");
    }
    return hp;
}

float Deepseek2HParams::kq_scale() const {
    const double mscale =
        yarn ? 1.0 + double(yarn_log_mul) * std::log(1.0 / double(rope_freq_scale)) : 1.0;
    return static_cast<float>(mscale * mscale / std::sqrt(double(qk_head())));
}

float Deepseek2HParams::rope_attn_factor() const {
    if (!yarn) return 1.0f;
    return static_cast<float>(1.0 / (1.0 + 0.1 * std::log(1.0 / double(rope_freq_scale))));
}

void validate(const ContextOptions& o, const Deepseek2HParams& hp) {
    if (o.mla < 0 || o.mla > 3)
        throw Error("--mla " + std::to_string(o.mla) + ": expected 0, 1, 2 or 3");
    if (o.fused_moe < -1 || o.fused_moe > 1)
        throw Error("--fused-moe " + std::to_string(o.fused_moe) + ": expected 0 or 1");
    if (o.flash_attn < -1 || o.flash_attn > 1)
        throw Error("--flash-attn " + std::to_string(o.flash_attn) + ": expected on, off or auto");
    if (o.attn_max_bytes < 0)
        throw Error("-amb: the attention step limit is negative (" +
                    std::to_string(o.attn_max_bytes) + " bytes); expected 0 (no limit) or more");
    for (auto [flag, type] : {std::pair{"-ctk", o.cache_type_k}, {"-ctv", o.cache_type_v}}) {
        if (!sdk::is_float_type(type) && type != SY_TYPE_Q8_0 &&
            !(type == SY_TYPE_Q8_KV && flag == std::string_view("-ctk")))
            throw Error(std::string(flag) + " " + sy_dtype_info(type).name +
                        ": the KV cache holds f32, f16, bf16 or q8_0" +
                        (type == SY_TYPE_Q8_KV ? " (q8_KV is a K cache type, as in ik_llama.cpp)"
                                               : " (and q8_KV for -ctk)"));
    }
    // q8_KV: one scale per cache row, so a row is written whole; here the rows are the latent
    // cache's [k_rope | c_kv], which --mla 0 (per-head K rows) does not have.
    if (o.cache_type_k == SY_TYPE_Q8_KV && o.mla == 0)
        throw Error(
            "-ctk q8_KV: a row-scaled cache of the latents, for --mla 1, 2 or 3; with --mla 0 "
            "use -ctk q8_0");
    if (o.cache_type_k == SY_TYPE_Q8_KV && hp.latent_width() % SY_QK8_0 != 0)
        throw Error("-ctk q8_KV: the model's latent rows (kv_lora_rank + qk_rope_head_dim = " +
                    std::to_string(hp.latent_width()) + ") are not a multiple of 32");
    // A q8_0 cache stores each part of a row (per head nope | rope, or rope | latent) in whole
    // blocks of 32; the V cache of -mla 1 is transposed (one element per row per token).
    const auto check_blocks = [&](const char* flag,
                                  std::initializer_list<std::pair<const char*, uint32_t>> dims) {
        for (auto [key, n] : dims)
            if (n % SY_QK8_0 != 0)
                throw Error(std::string(flag) + " q8_0: the model's " + key + " (" +
                            std::to_string(n) + ") is not a multiple of the q8_0 block (32)");
    };
    if (o.cache_type_k == SY_TYPE_Q8_0) {
        if (o.mla == 0)
            check_blocks("-ctk",
                         {{"qk_nope_head_dim", hp.qk_nope}, {"qk_rope_head_dim", hp.qk_rope}});
        else
            check_blocks("-ctk",
                         {{"kv_lora_rank", hp.kv_lora_rank}, {"qk_rope_head_dim", hp.qk_rope}});
    }
    if (o.cache_type_v == SY_TYPE_Q8_0) {
        if (o.mla == 1)
            throw Error(
                "-ctv q8_0: the V cache of --mla 1 is a transposed copy, which cannot be "
                "stored in blocks; use --mla 2 or 3 (no V cache) or -ctv f16");
        if (o.mla == 0) check_blocks("-ctv", {{"v_head_dim", hp.v_head}});
    }
    if (o.n_ctx < 0) throw Error("-c " + std::to_string(o.n_ctx) + ": must be positive");
    if (o.n_ubatch < 1) throw Error("-ub " + std::to_string(o.n_ubatch) + ": must be positive");
    if (o.ser_min_experts < 0 ||
        (o.ser_min_experts > 0 && !(o.ser_threshold >= 0 && std::isfinite(o.ser_threshold))))
        throw Error("-ser: expected K,t with K >= 1 and a finite t >= 0");
    if (o.ser_min_experts > 0 && uint32_t(o.ser_min_experts) > hp.n_expert_used)
        throw Error("-ser " + std::to_string(o.ser_min_experts) + ": more than the model's " +
                    std::to_string(hp.n_expert_used) + " experts per token");
    if (o.expert_parallel < 1 ||
        (o.expert_parallel > 1 && uint32_t(o.expert_parallel) > hp.n_expert))
        throw Error("--expert-parallel " + std::to_string(o.expert_parallel) +
                    ": expected 1 to the model's " + std::to_string(hp.n_expert) +
                    " routed experts");
}

// ---- weights ---------------------------------------------------------------------------------

WeightRef Deepseek2Model::file_weight(const std::string& name, std::initializer_list<int64_t> shape,
                                      bool required) const {
    const gguf::TensorInfo* t = file_.tensor(name);
    if (t == nullptr) {
        if (required)
            throw gguf::FormatError(file_name(file_) + ": tensor '" + name +
                                    "' is missing (the deepseek2 graph needs it)");
        return {};
    }
    std::vector<int64_t> want(shape);
    std::vector<int64_t> have(t->ne, t->ne + t->n_dims);
    while (want.size() > 1 && want.back() == 1) want.pop_back();
    while (have.size() > 1 && have.back() == 1) have.pop_back();
    if (want != have)
        throw gguf::FormatError(file_name(file_) + ": tensor '" + name + "' has shape " +
                                shape_str(have) + ", expected " + shape_str(want) +
                                " from the metadata");
    int32_t type = t->type;
    const uint8_t* data = t->data;
    if (quants::interleaved_type(type) != nullptr) {  // its base type's rows, once
        auto it = deinterleaved_.find(t);
        if (it == deinterleaved_.end())
            it = deinterleaved_
                     .emplace(
                         t, deinterleave_tensor(
                                file_, *t, int(std::max(1u, std::thread::hardware_concurrency()))))
                     .first;
        type = it->second.type;
        data = it->second.data;
    }
    if (!is_weight_type(type))
        throw gguf::FormatError(file_name(file_) + ": tensor '" + name + "' has type " +
                                sy_dtype_info(type).name + ", which no op computes on");
    WeightRef w;
    w.name = name;
    w.type = type;
    w.base_shape = Shape{};
    for (size_t d = 0; d < want.size(); ++d) w.base_shape[int(d)] = want[d];
    w.data = data;
    return w;
}

Deepseek2Model::Deepseek2Model(gguf::Reader file, const ContextOptions& options)
    : file_(std::move(file)), hp_(Deepseek2HParams::from_gguf(file_)), options_(options) {
    if (options_.n_ctx == 0) options_.n_ctx = std::min<int64_t>(4096, hp_.n_ctx_train);
    validate(options_, hp_);
    const int64_t embd = hp_.n_embd, heads = hp_.n_head, qk = hp_.qk_head(), kvl = hp_.kv_lora_rank,
                  rope = hp_.qk_rope, vh = hp_.v_head;
    token_embd_ = file_weight("token_embd.weight", {embd, hp_.n_vocab});
    output_norm_ = file_weight("output_norm.weight", {embd});
    output_ = file_weight("output.weight", {embd, hp_.n_vocab});
    expert_ids_.resize(hp_.n_expert);
    std::iota(expert_ids_.begin(), expert_ids_.end(), 0);
    make_part_tables();
    layers_.resize(hp_.n_layer);
    for (uint32_t il = 0; il < hp_.n_layer; ++il) {
        Deepseek2Layer& l = layers_[il];
        const std::string p = "blk." + std::to_string(il) + ".";
        l.attn_norm = file_weight(p + "attn_norm.weight", {embd});
        if (hp_.q_lora_rank > 0) {
            l.q_a = file_weight(p + "attn_q_a.weight", {embd, hp_.q_lora_rank});
            l.q_a_norm = file_weight(p + "attn_q_a_norm.weight", {hp_.q_lora_rank});
            l.q_b = file_weight(p + "attn_q_b.weight", {hp_.q_lora_rank, heads * qk});
        } else {
            l.q = file_weight(p + "attn_q.weight", {embd, heads * qk});
        }
        l.kv_a_mqa = file_weight(p + "attn_kv_a_mqa.weight", {embd, kvl + rope});
        l.kv_a_norm = file_weight(p + "attn_kv_a_norm.weight", {kvl});
        derive_attention(l, il);
        l.attn_output = file_weight(p + "attn_output.weight", {heads * vh, embd});
        l.ffn_norm = file_weight(p + "ffn_norm.weight", {embd});
        l.dense = il < hp_.n_dense_lead;
        if (l.dense) {
            l.ffn_gate = file_weight(p + "ffn_gate.weight", {embd, hp_.n_ff});
            l.ffn_up = file_weight(p + "ffn_up.weight", {embd, hp_.n_ff});
            l.ffn_down = file_weight(p + "ffn_down.weight", {hp_.n_ff, embd});
            continue;
        }
        const int64_t ne = hp_.n_expert, ffe = hp_.n_ff_exp;
        l.gate_inp = file_weight(p + "ffn_gate_inp.weight", {embd, ne});
        l.exp_probs_b = file_weight(p + "exp_probs_b.bias", {ne}, false);
        if (l.exp_probs_b.present() && l.exp_probs_b.type != SY_TYPE_F32)
            throw gguf::FormatError(file_name(file_) + ": tensor '" + l.exp_probs_b.name +
                                    "' must be f32");
        l.gate_exps = file_weight(p + "ffn_gate_exps.weight", {embd, ffe, ne});
        l.up_exps = file_weight(p + "ffn_up_exps.weight", {embd, ffe, ne});
        l.down_exps = file_weight(p + "ffn_down_exps.weight", {ffe, embd, ne});
        if (l.gate_exps.type != l.up_exps.type)
            throw gguf::FormatError(file_name(file_) + ": " + l.gate_exps.name + " and " +
                                    l.up_exps.name + " have different types");
        if (hp_.n_expert_shared > 0) {
            const int64_t ffs = ffe * hp_.n_expert_shared;
            l.gate_shexp = file_weight(p + "ffn_gate_shexp.weight", {embd, ffs});
            l.up_shexp = file_weight(p + "ffn_up_shexp.weight", {embd, ffs});
            l.down_shexp = file_weight(p + "ffn_down_shexp.weight", {ffs, embd});
        }
    }
}

// --expert-parallel N: per part r, global expert id -> the part's own id (SY_ID_NONE for the
// other parts' experts) and 1 / 0 for "this part's"; per token t of a graph, the row pair
// (SY_ID_NONE, t) and 0.5, from which the graph picks the tokens routed to a part.
void Deepseek2Model::make_part_tables() {
    const int n = options_.expert_parallel;
    if (n <= 1) return;
    const int64_t E = hp_.n_expert;
    part_ids_.assign(size_t(n * E), SY_ID_NONE);
    part_local_.assign(size_t(n * E), 0.0f);
    for (int r = 0; r < n; ++r) {
        const ExpertPart p = expert_part(r);
        for (int64_t e = p.first; e < p.first + p.count; ++e) {
            part_ids_[size_t(r * E + e)] = int32_t(e - p.first);
            part_local_[size_t(r * E + e)] = 1.0f;
        }
    }
    const int64_t T = options_.n_ubatch;
    token_rows_.resize(size_t(2 * T));
    for (int64_t t = 0; t < T; ++t) {
        token_rows_[size_t(2 * t)] = SY_ID_NONE;
        token_rows_[size_t(2 * t + 1)] = int32_t(t);
    }
    halves_.assign(size_t(T), 0.5f);
}

Deepseek2Model::ExpertPart Deepseek2Model::expert_part(int r) const {
    const int64_t E = hp_.n_expert, n = std::max(1, options_.expert_parallel);
    const int64_t first = E * r / n, end = E * (r + 1) / n;
    return {first, end - first};
}

// attn_kv_b, attn_k_b, attn_v_b: take what the file has, view attn_v_b into attn_kv_b when the
// file has only that, and derive the rest.
void Deepseek2Model::derive_attention(Deepseek2Layer& l, uint32_t il) {
    const int64_t heads = hp_.n_head, nope = hp_.qk_nope, kvl = hp_.kv_lora_rank, vh = hp_.v_head;
    const std::string p = "blk." + std::to_string(il) + ".";
    const gguf::TensorInfo* kv_b_info = file_.tensor(p + "attn_kv_b.weight");
    const gguf::TensorInfo* k_b_info = file_.tensor(p + "attn_k_b.weight");
    const gguf::TensorInfo* v_b_info = file_.tensor(p + "attn_v_b.weight");
    const bool need_kv_b = options_.mla == 0 || options_.mla == 3;
    const bool need_split = options_.mla != 0;

    if (kv_b_info != nullptr)
        l.kv_b = file_weight(p + "attn_kv_b.weight", {kvl, heads * (nope + vh)});
    if (k_b_info != nullptr && v_b_info != nullptr) {
        // ik_llama.cpp 2-D {nope, heads * kvl} or llama.cpp 3-D {nope, kvl, heads}: same bytes.
        const bool three_d = k_b_info->n_dims == 3;
        l.k_b = three_d ? file_weight(p + "attn_k_b.weight", {nope, kvl, heads})
                        : file_weight(p + "attn_k_b.weight", {nope, heads * kvl});
        l.v_b = v_b_info->n_dims == 3 ? file_weight(p + "attn_v_b.weight", {kvl, vh, heads})
                                      : file_weight(p + "attn_v_b.weight", {kvl, heads * vh});
        l.k_b.viewed = true;
        l.k_b.shape = Shape{nope, kvl, heads};
        l.k_b.strides = packed_strides(static_cast<sy_dtype>(l.k_b.type), l.k_b.shape);
        l.v_b.viewed = true;
        l.v_b.shape = Shape{kvl, vh, heads};
        l.v_b.strides = packed_strides(static_cast<sy_dtype>(l.v_b.type), l.v_b.shape);
    } else if (k_b_info != nullptr || v_b_info != nullptr) {
        if (kv_b_info == nullptr)
            throw gguf::FormatError(file_name(file_) + ": layer " + std::to_string(il) + " has " +
                                    (k_b_info ? "attn_k_b" : "attn_v_b") + " without " +
                                    (k_b_info ? "attn_v_b" : "attn_k_b") + " or attn_kv_b");
    }
    if (!l.kv_b.present() && !l.k_b.present())
        throw gguf::FormatError(file_name(file_) + ": tensor '" + p +
                                "attn_kv_b.weight' is missing (and there is no attn_k_b + "
                                "attn_v_b pair to use instead)");

    // The derived tensor `name` of `values`, read from `source`; a NaN or infinity there would
    // leave nothing meaningful to quantize (and no defined int8 to round it to).
    auto store = [&](std::string name, const std::string& source, int32_t type, const Shape& shape,
                     const std::vector<float>& values) {
        const auto bad = std::find_if_not(values.begin(), values.end(),
                                          [](float v) { return std::isfinite(v); });
        if (bad != values.end())
            throw gguf::FormatError(file_name(file_) + ": " + source + " holds " +
                                    (std::isnan(*bad) ? "NaN" : "an infinity") + ", so " + name +
                                    " cannot be derived from it");
        const int64_t row = shape[0], rows = shape.elements() / row;
        const auto size = static_cast<size_t>(quants::row_size(type, row) * rows);
        auto bytes = allocating(name + " (derived)", size,
                                [&] { return std::make_unique<std::vector<std::byte>>(size); });
        quants::quantize_rows(type, values.data(), bytes->data(), rows, row, 1);
        WeightRef w;
        w.name = std::move(name) + " (derived)";
        w.type = type;
        w.base_shape = shape;
        w.data = bytes->data();
        derived_.push_back(std::move(bytes));
        return w;
    };

    if (l.kv_b.present()) {
        // attn_v_b is a view: head h's value rows are rows h*(nope+vh)+nope .. of attn_kv_b.
        const int64_t row_bytes = quants::row_size(l.kv_b.type, kvl);
        if (need_split && !l.v_b.present()) {
            l.v_b = l.kv_b;
            l.v_b.viewed = true;
            l.v_b.shape = Shape{kvl, vh, heads};
            l.v_b.strides = {sy_dtype_info(l.kv_b.type).type_size, row_bytes,
                             (nope + vh) * row_bytes, (nope + vh) * row_bytes * heads};
            l.v_b.offset = static_cast<uint64_t>(nope * row_bytes);
        }
        if (need_split && !l.k_b.present()) {
            // k_b[d, c, h] = kv_b[c, h*(nope+vh) + d]
            std::vector<float> row(static_cast<size_t>(kvl));
            std::vector<float> k_b(static_cast<size_t>(nope * kvl * heads));
            for (int64_t h = 0; h < heads; ++h)
                for (int64_t d = 0; d < nope; ++d) {
                    row_f32(l.kv_b.type, l.kv_b.data, kvl, h * (nope + vh) + d, row.data());
                    for (int64_t c = 0; c < kvl; ++c)
                        k_b[size_t((h * kvl + c) * nope + d)] = row[size_t(c)];
                }
            l.k_b = store(p + "attn_k_b.weight", p + "attn_kv_b.weight",
                          derived_type(l.kv_b.type, nope), Shape{nope, kvl, heads}, k_b);
        }
    } else if (need_kv_b) {
        // kv_b row h*(nope+vh)+d = k_b column (d, ·, h); row h*(nope+vh)+nope+j = v_b row (j, h).
        std::vector<float> kv_b(static_cast<size_t>(kvl * heads * (nope + vh)));
        std::vector<float> row(static_cast<size_t>(std::max(nope, kvl)));
        for (int64_t h = 0; h < heads; ++h) {
            for (int64_t c = 0; c < kvl; ++c) {
                row_f32(l.k_b.type, l.k_b.data, nope, h * kvl + c, row.data());
                for (int64_t d = 0; d < nope; ++d)
                    kv_b[size_t((h * (nope + vh) + d) * kvl + c)] = row[size_t(d)];
            }
            for (int64_t j = 0; j < vh; ++j) {
                row_f32(l.v_b.type, l.v_b.data, kvl, h * vh + j, row.data());
                std::copy_n(row.begin(), kvl, kv_b.begin() + (h * (nope + vh) + nope + j) * kvl);
            }
        }
        l.kv_b = store(p + "attn_kv_b.weight", p + "attn_k_b.weight or " + p + "attn_v_b.weight",
                       derived_type(l.v_b.type, kvl), Shape{kvl, heads * (nope + vh)}, kv_b);
    }
}

uint64_t Deepseek2Model::derived_bytes() const {
    uint64_t n = 0;
    for (const auto& d : derived_) n += d->size();
    return n;
}

uint64_t Deepseek2Model::weight_bytes_per_token() const {
    auto bytes = [](const WeightRef& w) -> uint64_t {
        if (!w.present()) return 0;
        const Shape& s = w.viewed ? w.shape : w.base_shape;
        return static_cast<uint64_t>(quants::row_size(w.type, s[0]) * (s.elements() / s[0]));
    };
    const int mla = options_.mla;
    uint64_t n = bytes(output_norm_) + bytes(output_) +
                 static_cast<uint64_t>(quants::row_size(token_embd_.type, hp_.n_embd));
    for (const Deepseek2Layer& l : layers_) {
        n += bytes(l.attn_norm) + bytes(l.q_a) + bytes(l.q_a_norm) + bytes(l.q_b) + bytes(l.q) +
             bytes(l.kv_a_mqa) + bytes(l.kv_a_norm) + bytes(l.attn_output) + bytes(l.ffn_norm);
        n += mla == 0 ? bytes(l.kv_b) : bytes(l.k_b) + bytes(l.v_b);
        if (l.dense) {
            n += bytes(l.ffn_gate) + bytes(l.ffn_up) + bytes(l.ffn_down);
            continue;
        }
        n += bytes(l.gate_inp) + bytes(l.exp_probs_b) + bytes(l.gate_shexp) + bytes(l.up_shexp) +
             bytes(l.down_shexp);
        const uint64_t experts = bytes(l.gate_exps) + bytes(l.up_exps) + bytes(l.down_exps);
        n += experts / hp_.n_expert * hp_.n_expert_used;
    }
    return n;
}

}  // namespace sy::llm
