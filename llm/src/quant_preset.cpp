// llama-quantize's mixes: the rules of llama.cpp's llama_tensor_get_type (src/llama-quant.cpp),
// restated for the tensors a llama.cpp-style model has (quant_preset.hpp).
#include "switchyard/llm/quant_preset.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "quant_preset_ik.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/dtype.h"

namespace sy::llm {
namespace {

using F = FileType;
using detail::any_of, detail::block_of, detail::has, detail::use_more_bits;

constexpr QuantPreset kPresets[] = {
    {"Q2_K", F::kMostlyQ2_K, SY_TYPE_Q2_K, false},
    {"Q2_K_S", F::kMostlyQ2_K_S, SY_TYPE_Q2_K, true},
    {"Q3_K_S", F::kMostlyQ3_K_S, SY_TYPE_Q3_K, false},
    {"Q3_K_M", F::kMostlyQ3_K_M, SY_TYPE_Q3_K, false},
    {"Q3_K_L", F::kMostlyQ3_K_L, SY_TYPE_Q3_K, false},
    {"Q4_K_S", F::kMostlyQ4_K_S, SY_TYPE_Q4_K, false},
    {"Q4_K_M", F::kMostlyQ4_K_M, SY_TYPE_Q4_K, false},
    {"Q5_K_S", F::kMostlyQ5_K_S, SY_TYPE_Q5_K, false},
    {"Q5_K_M", F::kMostlyQ5_K_M, SY_TYPE_Q5_K, false},
    {"Q6_K", F::kMostlyQ6_K, SY_TYPE_Q6_K, false},
    {"IQ1_S", F::kMostlyIQ1_S, SY_TYPE_IQ1_S, true},
    {"IQ1_M", F::kMostlyIQ1_M, SY_TYPE_IQ1_M, true},
    {"IQ2_XXS", F::kMostlyIQ2_XXS, SY_TYPE_IQ2_XXS, true},
    {"IQ2_XS", F::kMostlyIQ2_XS, SY_TYPE_IQ2_XS, true},
    {"IQ2_S", F::kMostlyIQ2_S, SY_TYPE_IQ2_XS, true},
    {"IQ2_M", F::kMostlyIQ2_M, SY_TYPE_IQ2_S, false},
    {"IQ3_XXS", F::kMostlyIQ3_XXS, SY_TYPE_IQ3_XXS, false},
    {"IQ3_XS", F::kMostlyIQ3_XS, SY_TYPE_IQ3_S, false},
    {"IQ3_S", F::kMostlyIQ3_S, SY_TYPE_IQ3_S, false},
    {"IQ3_M", F::kMostlyIQ3_M, SY_TYPE_IQ3_S, false},
    {"IQ4_NL", F::kMostlyIQ4_NL, SY_TYPE_IQ4_NL, false},
    {"IQ4_XS", F::kMostlyIQ4_XS, SY_TYPE_IQ4_XS, false},
    // ik_llama.cpp's (docs/ik-presets.md); the _R4 ones' base types are ik's interleaved ids.
    {"Q6_0", F::kMostlyQ6_0, SY_TYPE_Q6_0, false, true},
    {"IQ2_K", F::kMostlyIQ2_K, SY_TYPE_IQ2_K, false, true},
    {"IQ3_K", F::kMostlyIQ3_K, SY_TYPE_IQ3_K, false, true},
    {"IQ4_K", F::kMostlyIQ4_K, SY_TYPE_IQ4_K, false, true},
    {"IQ5_K", F::kMostlyIQ5_K, SY_TYPE_IQ5_K, false, true},
    {"IQ6_K", F::kMostlyIQ6_K, SY_TYPE_IQ6_K, false, true},
    {"IQ4_KS", F::kMostlyIQ4_KS, SY_TYPE_IQ4_KS, false, true},
    {"IQ3_KL", F::kMostlyIQ3_KL, SY_TYPE_IQ3_K, false, true},
    {"IQ2_KS", F::kMostlyIQ2_KS, SY_TYPE_IQ2_KS, false, true},
    {"IQ4_KSS", F::kMostlyIQ4_KSS, SY_TYPE_IQ4_KSS, false, true},
    {"IQ5_KS", F::kMostlyIQ5_KS, SY_TYPE_IQ5_KS, false, true},
    {"IQ2_KT", F::kMostlyIQ2_KT, SY_TYPE_IQ2_KT, false, true},
    {"IQ3_KT", F::kMostlyIQ3_KT, SY_TYPE_IQ3_KT, false, true},
    {"IQ4_KT", F::kMostlyIQ4_KT, SY_TYPE_IQ4_KT, false, true},
    {"IQ3_KS", F::kMostlyIQ3_KS, SY_TYPE_IQ3_KS, false, true},
    {"IQ2_KL", F::kMostlyIQ2_KL, SY_TYPE_IQ2_KL, false, true},
    {"IQ1_KT", F::kMostlyIQ1_KT, SY_TYPE_IQ1_KT, false, true},
    {"Q6_0_R4", F::kMostlyQ6_0_R4, 233, false, true},
    {"IQ2_K_R4", F::kMostlyIQ2_K_R4, 337, false, true},
    {"IQ3_K_R4", F::kMostlyIQ3_K_R4, 338, false, true},
    {"IQ4_K_R4", F::kMostlyIQ4_K_R4, 339, false, true},
    {"IQ5_K_R4", F::kMostlyIQ5_K_R4, 340, false, true},
    {"IQ4_KS_R4", F::kMostlyIQ4_KS_R4, 344, false, true},
    {"IQ5_KS_R4", F::kMostlyIQ5_KS_R4, 352, false, true},
    // ik's repacked forms of llama.cpp's types: ik's rules for them (not llama.cpp's mixes of
    // the same base), their base types the interleaved ids; IQ2_M_R4's is iq2_s_r4, IQ1_M_R4's
    // iq1_m_r4 (whose rows are switchyard's IQ1_M_R4_ROWS), BF16_R16's runs no rules.
    {"Q4_0_R8", F::kMostlyQ4_0_R8, 202, false, true},
    {"Q8_0_R8", F::kMostlyQ8_0_R8, 208, false, true},
    {"Q5_0_R4", F::kMostlyQ5_0_R4, 206, false, true},
    {"Q2_K_R4", F::kMostlyQ2_K_R4, 210, false, true},
    {"Q3_K_R4", F::kMostlyQ3_K_R4, 211, false, true},
    {"Q4_K_R4", F::kMostlyQ4_K_R4, 212, false, true},
    {"Q5_K_R4", F::kMostlyQ5_K_R4, 213, false, true},
    {"Q6_K_R4", F::kMostlyQ6_K_R4, 214, false, true},
    {"IQ2_XXS_R4", F::kMostlyIQ2_XXS_R4, 216, true, true},
    {"IQ2_XS_R4", F::kMostlyIQ2_XS_R4, 217, true, true},
    {"IQ3_XXS_R4", F::kMostlyIQ3_XXS_R4, 218, false, true},
    {"IQ1_S_R4", F::kMostlyIQ1_S_R4, 219, true, true},
    {"IQ4_NL_R4", F::kMostlyIQ4_NL_R4, 220, false, true},
    {"IQ3_S_R4", F::kMostlyIQ3_S_R4, 221, false, true},
    {"IQ2_M_R4", F::kMostlyIQ2_M_R4, 222, false, true},
    {"IQ4_XS_R8", F::kMostlyIQ4_XS_R8, 223, false, true},
    {"IQ1_M_R4", F::kMostlyIQ1_M_R4, 229, true, true},
    {"BF16_R16", F::kMostlyBF16_R16, 230, false, true},
};

enum class Category {
    token_embd,
    attn_v,
    attn_k,
    attn_q,
    attn_output,
    ffn_up,
    ffn_gate,
    ffn_down,
    output,
    other
};

// llama.cpp's tensor_get_category, in its order of tests.
Category category(std::string_view name) {
    if (name == "output.weight") return Category::output;
    if (name == "token_embd.weight") return Category::token_embd;
    if (has(name, "attn_qkv.weight") || has(name, "attn_kv_b.weight") || has(name, "attn_v.weight"))
        return Category::attn_v;
    if (has(name, "attn_k.weight")) return Category::attn_k;
    if (has(name, "attn_q.weight")) return Category::attn_q;
    if (has(name, "attn_output.weight")) return Category::attn_output;
    if (has(name, "ffn_up")) return Category::ffn_up;
    if (has(name, "ffn_gate")) return Category::ffn_gate;
    if (has(name, "ffn_down")) return Category::ffn_down;
    return Category::other;
}

}  // namespace

std::span<const QuantPreset> quant_presets() {
    return kPresets;
}

const QuantPreset* find_quant_preset(std::string_view name) {
    for (const QuantPreset& p : kPresets) {
        if (p.name.size() != name.size()) continue;
        if (std::equal(name.begin(), name.end(), p.name.begin(), [](char a, char b) {
                return std::toupper(static_cast<unsigned char>(a)) == b;
            }))
            return &p;
    }
    return nullptr;
}

std::string quant_preset_names() {
    std::string out;
    for (const QuantPreset& p : kPresets) out += (out.empty() ? "" : ", ") + std::string(p.name);
    return out;
}

MixModel MixModel::from_file(const gguf::Reader& file, bool has_imatrix) {
    MixModel m;
    m.has_imatrix = has_imatrix;
    std::string arch = "deepseek2";
    if (const gguf::Value* a = file.find("general.architecture");
        a && a->type() == gguf::ValueType::STRING)
        arch = a->as_string();
    const auto u32 = [&](const std::string& key, uint64_t fallback) -> uint64_t {
        const gguf::Value* v = file.find(arch + "." + key);
        return v && v->is_integer() ? v->as_u64() : fallback;
    };
    m.n_layer = uint32_t(u32("block_count", 0));
    m.n_expert = uint32_t(u32("expert_count", 0));
    const uint64_t heads = u32("attention.head_count", 1);
    const uint64_t kv_heads = u32("attention.head_count_kv", heads);
    m.n_gqa = kv_heads > 0 ? uint32_t(heads / kv_heads) : 1;
    m.has_output = file.tensor("output.weight") != nullptr;
    for (const gguf::TensorInfo& t : file.tensors())
        if (category(t.name) == Category::attn_v) ++m.n_attention_wv;
    return m;
}

std::vector<size_t> mix_order(std::span<const std::string> names) {
    std::vector<size_t> order(names.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const int la = block_of(names[a]), lb = block_of(names[b]);
        return la != lb ? la < lb : names[a] < names[b];
    });
    return order;
}

