// Weight homes from the placement policy (placement.hpp), and the backend descriptions that
// placement works with.
#include <fmt/format.h>

#include <regex>

#include "switchyard/core/error.hpp"
#include "switchyard/core/placement.hpp"
#include "switchyard/core/plugin_host.hpp"

namespace sy {

BackendInfo backend_info(const Plugin& plugin, int32_t device) {
    BackendInfo b;
    b.name = plugin.name();
    b.props = plugin.device_props(device);
    const Plugin* p = &plugin;
    b.supports = [p, device](const sy_node& node) { return p->supports(device, node); };
    b.estimate = [p, device](const sy_node& node) { return p->estimate(device, node); };
    return b;
}

int32_t find_backend(std::span<const BackendInfo> backends, std::string_view name,
                     const std::string& where) {
    std::string loaded;
    for (size_t i = 0; i < backends.size(); ++i) {
        if (backends[i].name == name) return static_cast<int32_t>(i);
        loaded += (loaded.empty() ? "" : ", ") + backends[i].name;
    }
    throw Error(fmt::format("{}: backend '{}' is not loaded (loaded: {})", where, name,
                            loaded.empty() ? "none" : loaded));
}

std::string WeightPlan::reason(size_t weight, const PlacementPolicy& policy) const {
    const int32_t rule = homes.at(weight).rule;
    if (rule < 0) return "default backend";
    const PlacementRule& r = policy.rules[static_cast<size_t>(rule)];
    return fmt::format("rule {} '{}' ({})", rule + 1, r.match, r.where);
}

WeightPlan place_weights(std::span<const WeightInfo> weights, const PlacementPolicy& policy,
                         std::span<const BackendInfo> backends, std::string_view fallback_default) {
    const std::string default_name =
        policy.default_backend.empty() ? std::string(fallback_default) : policy.default_backend;
    const int32_t fallback =
        find_backend(backends, default_name,
                     policy.default_backend.empty() ? "default backend" : "placement.default");

    struct CompiledRule {
        std::regex re;
        int32_t backend;
        size_t matched = 0, claimed = 0;
    };
    std::vector<CompiledRule> rules;
    for (size_t i = 0; i < policy.rules.size(); ++i) {
        const PlacementRule& r = policy.rules[i];
        const std::string at = fmt::format("placement rule {} ({})", i + 1, r.where);
        const int32_t backend = find_backend(backends, r.backend, at);
        try {
            rules.push_back({std::regex(r.match, std::regex::ECMAScript), backend});
        } catch (const std::regex_error& e) {
            throw Error(fmt::format("{}: invalid regex '{}': {}", at, r.match, e.what()));
        }
    }

    WeightPlan plan;
    plan.bytes_per_backend.assign(backends.size(), 0);
    for (const WeightInfo& w : weights) {
        WeightPlan::Home home{fallback, -1};
        for (size_t i = 0; i < rules.size(); ++i) {
            if (!std::regex_search(w.name, rules[i].re)) continue;
            ++rules[i].matched;
            if (home.rule < 0) {
                home = {rules[i].backend, static_cast<int32_t>(i)};
                ++rules[i].claimed;
            }
        }
        plan.homes.push_back(home);
        plan.bytes_per_backend[static_cast<size_t>(home.backend)] += w.bytes;
    }

    for (size_t i = 0; i < rules.size(); ++i) {
        const PlacementRule& r = policy.rules[i];
        if (rules[i].matched == 0)
            plan.warnings.push_back(fmt::format("placement rule {} '{}' ({}) matches no tensor",
                                                i + 1, r.match, r.where));
        else if (rules[i].claimed == 0)
            plan.warnings.push_back(fmt::format(
                "placement rule {} '{}' ({}) is shadowed: earlier rules claim all {} tensors it "
                "matches",
                i + 1, r.match, r.where, rules[i].matched));
    }

    for (size_t b = 0; b < backends.size(); ++b) {
        const BackendInfo& backend = backends[b];
        const uint64_t bytes = plan.bytes_per_backend[b];
        if (backend.host_memory() || bytes == 0 || backend.props.memory_free == 0) continue;
        if (bytes > backend.props.memory_free)
            throw Error(fmt::format(
                "the weights placed on '{}' ({:.0f} MiB) do not fit in its {:.0f} MiB of free "
                "memory: move some to a host backend with a placement rule (e.g. -ot "
                "'\\.ffn_.*_exps\\.=cpu') or use a smaller quantization",
                backend.name, bytes / 1048576.0, backend.props.memory_free / 1048576.0));
    }
    return plan;
}

}  // namespace sy
