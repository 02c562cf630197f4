// llama-quantize's quantization mixes ("Q4_K_M", "IQ2_XXS", ...): a file type whose tensors get
// types by name, layer and model shape, chosen as llama.cpp's llama_tensor_get_type chooses
// them (src/llama-quant.cpp), so a file made here matches one made there tensor for tensor
// (before this project's own rules: attn_k_b never below Q8_0, and the block fallback). The
// presets marked `ik` are ik_llama.cpp's own mixes (IQ2_K, IQ4_KS, IQ2_KT, IQ3_KL, IQ4_K_R4
// ... and its repacked forms of llama.cpp's, Q4_K_R4, IQ4_XS_R8, BF16_R16 ...), chosen by ik's
// rules (quant_preset_ik.cpp, docs/ik-presets.md): they categorise names differently from the
// description below, visit tensors in file order and fall back as ik does.
//
// Categories by name: output.weight; token_embd.weight; attn_kv_b / attn_v / attn_qkv (the
// "attn_v-like" ones, counted in load order); attn_k; attn_q (DeepSeek-Lite's plain attn_q);
// attn_output; ffn_down* / ffn_gate* / ffn_up* (dense, routed _exps and shared _shexp alike);
// the rest (attn_q_a, attn_q_b, attn_kv_a_mqa, attn_k_b, attn_v_b) keep the mix's base type.
// A few rules read the model: n_expert >= 4 lifts attn_kv_b to Q4_K in the 1-2 bit mixes,
// n_gqa >= 4 (head_count / head_count_kv: llama.cpp's MLA files store head_count_kv = 1) lifts
// it in the 2-4 bit mixes, and "n_layer / 8" style rules take the layer from the tensor's name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/llm/file_type.hpp"
#include "switchyard/llm/gguf.hpp"

namespace sy::llm {

struct QuantPreset {
    std::string_view name;  // as llama-quantize spells it
    FileType ftype;         // general.file_type of the result
    int32_t base_type;      // llama_ftype_get_default_type
    // llama-quantize refuses the mix without an importance matrix (its tensors would be
    // garbage): IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, Q2_K_S; ik's also IQ1_S_R4, IQ1_M_R4,
    // IQ2_XXS_R4, IQ2_XS_R4.
    bool needs_imatrix;
    // ik_llama.cpp's mix: its rules, file order, its block fallback (ik_fit_block). base_type
    // and the rules' types may then be interleaved ids (iq4_k_r4): the tensor is written so
    // where its rows make whole groups (token_embd never).
    bool ik = false;
};

// The mixes; `name` case-insensitively. Null for another name.
const QuantPreset* find_quant_preset(std::string_view name);
std::span<const QuantPreset> quant_presets();
std::string quant_preset_names();  // "Q2_K, Q2_K_S, ..." for help and errors

// What the mix rules read of the model and of the other tensors.
struct MixModel {
    uint32_t n_layer = 0;    // block_count
    uint32_t n_expert = 0;   // routed experts (0 or 1: a dense model)
    uint32_t n_gqa = 1;      // head_count / head_count_kv
    bool has_output = true;  // false: token_embd doubles as the output (tied)
    bool has_imatrix = false;
    int n_attention_wv = 0;  // attn_v-like tensors in the file
    // From a deepseek2 (or any llama.cpp-style) file's metadata and tensor names.
    static MixModel from_file(const gguf::Reader& file, bool has_imatrix);
};

// The counters llama.cpp advances tensor by tensor; decide tensors in mix_order.
struct MixCounters {
    int i_attention_wv = 0;
    int i_ffn_down = 0;
    int i_ffn_gate = 0;
    int i_ffn_up = 0;
};

// Indices of `names` in llama.cpp's order (its loader's): by block number (tensors outside
// blocks first), then by name.
std::vector<size_t> mix_order(std::span<const std::string> names);

// The type the mix gives tensor `name` of shape `ne` (a tensor llama-quantize quantizes: 2-D
// or more, not a norm or the router), before the block fallback; for an ik mix possibly an
// interleaved type id. Throws sy::Error naming the
// tensor when a rule needs its layer and the name has none in range.
int32_t mix_tensor_type(const QuantPreset& preset, const MixModel& model, MixCounters& counters,
                        std::string_view name, std::span<const int64_t> ne);

}  // namespace sy::llm
