// `switchyard plan`: where a model's weights and ops go across the loaded backends, and why,
// without running it (nothing is allocated or copied): weight homes per layer with the rule that
// put them there, every node of a prompt ubatch and of a one-token step with its backend, the
// reason and each candidate's cost, the splits and copies, and memory per backend. `--json`
// prints the same as one JSON object. `run --verbose-plan` prints the text form.
#include "commands/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands/model_session.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/executor.hpp"
#include "switchyard/core/memory_planner.hpp"
#include "switchyard/core/profile.hpp"

namespace sy::tools {
namespace {

using Json = nlohmann::ordered_json;

std::string bytes_text(uint64_t bytes) {
    if (bytes >= (uint64_t(1) << 30)) return fmt::format("{:.2f} GiB", double(bytes) / (1 << 30));
    if (bytes >= (uint64_t(1) << 20)) return fmt::format("{:.2f} MiB", double(bytes) / (1 << 20));
    if (bytes >= 1024) return fmt::format("{:.1f} KiB", double(bytes) / 1024);
    return fmt::format("{} B", bytes);
}

std::string backend_name(std::span<const BackendInfo> backends, int32_t b) {
    return b == kHostInput ? "host" : backends[size_t(b)].name;
}

const char* phase_name(Phase p) {
    return p == Phase::prompt ? "prompt" : p == Phase::decode ? "decode" : "any";
}

// "blk.12.ffn_down_exps.weight" -> 12; -1 for the tensors outside the layers.
int layer_of(const std::string& name) {
    if (!name.starts_with("blk.")) return -1;
    int layer = 0;
    size_t i = 4;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i)
        layer = layer * 10 + name[i] - '0';
    return i > 4 ? layer : -1;
}

// What a node works on: the weight it reads (a matrix product's), else its result's name.
std::string node_subject(const Node& node) {
    for (const Tensor* src : node.src)
        if (src && src->base()->kind() == TensorKind::weight && !src->base()->name().empty())
            return src->base()->name();
    if (!node.dst->name().empty()) return node.dst->name();
    return "#" + std::to_string(node.dst->id());
}

struct PlannedGraph {
    Phase phase = Phase::decode;
    int64_t tokens = 0, n_past = 0;
    llm::UbatchGraph ug;
    OpPlan plan;                          // a copy: the session's plan cache may drop its own
    std::vector<uint64_t> compute_bytes;  // per backend: the compute buffer its nodes need
    std::vector<Executor::StagingLayout> staging;  // per backend off host memory: copies of
                                                   // host weights, inputs and imports
};

PlannedGraph plan_graph(llm::Session& session, int64_t tokens, int64_t n_past) {
    PlannedGraph p;
    p.phase = tokens > 1 ? Phase::prompt : Phase::decode;
    p.tokens = tokens;
    p.n_past = n_past;
    p.ug = session.build(tokens, n_past, false);
    p.plan = session.plan(p.ug.graph, tokens, n_past);
    const size_t n_backends = session.backend_infos().size();
    for (size_t b = 0; b < n_backends; ++b) {
        std::vector<int32_t> order;
        for (size_t i = 0; i < p.plan.nodes.size(); ++i)
            if (p.plan.nodes[i].backend == int32_t(b)) order.push_back(int32_t(i));
        p.compute_bytes.push_back(order.empty() ? 0 : plan_memory(p.ug.graph, order).peak_bytes);
        const BackendInfo& info = session.backend_infos()[b];
        if (order.empty() || info.host_memory()) {
            p.staging.emplace_back();
            continue;
        }
        // What the executor stages: results of other backends and tensors that will live in
        // another device's memory (imports); host weights and inputs (the executor finds those
        // itself). Nothing is allocated yet: homes come from the session's placement.
        std::vector<int32_t> imports;
        for (const TensorCopy& c : p.plan.copies) {
            const Tensor& t = *p.ug.graph.tensors()[size_t(c.tensor)];
            const int32_t home = t.is_external() ? session.home_of(t) : kHostInput;
            if (c.to == int32_t(b) &&
                (!t.is_external() || (home != kHostInput && home != int32_t(b))) &&
                std::find(imports.begin(), imports.end(), c.tensor) == imports.end())
                imports.push_back(c.tensor);
        }
        uint64_t limit = session.session_backends().offload.staging_limit;
        if (limit == 0) {
            // As the executor will see the device: its weights and KV cache allocated.
            sy_device_props props = info.props;
            const uint64_t taken =
                session.weight_plan().bytes_per_backend[b] + session.cache_bytes_on(b);
            if (props.memory_free > 0)
                props.memory_free = props.memory_free > taken ? props.memory_free - taken : 1;
            limit = Executor::auto_staging_limit(props, 0, p.compute_bytes.back());
        }
        p.staging.push_back(Executor::staging_layout(
            p.ug.graph, order, imports, limit,
            [&](const Tensor& t) { return session.home_of(t) == int32_t(b); }));
    }
    return p;
}

// Splits whose next split's first nodes run beside them (Scheduler::set_overlap, with the
// scheduler's rule: Scheduler::may_overlap).
struct Overlap {
    size_t split = 0;   // index in plan.splits
    int32_t nodes = 0;  // of the next split, from its start
};
std::vector<Overlap> overlaps(const llm::Session& session, const Graph& graph, const OpPlan& plan) {
    std::vector<Overlap> out;
    const llm::SessionBackends& sb = session.session_backends();
    if (!sb.offload.overlap) return out;
    const auto infos = session.backend_infos();
    for (size_t i = 0; i + 1 < plan.splits.size(); ++i) {
        const Split &a = plan.splits[i], &b = plan.splits[i + 1];
        const auto a_host = infos[size_t(a.backend)].host_memory();
        const auto b_host = infos[size_t(b.backend)].host_memory();
        if (!Scheduler::may_overlap(sb.backends[size_t(a.backend)].plugin, a_host,
                                    sb.backends[size_t(b.backend)].plugin, b_host))
            continue;
        if (const int32_t n = independent_nodes(graph, a, b); n > 0) {
            out.push_back({i, n});
            ++i;  // the next split is taken as a whole; the one after it may overlap again
        }
    }
    return out;
}

std::string candidate_text(std::span<const BackendInfo> backends, const CandidateCost& c) {
    std::string s =
        fmt::format("{} {:.1f} us", backends[size_t(c.backend)].name, c.total_ns() / 1e3);
    if (c.transfer_bytes > 0)
        s += fmt::format(" ({:.1f} compute + {:.1f} moving {})", c.compute_ns / 1e3,
                         c.transfer_ns / 1e3, bytes_text(c.transfer_bytes));
    s += fmt::format(" [{}]", cost_source_name(c.source));
    if (!c.excluded.empty()) s += " excluded: " + c.excluded;
    return s;
}

// Weight homes, layers with the same homes and reasons merged: "layers 1-26: ...".
std::string weights_text(const llm::Session& session) {
    const auto backends = session.backend_infos();
    const WeightPlan& wp = session.weight_plan();
    const PlacementPolicy& policy = session.session_backends().placement;
    const auto weights = session.weights();
    // layer -> "backend (reason)" -> kinds
    std::map<int, std::map<std::string, std::vector<std::string>>> layers;
    for (size_t i = 0; i < weights.size(); ++i) {
        const std::string where = fmt::format("{} ({})", backends[size_t(wp.homes[i].backend)].name,
                                              wp.reason(i, policy));
        layers[layer_of(weights[i].name)][where].push_back(Profile::kind_of(weights[i].name));
    }
    const auto describe = [](const std::map<std::string, std::vector<std::string>>& homes) {
        std::string s;
        for (const auto& [where, kinds] : homes)
            s += fmt::format("      {}: {}\n", where, fmt::join(kinds, ", "));
        return s;
    };
    std::string out;
    for (auto it = layers.begin(); it != layers.end();) {
        const std::string text = describe(it->second);
        auto last = it;
        auto next = std::next(it);
        while (it->first >= 0 && next != layers.end() && next->first == last->first + 1 &&
               describe(next->second) == text)
            last = next++;
        if (it->first < 0)
            out += "    outside the layers:\n";
        else if (last->first == it->first)
            out += fmt::format("    layer {}:\n", it->first);
        else
            out += fmt::format("    layers {}-{}:\n", it->first, last->first);
        out += text;
        it = next;
    }
    std::string totals;
    for (size_t b = 0; b < backends.size(); ++b)
        totals += fmt::format("{}{} {}", totals.empty() ? "" : ", ", backends[b].name,
                              bytes_text(wp.bytes_per_backend[b]));
    return "  weights (" + totals + "):\n" + out;
}

std::string graph_text(const llm::Session& session, const PlannedGraph& p) {
    const auto backends = session.backend_infos();
    const OpPlan& plan = p.plan;
    const Graph& g = p.ug.graph;
    std::string out =
        fmt::format("  {} of {} token{} after {} cached: {} nodes, {} splits, {} copies ({})\n",
                    p.phase == Phase::prompt ? "prompt ubatch" : "decode step", p.tokens,
                    p.tokens == 1 ? "" : "s", p.n_past, plan.nodes.size(), plan.splits.size(),
                    plan.copies.size(), bytes_text(plan.copy_bytes()));
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
        const NodePlacement& n = plan.nodes[i];
        const Node& node = g.nodes()[i];
        out += fmt::format("    {:>4} {:<18} {:<34} {:<6} {}", i, node.key(), node_subject(node),
                           backends[size_t(n.backend)].name, n.reason);
        if (!n.candidates.empty()) {
            std::vector<std::string> parts;
            for (const CandidateCost& c : n.candidates)
                parts.push_back(candidate_text(backends, c));
            out += fmt::format(": {}", fmt::join(parts, "; "));
        }
        out += "\n";
    }
    std::vector<std::string> splits;
    for (const Split& s : plan.splits)
        splits.push_back(
            fmt::format("{} [{}, {})", backends[size_t(s.backend)].name, s.first, s.end));
    out += fmt::format("    splits: {}\n", fmt::join(splits, ", "));
    std::vector<std::string> beside;
    for (const Overlap& o : overlaps(session, p.ug.graph, plan)) {
        const Split &a = plan.splits[o.split], &b = plan.splits[o.split + 1];
        beside.push_back(fmt::format("{} [{}, {}) beside {} [{}, {})",
                                     backends[size_t(b.backend)].name, b.first, b.first + o.nodes,
                                     backends[size_t(a.backend)].name, a.first, a.end));
    }
    if (!beside.empty()) out += fmt::format("    overlap: {}\n", fmt::join(beside, ", "));
    for (const TensorCopy& c : plan.copies) {
        const Tensor& t = *g.tensors()[size_t(c.tensor)];
        out += fmt::format("    copy: {} {} -> {}, {}, first read by node {}\n",
                           t.name().empty() ? "#" + std::to_string(t.id()) : "'" + t.name() + "'",
                           backend_name(backends, c.from), backend_name(backends, c.to),
                           bytes_text(c.bytes), c.first_use);
    }
    return out;
}

