// Re-quantizing a GGUF file: every tensor converted to a target type (through f32), chosen by
// ordered name rules and the defaults of tensor_types.hpp, or by a llama-quantize mix
// (quant_preset.hpp), streamed one tensor at a time into a new file written atomically.
// Metadata is copied; general.file_type follows the target or the mix. With an importance
// matrix (imatrix.hpp) each matrix (each expert of a 3-D expert tensor) is quantized with its
// own importance, and the file records it as llama-quantize does (quantize.imatrix.file,
// .dataset, .entries_count, .chunks_count).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/core/pattern.hpp"
#include "switchyard/llm/imatrix.hpp"
#include "switchyard/llm/quant_preset.hpp"

namespace sy::llm {

// "REGEX=TYPE": tensors whose name the regex finds (RE2 syntax, search, not full match) are
// written as TYPE. The first matching rule wins.
struct QuantRule {
    std::string text;  // as the user wrote it, for messages
    Pattern pattern;
    int32_t type = 0;
    // The rule named an interleaved type (iq3_k_r4, as ik's recipes do): its id, `type` its base.
    int32_t interleave = 0;
};

// Parses "REGEX=TYPE" (split at the last '='). Throws sy::Error naming the rule for a missing
// '=', an empty regex, an invalid regex or an unknown type.
QuantRule parse_quant_rule(std::string_view rule);

struct TensorDecision {
    int32_t type = 0;    // what is written
    int32_t wanted = 0;  // what the rule or the default asked for, before block fallback
    const QuantRule* rule = nullptr;  // the rule that matched, if any
    // An ik mix or a rule named an interleaved type (iq4_k_r4): its id, `type` being its base;
    // written interleaved where the tensor's rows make whole groups. 0 otherwise.
    int32_t interleave = 0;
    bool fell_back() const { return type != wanted; }
};

// The type tensor `name` of shape `ne` gets: F32 for the tensors keeps_f32 protects (rules do
// not apply to them), else the first matching rule's type (F16 becomes BF16
// for attn_k_b), else default_tensor_type(target); then the block fallback for ne0.
TensorDecision decide_tensor_type(std::string_view name, std::span<const int64_t> ne,
                                  int32_t target, const std::vector<QuantRule>& rules);

// The same with a mix: where no rule matches, the mix's type for the tensor (mix_tensor_type,
// which advances `counters` whether or not a rule matches, as llama.cpp's do: call it in
// mix_order, or in file order for an ik mix). An ik mix falls back as ik does (ik_fit_block).
TensorDecision decide_tensor_type(std::string_view name, std::span<const int64_t> ne,
                                  const QuantPreset& preset, const MixModel& model,
                                  MixCounters& counters, const std::vector<QuantRule>& rules);

struct RequantizeOptions {
    int32_t target = 0;
    const QuantPreset* preset = nullptr;  // a mix instead of one target type (target ignored)
    std::vector<QuantRule> rules;
    int threads = 0;  // <= 0: all hardware threads
    // Per-matrix importance for the quantizers. Without one, a tensor whose type needs it
    // (sy::quants::requires_importance, or Q2_K in the Q2_K_S mix) is refused; with one, a
    // tensor it has no entry for is a warning (and refused for those types), as llama-quantize.
    const Imatrix* imatrix = nullptr;
    // general.file_type to write; 0: the mix's, else file_type_of(target).
    uint32_t file_type = 0;
    // Write every tensor whose type has one of ik_llama.cpp's row-interleaved layouts in it
    // (its rows a multiple of the group; not token_embd, which is read by rows), as ik's
    // quantize does with an _R4 type or -rtr offline. Interleaved inputs are always read.
    bool repack = false;
    // Also write the tensors of this layout's base type in it where repack alone would not (a
    // layout with one scale per row, iq1_s_r4, which its name asks for): 0 for none.
    int32_t repack_as = 0;
};

struct RequantizeEvent {
    size_t index = 0;  // tensor about to be written
    size_t count = 0;
    std::string_view name;
    int32_t from = 0;
    TensorDecision decision;
    uint64_t bytes_done = 0;  // source bytes processed before this tensor
    uint64_t bytes_total = 0;
};

struct RequantizeResult {
    size_t tensors = 0;
    size_t converted = 0;                // tensors whose type changed
    std::vector<std::string> fallbacks;  // "name: q4_K -> q5_0 (ne0 128)"
    std::vector<std::string> warnings;   // quantized tensors the imatrix has no entry for
    size_t with_importance = 0;          // tensors quantized with an importance matrix
    uint64_t bytes_in = 0, bytes_out = 0;
};

RequantizeResult requantize(const std::filesystem::path& in, const std::filesystem::path& out,
                            const RequantizeOptions& options,
                            const std::function<void(const RequantizeEvent&)>& progress = {});

}  // namespace sy::llm
