#include "switchyard/llm/synthetic_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "switchyard/dtype.h"
#include "switchyard/llm/bpe_vocab.hpp"
#include "switchyard/llm/chat_template.hpp"
#include "switchyard/llm/tensor_types.hpp"
#include "switchyard/quants.hpp"

namespace sy::llm {
namespace {

using gguf::Value;
using gguf::ValueType;

uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// The stream of one tensor: depends on the seed and the tensor's name only.
uint64_t tensor_key(uint64_t seed, std::string_view name) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
    for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    return splitmix64(seed ^ splitmix64(h));
}

// A standard-normal-like value for element `index` of a stream: the Irwin-Hall sum of four
// 16-bit uniforms from one counter-based hash (mean 0, variance 1, bounded by ±3.46). Cheap,
// and a pure function of (key, index), so any thread may compute any element.
float unit_normal(uint64_t key, uint64_t index) {
    const uint64_t r = splitmix64(key + index * 0xD1B54A32D192ED03ull);
    const uint32_t sum = static_cast<uint32_t>(r & 0xFFFF) +
                         static_cast<uint32_t>((r >> 16) & 0xFFFF) +
                         static_cast<uint32_t>((r >> 32) & 0xFFFF) + static_cast<uint32_t>(r >> 48);
    constexpr float kMean = 2.0f * 65535.0f;
    constexpr float kInvStd = 1.7320508f / 65535.0f;  // sd of 4 U(0,1) is 1/sqrt(3)
    return (static_cast<float>(sum) - kMean) * kInvStd;
}

int resolve_threads(int threads) {
    if (threads > 0) return threads;
    return std::max(1u, std::thread::hardware_concurrency());
}

Value u32(uint32_t v) {
    return Value::u32(v);
}
Value f32(float v) {
    return Value::f32(v);
}

std::vector<Value> strings(const std::vector<std::string>& items) {
    std::vector<Value> out;
    out.reserve(items.size());
    for (const std::string& s : items) out.push_back(Value::string(s));
    return out;
}

}  // namespace

Deepseek2Config deepseek2_preset(std::string_view preset) {
    Deepseek2Config c;
    // DeepSeek-V2-Lite's widths (DEEPSEEK2.md, Hyperparameters), shared by mini and lite.
    c.n_embd = 2048;
    c.n_ff = 10944;
    c.n_head = 16;
    c.kv_lora_rank = 512;
    c.qk_nope = 128;
    c.qk_rope = 64;
    c.v_head = 128;
    c.n_dense_lead = 1;
    c.n_expert = 64;
    c.n_expert_used = 6;
    c.n_expert_shared = 2;
    c.n_ff_exp = 1408;
    c.expert_weights_scale = 1.0f;
    c.expert_weights_norm = false;
    c.gating_func = 1;
    if (preset == "lite") {
        c.name = "switchyard synthetic DeepSeek-V2-Lite";
        c.n_layer = 27;
        c.n_vocab = 102400;
    } else if (preset == "mini") {
        c.name = "switchyard synthetic deepseek2 mini";
        c.n_layer = 4;
        c.n_vocab = 4096;
        c.q_lora_rank = 1536;  // 4 layers: llama.cpp expects the q LoRA (see header)
    } else if (preset == "tiny") {
        // V3-style routing (sigmoid + exp_probs_b, normalized top-k, scale 2.5) so both routing
        // variants have a file. Most widths are multiples of 256 so K types apply; q_b,
        // kv_b, v_b and attn_output rows (128, 32, 32, 128) exercise the block fallback.
        c.name = "switchyard synthetic deepseek2 tiny";
        c.n_layer = 3;
        c.n_embd = 256;
        c.n_ff = 512;
        c.n_head = 4;
        c.q_lora_rank = 128;
        c.kv_lora_rank = 32;
        c.qk_nope = 32;
        c.qk_rope = 16;
        c.v_head = 32;
        c.n_expert = 8;
        c.n_expert_used = 2;
        c.n_expert_shared = 1;
        c.n_ff_exp = 256;
        c.expert_weights_scale = 2.5f;
        c.expert_weights_norm = true;
        c.gating_func = 2;
        c.n_vocab = 512;
        c.yarn_log_mul = 0.1f;
        c.tokenizer_pre = "deepseek-v3";
    } else {
        throw std::invalid_argument("unknown deepseek2 preset '" + std::string(preset) +
                                    "' (tiny, mini, lite)");
    }
    return c;
}

int64_t PlannedTensor::elements() const {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    return n;
}

