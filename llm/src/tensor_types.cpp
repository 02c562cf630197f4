#include "switchyard/llm/tensor_types.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "switchyard/dtype.h"
#include "switchyard/quants.hpp"

namespace sy::llm {
namespace {

// Types a file may be written in, in the order help text lists them; those the quantizers
// cannot produce (yet) are left out at run time (writable()).
constexpr int32_t kCandidates[] = {
    SY_TYPE_F32,           SY_TYPE_F16,     SY_TYPE_BF16,   SY_TYPE_Q8_0,    SY_TYPE_Q8_KV,
    SY_TYPE_Q6_0,          SY_TYPE_Q5_1,    SY_TYPE_Q5_0,   SY_TYPE_Q4_1,    SY_TYPE_Q4_0,
    SY_TYPE_Q6_K,          SY_TYPE_Q5_K,    SY_TYPE_Q4_K,   SY_TYPE_Q3_K,    SY_TYPE_Q2_K,
    SY_TYPE_IQ4_NL,        SY_TYPE_IQ4_XS,  SY_TYPE_IQ3_S,  SY_TYPE_IQ3_XXS, SY_TYPE_IQ2_S,
    SY_TYPE_IQ2_XS,        SY_TYPE_IQ2_XXS, SY_TYPE_IQ1_M,  SY_TYPE_IQ1_S,   SY_TYPE_IQ6_K,
    SY_TYPE_IQ5_K,         SY_TYPE_IQ4_K,   SY_TYPE_IQ3_K,  SY_TYPE_IQ2_K,   SY_TYPE_IQ5_KS,
    SY_TYPE_IQ4_KS,        SY_TYPE_IQ4_KSS, SY_TYPE_IQ3_KS, SY_TYPE_IQ2_KL,  SY_TYPE_IQ2_KS,
    SY_TYPE_IQ4_KT,        SY_TYPE_IQ3_KT,  SY_TYPE_IQ2_KT, SY_TYPE_IQ1_KT,
    SY_TYPE_IQ1_M_R4_ROWS,  // "iq1_m_r4": always written interleaved, as type 229
};

std::vector<int32_t> writable() {
    std::vector<int32_t> out;
    for (int32_t t : kCandidates)
        if (quants::can_quantize(t)) out.push_back(t);
    return out;
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::optional<int32_t> parse_type_name(std::string_view name) {
    const std::string wanted = lower(name);
    for (int32_t t : writable()) {
        if (lower(sy_dtype_info(t).name) == wanted) return t;
    }
    return std::nullopt;
}

std::string type_name(int32_t type) {
    const char* name = sy_dtype_info(type).name;
    return name ? name : "type" + std::to_string(type);
}

std::string writable_type_names() {
    std::string out;
    for (int32_t t : writable()) {
        if (!out.empty()) out += ", ";
        out += sy_dtype_info(t).name;
    }
    return out;
}

bool is_attn_k_b(std::string_view name) {
    return name.find("attn_k_b") != std::string_view::npos;
}

bool falls_back_to_iq4_nl(int32_t type) {
    switch (type) {
        case SY_TYPE_IQ1_S:
        case SY_TYPE_IQ1_M:
        case SY_TYPE_IQ1_M_R4_ROWS:
        case SY_TYPE_IQ2_XXS:
        case SY_TYPE_IQ2_XS:
        case SY_TYPE_IQ2_S:
        case SY_TYPE_IQ3_XXS:
        case SY_TYPE_IQ3_S:
        case SY_TYPE_Q2_K:
        case SY_TYPE_Q3_K:
        case SY_TYPE_IQ2_K:
        case SY_TYPE_IQ3_K:
        case SY_TYPE_IQ2_KS:
        case SY_TYPE_IQ3_KS:
        case SY_TYPE_IQ4_KS:
        case SY_TYPE_IQ4_KSS:
        case SY_TYPE_IQ2_KL:
        case SY_TYPE_IQ1_KT:
        case SY_TYPE_IQ2_KT:
        case SY_TYPE_IQ3_KT:
        case SY_TYPE_IQ4_KT:
        case SY_TYPE_IQ4_XS: return true;
        default: return false;
    }
}

int32_t fit_block(std::string_view name, int64_t ne0, int32_t type) {
    const int32_t block = sy_dtype_info(type).block_size;
    if (block > 0 && ne0 % block == 0) return type;
    int32_t fallback = is_attn_k_b(name) ? SY_TYPE_BF16 : SY_TYPE_F16;
    if (type == SY_TYPE_IQ4_K || falls_back_to_iq4_nl(type)) fallback = SY_TYPE_IQ4_NL;
    switch (type) {
        case SY_TYPE_IQ5_K:
        case SY_TYPE_IQ5_KS:
        case SY_TYPE_IQ6_K: fallback = SY_TYPE_Q6_0; break;
        case SY_TYPE_Q4_K: fallback = SY_TYPE_Q5_0; break;
        case SY_TYPE_Q5_K: fallback = SY_TYPE_Q5_1; break;
        case SY_TYPE_Q6_K: fallback = SY_TYPE_Q8_0; break;
        default: break;
    }
    if (fallback == type) return SY_TYPE_F32;
    return fit_block(name, ne0, fallback);
}

bool keeps_f32(std::string_view name, std::span<const int64_t> ne) {
    const bool one_dim = std::count_if(ne.begin(), ne.end(), [](int64_t n) { return n > 1; }) <= 1;
    return one_dim || ends_with(name, "_norm.weight") || name.find("ffn_gate_inp") != name.npos ||
           name.find("exp_probs_b") != name.npos;
}

int32_t preferred_tensor_type(std::string_view name, std::span<const int64_t> ne,
                              int32_t requested) {
    if (keeps_f32(name, ne)) return SY_TYPE_F32;
    int32_t type = requested;
    if (is_attn_k_b(name) && type != SY_TYPE_F32 && type != SY_TYPE_BF16) {
        type = type == SY_TYPE_F16 ? SY_TYPE_BF16 : SY_TYPE_Q8_0;
    }
    return type;
}

int32_t default_tensor_type(std::string_view name, std::span<const int64_t> ne, int32_t requested) {
    return fit_block(name, ne.empty() ? 1 : ne[0], preferred_tensor_type(name, ne, requested));
}

}  // namespace sy::llm
