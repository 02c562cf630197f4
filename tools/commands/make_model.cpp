// `switchyard make-model`: a synthetic model file (llm/synthetic_model.hpp does the work).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands/commands.hpp"
#include "commands/progress.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/llm/synthetic_model.hpp"
#include "switchyard/llm/tensor_types.hpp"

namespace sy::tools {
namespace {

struct MakeModelOptions {
    std::string arch = "deepseek2";
    std::string preset = "tiny";
    std::string type = "f32";
    std::string output;
    uint64_t seed = 42;
    std::string kv_layout = "kv_b";
    int threads = 0;
    uint32_t context_length = 0;  // 0: the preset's
    uint32_t nextn = 0;
};

int run_make_model(const MakeModelOptions& o) {
    if (o.arch != "deepseek2")
        throw Error("make-model: unknown --arch '" + o.arch + "' (deepseek2)");
    const auto type = llm::parse_type_name(o.type);
    if (!type) {
        throw Error("make-model: unknown --type '" + o.type +
                    "' (known: " + llm::writable_type_names() + ")");
    }
    llm::Deepseek2Config cfg = llm::deepseek2_preset(o.preset);
    if (o.context_length > 0) cfg.n_ctx_train = o.context_length;
    cfg.n_nextn = o.nextn;
    const llm::KvLayout layout =
        o.kv_layout == "split" ? llm::KvLayout::split : llm::KvLayout::kv_b;
    const llm::ModelPlan plan = llm::plan_deepseek2(cfg, *type, layout);

    for (const llm::PlannedTensor& t : plan.tensors) {
        const int32_t preferred = llm::preferred_tensor_type(t.name, t.ne, *type);
        if (preferred != t.type) {
            std::fprintf(
                stderr, "make-model: %s: %s -> %s (ne0 %lld is not a multiple of %s's block)\n",
                t.name.c_str(), llm::type_name(preferred).c_str(), llm::type_name(t.type).c_str(),
                static_cast<long long>(t.ne[0]), llm::type_name(preferred).c_str());
        }
    }

    const auto start = std::chrono::steady_clock::now();
    ProgressLine bar("make-model " + o.preset);
    llm::write_synthetic_model(o.output, plan, o.seed, o.threads, [&](const llm::WriteProgress& p) {
        bar.update(p.bytes_done, p.bytes_total, p.tensor->name);
    });
    bar.finish();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto size = std::filesystem::file_size(o.output);
    std::printf("%s: deepseek2 %s, %s, %zu tensors, %.2f M params, %.2f MiB, seed %llu, %.1f s\n",
                o.output.c_str(), o.preset.c_str(), llm::type_name(*type).c_str(),
                plan.tensors.size(), static_cast<double>(plan.parameters()) / 1e6,
                static_cast<double>(size) / (1024.0 * 1024.0),
                static_cast<unsigned long long>(o.seed), seconds);
    return 0;
}

}  // namespace

Command add_make_model_command(CLI::App& app) {
    auto options = std::make_shared<MakeModelOptions>();
    CLI::App* cmd =
        app.add_subcommand("make-model", "Write a synthetic model (random weights) as GGUF");
    cmd->add_option("--arch", options->arch, "Architecture")->check(CLI::IsMember({"deepseek2"}));
    cmd->add_option("--preset", options->preset,
                    "Size: tiny (few MB), mini (V2-Lite layers, 4 of them), lite (full V2-Lite)")
        ->check(CLI::IsMember({"tiny", "mini", "lite"}));
    cmd->add_option("--type", options->type, "Tensor type: " + llm::writable_type_names());
    cmd->add_option("-o,--output", options->output, "Output GGUF file")->required();
    cmd->add_option("--seed", options->seed, "Random seed (same seed, same bytes)");
    cmd->add_option("--kv-layout", options->kv_layout,
                    "kv_b: attn_kv_b; split: ik_llama.cpp's 2-D attn_k_b + attn_v_b instead")
        ->check(CLI::IsMember({"kv_b", "split"}));
    cmd->add_option("-t,--threads", options->threads, "Threads (default: all)");
    cmd->add_option("--context-length", options->context_length,
                    "deepseek2.context_length, the trained context (default: the preset's)")
        ->check(CLI::Range(uint32_t{1}, UINT32_MAX));
    cmd->add_option("--nextn", options->nextn,
                    "MTP (NextN) blocks after the others, with their nextn.* tensors "
                    "(nextn_predict_layers, as DeepSeek-V3 files); loading leaves them out")
        ->check(CLI::Range(0, 8));
    return [options] { return run_make_model(*options); };
}

}  // namespace sy::tools