uint64_t PlannedTensor::nbytes() const {
    const sy_dtype_traits t = sy_dtype_info(type);
    const int64_t rows = ne.empty() || ne[0] == 0 ? 0 : elements() / ne[0];
    return static_cast<uint64_t>(elements() / t.block_size) * static_cast<uint64_t>(t.type_size) +
           static_cast<uint64_t>(rows) * static_cast<uint64_t>(t.row_meta_size);
}

uint64_t ModelPlan::parameters() const {
    uint64_t n = 0;
    for (const PlannedTensor& t : tensors) n += static_cast<uint64_t>(t.elements());
    return n;
}

uint64_t ModelPlan::data_bytes() const {
    uint64_t n = 0;
    for (const PlannedTensor& t : tensors) n += t.nbytes();
    return n;
}

size_t deepseek2_tensor_count(const Deepseek2Config& cfg, KvLayout layout) {
    const size_t attn = 1 + (cfg.q_lora_rank ? 3 : 1) + 2 + (layout == KvLayout::split ? 2 : 1) +
                        1;              // ... attn_output
    const size_t dense = attn + 1 + 3;  // ffn_norm, gate/up/down
    const size_t moe = attn + 1 + 1 + (cfg.gating_func == 2 ? 1 : 0) + 3 + 3;
    const size_t n_dense = std::min(cfg.n_dense_lead, cfg.n_layer);
    const size_t nextn = moe + 6;  // eh_proj, enorm, hnorm, embed_tokens, shared_head_{head,norm}
    return 3 + n_dense * dense + (cfg.n_layer - n_dense) * moe + cfg.n_nextn * nextn;
}