std::string memory_text(const llm::Session& session, std::span<const PlannedGraph> graphs) {
    const auto backends = session.backend_infos();
    std::string out = "  memory per backend:\n";
    for (size_t b = 0; b < backends.size(); ++b) {
        std::string compute;
        for (const PlannedGraph& p : graphs)
            compute += fmt::format("{}{} {}", compute.empty() ? "" : ", ", phase_name(p.phase),
                                   bytes_text(p.compute_bytes[b]));
        std::string staging;
        for (const PlannedGraph& p : graphs)
            if (p.staging[b].bytes > 0)
                staging += fmt::format("{}{} {}{}", staging.empty() ? "" : ", ",
                                       phase_name(p.phase), bytes_text(p.staging[b].bytes),
                                       p.staging[b].per_use ? " (weights staged per use)" : "");
        out += fmt::format("    {}: weights {}, KV cache {}, compute buffer {}{}\n",
                           backends[b].name, bytes_text(session.weight_plan().bytes_per_backend[b]),
                           bytes_text(session.cache_bytes_on(b)), compute,
                           staging.empty() ? "" : ", staging buffer " + staging);
    }
    return out;
}

Json candidate_json(std::span<const BackendInfo> backends, const CandidateCost& c) {
    Json j;
    j["backend"] = backends[size_t(c.backend)].name;
    j["compute_ns"] = c.compute_ns;
    j["transfer_ns"] = c.transfer_ns;
    j["transfer_bytes"] = c.transfer_bytes;
    j["total_ns"] = c.total_ns();
    j["source"] = cost_source_name(c.source);
    if (!c.excluded.empty()) j["excluded"] = c.excluded;
    return j;
}

