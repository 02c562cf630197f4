// A backend for every node: candidates from supports(), costs from estimate() or the roofline,
// the offload policy on top (placement.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "node_abi.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/core/pattern.hpp"
#include "switchyard/core/placement.hpp"
#include "switchyard/named_ops.h"
#include "switchyard/op_work.hpp"

namespace sy {
namespace {

// Sources that are expert weights {K, N, E}, and the experts this node can touch.
struct ExpertUse {
    std::vector<const Tensor*> weights;
    int64_t experts = 0, touched = 0;
};

ExpertUse expert_use(const Node& node) {
    ExpertUse use;
    const Node::ExpertSources sources = node.expert_sources();
    if (sources.ids == nullptr) return use;
    use.weights = sources.weights;
    use.experts = use.weights[0]->ne(2);
    use.touched = int64_t(
        sdk::experts_touched(double(use.experts), double(sources.ids->ne(0) * sources.ids->ne(1))));
    return use;
}

// Bytes of a source that a node reads: all of it, or the touched experts' share.
uint64_t read_bytes(const Tensor& t, const ExpertUse& use) {
    const auto bytes = static_cast<uint64_t>(t.base()->bytes());
    const bool expert = std::find(use.weights.begin(), use.weights.end(), &t) != use.weights.end();
    if (!expert || use.experts == 0) return bytes;
    return bytes / static_cast<uint64_t>(use.experts) * static_cast<uint64_t>(use.touched);
}

// The roofline default over the op's work (sdk::op_work): max(flops / peak, bytes / memory
// bandwidth) + launch overhead, the peak of src0's type (f32 lanes, f16 units, int8 for blocks).
double roofline_ns(const BackendInfo& b, const sy_node& raw) {
    const sdk::OpWork work = sdk::op_work(raw);
    const int32_t w = raw.src[0] ? raw.src[0]->type : SY_TYPE_F32;
    const double peak = w == SY_TYPE_F32                          ? b.props.peak_flops_f32
                        : (w == SY_TYPE_F16 || w == SY_TYPE_BF16) ? b.props.peak_flops_f16
                                                                  : b.props.peak_flops_int8;
    double ns = 0;
    if (peak > 0) ns = std::max(ns, work.flops / peak * 1e9);
    if (b.props.memory_bandwidth > 0)
        ns = std::max(ns, work.bytes / b.props.memory_bandwidth * 1e9);
    return ns + b.props.launch_overhead_ns;
}

// Nanoseconds to move `bytes` over one device's link to host memory.
double link_ns(const BackendInfo& b, uint64_t bytes) {
    const double bw = b.props.link_bandwidth > 0 ? b.props.link_bandwidth : 1e12;
    return double(bytes) / bw * 1e9 + b.props.link_latency_ns;
}

class Placer {
  public:
    Placer(const Graph& graph, std::span<const BackendInfo> backends, const OffloadPolicy& policy,
           const OpPlacementRequest& request)
        : graph_(graph), backends_(backends), policy_(policy), request_(request) {
        for (size_t i = 0; i < policy.pins.size(); ++i) {
            const OpPin& pin = policy.pins[i];
            const std::string at = fmt::format("offload pin {} ({})", i + 1, pin.where);
            Pin p{&pin, find_backend(backends, pin.backend, at), std::nullopt};
            if (!pin.match.empty()) p.re.emplace(pin.match, at);
            for (const Pin& earlier : pins_) {
                const OpPin& e = *earlier.pin;
                if (e.op == pin.op && e.match == pin.match && e.phase == pin.phase &&
                    e.backend != pin.backend)
                    throw Error(
                        fmt::format("{}: contradicts the pin at {}: {} is pinned to both "
                                    "'{}' and '{}'; remove one",
                                    at, e.where, pin.op, e.backend, pin.backend));
            }
            pins_.push_back(std::move(p));
        }
        for (const OffloadSwitch& s : policy.ops) switches_[s.op] = &s;
    }

