// `switchyard quantize`: re-quantize a GGUF file with per-tensor rules (llm/requantize.hpp).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands/commands.hpp"
#include "commands/progress.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/llm/requantize.hpp"
#include "switchyard/llm/tensor_types.hpp"

namespace sy::tools {
namespace {

struct QuantizeOptions {
    std::string input, output, type;
    std::vector<std::string> rules;
    int threads = 0;
};

int run_quantize(const QuantizeOptions& o) {
    llm::RequantizeOptions options;
    const auto target = llm::parse_type_name(o.type);
    if (!target) {
        throw Error("quantize: unknown type '" + o.type +
                    "' (known: " + llm::writable_type_names() + ")");
    }
    options.target = *target;
    for (const std::string& rule : o.rules) options.rules.push_back(llm::parse_quant_rule(rule));
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
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "%s: %s, %zu tensors (%zu converted, %zu fell back), %.2f MiB -> %.2f MiB, %.1f s\n",
        o.output.c_str(), llm::type_name(*target).c_str(), result.tensors, result.converted,
        result.fallbacks.size(), static_cast<double>(result.bytes_in) / (1024.0 * 1024.0),
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
    cmd->add_option("type", options->type, "Target type: " + llm::writable_type_names())
        ->required();
    cmd->add_option("--rule", options->rules,
                    "REGEX=TYPE for tensors whose name matches (ECMAScript search); repeatable, "
                    "first match wins; F16 for attn_k_b becomes BF16")
        ->allow_extra_args(false);
    cmd->add_option("-t,--threads", options->threads, "Threads (default: all)");
    return [options] { return run_quantize(*options); };
}

}  // namespace sy::tools