ModelPlan plan_deepseek2(const Deepseek2Config& c, int32_t type, KvLayout layout) {
    ModelPlan plan;
    const std::string a = "deepseek2.";
    auto kv = [&](std::string key, Value v) {
        plan.metadata.push_back({std::move(key), std::move(v)});
    };
    kv("general.architecture", Value::string("deepseek2"));
    kv("general.name", Value::string(c.name));
    kv("general.file_type", u32(file_type_of(type)));
    kv("general.quantization_version", u32(2));
    kv(a + "block_count", u32(c.n_layer + c.n_nextn));
    if (c.n_nextn > 0) kv(a + "nextn_predict_layers", u32(c.n_nextn));
    kv(a + "context_length", u32(c.n_ctx_train));
    kv(a + "embedding_length", u32(c.n_embd));
    kv(a + "feed_forward_length", u32(c.n_ff));
    kv(a + "attention.head_count", u32(c.n_head));
    kv(a + "attention.head_count_kv", u32(c.n_head));
    kv(a + "attention.key_length", u32(c.qk_nope + c.qk_rope));
    kv(a + "attention.value_length", u32(c.v_head));
    if (c.q_lora_rank) kv(a + "attention.q_lora_rank", u32(c.q_lora_rank));
    kv(a + "attention.kv_lora_rank", u32(c.kv_lora_rank));
    kv(a + "attention.layer_norm_rms_epsilon", f32(c.rms_eps));
    kv(a + "rope.dimension_count", u32(c.qk_rope));
    kv(a + "rope.freq_base", f32(c.rope_freq_base));
    kv(a + "rope.scaling.type", Value::string("yarn"));
    kv(a + "rope.scaling.factor", f32(c.yarn_factor));
    kv(a + "rope.scaling.original_context_length", u32(c.yarn_orig_ctx));
    kv(a + "rope.scaling.yarn_log_multiplier", f32(c.yarn_log_mul));
    kv(a + "leading_dense_block_count", u32(c.n_dense_lead));
    kv(a + "expert_count", u32(c.n_expert));
    kv(a + "expert_used_count", u32(c.n_expert_used));
    kv(a + "expert_shared_count", u32(c.n_expert_shared));
    kv(a + "expert_feed_forward_length", u32(c.n_ff_exp));
    kv(a + "expert_weights_scale", f32(c.expert_weights_scale));
    kv(a + "expert_weights_norm", Value::boolean(c.expert_weights_norm));
    kv(a + "expert_gating_func", u32(c.gating_func));
    kv(a + "vocab_size", u32(c.n_vocab));

    const BpeVocab vocab = build_bpe_vocab(c.n_vocab);
    std::vector<Value> types;
    types.reserve(vocab.token_types.size());
    for (int32_t t : vocab.token_types) types.push_back(Value::i32(t));
    kv("tokenizer.ggml.model", Value::string("gpt2"));
    kv("tokenizer.ggml.pre", Value::string(c.tokenizer_pre));
    kv("tokenizer.ggml.tokens", Value::array(ValueType::STRING, strings(vocab.tokens)));
    kv("tokenizer.ggml.token_type", Value::array(ValueType::I32, std::move(types)));
    kv("tokenizer.ggml.merges", Value::array(ValueType::STRING, strings(vocab.merges)));
    kv("tokenizer.ggml.bos_token_id", u32(vocab.bos_id));
    kv("tokenizer.ggml.eos_token_id", u32(vocab.eos_id));
    kv("tokenizer.ggml.padding_token_id", u32(vocab.eos_id));
    kv("tokenizer.ggml.add_bos_token", Value::boolean(true));
    kv("tokenizer.ggml.add_eos_token", Value::boolean(false));
    kv("tokenizer.chat_template",
       Value::string(chat_template_jinja(
           c.tokenizer_pre == "deepseek-v3" ? ChatTemplate::deepseek3 : ChatTemplate::deepseek2)));

    auto add = [&](std::string name, std::vector<int64_t> ne, Init init, float scale) {
        PlannedTensor t;
        t.type = default_tensor_type(name, ne, type);
        t.requested = type;
        t.name = std::move(name);
        t.ne = std::move(ne);
        t.init = init;
        t.scale = scale;
        plan.tensors.push_back(std::move(t));
        return &plan.tensors.back();
    };
    // Projections N(0, 1/sqrt(n_in)) keep activations at unit scale; norms are gains near 1.
    auto weight = [&](std::string name, std::vector<int64_t> ne) {
        const float scale = 1.0f / std::sqrt(static_cast<float>(ne[0]));
        add(std::move(name), std::move(ne), Init::normal, scale);
    };
    auto norm = [&](std::string name, int64_t n) {
        add(std::move(name), {n}, Init::norm_gain, 0.05f);
    };

    const int64_t embd = c.n_embd, heads = c.n_head, nope = c.qk_nope, rope = c.qk_rope,
                  vh = c.v_head, kvl = c.kv_lora_rank, ql = c.q_lora_rank;
    add("token_embd.weight", {embd, c.n_vocab}, Init::normal, 1.0f);
    for (uint32_t il = 0; il < c.n_layer + c.n_nextn; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        if (il >= c.n_layer) {  // an MTP block: its own input projection and head
            weight(p + "nextn.eh_proj.weight", {2 * embd, embd});
            norm(p + "nextn.enorm.weight", embd);
            norm(p + "nextn.hnorm.weight", embd);
            add(p + "nextn.embed_tokens.weight", {embd, c.n_vocab}, Init::normal, 1.0f);
            norm(p + "nextn.shared_head_norm.weight", embd);
            weight(p + "nextn.shared_head_head.weight", {embd, c.n_vocab});
        }
        norm(p + "attn_norm.weight", embd);
        if (ql) {
            weight(p + "attn_q_a.weight", {embd, ql});
            norm(p + "attn_q_a_norm.weight", ql);
            weight(p + "attn_q_b.weight", {ql, heads * (nope + rope)});
        } else {
            weight(p + "attn_q.weight", {embd, heads * (nope + rope)});
        }
        weight(p + "attn_kv_a_mqa.weight", {embd, kvl + rope});
        norm(p + "attn_kv_a_norm.weight", kvl);
        const std::string kv_b = p + "attn_kv_b.weight";
        if (layout == KvLayout::kv_b) {
            weight(kv_b, {kvl, heads * (nope + vh)});
        } else {
            const float scale = 1.0f / std::sqrt(static_cast<float>(kvl));
            for (auto [name, ne, init] :
                 {std::tuple{p + "attn_k_b.weight", std::vector<int64_t>{nope, heads * kvl},
                             Init::k_b_of_kv_b},
                  std::tuple{p + "attn_v_b.weight", std::vector<int64_t>{kvl, heads * vh},
                             Init::v_b_of_kv_b}}) {
                PlannedTensor* t = add(name, ne, init, scale);
                t->source = kv_b;
                t->qk_nope = nope;
                t->v_head = vh;
                t->kv_lora = kvl;
            }
        }
        weight(p + "attn_output.weight", {heads * vh, embd});
        norm(p + "ffn_norm.weight", embd);
        if (il < c.n_dense_lead) {
            weight(p + "ffn_gate.weight", {embd, c.n_ff});
            weight(p + "ffn_up.weight", {embd, c.n_ff});
            weight(p + "ffn_down.weight", {c.n_ff, embd});
        } else {
            const int64_t ne = c.n_expert, ffe = c.n_ff_exp, ffs = c.n_ff_exp * c.n_expert_shared;
            weight(p + "ffn_gate_inp.weight", {embd, ne});
            if (c.gating_func == 2) add(p + "exp_probs_b.bias", {ne}, Init::normal, 0.01f);
            weight(p + "ffn_gate_exps.weight", {embd, ffe, ne});
            weight(p + "ffn_up_exps.weight", {embd, ffe, ne});
            weight(p + "ffn_down_exps.weight", {ffe, embd, ne});
            weight(p + "ffn_gate_shexp.weight", {embd, ffs});
            weight(p + "ffn_up_shexp.weight", {embd, ffs});
            weight(p + "ffn_down_shexp.weight", {ffs, embd});
        }
    }
    norm("output_norm.weight", embd);
    weight("output.weight", {embd, c.n_vocab});
    return plan;
}