int32_t mix_tensor_type(const QuantPreset& preset, const MixModel& model, MixCounters& c,
                        std::string_view name, std::span<const int64_t> ne) {
    if (preset.ik) return detail::ik_mix_tensor_type(preset, model, c, name, ne);
    const F ft = preset.ftype;
    const Category cat = category(name);
    const int n_layer = int(model.n_layer);
    const bool moe8 = model.n_expert == 8;
    int32_t t = preset.base_type;
    // The layer a per-layer rule looks at: with experts, the block in the name (llama.cpp's
    // experts need not be consecutive); else the running counter.
    const auto layer = [&](int counter) {
        if (model.n_expert <= 1) return counter;
        const int l = block_of(name);
        if (l < 0 || l >= n_layer)
            throw Error("quantize mix " + std::string(preset.name) + ": tensor " +
                        std::string(name) + " has no layer number below " +
                        std::to_string(n_layer));
        return l;
    };

    if (cat == Category::output || (!model.has_output && cat == Category::token_embd)) {
        const int64_t block = sy_dtype_info(t).block_size;
        if (ne.empty() || block <= 0 || ne[0] % block != 0)
            t = SY_TYPE_Q8_0;
        else if (any_of(ft, {F::kMostlyIQ2_XXS, F::kMostlyIQ2_XS, F::kMostlyIQ3_XXS,
                             F::kMostlyIQ1_S, F::kMostlyIQ2_S, F::kMostlyIQ2_M, F::kMostlyIQ1_M}))
            t = SY_TYPE_Q5_K;
        else if (t != SY_TYPE_Q8_0)
            t = SY_TYPE_Q6_K;
    } else if (cat == Category::token_embd) {
        if (any_of(ft, {F::kMostlyIQ2_XXS, F::kMostlyIQ2_XS, F::kMostlyIQ1_S, F::kMostlyIQ1_M}))
            t = SY_TYPE_Q2_K;
        else if (any_of(ft, {F::kMostlyIQ2_S, F::kMostlyIQ2_M, F::kMostlyIQ3_XXS}))
            t = SY_TYPE_IQ3_S;
    } else if (any_of(ft, {F::kMostlyIQ2_XXS, F::kMostlyIQ2_XS, F::kMostlyIQ1_S, F::kMostlyIQ2_S,
                           F::kMostlyIQ2_M, F::kMostlyIQ1_M})) {
        const bool iq2_sm = ft == F::kMostlyIQ2_S || ft == F::kMostlyIQ2_M;
        if (cat == Category::attn_v) {
            t = model.n_gqa >= 4 || model.n_expert >= 4 ? SY_TYPE_Q4_K
                : iq2_sm                                ? SY_TYPE_IQ3_S
                                                        : SY_TYPE_Q2_K;
            ++c.i_attention_wv;
        } else if (moe8 && cat == Category::attn_k) {
            t = SY_TYPE_Q4_K;
        } else if (cat == Category::ffn_down) {
            if (c.i_ffn_down < n_layer / 8) t = iq2_sm ? SY_TYPE_IQ3_S : SY_TYPE_Q2_K;
            ++c.i_ffn_down;
        } else if (cat == Category::attn_output) {
            if (moe8)
                t = SY_TYPE_Q5_K;
            else if (ft == F::kMostlyIQ1_S || ft == F::kMostlyIQ1_M)
                t = SY_TYPE_IQ2_XXS;
            else if (iq2_sm)
                t = SY_TYPE_IQ3_S;
        }
    } else if (cat == Category::attn_v) {
        const bool gqa4 = model.n_gqa >= 4;
        if (ft == F::kMostlyQ2_K)
            t = gqa4 ? SY_TYPE_Q4_K : SY_TYPE_Q3_K;
        else if (ft == F::kMostlyQ2_K_S && gqa4)
            t = SY_TYPE_Q4_K;
        else if (ft == F::kMostlyIQ3_XXS)
            t = gqa4 ? SY_TYPE_Q4_K : !model.has_imatrix ? SY_TYPE_IQ3_S : SY_TYPE_IQ3_XXS;
        else if ((ft == F::kMostlyIQ3_XS || ft == F::kMostlyIQ3_S) && gqa4)
            t = SY_TYPE_Q4_K;
        else if (ft == F::kMostlyIQ3_M)
            t = SY_TYPE_Q4_K;
        else if (ft == F::kMostlyQ3_K_M)
            t = c.i_attention_wv < 2 ? SY_TYPE_Q5_K : SY_TYPE_Q4_K;
        else if (ft == F::kMostlyQ3_K_L)
            t = SY_TYPE_Q5_K;
        else if ((ft == F::kMostlyIQ4_NL || ft == F::kMostlyIQ4_XS) && gqa4)
            t = SY_TYPE_Q5_K;
        else if ((ft == F::kMostlyQ4_K_M || ft == F::kMostlyQ5_K_M) &&
                 use_more_bits(c.i_attention_wv, model.n_attention_wv))
            t = SY_TYPE_Q6_K;
        else if (ft == F::kMostlyQ4_K_S && c.i_attention_wv < 4)
            t = SY_TYPE_Q5_K;
        if (moe8) t = SY_TYPE_Q8_0;
        ++c.i_attention_wv;
    } else if (cat == Category::attn_k) {
        if (moe8)
            t = SY_TYPE_Q8_0;
        else if (ft == F::kMostlyIQ3_XS)
            t = SY_TYPE_IQ3_XXS;
        else if (ft == F::kMostlyIQ3_XXS)
            t = SY_TYPE_IQ2_S;
    } else if (cat == Category::attn_q) {
        if (ft == F::kMostlyIQ3_XS)
            t = SY_TYPE_IQ3_XXS;
        else if (ft == F::kMostlyIQ3_XXS)
            t = SY_TYPE_IQ2_S;
    } else if (cat == Category::ffn_down) {
        const int i = layer(c.i_ffn_down), n = n_layer;
        if (ft == F::kMostlyQ2_K)
            t = SY_TYPE_Q3_K;
        else if (ft == F::kMostlyQ2_K_S) {
            if (i < n / 8) t = SY_TYPE_Q4_K;
        } else if (ft == F::kMostlyIQ3_XXS && !model.has_imatrix)
            t = i < n / 8 ? SY_TYPE_Q4_K : SY_TYPE_Q3_K;
        else if (ft == F::kMostlyQ3_K_M)
            t = i < n / 16 ? SY_TYPE_Q5_K : SY_TYPE_Q4_K;  // (Falcon alone keeps some Q3_K)
        else if (ft == F::kMostlyIQ3_M && (i < n / 8 || (moe8 && use_more_bits(i, n))))
            t = SY_TYPE_Q4_K;
        else if (ft == F::kMostlyQ3_K_L)
            t = SY_TYPE_Q5_K;
        else if (ft == F::kMostlyQ4_K_M) {
            if (use_more_bits(i, n)) t = SY_TYPE_Q6_K;
        } else if (i < n / 8 && (ft == F::kMostlyIQ4_NL || ft == F::kMostlyIQ4_XS) &&
                   !model.has_imatrix)
            t = SY_TYPE_Q5_K;
        else if (ft == F::kMostlyQ5_K_M && use_more_bits(i, n))
            t = SY_TYPE_Q6_K;
        else if (ft == F::kMostlyQ4_K_S && i < n / 8)
            t = SY_TYPE_Q5_K;
        ++c.i_ffn_down;
    } else if (cat == Category::attn_output) {
        if (moe8) {
            if (any_of(ft, {F::kMostlyQ2_K, F::kMostlyIQ3_XS, F::kMostlyIQ3_XXS, F::kMostlyQ3_K_S,
                            F::kMostlyQ3_K_M, F::kMostlyIQ4_NL, F::kMostlyQ4_K_S, F::kMostlyQ4_K_M,
                            F::kMostlyIQ3_S, F::kMostlyIQ3_M, F::kMostlyIQ4_XS}))
                t = SY_TYPE_Q5_K;
        } else if (ft == F::kMostlyQ2_K)
            t = SY_TYPE_Q3_K;
        else if (ft == F::kMostlyIQ3_XXS)
            t = SY_TYPE_IQ3_S;
        else if (ft == F::kMostlyQ3_K_M || ft == F::kMostlyIQ3_M)
            t = SY_TYPE_Q4_K;
        else if (ft == F::kMostlyQ3_K_L)
            t = SY_TYPE_Q5_K;
    } else if (cat == Category::ffn_gate || cat == Category::ffn_up) {
        int& counter = cat == Category::ffn_gate ? c.i_ffn_gate : c.i_ffn_up;
        const int i = layer(counter);
        if (ft == F::kMostlyIQ3_XS && i >= n_layer / 8 && i < 7 * n_layer / 8) t = SY_TYPE_IQ3_XXS;
        ++counter;
    }
    return t;
}

}  // namespace sy::llm