Json plan_json(const llm::Session& session, const std::string& model,
               std::span<const PlannedGraph> graphs) {
    const auto backends = session.backend_infos();
    const WeightPlan& wp = session.weight_plan();
    const llm::SessionBackends& sb = session.session_backends();
    Json j;
    j["model"] = model;
    j["backends"] = Json::array();
    for (size_t b = 0; b < backends.size(); ++b) {
        const sy_device_props& p = backends[b].props;
        Json x;
        x["name"] = backends[b].name;
        x["device"] = p.name;
        x["host_memory"] = p.host_memory != 0;
        x["memory_bandwidth"] = p.memory_bandwidth;
        x["link_bandwidth"] = p.link_bandwidth;
        x["link_latency_ns"] = p.link_latency_ns;
        x["peak_flops_f32"] = p.peak_flops_f32;
        x["kv_cache"] = session.cache_bytes_on(b) > 0;
        j["backends"].push_back(x);
    }
    Json rules = Json::array();
    for (const PlacementRule& r : sb.placement.rules)
        rules.push_back({{"match", r.match}, {"backend", r.backend}, {"where", r.where}});
    Json ops = Json::array();
    for (const OffloadSwitch& s : sb.offload.ops)
        ops.push_back({{"op", s.op}, {"allowed", s.allowed}, {"where", s.where}});
    Json pins = Json::array();
    for (const OpPin& p : sb.offload.pins)
        pins.push_back({{"op", p.op},
                        {"match", p.match},
                        {"backend", p.backend},
                        {"phase", phase_name(p.phase)},
                        {"where", p.where}});
    j["policy"] = {{"default_backend", backends[session.primary()].name},
                   {"rules", rules},
                   {"offload",
                    {{"mode", offload_mode_name(sb.offload.mode)},
                     {"min_batch", sb.offload.min_batch},
                     {"ops", ops},
                     {"pins", pins},
                     {"cost_table", sb.offload.cost_table}}}};
    j["weights"] = Json::array();
    const auto weights = session.weights();
    for (size_t i = 0; i < weights.size(); ++i)
        j["weights"].push_back({{"name", weights[i].name},
                                {"bytes", weights[i].bytes},
                                {"backend", backends[size_t(wp.homes[i].backend)].name},
                                {"reason", wp.reason(i, sb.placement)}});
    j["graphs"] = Json::array();
    for (const PlannedGraph& p : graphs) {
        const OpPlan& plan = p.plan;
        Json g;
        g["phase"] = phase_name(p.phase);
        g["tokens"] = p.tokens;
        g["n_past"] = p.n_past;
        g["nodes"] = Json::array();
        for (size_t i = 0; i < plan.nodes.size(); ++i) {
            const Node& node = p.ug.graph.nodes()[i];
            Json n;
            n["index"] = i;
            n["op"] = node.key();
            n["subject"] = node_subject(node);
            n["backend"] = backends[size_t(plan.nodes[i].backend)].name;
            n["reason"] = plan.nodes[i].reason;
            n["candidates"] = Json::array();
            for (const CandidateCost& c : plan.nodes[i].candidates)
                n["candidates"].push_back(candidate_json(backends, c));
            g["nodes"].push_back(n);
        }
        g["splits"] = Json::array();
        for (const Split& s : plan.splits)
            g["splits"].push_back({{"backend", backends[size_t(s.backend)].name},
                                   {"first", s.first},
                                   {"end", s.end}});
        g["overlap"] = Json::array();
        for (const Overlap& o : overlaps(session, p.ug.graph, plan))
            g["overlap"].push_back({{"split", o.split}, {"nodes", o.nodes}});
        g["copies"] = Json::array();
        for (const TensorCopy& c : plan.copies)
            g["copies"].push_back({{"tensor", p.ug.graph.tensors()[size_t(c.tensor)]->name()},
                                   {"from", backend_name(backends, c.from)},
                                   {"to", backend_name(backends, c.to)},
                                   {"bytes", c.bytes},
                                   {"first_use", c.first_use}});
        g["copy_bytes"] = plan.copy_bytes();
        j["graphs"].push_back(g);
    }
    j["memory"] = Json::array();
    for (size_t b = 0; b < backends.size(); ++b) {
        Json m;
        m["backend"] = backends[b].name;
        m["weights_bytes"] = wp.bytes_per_backend[b];
        m["kv_cache_bytes"] = session.cache_bytes_on(b);
        for (const PlannedGraph& p : graphs)
            m[fmt::format("compute_bytes_{}", phase_name(p.phase))] = p.compute_bytes[b];
        for (const PlannedGraph& p : graphs) {
            m[fmt::format("staging_bytes_{}", phase_name(p.phase))] = p.staging[b].bytes;
            m[fmt::format("staging_per_use_{}", phase_name(p.phase))] = p.staging[b].per_use;
        }
        j["memory"].push_back(m);
    }
    return j;
}

