// llama.cpp's placement flags and switchyard's offload switches, merged into a configuration's
// policy.
#include "switchyard/llm/placement_flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "switchyard/core/cost_table.hpp"
#include "switchyard/core/error.hpp"

namespace sy::llm {

PlacementSetup placement_setup(const PlacementFlags& f, Config config) {
    PlacementSetup out;
    std::vector<PlacementRule> rules;
    if (f.expert_parallel < 0)
        throw Error("--expert-parallel " + std::to_string(f.expert_parallel) +
                    ": expected a number of ranks, 1 or more");
    for (int r = 1; r < f.expert_parallel; ++r)
        rules.push_back({fmt::format(R"(_exps\.weight\[{}/{}\]$)", r, f.expert_parallel),
                         fmt::format("rank{}", r),
                         fmt::format("--expert-parallel {}", f.expert_parallel)});
    for (const std::string& value : f.override_tensor) {
        const auto parsed = parse_override_tensors(value, rules.size() + 1, out.warnings);
        rules.insert(rules.end(), parsed.begin(), parsed.end());
    }
    if (f.cpu_moe) rules.push_back({R"(\.ffn_(up|gate|down)_exps\.)", "cpu", "--cpu-moe"});
    if (f.n_cpu_moe > 0) {
        PlacementRule r{R"(^blk\.[0-9]+\.ffn_(up|gate|down)_exps\.)", "cpu",
                        fmt::format("--n-cpu-moe {}", f.n_cpu_moe)};
        r.layers_below = f.n_cpu_moe;  // a layer range, not a regex of N alternatives
        rules.push_back(r);
    }
    rules.insert(rules.end(), config.placement.rules.begin(), config.placement.rules.end());
    config.placement.rules = std::move(rules);
    if (!f.offload_policy.empty()) {
        auto switches = parse_offload_switches(f.offload_policy, "--offload-policy");
        config.offload.ops.insert(config.offload.ops.end(), switches.begin(), switches.end());
    }
    if (!f.tensor_split.empty()) {
        config.placement.tensor_split = parse_tensor_split(f.tensor_split, "--tensor-split");
        config.placement.tensor_split_where = "--tensor-split";
    }
    if (!f.cost_table.empty()) {
        config.offload.cost_table = f.cost_table;
        config.offload.cost_table_where = "--cost-table";
    }
    if (!f.offload_mode.empty()) {
        if (f.offload_mode != "cost" && f.offload_mode != "never" && f.offload_mode != "always")
            throw Error("--offload-mode '" + f.offload_mode + "': expected cost, never or always");
        config.offload.mode = f.offload_mode == "never"    ? OffloadMode::never
                              : f.offload_mode == "always" ? OffloadMode::always
                                                           : OffloadMode::cost;
    }
    if (f.offload_min_batch >= 0) config.offload.min_batch = f.offload_min_batch;
    if (f.staging_mib > 0) {
        config.offload.staging_limit = uint64_t(f.staging_mib) << 20;
        config.offload.staging_limit_where = "--staging-mib";
    }
    if (!f.overlap.empty()) {
        if (f.overlap != "on" && f.overlap != "off")
            throw Error("--overlap '" + f.overlap + "': expected on or off");
        config.offload.overlap = f.overlap == "on";
    }
    if (f.fit) {
        config.placement.fit = true;
        config.placement.fit_where = "--fit";
    }
    if (f.fit_margin_mib >= 0) {
        if (!config.placement.fit)
            throw Error("--fit-margin " + std::to_string(f.fit_margin_mib) +
                        " without --fit (or placement.fit = true in the config) does nothing");
        config.placement.fit_margin = uint64_t(f.fit_margin_mib) << 20;
    }
    out.several = config.placement.fit || !config.placement.tensor_split.empty() ||
                  !config.placement.default_backend.empty() || !config.placement.rules.empty() ||
                  config.offload.mode != OffloadMode::cost || config.offload.min_batch != 0 ||
                  !config.offload.ops.empty() || !config.offload.pins.empty();
    // The default backend: [placement] default, else --backend / -ngl.
    out.backend = !config.placement.default_backend.empty() && f.backend.empty()
                      ? config.placement.default_backend
                  : !f.backend.empty() ? canonical_backend_name(f.backend)
                  : f.ngl > 0          ? "cuda"
                                       : "cpu";
    // "cuda:1" (--backend CUDA1): the cuda plugin, and its device 1 through placement.
    out.backend_ref = parse_backend_name(out.backend);
    // Without a plugin list in the configuration, load just the backend that runs the model
    // (and the cpu, which placement rules name).
    if (config.plugins.load.empty()) {
        config.plugins.load.push_back(out.backend_ref.plugin);
        if ((out.several || f.ngl > 0) && out.backend != "cpu")
            config.plugins.load.push_back("cpu");
        // And every backend a placement rule names (-ot exps=rank1 loads mpi).
        for (const PlacementRule& rule : config.placement.rules) {
            const std::string plugin = parse_backend_name(rule.backend).plugin;
            if (std::find(config.plugins.load.begin(), config.plugins.load.end(), plugin) ==
                config.plugins.load.end())
                config.plugins.load.push_back(plugin);
        }
    }
    if (f.repack >= 0)
        config.plugins.options.push_back({"cpu", "repack", f.repack > 0 ? "on" : "off", "-rtr"});
    out.config = std::move(config);
    return out;
}

SessionBackends session_backends(const PluginHost& host, const PlacementSetup& setup) {
    SessionBackends b;
    b.placement = setup.config.placement;
    b.placement.default_backend = setup.backend;
    b.offload = setup.config.offload;
    for (const auto& p : host.plugins())
        for (int32_t d = 0; d < p->device_count(); ++d) b.backends.push_back({p.get(), d});
    if (!setup.config.offload.cost_table.empty()) {
        try {
            b.costs = std::make_shared<CostTable>(CostTable::load(setup.config.offload.cost_table));
        } catch (const ConfigError& e) {
            throw Error(std::string(e.what()) + " (the cost table of " +
                        setup.config.offload.cost_table_where + ")");
        }
    }
    return b;
}

uint32_t offload_last_layers(SessionBackends& b, int ngl, uint32_t n_layer,
                             const std::string& backend) {
    if (ngl <= 0 || ngl >= int(n_layer) + 1)
        throw Error(fmt::format("-ngl {}: not a part of the model's {} layers", ngl, n_layer));
    const auto first = uint32_t(int(n_layer) - ngl);
    b.placement.default_backend = "cpu";
    std::string layers;
    for (uint32_t il = first; il < n_layer; ++il)
        layers += (layers.empty() ? "" : "|") + std::to_string(il);
    b.placement.rules.push_back(
        {R"(^blk\.()" + layers + R"()\.)", backend, fmt::format("-ngl {}", ngl), true});
    return first;
}

}  // namespace sy::llm
