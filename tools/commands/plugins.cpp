// `switchyard plugins`: what is loaded, what each backend can do and what it says things cost.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "commands/commands.hpp"
#include "switchyard/core/config.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/core/plugin_setup.hpp"
#include "switchyard/dtype.h"
#include "switchyard/sdk.hpp"
#include "switchyard/version.hpp"

namespace sy::tools {
namespace {

using nlohmann::json;

std::string capability_type_label(int32_t type) {
    if (type == SY_TYPE_ANY) return "any";
    if (type == SY_TYPE_NONE) return "-";
    const char* name = sy_dtype_info(type).name;
    return name ? name : "type" + std::to_string(type);
}

std::string op_label(const sy_capability& cap) {
    if (cap.op == SY_OP_NAMED) {
        return fmt::format("{} v{}", cap.named_op ? cap.named_op : "?", cap.named_op_version);
    }
    const char* name = sdk::op_name(cap.op);
    return name ? name : "op" + std::to_string(cap.op);
}

const char* kind_name(int32_t kind) {
    switch (kind) {
        case SY_DEVICE_CPU: return "cpu";
        case SY_DEVICE_GPU: return "gpu";
        case SY_DEVICE_ACCELERATOR: return "accelerator";
        default: return "unknown";
    }
}

// Sources of a capability row, stopping at the first absent one.
std::vector<std::string> source_types(const sy_capability& cap) {
    std::vector<std::string> out;
    for (int32_t t : cap.src_type) {
        if (t == SY_TYPE_NONE) break;
        out.push_back(capability_type_label(t));
    }
    return out;
}

// Ops in table order, each with its type combinations.
std::vector<std::pair<std::string, std::vector<sy_capability>>> ops_of(const Plugin& p) {
    std::vector<std::pair<std::string, std::vector<sy_capability>>> ops;
    std::map<std::string, size_t> index;
    for (const sy_capability& cap : p.capabilities()) {
        const std::string label = op_label(cap);
        auto [it, inserted] = index.emplace(label, ops.size());
        if (inserted) ops.push_back({label, {}});
        ops[it->second].second.push_back(cap);
    }
    return ops;
}

json device_json(const Plugin& p, int32_t d) {
    const sy_device_props props = p.device_props(d);
    json cost = json::array();
    for (const sy_cost_param& c : p.cost_params(d)) {
        cost.push_back(
            {{"key", c.key ? c.key : ""}, {"value", c.value}, {"unit", c.unit ? c.unit : ""}});
    }
    return {{"index", d},
            {"name", props.name},
            {"description", props.description},
            {"kind", kind_name(props.kind)},
            {"compute_units", props.compute_units},
            {"memory_total", props.memory_total},
            {"memory_free", props.memory_free},
            {"host_memory", props.host_memory != 0},
            {"peak_flops_f32", props.peak_flops_f32},
            {"peak_flops_f16", props.peak_flops_f16},
            {"peak_flops_int8", props.peak_flops_int8},
            {"memory_bandwidth", props.memory_bandwidth},
            {"link_bandwidth", props.link_bandwidth},
            {"link_latency_ns", props.link_latency_ns},
            {"launch_overhead_ns", props.launch_overhead_ns},
            {"cost_params", cost}};
}

json plugin_json(const Plugin& p) {
    json devices = json::array();
    for (int32_t d = 0; d < p.device_count(); ++d) devices.push_back(device_json(p, d));
    json ops = json::array();
    for (const auto& [label, rows] : ops_of(p)) {
        json types = json::array();
        for (const sy_capability& row : rows) {
            const sy_capability* cap = &row;
            types.push_back(
                {{"dst", capability_type_label(cap->dst_type)}, {"src", source_types(*cap)}});
        }
        ops.push_back({{"op", label}, {"types", types}});
    }
    json named = json::array();
    for (const sy_named_op_info& op : p.named_ops()) {
        named.push_back({{"name", op.name ? op.name : ""},
                         {"schema_version", op.schema_version},
                         {"summary", op.summary ? op.summary : ""}});
    }
    return {{"name", p.name()},
            {"version", p.version()},
            {"variant", p.variant()},
            {"score", p.score()},
            {"file", p.file().string()},
            {"abi", {{"major", p.api().abi_major}, {"minor", p.api().abi_minor}}},
            {"build_info", p.build_info()},
            {"devices", devices},
            {"ops", ops},
            {"named_ops", named}};
}

// The type combinations of one op, compactly: when the rows are every combination of per-slot
// type sets, "dst <- src0 x src1" with a set per slot; otherwise each row as dst(src0,src1).
std::string describe_types(const std::vector<sy_capability>& rows) {
    constexpr int kSlots = 5;  // dst + 4 sources
    std::vector<std::vector<int32_t>> sets(kSlots);
    auto add = [](std::vector<int32_t>& set, int32_t t) {
        if (std::find(set.begin(), set.end(), t) == set.end()) set.push_back(t);
    };
    int n_src = 0;
    for (const sy_capability& row : rows) {
        const sy_capability* cap = &row;
        add(sets[0], cap->dst_type);
        int i = 0;
        for (; i < 4 && cap->src_type[i] != SY_TYPE_NONE; ++i) add(sets[1 + i], cap->src_type[i]);
        n_src = std::max(n_src, i);
    }
    size_t product = 1;
    for (int s = 0; s <= n_src; ++s) product *= sets[s].size();
    auto set_text = [](const std::vector<int32_t>& set) {
        std::string out;
        for (int32_t t : set) out += (out.empty() ? "" : ",") + capability_type_label(t);
        return set.size() > 1 ? "{" + out + "}" : out;
    };
    std::string text;
    if (product == rows.size()) {
        text = set_text(sets[0]) + " <- ";
        for (int s = 1; s <= n_src; ++s) text += (s > 1 ? " x " : "") + set_text(sets[s]);
        return text;
    }
    for (const sy_capability& row : rows) {
        const sy_capability* cap = &row;
        std::string srcs;
        for (const std::string& t : source_types(*cap)) srcs += (srcs.empty() ? "" : ",") + t;
        text += fmt::format("{}{}({})", text.empty() ? "" : " ",
                            capability_type_label(cap->dst_type), srcs);
    }
    return text;
}

std::string human_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
    return fmt::format("{:.1f} {}", bytes, units[u]);
}

void print_text(const PluginHost& host) {
    for (const auto& p : host.plugins()) {
        fmt::print("{} {}{}  ABI {}.{}  {}\n", p->name(), p->version(),
                   p->variant().empty() ? "" : " (" + p->variant() + ")", p->api().abi_major,
                   p->api().abi_minor, p->file().string());
        if (!p->build_info().empty()) fmt::print("  build: {}\n", p->build_info());
        for (int32_t d = 0; d < p->device_count(); ++d) {
            const sy_device_props props = p->device_props(d);
            fmt::print("  device {}: {} [{}], {} compute units, memory {} ({} free){}\n", d,
                       props.name, kind_name(props.kind), props.compute_units,
                       human_bytes(double(props.memory_total)),
                       human_bytes(double(props.memory_free)),
                       props.host_memory ? ", computes on host memory" : "");
            fmt::print("    peak f32 {:.1f} GFLOP/s, f16 {:.1f} GFLOP/s, memory {:.1f} GB/s, ",
                       props.peak_flops_f32 / 1e9, props.peak_flops_f16 / 1e9,
                       props.memory_bandwidth / 1e9);
            if (props.host_memory) {
                fmt::print("link: none needed");
            } else {
                fmt::print("link {:.1f} GB/s + {:.0f} ns", props.link_bandwidth / 1e9,
                           props.link_latency_ns);
            }
            fmt::print(", per-op overhead {:.0f} ns\n", props.launch_overhead_ns);
            for (const sy_cost_param& c : p->cost_params(d)) {
                fmt::print("    cost {} = {:g} {}\n", c.key ? c.key : "?", c.value,
                           c.unit ? c.unit : "");
            }
        }
        fmt::print("  ops:\n");
        for (const auto& [label, rows] : ops_of(*p)) {
            fmt::print("    {:<12} {}\n", label, describe_types(rows));
        }
        const auto named = p->named_ops();
        if (named.empty()) {
            fmt::print("  named ops: none\n");
        } else {
            fmt::print("  named ops:\n");
            for (const sy_named_op_info& op : named) {
                fmt::print("    {} v{}  {}\n", op.name ? op.name : "?", op.schema_version,
                           op.summary ? op.summary : "");
            }
        }
    }
    if (host.plugins().empty()) fmt::print("no plugins loaded\n");
}

}  // namespace