std::string policy_text(const llm::Session& session) {
    const auto backends = session.backend_infos();
    const llm::SessionBackends& sb = session.session_backends();
    std::string out = "plan:\n  backends:\n";
    for (size_t b = 0; b < backends.size(); ++b) {
        const sy_device_props& p = backends[b].props;
        out +=
            fmt::format("    {}: {}, {}, memory {:.1f} GB/s, f32 {:.0f} GFLOP/s", backends[b].name,
                        p.name, p.host_memory ? "computes on host memory" : "own memory",
                        p.memory_bandwidth / 1e9, p.peak_flops_f32 / 1e9);
        if (!p.host_memory)
            out += fmt::format(", link {:.1f} GB/s + {:.1f} us", p.link_bandwidth / 1e9,
                               p.link_latency_ns / 1e3);
        out += b == session.primary() ? " (default: unplaced weights, the KV cache)\n" : "\n";
    }
    for (size_t i = 0; i < sb.placement.rules.size(); ++i) {
        const PlacementRule& r = sb.placement.rules[i];
        out += fmt::format("  rule {}: '{}' -> {} ({})\n", i + 1, r.match, r.backend, r.where);
    }
    out += fmt::format("  offload: mode {}, min_batch {}", offload_mode_name(sb.offload.mode),
                       sb.offload.min_batch);
    for (const OffloadSwitch& s : sb.offload.ops)
        out += fmt::format(", {}={} ({})", s.op, s.allowed ? 1 : 0, s.where);
    for (const OpPin& p : sb.offload.pins)
        out += fmt::format(", pin {}{} -> {} ({})", p.op,
                           p.match.empty() ? "" : " '" + p.match + "'", p.backend, p.where);
    if (sb.costs)
        out += fmt::format("\n  cost table: {} ({}): measured times before the hints",
                           sb.offload.cost_table, sb.offload.cost_table_where);
    return out + "\n";
}

