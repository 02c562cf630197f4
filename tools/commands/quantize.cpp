// `switchyard quantize`: re-quantize a GGUF file to a type or a llama-quantize mix (Q4_K_M,
// IQ2_XXS, ...: llm/quant_preset.hpp), with per-tensor rules and an importance matrix
// (llm/requantize.hpp, llm/imatrix.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "commands/commands.hpp"
#include "commands/progress.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/dtype.h"
#include "switchyard/interleaved.hpp"
#include "switchyard/llm/imatrix.hpp"
#include "switchyard/llm/quant_preset.hpp"
#include "switchyard/llm/requantize.hpp"
#include "switchyard/llm/tensor_types.hpp"

namespace sy::tools {
namespace {

struct QuantizeOptions {
    std::string input, output, type;
    std::vector<std::string> rules;
    std::vector<std::string> custom_q;  // ik_llama.cpp's --custom-q "REGEX=TYPE,REGEX=TYPE"
    std::string imatrix;
    bool pure = false;
    bool repack = false;
    int threads = 0;
};

int run_quantize(const QuantizeOptions& o) {
    llm::RequantizeOptions options;
    // A mix by name (llama.cpp's or ik_llama.cpp's, whose IQ4_K_R4, Q4_0_R8, BF16_R16 ... are
    // mixes too); else an interleaved type name without a mix of its own (iq2_s_r4): the base
    // type, repacked.
    std::string type = o.type;
    options.repack = o.repack;
    const llm::QuantPreset* preset = llm::find_quant_preset(type);
    if (const quants::InterleavedType* layout = quants::interleaved_type(o.type);
        layout && !preset) {
        if (!layout->repackable) options.repack_as = layout->id;
        type = sy_dtype_info(layout->base).name;
        options.repack = true;
        options.file_type = llm::file_type_of(layout->id);  // ik's: Q4_0_R8 is 202, not Q4_0's 2
        preset = llm::find_quant_preset(type);
    }
    const auto plain = llm::parse_type_name(type);
    if (preset && o.pure) {
        // llama-quantize's --pure: the mix's base type everywhere (an ik _R4 mix's repacked),
        // its file type kept.
        int32_t base = preset->base_type;
        if (const quants::InterleavedType* layout = quants::interleaved_type(base)) {
            base = layout->base;
            options.repack = true;
            if (!layout->repackable) options.repack_as = layout->id;  // IQ1_S_R4: a scale a row
        }
        if (!llm::parse_type_name(llm::type_name(base)))
            throw Error("quantize: --pure " + std::string(preset->name) + ": type " +
                        llm::type_name(base) + " cannot be written yet");
        options.target = base;
        options.file_type = static_cast<uint32_t>(preset->ftype);
        preset = nullptr;
    } else if (preset) {
        options.preset = preset;
    } else if (plain) {
        options.target = *plain;
    } else {
        throw Error("quantize: unknown type or mix '" + o.type + "' (mixes: " +
                    llm::quant_preset_names() + "; types: " + llm::writable_type_names() + ")");
    }
    std::optional<llm::Imatrix> imatrix;
    if (!o.imatrix.empty()) {
        imatrix = llm::read_imatrix(o.imatrix);
        options.imatrix = &*imatrix;
        std::fprintf(stderr, "quantize: %zu importance matrix entries from %s (%u chunks)\n",
                     imatrix->entries.size(), o.imatrix.c_str(), imatrix->chunk_count);
    } else if (preset && preset->needs_imatrix) {
        throw Error("quantize: " + std::string(preset->name) +
                    " needs an importance matrix for acceptable quality (llama-quantize refuses "
                    "IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S and Q2_K_S without one, ik_llama.cpp's "
                    "also their _R4 forms): compute one with 'switchyard imatrix' and pass "
                    "--imatrix FILE");
    }
    for (const std::string& rule : o.rules) options.rules.push_back(llm::parse_quant_rule(rule));
    for (const std::string& list : o.custom_q) {
        size_t start = 0;
        while (start <= list.size()) {
            const size_t comma = std::min(list.find(',', start), list.size());
            if (comma > start)
                options.rules.push_back(llm::parse_quant_rule(list.substr(start, comma - start)));
            start = comma + 1;
        }
    }
    options.threads = o.threads;

    const auto start = std::chrono::steady_clock::now();
    ProgressLine bar("quantize");
    const llm::RequantizeResult result =
        llm::requantize(o.input, o.output, options, [&](const llm::RequantizeEvent& e) {
            bar.update(e.bytes_done, e.bytes_total,
                       fmt::format("{} {} -> {}", e.name, llm::type_name(e.from),
                                   llm::type_name(e.decision.type)));
        });
    bar.finish();
    for (const std::string& f : result.fallbacks)
        std::fprintf(stderr, "quantize: fallback %s\n", f.c_str());
    for (const std::string& w : result.warnings)
        std::fprintf(stderr, "quantize: warning: %s has no importance matrix entry in %s\n",
                     w.c_str(), o.imatrix.c_str());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string what =
        options.preset ? std::string(options.preset->name) : llm::type_name(options.target);
    const std::string imatrix_note =
        imatrix ? ", " + std::to_string(result.with_importance) + " with importance" : "";
    std::printf(
        "%s: %s, %zu tensors (%zu converted, %zu fell back%s), %.2f MiB -> %.2f MiB, %.1f s\n",
        o.output.c_str(), what.c_str(), result.tensors, result.converted, result.fallbacks.size(),
        imatrix_note.c_str(), static_cast<double>(result.bytes_in) / (1024.0 * 1024.0),
        static_cast<double>(result.bytes_out) / (1024.0 * 1024.0), seconds);
    return 0;
}

}  // namespace

Command add_quantize_command(CLI::App& app) {
    auto options = std::make_shared<QuantizeOptions>();
    CLI::App* cmd = app.add_subcommand("quantize", "Re-quantize a GGUF model");
    cmd->add_option("input", options->input, "Input GGUF file")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_option("output", options->output, "Output GGUF file (written atomically)")->required();
    cmd->add_option(
           "type", options->type,
           "A llama-quantize or ik_llama.cpp mix (case-insensitive): " + llm::quant_preset_names() +
               "; or a type for every tensor: " + llm::writable_type_names())
        ->required();
    cmd->add_option("--imatrix", options->imatrix,
                    "Importance matrix (GGUF or legacy .dat, as switchyard imatrix and "
                    "llama-imatrix write them) the quantizers weigh their error by")
        ->check(CLI::ExistingFile);
    cmd->add_flag("--pure", options->pure,
                  "A mix's base type for every tensor (no per-tensor mix), as llama-quantize");
    cmd->add_option("--rule", options->rules,
                    "REGEX=TYPE for tensors whose name matches (RE2 syntax, searched); repeatable, "
                    "first match wins; F16 for attn_k_b becomes BF16")
        ->allow_extra_args(false);
    cmd->add_option("--custom-q", options->custom_q,
                    "ik_llama.cpp's form of --rule: \"REGEX=TYPE,REGEX=TYPE,...\" (after the "
                    "--rule ones; first match wins)");
    cmd->add_flag("--repack", options->repack,
                  "Write each tensor whose type has one of ik_llama.cpp's row-interleaved layouts "
                  "(q4_0_r8, iq4_k_r4, ...) in it, as ik's quantize does with an _R4 type; a "
                  "type named so (iq4_k_r4) implies it");
    cmd->add_option("-t,--threads", options->threads, "Threads (default: all)");
    return [options] { return run_quantize(*options); };
}

}  // namespace sy::tools