void synthetic_rows(const PlannedTensor& t, uint64_t seed, int64_t row0, int64_t rows, float* out) {
    const int64_t n0 = t.ne[0];
    if (t.init == Init::normal || t.init == Init::norm_gain) {
        const uint64_t key = tensor_key(seed, t.name);
        const float base = t.init == Init::norm_gain ? 1.0f : 0.0f;
        const uint64_t first = static_cast<uint64_t>(row0 * n0);
        for (int64_t i = 0; i < rows * n0; ++i) {
            out[i] = base + t.scale * unit_normal(key, first + static_cast<uint64_t>(i));
        }
        return;
    }
    // attn_kv_b {kv_lora, n_head*(nope+v)}: element (c, h*(nope+v)+j).
    const uint64_t key = tensor_key(seed, t.source);
    const int64_t per_head = t.qk_nope + t.v_head;
    auto kv_b = [&](int64_t c, int64_t kv_row) {
        return t.scale * unit_normal(key, static_cast<uint64_t>(kv_row * t.kv_lora + c));
    };
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t row = row0 + r;
        float* dst = out + r * n0;
        if (t.init == Init::k_b_of_kv_b) {
            // k_b {nope, n_head*kv_lora}: row h*kv_lora + c holds W_UK^h column c.
            const int64_t h = row / t.kv_lora, c = row % t.kv_lora;
            for (int64_t j = 0; j < n0; ++j) dst[j] = kv_b(c, h * per_head + j);
        } else {
            // v_b {kv_lora, n_head*v}: row h*v + j is kv_b's v row j of head h.
            const int64_t h = row / t.v_head, j = row % t.v_head;
            for (int64_t c = 0; c < n0; ++c) dst[c] = kv_b(c, h * per_head + t.qk_nope + j);
        }
    }
}

void write_synthetic_model(const std::filesystem::path& path, const ModelPlan& plan, uint64_t seed,
                           int threads, const std::function<void(const WriteProgress&)>& progress) {
    threads = resolve_threads(threads);
    gguf::Writer writer(path);
    for (const gguf::KeyValue& kv : plan.metadata) writer.add(kv.key, kv.value);
    for (const PlannedTensor& t : plan.tensors) writer.declare_tensor(t.name, t.type, t.ne);
    writer.write_header();

    WriteProgress state;
    state.count = plan.tensors.size();
    state.bytes_total = plan.data_bytes();
    std::vector<uint8_t> bytes;
    std::vector<float> staging;
    for (const PlannedTensor& t : plan.tensors) {
        state.tensor = &t;
        if (progress) progress(state);
        const int64_t n0 = t.ne[0];
        const int64_t rows = t.elements() / n0;
        const uint64_t row_bytes = t.nbytes() / static_cast<uint64_t>(rows);
        bytes.resize(t.nbytes());
        // Rows in chunks of about 4M values: the f32 staging stays small for any tensor.
        const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 22) / n0);
        for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
            const int64_t nr = std::min(chunk, rows - r0);
            float* dst = reinterpret_cast<float*>(bytes.data() + r0 * row_bytes);
            if (t.type != SY_TYPE_F32) {
                staging.resize(static_cast<size_t>(nr * n0));
                dst = staging.data();
            }
            const int workers = static_cast<int>(std::min<int64_t>(threads, nr));
            std::vector<std::thread> pool;
            for (int w = 1; w < workers; ++w) {
                const int64_t a = nr * w / workers, b = nr * (w + 1) / workers;
                pool.emplace_back(
                    [&, a, b] { synthetic_rows(t, seed, r0 + a, b - a, dst + a * n0); });
            }
            synthetic_rows(t, seed, r0, nr / workers, dst);
            for (std::thread& th : pool) th.join();
            if (t.type != SY_TYPE_F32) {
                quants::quantize_rows(t.type, staging.data(), bytes.data() + r0 * row_bytes, nr, n0,
                                      threads);
            }
        }
        writer.write_tensor(bytes);
        state.bytes_done += t.nbytes();
        ++state.index;
    }
    writer.finish();
}

}  // namespace sy::llm