std::vector<PlannedGraph> plan_graphs(llm::Session& session, int64_t ubatch, int64_t depth) {
    const int64_t n_ctx = session.n_ctx();
    if (depth < 0 || depth >= n_ctx)
        throw Error(fmt::format("--depth {}: must be in [0, {}) (the context, -c)", depth, n_ctx));
    const int64_t tokens = std::min(ubatch, n_ctx - depth);
    std::vector<PlannedGraph> graphs;
    if (tokens > 1) graphs.push_back(plan_graph(session, tokens, depth));
    graphs.push_back(plan_graph(session, 1, std::min(depth + tokens, n_ctx - 1)));
    return graphs;
}

std::string plan_text(llm::Session& session, std::span<const PlannedGraph> graphs) {
    std::string out = policy_text(session) + weights_text(session);
    for (const PlannedGraph& p : graphs) out += graph_text(session, p);
    return out + memory_text(session, graphs);
}

struct PlanOptions {
    ModelOptions model;
    bool json = false;
    int64_t depth = 0;
};

int run_plan(const PlanOptions& o) {
    LoadedModel loaded = load_model(o.model);
    const std::unique_ptr<llm::Session> session = loaded.make_session();
    const std::vector<PlannedGraph> graphs =
        plan_graphs(*session, loaded.model->options().n_ubatch, o.depth);
    if (o.json)
        std::printf("%s\n", plan_json(*session, o.model.model, graphs).dump(2).c_str());
    else
        std::fputs(plan_text(*session, graphs).c_str(), stdout);
    return 0;
}

}  // namespace

