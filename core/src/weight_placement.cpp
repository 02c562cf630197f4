// Weight homes from the placement policy (placement.hpp), and the backend descriptions that
// placement works with.
#include <fmt/format.h>

#include <algorithm>

#include "switchyard/core/error.hpp"
#include "switchyard/core/pattern.hpp"
#include "switchyard/core/placement.hpp"
#include "switchyard/core/plugin_host.hpp"

namespace sy {

std::string backend_name(const Plugin& plugin, int32_t device) {
    return device == 0 ? plugin.name() : plugin.name() + ":" + std::to_string(device);
}

BackendInfo backend_info(const Plugin& plugin, int32_t device) {
    BackendInfo b;
    b.name = backend_name(plugin, device);
    b.props = plugin.device_props(device);
    const Plugin* p = &plugin;
    b.supports = [p, device](const sy_node& node) { return p->supports(device, node); };
    b.estimate = [p, device](const sy_node& node) { return p->estimate(device, node); };
    return b;
}

int32_t find_backend(std::span<const BackendInfo> backends, std::string_view name,
                     const std::string& where) {
    std::string loaded;
    // The name as written first (a plugin's own name may end in digits: "cpu2"), then in the
    // canonical spelling on both sides ("CUDA0", "cuda:0": "cuda"; "cpu2" and "cpu:2" meet).
    const auto lower = [](std::string_view s) {
        std::string out(s);
        std::transform(out.begin(), out.end(), out.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return out;
    };
    for (size_t i = 0; i < backends.size(); ++i)
        if (lower(backends[i].name) == lower(name)) return static_cast<int32_t>(i);
    const std::string wanted = canonical_backend_name(name);
    for (size_t i = 0; i < backends.size(); ++i) {
        if (canonical_backend_name(backends[i].name) == wanted) return static_cast<int32_t>(i);
        loaded += (loaded.empty() ? "" : ", ") + backends[i].name;
    }
    throw Error(fmt::format("{}: backend '{}' is not loaded (loaded: {})", where, name,
                            loaded.empty() ? "none" : loaded));
}

std::string WeightPlan::reason(size_t weight, const PlacementPolicy& policy) const {
    const int32_t rule = homes.at(weight).rule;
    const std::string fit =
        policy.fit_where == "--fit" ? "--fit" : "placement.fit (" + policy.fit_where + ")";
    if (rule == kFitted) return fit;
    if (rule == kSpilled) return fit + ": no device had room";
    if (rule == kSplit) {
        const int32_t from = split_from.at(weight);
        const std::string split = policy.tensor_split_where == "--tensor-split"
                                      ? "--tensor-split"
                                      : "placement.tensor_split (" + policy.tensor_split_where + ")";
        return (from < 0 ? std::string("default backend")
                         : fmt::format("rule {} ({})", from + 1, policy.rules[size_t(from)].where)) +
               ", " + split;
    }
    if (rule < 0) return "default backend";
    const PlacementRule& r = policy.rules[static_cast<size_t>(rule)];
    return fmt::format("rule {} '{}' ({})", rule + 1, r.match, r.where);
}

namespace {

bool routed_expert(const std::string& name) {
    return name.find("_exps.") != std::string::npos;
}

// --fit: the weights that no rule placed go, non-experts first, to the first device (fastest
// memory first) with room for them, else to the first host backend.
void fit_weights(std::span<const WeightInfo> weights, const PlacementPolicy& policy,
                 std::span<const BackendInfo> backends, std::span<const uint64_t> reserved,
                 WeightPlan& plan) {
    std::vector<int32_t> devices;
    int32_t host = -1;
    for (size_t b = 0; b < backends.size(); ++b) {
        if (backends[b].host_memory()) {
            if (host < 0) host = static_cast<int32_t>(b);
        } else {
            devices.push_back(static_cast<int32_t>(b));
        }
    }
    std::stable_sort(devices.begin(), devices.end(), [&](int32_t a, int32_t b) {
        return backends[size_t(a)].props.memory_bandwidth >
               backends[size_t(b)].props.memory_bandwidth;
    });
    std::vector<uint64_t> room(backends.size(), 0);
    for (int32_t d : devices) {
        const auto b = static_cast<size_t>(d);
        uint64_t used = policy.fit_margin + (b < reserved.size() ? reserved[b] : 0);
        for (size_t i = 0; i < weights.size(); ++i)
            if (plan.homes[i].rule >= 0 && plan.homes[i].backend == d) used += weights[i].bytes;
        room[b] = backends[b].props.memory_free > used ? backends[b].props.memory_free - used : 0;
    }
    for (bool experts : {false, true})
        for (size_t i = 0; i < weights.size(); ++i) {
            WeightPlan::Home& home = plan.homes[i];
            if (home.rule >= 0 || routed_expert(weights[i].name) != experts) continue;
            const auto fits = std::find_if(devices.begin(), devices.end(), [&](int32_t d) {
                return room[size_t(d)] >= weights[i].bytes;
            });
            if (fits != devices.end()) {
                room[size_t(*fits)] -= weights[i].bytes;
                home = {*fits, WeightPlan::kFitted};
            } else if (host >= 0) {
                home = {host, WeightPlan::kSpilled};
            }
        }
}

// The layer of "blk.N." names, or -1.
int64_t layer_of(const std::string& name) {
    if (!name.starts_with("blk.")) return -1;
    int64_t layer = 0;
    size_t i = 4;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
        if (i - 4 >= 9) return -1;  // no model has a billion layers; the sum stays in range
        layer = layer * 10 + (name[i] - '0');
    }
    return i > 4 && i < name.size() && name[i] == '.' ? layer : -1;
}

// --tensor-split: the layers whose weights the default backend or a splitting rule put on a
// device are cut into consecutive runs, one per device in load order, sized by the proportions.
void split_layers(std::span<const WeightInfo> weights, const PlacementPolicy& policy,
                  std::span<const BackendInfo> backends, WeightPlan& plan) {
    std::vector<int32_t> devices;
    for (size_t b = 0; b < backends.size(); ++b)
        if (!backends[b].host_memory()) devices.push_back(static_cast<int32_t>(b));
    const std::string at = policy.tensor_split_where;
    if (policy.tensor_split.size() > devices.size())
        throw Error(fmt::format("{}: {} proportions for {} device backend{} loaded", at,
                                policy.tensor_split.size(), devices.size(),
                                devices.size() == 1 ? "" : "s"));
    const auto splits = [&](const WeightPlan::Home& h) {
        const bool on_device = std::find(devices.begin(), devices.end(), h.backend) != devices.end();
        return on_device && (h.rule == WeightPlan::kDefault ||
                             (h.rule >= 0 && policy.rules[size_t(h.rule)].split));
    };
    std::vector<int64_t> layers;
    for (size_t i = 0; i < weights.size(); ++i)
        if (const int64_t l = layer_of(weights[i].name); l >= 0 && splits(plan.homes[i]))
            layers.push_back(l);
    std::sort(layers.begin(), layers.end());
    layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
    if (layers.empty()) return;
    double total = 0;
    for (double p : policy.tensor_split) total += p;
    plan.split_from.assign(weights.size(), WeightPlan::kDefault);
    for (size_t i = 0; i < weights.size(); ++i) {
        const int64_t l = layer_of(weights[i].name);
        if (l < 0 || !splits(plan.homes[i])) continue;
        // Layer j of n (in order) goes to the device whose share holds the middle of its slot.
        const auto j = double(std::lower_bound(layers.begin(), layers.end(), l) - layers.begin());
        const double at_fraction = (j + 0.5) / double(layers.size()) * total;
        size_t d = 0;
        for (double sum = policy.tensor_split[0];
             d + 1 < policy.tensor_split.size() && at_fraction >= sum;)
            sum += policy.tensor_split[++d];
        plan.split_from[i] = plan.homes[i].rule;
        plan.homes[i] = {devices[d], WeightPlan::kSplit};
    }
}

}  // namespace

WeightPlan place_weights(std::span<const WeightInfo> weights, const PlacementPolicy& policy,
                         std::span<const BackendInfo> backends, std::string_view fallback_default,
                         std::span<const uint64_t> reserved) {
    const std::string default_name =
        policy.default_backend.empty() ? std::string(fallback_default) : policy.default_backend;
    const int32_t fallback =
        find_backend(backends, default_name,
                     policy.default_backend.empty() ? "default backend" : "placement.default");

    struct CompiledRule {
        Pattern re;
        int64_t layers_below;
        int32_t backend;
        size_t matched = 0, claimed = 0;
    };
    std::vector<CompiledRule> rules;
    for (size_t i = 0; i < policy.rules.size(); ++i) {
        const PlacementRule& r = policy.rules[i];
        const std::string at = fmt::format("placement rule {} ({})", i + 1, r.where);
        const int32_t backend = find_backend(backends, r.backend, at);
        rules.push_back({Pattern(r.match, at), r.layers_below, backend});
    }

    WeightPlan plan;
    plan.bytes_per_backend.assign(backends.size(), 0);
    for (const WeightInfo& w : weights) {
        WeightPlan::Home home{fallback, -1};
        for (size_t i = 0; i < rules.size(); ++i) {
            if (!rules[i].re.search(w.name)) continue;
            if (rules[i].layers_below >= 0) {
                const int64_t layer = layer_of(w.name);
                if (layer < 0 || layer >= rules[i].layers_below) continue;
            }
            ++rules[i].matched;
            if (home.rule < 0) {
                home = {rules[i].backend, static_cast<int32_t>(i)};
                ++rules[i].claimed;
            }
        }
        plan.homes.push_back(home);
    }
    if (!policy.tensor_split.empty()) split_layers(weights, policy, backends, plan);
    if (policy.fit) fit_weights(weights, policy, backends, reserved, plan);
    for (size_t i = 0; i < weights.size(); ++i)
        plan.bytes_per_backend[static_cast<size_t>(plan.homes[i].backend)] += weights[i].bytes;

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