    // Greedy, node by node in graph order (each the cheapest allowed candidate given where its
    // sources are); then the refinement below, which counts what greedy cannot see (the copies
    // of a node's result to its readers); then the plan of the refined choice, with each node's
    // candidates and the copies as that choice makes them.
    OpPlan run() {
        const std::vector<sy_tensor> descriptors = tensor_descriptors(graph_);
        OpPlan greedy = pass(descriptors, {});
        std::vector<int32_t> chosen;
        for (const NodePlacement& n : greedy.nodes) chosen.push_back(n.backend);
        if (backends_.size() < 2 || !refine(greedy, chosen)) return greedy;
        OpPlan plan = pass(descriptors, chosen);
        // pass() left the reason of its own cheapest pick; where the refinement chose otherwise
        // (moved, or kept while the nodes before it moved), say so.
        for (size_t i = 0; i < plan.nodes.size(); ++i) {
            NodePlacement& n = plan.nodes[i];
            const CandidateCost* cheapest = nullptr;
            for (const CandidateCost& c : n.candidates)
                if (c.excluded.empty() && (!cheapest || cheaper(c, *cheapest))) cheapest = &c;
            if (cheapest && cheapest->backend != chosen[i])
                n.reason = fmt::format(
                    "{} for the whole graph's copies and splits (its own cheapest: {}; greedy "
                    "chose {})",
                    backends_[size_t(chosen[i])].name, backends_[size_t(cheapest->backend)].name,
                    backends_[size_t(greedy.nodes[i].backend)].name);
            else if (greedy.nodes[i].backend != chosen[i])
                n.reason += fmt::format(" (greedy chose {})",
                                        backends_[size_t(greedy.nodes[i].backend)].name);
        }
        return plan;
    }

  private:
    // One pass over the nodes in order: each gets `forced[i]` when given, else the cheapest
    // allowed candidate.
    OpPlan pass(const std::vector<sy_tensor>& descriptors, std::span<const int32_t> forced) {
        OpPlan plan;
        plan.phase = request_.phase;
        plan.batch = request_.batch;
        copied_.clear();
        location_.assign(graph_.tensors().size(), kHostInput);
        for (const auto& t : graph_.tensors()) {
            if (!t->is_external() || !request_.home) continue;
            const int32_t home = request_.home(*t);
            if (home != kHostInput && (home < 0 || size_t(home) >= backends_.size()))
                throw Error(fmt::format("placement: {} {} has home {}, not a backend index",
                                        kind_name(t->kind()), t->describe(), home));
            location_[size_t(t->id())] = home;
        }
        for (size_t i = 0; i < graph_.nodes().size(); ++i) {
            const auto index = static_cast<int32_t>(i);
            const ExpertUse use = expert_use(graph_.nodes()[i]);
            NodePlacement placed = place(index, raw_node(graph_.nodes()[i], descriptors), use);
            if (!forced.empty()) placed.backend = forced[i];
            record_copies(index, use, placed.backend, plan.copies);
            const Tensor* written = graph_.nodes()[i].dst->base();
            if (!written->is_external()) location_[size_t(written->id())] = placed.backend;
            if (plan.splits.empty() || plan.splits.back().backend != placed.backend)
                plan.splits.push_back({placed.backend, index, index});
            plan.splits.back().end = index + 1;
            plan.nodes.push_back(std::move(placed));
        }
        return plan;
    }

    // ---- refinement ---------------------------------------------------------------------------
    // The whole plan's cost: every node's compute on its backend, plus for every tensor one copy
    // to each backend that reads it and cannot read it where it is, plus every split boundary's
    // synchronization (boundary_ns). Greedy sees a node's inputs
    // only, so it puts a cheap op on the host between two device ops to save an input copy, and
    // pays the copy of the result back. Local search over that total: move one node, then whole
    // splits (a run of consecutive nodes on one backend, to another), whenever the total goes down;
    // at most kRefinePasses passes. Nodes that write a view (the writers of a tensor must share
    // a backend) and nodes with one allowed candidate stay.
    static constexpr int kRefinePasses = 8;
    static constexpr int32_t kFixed = -2;  // Refinement::output of a node that stays

    struct Refinement {
        std::vector<std::vector<double>> compute;   // per node, per backend; NaN: not allowed
        std::vector<std::vector<int32_t>> inputs;   // per node: distinct base ids read
        std::vector<int32_t> output;                // per node: base id written, kFixed
        std::vector<std::vector<int32_t>> readers;  // per tensor id, per backend: reading nodes
        std::vector<uint64_t> bytes;                // per tensor id: bytes a copy moves
        std::vector<int32_t> location;              // per tensor id
    };