Command add_plugins_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "plugins",
        "List loaded backend plugins: devices, ops with their dtypes, named ops, cost model");
    auto options = std::make_shared<PluginOptions>();
    auto json_output = std::make_shared<bool>(false);
    options->add_to(*cmd);
    cmd->add_flag("--json", *json_output, "Print JSON on stdout");

    return [options, json_output]() -> int {
        Config config;
        if (!options->config_file.empty()) config = load_config(options->config_file);
        PluginHost host;
        const std::vector<std::string> warnings =
            setup_plugins(host, config, options->plugins, options->threads);
        for (const std::string& w : warnings)
            std::fprintf(stderr, "switchyard: warning: %s\n", w.c_str());
        if (*json_output) {
            for (const PluginFailure& f : host.failures()) {
                std::fprintf(stderr, "switchyard: plugin failed: %s\n", f.reason.c_str());
            }
            json out;
            out["switchyard_version"] = SWITCHYARD_VERSION;
            out["abi"] = {{"major", SY_ABI_VERSION_MAJOR}, {"minor", SY_ABI_VERSION_MINOR}};
            out["plugins"] = json::array();
            for (const auto& p : host.plugins()) out["plugins"].push_back(plugin_json(*p));
            out["failed"] = json::array();
            for (const PluginFailure& f : host.failures()) {
                out["failed"].push_back(
                    {{"file", f.file}, {"reason", f.reason}, {"requested", f.requested}});
            }
            std::puts(out.dump(2).c_str());
        } else {
            print_text(host);
            for (const PluginFailure& f : host.failures()) {
                fmt::print("failed: {}{}\n", f.reason,
                           f.requested ? "" : " (found, not requested)");
            }
        }
        return host.any_requested_failure() ? 1 : 0;
    };
}

}  // namespace sy::tools