std::string explain_plan(llm::Session& session, int64_t ubatch, int64_t depth) {
    return plan_text(session, plan_graphs(session, ubatch, depth));
}

std::vector<std::string> placement_warnings(llm::Session& session, int64_t ubatch) {
    std::vector<std::string> out;
    if (!session.multi_backend()) return out;
    const auto backends = session.backend_infos();
    const auto primary = int32_t(session.primary());
    for (const PlannedGraph& p : plan_graphs(session, ubatch, 0)) {
        // op -> nodes, for the two kinds of slow placement
        std::map<std::string, int> unsupported, held_back;
        std::map<std::string, std::pair<int32_t, int32_t>> where;  // op -> (ran on, cheaper)
        for (size_t i = 0; i < p.plan.nodes.size(); ++i) {
            const NodePlacement& n = p.plan.nodes[i];
            const std::string op = p.ug.graph.nodes()[i].key();
            const CandidateCost* chosen = nullptr;
            const CandidateCost* cheapest = nullptr;
            bool primary_can = false;
            for (const CandidateCost& c : n.candidates) {
                if (c.backend == n.backend) chosen = &c;
                if (c.backend == primary) primary_can = true;
                if (!cheapest || c.total_ns() < cheapest->total_ns()) cheapest = &c;
            }
            if (n.backend != primary && !primary_can) {
                ++unsupported[op];
                where[op] = {n.backend, primary};
            } else if (chosen && cheapest && cheapest != chosen && !cheapest->excluded.empty() &&
                       cheapest->total_ns() < 0.5 * chosen->total_ns()) {
                ++held_back[op];
                where[op] = {n.backend, cheapest->backend};
            }
        }
        const std::string phase =
            fmt::format("{} ({} token{})", phase_name(p.phase), p.tokens, p.tokens == 1 ? "" : "s");
        for (const auto& [op, count] : unsupported)
            out.push_back(fmt::format("{}: {} {} node{} run on {}: {} does not support them", phase,
                                      count, op, count == 1 ? "" : "s",
                                      backends[size_t(where[op].first)].name,
                                      backends[size_t(primary)].name));
        for (const auto& [op, count] : held_back)
            out.push_back(fmt::format(
                "{}: {} {} node{} run on {} although {} was estimated at least 2x faster (the "
                "offload policy excludes it; see switchyard plan)",
                phase, count, op, count == 1 ? "" : "s", backends[size_t(where[op].first)].name,
                backends[size_t(where[op].second)].name));
    }
    return out;
}

Command add_plan_command(CLI::App& app) {
    auto o = std::make_shared<PlanOptions>();
    CLI::App* cmd = app.add_subcommand(
        "plan",
        "Where a deepseek2 model's weights and ops go across the loaded backends, and why "
        "(nothing is run)");
    o->model.add_to(*cmd, "Context length (default: min(4096, trained))");
    cmd->add_flag("--json", o->json, "Print the plan as one JSON object");
    cmd->add_option("--depth", o->depth,
                    "Tokens already in the cache before the planned prompt ubatch (default 0)");
    return [o] { return run_plan(*o); };
}

}  // namespace sy::tools