    double copy_ns(const Refinement& r, int32_t t, int32_t from, int32_t to) const {
        return readable(from, to) ? 0.0 : move_ns(from, to, r.bytes[size_t(t)]);
    }

    double copies_of(const Refinement& r, int32_t t) const {
        double ns = 0;
        for (size_t b = 0; b < backends_.size(); ++b)
            if (r.readers[size_t(t)][b] > 0) ns += copy_ns(r, t, r.location[size_t(t)], int32_t(b));
        return ns;
    }

    // What a split boundary costs besides the copies: a stretch of nodes on a device ends in a
    // synchronization, one round trip over its link (the plugin's link latency), half of it
    // counted at each end. The scheduler runs consecutive nodes of one backend as one split, so
    // a cheap op that greedy put on the host between two device ops costs two more of them
    // (without this term a hybrid run splits each layer several times and copies far more per
    // decode step: docs/design-measurements.md#split-boundary-cost).
    double boundary_ns(int32_t a, int32_t b) const {
        if (a == b) return 0.0;
        const auto sync = [&](int32_t x) {
            const BackendInfo& info = backends_[size_t(x)];
            return info.host_memory() ? 0.0 : info.props.link_latency_ns;
        };
        return 0.5 * (sync(a) + sync(b));
    }

    double boundaries_at(const std::vector<int32_t>& chosen, size_t n) const {
        double ns = 0;
        if (n > 0) ns += boundary_ns(chosen[n - 1], chosen[n]);
        if (n + 1 < chosen.size()) ns += boundary_ns(chosen[n], chosen[n + 1]);
        return ns;
    }

    // Moves node n to backend b; returns the change of the total cost.
    double move(Refinement& r, std::vector<int32_t>& chosen, size_t n, int32_t b) const {
        const int32_t from = chosen[n];
        double delta = r.compute[n][size_t(b)] - r.compute[n][size_t(from)];
        delta -= boundaries_at(chosen, n);
        for (int32_t t : r.inputs[n]) {
            delta -= copies_of(r, t);
            r.readers[size_t(t)][size_t(from)] -= 1;
            r.readers[size_t(t)][size_t(b)] += 1;
            delta += copies_of(r, t);
        }
        if (const int32_t t = r.output[n]; t >= 0) {
            delta -= copies_of(r, t);
            r.location[size_t(t)] = b;
            delta += copies_of(r, t);
        }
        chosen[n] = b;
        return delta + boundaries_at(chosen, n);
    }

    bool movable(const Refinement& r, size_t n, int32_t b) const {
        return r.output[n] != kFixed && !std::isnan(r.compute[n][size_t(b)]);
    }

    // Returns whether any node moved.
    // A move must save more than the noise of the estimates (those of tiny nodes move by a
    // microsecond or so from one process to the next), so plan and run refine alike.
    static constexpr double kRefineSaving = 2000.0;

