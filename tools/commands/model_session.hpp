// What the commands that run a model (run, perplexity, bench, ...) share: the model and backend
// options with llama.cpp's flag names, loading the backend and the model, and the memory report
// printed before the KV cache and compute buffers are allocated.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands/commands.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/llm/placement_flags.hpp"
#include "switchyard/llm/session.hpp"

namespace sy::tools {

// The placement flags (--backend, -ngl, -ot, --cpu-moe, -ts, --fit, the offload switches, -rtr)
// are llm::PlacementFlags'; llm::placement_setup turns them into the policy.
struct ModelOptions : llm::PlacementFlags {
    PluginOptions plugins;
    std::string model;
    int mla = 3;
    int fused_moe = -1;
    std::string flash_attn = "auto";
    std::string cache_type_k = "f16";
    std::string cache_type_v = "f16";
    int64_t ctx = 0;         // 0: the command's default, or with ctx_given the trained context
    bool ctx_given = false;  // -c was on the command line (-c 0: the file's context_length)
    int64_t ubatch = 512;
    int64_t attn_max_mib = 256;
    std::string ser;
    bool expert_parallel_exact = false;  // --expert-parallel-exact
    bool no_group_routing = false;
    bool group_routing = false;  // -ger: ik_llama.cpp's spelling of the default (contradicts
                                 // --no-group-routing)
    bool no_mmap = false;
    bool mlock = false;  // --mlock: the weights locked in memory (a warning when that fails)
    std::string numa;    // --numa distribute|isolate|numactl ("" not given)
    // Loading and checking print only what goes wrong (bench, sweep): the model's shape, KV
    // and compute sizes and the weight totals are not printed; warnings are still kept in
    // LoadedModel::warnings.
    bool quiet = false;

    // Registers -m, --backend, -ngl, -c, -ub, -mla, -fmoe/-no-fmoe, -fa/-no-fa, -ctk, -ctv,
    // -amb, -ser, -ger/--no-group-routing, --no-mmap, --mlock, --numa, the placement options and
    // the plugin options; `ctx_help` describes -c's default for this command.
    void add_to(CLI::App& app, const std::string& ctx_help);
    // The runtime options; throws sy::Error naming the flag whose value is wrong.
    llm::ContextOptions context_options() const;
    const llm::PlacementFlags& placement_flags() const { return *this; }
};

// A backend plugin and a model on it, loaded and checked; with a placement policy, every
// loaded backend that has a device, for a session over several.
struct LoadedModel {
    LoadedModel() = default;
    LoadedModel(LoadedModel&&) = default;
    LoadedModel& operator=(LoadedModel&&) = delete;
    // Tells the plugins that the model's weights are gone (PluginHost::release_constants).
    ~LoadedModel();

    std::unique_ptr<PluginHost> host;
    Plugin* plugin = nullptr;  // the default backend: KV cache, fused/flash choice
    std::unique_ptr<llm::Model> model;
    std::optional<llm::SessionBackends> several;
    bool quiet = false;
    // Every warning loading and placing raised (printed on stderr as they come unless quiet).
    std::vector<std::string> warnings;

    // A session on the one backend, or over several (prints where the weights went).
    std::unique_ptr<llm::Session> make_session();
    void warn(const std::string& message);
    // A line on stderr (unless quiet) about what an option did; not kept as a warning.
    void note(const std::string& message) const;
    // The thread count of every backend that takes one (-t, -tb); 0: each plugin's default.
    void set_threads(int threads);
};

// Loads the backend (with no plugin list in the configuration, only that one) and the model;
// prints the model's shape and KV bytes per token and refuses a KV cache larger than the
// available memory, and an -ngl that asks for part of the model on a device or a device the
// backend does not have.
LoadedModel load_model(const ModelOptions& options);

// Prints the worst-case compute buffer (a full ubatch at the end of the context), refuses a
// KV cache + compute buffer (+ the weights, on a device with its own memory) that do not fit in
// the memory they go to, then allocates the cache (and copies the weights to the device).
void check_session_memory(const LoadedModel& loaded, llm::Session& session);

double mib(uint64_t bytes);

// "blas 3412.00 MiB, ..." for the plugins whose cost_params report "extra_memory" > 0 (memory
// they hold beyond the host's buffers, such as kept converted weights); empty when none does.
std::string plugin_extra_memory(const PluginHost& host);

// The most a prompt or corpus file (-f) may hold: far beyond any prompt, and room for the
// corpora perplexity and imatrix read (wikitext-103's training text is about 540 MB; split it).
constexpr uint64_t kMaxTextFileBytes = uint64_t(1) << 30;

// The whole file (or standard input for "-") as bytes, a regular file of at most
// kMaxTextFileBytes; throws sy::Error naming `flag` and the path when it cannot be read.
std::string read_text_file(const std::string& flag, const std::string& path);

}  // namespace sy::tools
