#include "switchyard/core/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "switchyard/core/graph.hpp"
#include "switchyard/sdk.hpp"

namespace sy {
namespace {

// A matrix product: by its weight's kind, else by its result's name.
// The kinds of the weights it reads ("ffn_gate_exps+ffn_up_exps" for a fused product), else
// its result's.
std::string product_kind(const Node& node) {
    std::string kinds;
    for (const Tensor* src : node.src) {
        if (!src || src->base()->kind() != TensorKind::weight || src->base()->name().empty())
            continue;
        const std::string kind = Profile::kind_of(src->base()->name());
        if (("+" + kinds + "+").find("+" + kind + "+") == std::string::npos)
            kinds += (kinds.empty() ? "" : "+") + kind;
    }
    if (kinds.empty()) kinds = Profile::kind_of(node.dst->name());
    return kinds.empty() ? "(unnamed)" : kinds;
}

std::string milliseconds(double seconds) {
    return fmt::format("{:.1f} ms", seconds * 1e3);
}

std::string bytes_text(uint64_t bytes) {
    if (bytes >= (uint64_t(1) << 20)) return fmt::format("{:.2f} MiB", double(bytes) / (1 << 20));
    if (bytes >= 1024) return fmt::format("{:.1f} KiB", double(bytes) / 1024);
    return fmt::format("{} B", bytes);
}

template <typename Map>
void format_table(std::string& out, std::string_view heading, const Map& rows, double total) {
    std::vector<std::pair<std::string, const typename Map::mapped_type*>> sorted;
    for (const auto& [name, time] : rows) sorted.emplace_back(name, &time);
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
        return a.second->seconds > b.second->seconds;
    });
    out += fmt::format("    {:<28} {:>8} {:>11} {:>7} {:>10}\n", heading, "calls", "total ms",
                       "share", "us/call");
    for (const auto& [name, time] : sorted)
        out += fmt::format("    {:<28} {:>8} {:>11.3f} {:>6.1f}% {:>10.1f}\n", name, time->count,
                           time->seconds * 1e3, total > 0 ? 100.0 * time->seconds / total : 0.0,
                           time->count ? time->seconds * 1e6 / double(time->count) : 0.0);
}

}  // namespace

std::string Profile::kind_of(std::string_view name) {
    if (name.starts_with("blk.")) {  // blk.<layer>.<kind>[.weight]
        const size_t dot = name.find('.', 4);
        if (dot != std::string_view::npos) name.remove_prefix(dot + 1);
    }
    std::string kind(name);
    // "attn_k_b.weight (derived)" -> "attn_k_b (derived)"
    for (std::string_view suffix : {std::string_view(".weight"), std::string_view(".bias")})
        if (const size_t at = kind.find(suffix); at != std::string::npos) kind.erase(at, suffix.size());
    name = kind;
    // "kq-3", "l_out-12": the layer number the graph builder appends.
    const size_t dash = name.rfind('-');
    if (dash != std::string_view::npos && dash + 1 < name.size() &&
        std::all_of(name.begin() + long(dash) + 1, name.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
        name = name.substr(0, dash);
    return std::string(name);
}

void Profile::begin_graph(Phase phase, int64_t tokens) {
    phase_ = phase;
    PhaseTimes& p = phases_[phase];
    p.graphs += 1;
    p.tokens += tokens;
}

void Profile::add_node(std::string_view backend, const Graph& graph, int32_t node, double seconds) {
    const Node& n = graph.nodes()[static_cast<size_t>(node)];
    PhaseTimes& p = phases_[phase_];
    auto& ops = p.ops[std::string(backend)];
    Time& op = ops[n.key()];
    op.count += 1;
    op.seconds += seconds;
    if (n.is_product()) {
        Time& product = p.products[std::string(backend)][product_kind(n)];
        product.count += 1;
        product.seconds += seconds;
    }
    if (observer_) observer_(backend, graph, node, seconds);
}

void Profile::add_copy(double seconds, uint64_t bytes) {
    PhaseTimes& p = phases_[phase_];
    p.copies += seconds;
    p.copy_bytes += bytes;
}

void Profile::add_sync(std::string_view backend, double seconds) {
    phases_[phase_].sync[std::string(backend)] += seconds;
}

void Profile::end_graph(double build_seconds, double run_seconds) {
    PhaseTimes& p = phases_[phase_];
    p.build += build_seconds;
    p.run += run_seconds;
}

std::string Profile::format() const {
    std::string out;
    for (const auto& [phase, p] : phases_) {
        const double total = p.build + p.run;
        out += fmt::format(
            "profile, {}: {} graphs, {} tokens, {} ({:.3f} ms per graph; nodes run one at a time, "
            "each synchronized)\n",
            phase == Phase::prompt ? "prompt batches" : "decode steps", p.graphs, p.tokens,
            milliseconds(total), p.graphs ? total * 1e3 / double(p.graphs) : 0.0);
        double in_ops = 0;
        for (const auto& [backend, ops] : p.ops) {
            double seconds = 0;
            for (const auto& [name, time] : ops) seconds += time.seconds;
            in_ops += seconds;
            const auto sync = p.sync.find(backend);
            out +=
                fmt::format("  backend {}: {} in ops ({:.1f}%), {} of it in synchronize\n", backend,
                            milliseconds(seconds), total > 0 ? 100.0 * seconds / total : 0.0,
                            milliseconds(sync == p.sync.end() ? 0.0 : sync->second));
            format_table(out, "op", ops, total);
            if (const auto it = p.products.find(backend); it != p.products.end())
                format_table(out, "matrix products by weight", it->second, total);
        }
        const double host_run = std::max(0.0, p.run - in_ops - p.copies);
        const auto share = [total](double s) { return total > 0 ? 100.0 * s / total : 0.0; };
        out += fmt::format("  copies between backends: {} ({:.1f}%), {}\n", milliseconds(p.copies),
                           share(p.copies), bytes_text(p.copy_bytes));
        out += fmt::format(
            "  host: building graphs {} ({:.1f}%), planning, binding, staging and dispatch {} "
            "({:.1f}%)\n",
            milliseconds(p.build), share(p.build), milliseconds(host_run), share(host_run));
    }
    return out;
}

}  // namespace sy