    bool refine(const OpPlan& greedy, std::vector<int32_t>& chosen) const {
        const size_t n_nodes = graph_.nodes().size(), n_backends = backends_.size();
        Refinement r;
        r.readers.assign(graph_.tensors().size(), std::vector<int32_t>(n_backends, 0));
        r.bytes.assign(graph_.tensors().size(), 0);
        r.location = location_;  // externals as homed; intermediates set below
        std::vector<int32_t> writers(graph_.tensors().size(), 0);
        for (const Node& node : graph_.nodes()) writers[size_t(node.dst->base()->id())] += 1;
        for (size_t i = 0; i < n_nodes; ++i) {
            const Node& node = graph_.nodes()[i];
            const ExpertUse use = expert_use(node);
            std::vector<double> compute(n_backends, std::numeric_limits<double>::quiet_NaN());
            int allowed = 0;
            for (const CandidateCost& c : greedy.nodes[i].candidates)
                if (c.excluded.empty()) {
                    compute[size_t(c.backend)] = c.compute_ns;
                    ++allowed;
                }
            r.compute.push_back(std::move(compute));
            std::vector<int32_t> inputs;
            for (const Tensor* s : node.src) {
                const int32_t id = s->base()->id();
                r.bytes[size_t(id)] = std::max(r.bytes[size_t(id)], read_bytes(*s, use));
                if (std::find(inputs.begin(), inputs.end(), id) == inputs.end()) {
                    inputs.push_back(id);
                    r.readers[size_t(id)][size_t(chosen[i])] += 1;
                }
            }
            r.inputs.push_back(std::move(inputs));
            const Tensor* written = node.dst->base();
            const bool fixed = allowed < 2 || node.dst != written || written->is_external() ||
                               writers[size_t(written->id())] != 1;
            r.output.push_back(fixed ? kFixed : written->id());
            if (!written->is_external()) r.location[size_t(written->id())] = chosen[i];
        }
        // A fixed node still has its output's copies counted; its output's location stays as
        // greedy set it.
        bool moved = false;
        for (int round = 0; round < kRefinePasses; ++round) {
            bool better = false;
            // One node at a time.
            for (size_t n = 0; n < n_nodes; ++n) {
                if (r.output[n] == kFixed) continue;
                const int32_t from = chosen[n];
                int32_t best = from;
                double best_delta = -kRefineSaving;  // ns: only real savings
                for (size_t b = 0; b < n_backends; ++b) {
                    if (int32_t(b) == from || !movable(r, n, int32_t(b))) continue;
                    const double delta = move(r, chosen, n, int32_t(b));
                    move(r, chosen, n, from);
                    if (delta < best_delta) {
                        best_delta = delta;
                        best = int32_t(b);
                    }
                }
                if (best != from) {
                    move(r, chosen, n, best);
                    better = moved = true;
                }
            }
            // Whole runs of consecutive nodes on one backend, to another backend.
            for (size_t first = 0; first < n_nodes;) {
                size_t end = first + 1;
                while (end < n_nodes && chosen[end] == chosen[first]) ++end;
                for (size_t b = 0; b < n_backends; ++b) {
                    if (int32_t(b) == chosen[first]) continue;
                    bool all = true;
                    for (size_t n = first; n < end && all; ++n) all = movable(r, n, int32_t(b));
                    if (!all) continue;
                    const int32_t from = chosen[first];
                    double delta = 0;
                    for (size_t n = first; n < end; ++n) delta += move(r, chosen, n, int32_t(b));
                    if (delta < -kRefineSaving) {
                        better = moved = true;
                        break;
                    }
                    for (size_t n = end; n-- > first;) move(r, chosen, n, from);
                }
                first = end;
            }
            if (!better) break;
        }
        return moved;
    }

    struct Pin {
        const OpPin* pin;
        int32_t backend;
        std::optional<Pattern> re;
    };

    std::string location_name(int32_t location) const {
        return location == kHostInput ? std::string("host memory")
                                      : "backend '" + backends_[size_t(location)].name + "'";
    }

    bool readable(int32_t location, int32_t backend) const {
        if (location == backend) return true;
        const bool host_side = location == kHostInput || backends_[size_t(location)].host_memory();
        return host_side && backends_[size_t(backend)].host_memory();
    }

    // Nanoseconds and bytes to bring `t` to `backend` (0 when readable there or already copied).
    std::pair<double, uint64_t> transfer(const Tensor& t, const ExpertUse& use,
                                         int32_t backend) const {
        const int32_t id = t.base()->id();
        const int32_t from = location_[size_t(id)];
        if (readable(from, backend) || copied_.count({id, backend})) return {0.0, 0};
        const uint64_t bytes = read_bytes(t, use);
        return {move_ns(from, backend, bytes), bytes};
    }

    // Nanoseconds to move `bytes` from a location to a backend that cannot read them there:
    // through host memory, over each device's link.
    double move_ns(int32_t from, int32_t to, uint64_t bytes) const {
        double ns = 0;
        if (from != kHostInput && !backends_[size_t(from)].host_memory())
            ns += link_ns(backends_[size_t(from)], bytes);  // device -> host
        if (!backends_[size_t(to)].host_memory())
            ns += link_ns(backends_[size_t(to)], bytes);  // host -> device
        return ns;
    }

    // Why the offload policy rules out `backend` for a node that reads host-resident weights;
    // empty when it does not.
    std::string offload_exclusion(const std::string& op, int32_t backend) const {
        if (backends_[size_t(backend)].host_memory()) return {};
        if (policy_.mode == OffloadMode::never) return "offload.mode = never";
        if (auto it = switches_.find(op); it != switches_.end() && !it->second->allowed)
            return fmt::format("offload.ops.{} = false ({})", op, it->second->where);
        if (policy_.min_batch > 0 && request_.batch < policy_.min_batch)
            return fmt::format("batch {} < offload.min_batch {}", request_.batch,
                               policy_.min_batch);
        return {};
    }

