// ik_llama.cpp's mixes (quant_preset_ik.cpp): the rules quant_preset.cpp's mix_tensor_type
// applies to a preset marked `ik`, and ik's block fallback.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "switchyard/llm/quant_preset.hpp"

namespace sy::llm::detail {

// The pieces both rule sets (llama.cpp's in quant_preset.cpp, ik's) are made of.
inline bool has(std::string_view s, std::string_view part) {
    return s.find(part) != std::string_view::npos;
}
inline bool any_of(FileType f, std::initializer_list<FileType> set) {
    return std::find(set.begin(), set.end(), f) != set.end();
}
// More bits for the first and last eighth of the layers and every third one between.
inline bool use_more_bits(int i, int n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}
// The block number of "blk.N.*", or -1.
inline int block_of(std::string_view name) {
    int n = -1;
    if (name.rfind("blk.", 0) != 0 || std::sscanf(std::string(name).c_str(), "blk.%d.", &n) != 1)
        return -1;
    return n;
}

// The type ik's llama_tensor_get_type gives tensor `name` (docs/ik-presets.md, section 3): a
// GGUF type id, an interleaved one (iq4_k_r4 ...) where the rule names one.
int32_t ik_mix_tensor_type(const QuantPreset& preset, const MixModel& model, MixCounters& counters,
                           std::string_view name, std::span<const int64_t> ne);

// ik's replacement for a type whose blocks do not divide ne0 (its change_type_if_necessary):
// the 2-4 bit types -> iq4_nl, iq4_k/iq5_ks/q4_K -> q5_0, iq5_k/q5_K -> q6_0, iq6_k/q6_K -> q8_0;
// `type` where it fits (or has no table entry).
int32_t ik_fit_block(int64_t ne0, int32_t type);

}  // namespace sy::llm::detail
