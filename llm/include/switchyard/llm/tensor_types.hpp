// Which storage type each tensor of a model gets when a file is made or re-quantized: the
// defaults that keep precision-critical tensors high (norms, router, selection bias, 1-D
// tensors, attn_k_b never F16) and the fallback for rows that do not divide into blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "switchyard/llm/file_type.hpp"  // file_type_of, which lived here

namespace sy::llm {

// "q4_K", "Q4_K", "q8_0", "bf16" ... -> GGUF type id; nullopt for an unknown name.
std::optional<int32_t> parse_type_name(std::string_view name);
// As GGUF tools print it ("q4_K"); "type<id>" for an id without a name.
std::string type_name(int32_t type);
// The type names accepted by parse_type_name that can be written (for help and errors): the
// types sy::quants::can_quantize produces.
std::string writable_type_names();

// 1-D tensors, norms, the router (ffn_gate_inp) and exp_probs_b: always F32, whatever a rule
// asks (as llama-quantize never quantizes them).
bool keeps_f32(std::string_view name, std::span<const int64_t> ne);

// The type `requested` becomes for tensor `name` of shape `ne` by default, before any block
// fallback: F32 for 1-D tensors, norms, the router (ffn_gate_inp) and exp_probs_b; attn_k_b
// only in F32, BF16 or Q8_0 (F16 overflows in it: F16 -> BF16, other types -> Q8_0).
int32_t preferred_tensor_type(std::string_view name, std::span<const int64_t> ne,
                              int32_t requested);
// preferred_tensor_type, then fit_block for ne[0].
int32_t default_tensor_type(std::string_view name, std::span<const int64_t> ne, int32_t requested);

// `type` if ne0 divides into its blocks, else the nearest type whose block does (256-element
// types fall back to 32-element types as llama-quantize does: the i-quants iq1_s, iq1_m,
// iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s and iq4_xs -> iq4_nl, q4_K -> q5_0, q5_K -> q5_1,
// q6_K -> q8_0; q2_K/q3_K -> iq4_nl as ik_llama.cpp and llama.cpp until 2025 (llama.cpp now
// takes q4_0); ik_llama.cpp's iq2_k, iq3_k, iq4_k -> iq4_nl, iq5_k, iq6_k -> q6_0; 32-element
// types fall back to f16, or bf16 for attn_k_b).
int32_t fit_block(std::string_view name, int64_t ne0, int32_t type);

// The 256-element types of 2-4 bits whose rows fall back to iq4_nl in llama-quantize and
// ik_llama.cpp alike (the i-quants, q2_K, q3_K, iq4_xs, ik's iq2_k, iq3_k, the row-scaled and the
// trellis types); not iq4_k, which ik's mixes send to q5_0.
bool falls_back_to_iq4_nl(int32_t type);

// True for the one tensor family F16 must never hold.
bool is_attn_k_b(std::string_view name);

}  // namespace sy::llm