    bool reads_host_weights(const Node& node) const {
        for (const Tensor* s : node.src) {
            if (s->base()->kind() != TensorKind::weight) continue;
            const int32_t at = location_[size_t(s->base()->id())];
            if (at == kHostInput || backends_[size_t(at)].host_memory()) return true;
        }
        return false;
    }

    const Pin* pin_for(const Node& node, const std::string& op) const {
        for (const Pin& p : pins_) {
            if (p.pin->op != op) continue;
            if (p.pin->phase != Phase::any && p.pin->phase != request_.phase) continue;
            if (p.re && !p.re->search(node.dst->name())) continue;
            return &p;
        }
        return nullptr;
    }

    // Costs within 5 % of each other are a tie (estimates measured at start move by about that
    // from one process to the next), which the fewer bytes moved decide: what scales with the
    // model, and a placement that does not flip between plan and run.
    static bool cheaper(const CandidateCost& a, const CandidateCost& b) {
        const double x = a.total_ns(), y = b.total_ns();
        const bool tie = std::fabs(x - y) <= 0.05 * std::min(x, y);
        return tie ? a.transfer_bytes < b.transfer_bytes : x < y;
    }

    NodePlacement place(int32_t index, const sy_node& raw, const ExpertUse& use) {
        const Node& node = graph_.nodes()[size_t(index)];
        const std::string op = node.key();
        NodePlacement out;
        for (size_t b = 0; b < backends_.size(); ++b) {
            const BackendInfo& backend = backends_[b];
            if (!backend.supports || !backend.supports(raw)) continue;
            CandidateCost c;
            c.backend = static_cast<int32_t>(b);
            // A measured time first, then the plugin's hint, then the roofline.
            std::optional<double> compute;
            if (backend.measured && (compute = backend.measured(raw))) {
                c.source = CostSource::measured;
            } else if (backend.estimate && (compute = backend.estimate(raw))) {
                c.source = CostSource::hint;
            }
            c.compute_ns = compute ? *compute : roofline_ns(backend, raw);
            for (const Tensor* s : node.src) {
                const auto [ns, bytes] = transfer(*s, use, c.backend);
                c.transfer_ns += ns;
                c.transfer_bytes += bytes;
            }
            out.candidates.push_back(std::move(c));
        }
        if (out.candidates.empty())
            throw Error("no loaded backend supports " + node_text(graph_, index));

        // Writing into external memory (a cache view): only where that memory is.
        if (const Tensor* written = node.dst->base(); written->is_external()) {
            const int32_t at = location_[size_t(written->id())];
            for (CandidateCost& c : out.candidates)
                if (!readable(at, c.backend))
                    c.excluded = fmt::format("writes into {}, which lives in {}",
                                             written->describe(), location_name(at));
        }

        // A weight homed on a device with its own memory (a GPU, an MPI rank) is read there
        // when that device can run the node: its bytes live there so that no other memory
        // holds them, and moving them per step costs what placing them saved.
        for (const Tensor* s : node.src) {
            const Tensor* root = s->base();
            if (!policy_.device_weights_stay || root->kind() != TensorKind::weight) continue;
            const int32_t at = location_[size_t(root->id())];
            if (at == kHostInput || backends_[size_t(at)].host_memory()) continue;
            const auto home = std::find_if(out.candidates.begin(), out.candidates.end(),
                                           [&](const CandidateCost& c) { return c.backend == at; });
            if (home == out.candidates.end()) continue;
            for (CandidateCost& c : out.candidates)
                if (c.backend != at && c.excluded.empty())
                    c.excluded = fmt::format("reads {}, which lives on backend '{}'",
                                             root->describe(), backends_[size_t(at)].name);
        }

        if (const Pin* pin = pin_for(node, op)) {
            const auto it =
                std::find_if(out.candidates.begin(), out.candidates.end(),
                             [&](const CandidateCost& c) { return c.backend == pin->backend; });
            if (it == out.candidates.end())
                throw Error(fmt::format("offload pin ({}): backend '{}' does not support {}",
                                        pin->pin->where, pin->pin->backend,
                                        node_text(graph_, index)));
            if (!it->excluded.empty())
                throw Error(fmt::format("offload pin ({}): {} cannot run on '{}': it {}",
                                        pin->pin->where, node_text(graph_, index),
                                        pin->pin->backend, it->excluded));
            for (CandidateCost& c : out.candidates)
                if (c.backend != pin->backend) c.excluded = "pinned elsewhere";
            out.backend = pin->backend;
            out.reason = fmt::format("pin ({})", pin->pin->where);
            return out;
        }

        if (reads_host_weights(node)) {
            for (CandidateCost& c : out.candidates)
                if (c.excluded.empty()) c.excluded = offload_exclusion(op, c.backend);
            const bool device_allowed =
                std::any_of(out.candidates.begin(), out.candidates.end(), [&](const auto& c) {
                    return c.excluded.empty() && !backends_[size_t(c.backend)].host_memory();
                });
            if (policy_.mode == OffloadMode::always && device_allowed)
                for (CandidateCost& c : out.candidates)
                    if (c.excluded.empty() && backends_[size_t(c.backend)].host_memory())
                        c.excluded = "offload.mode = always";
        }

        const CandidateCost* best = nullptr;
        int allowed = 0;
        for (const CandidateCost& c : out.candidates) {
            if (!c.excluded.empty()) continue;
            ++allowed;
            if (!best || cheaper(c, *best)) best = &c;
        }
        if (!best) {
            std::string why;
            for (const CandidateCost& c : out.candidates)
                why += fmt::format("; {}: {}", backends_[size_t(c.backend)].name, c.excluded);
            throw Error("the offload policy leaves no backend for " + node_text(graph_, index) +
                        why);
        }
        out.backend = best->backend;
        out.reason = allowed == 1
                         ? (out.candidates.size() == 1 ? "only candidate"
                                                       : "only candidate the policy allows")
                         : fmt::format("cheapest of {}", allowed);
        return out;
    }

    // The copies that the chosen backend needs (what transfer() counted for it), made once.
    void record_copies(int32_t index, const ExpertUse& use, int32_t backend,
                       std::vector<TensorCopy>& copies) {
        for (const Tensor* s : graph_.nodes()[size_t(index)].src) {
            const uint64_t bytes = transfer(*s, use, backend).second;
            if (bytes == 0) continue;
            const int32_t id = s->base()->id();
            copied_.insert({id, backend});
            copies.push_back({id, location_[size_t(id)], backend, index, bytes});
        }
    }

    const Graph& graph_;
    std::span<const BackendInfo> backends_;
    const OffloadPolicy& policy_;
    const OpPlacementRequest& request_;
    std::vector<Pin> pins_;
    std::map<std::string, const OffloadSwitch*> switches_;
    std::vector<int32_t> location_;                 // per tensor id (bases only)
    std::set<std::pair<int32_t, int32_t>> copied_;  // (tensor, backend) copies made
};

}  // namespace

const char* cost_source_name(CostSource source) {
    switch (source) {
        case CostSource::roofline: return "roofline";
        case CostSource::hint: return "hint";
        case CostSource::measured: return "measured";
    }
    return "?";
}

int32_t independent_nodes(const Graph& graph, const Split& split, const Split& next) {
    const auto& nodes = graph.nodes();
    std::vector<char> touched(graph.tensors().size(), 0);  // 1 read, 2 written by split
    for (int32_t i = split.first; i < split.end; ++i) {
        for (const Tensor* s : nodes[size_t(i)].src) touched[size_t(s->base()->id())] |= 1;
        touched[size_t(nodes[size_t(i)].dst->base()->id())] |= 2;
    }
    int32_t j = next.first;
    for (; j < next.end; ++j) {
        const Node& node = nodes[size_t(j)];
        bool depends = touched[size_t(node.dst->base()->id())] != 0;
        for (const Tensor* s : node.src)
            depends = depends || (touched[size_t(s->base()->id())] & 2) != 0;
        if (depends) break;
    }
    return j - next.first;
}

uint64_t OpPlan::copy_bytes() const {
    uint64_t total = 0;
    for (const TensorCopy& c : copies) total += c.bytes;
    return total;
}

OpPlan place_ops(const Graph& graph, std::span<const BackendInfo> backends,
                 const OffloadPolicy& policy, const OpPlacementRequest& request) {
    if (backends.empty()) throw Error("placement: no backend is loaded");
    return Placer(graph, backends, policy, request).run();
}

}  // namespace sy
