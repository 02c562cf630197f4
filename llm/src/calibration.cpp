#include "switchyard/llm/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "switchyard/core/error.hpp"
#include "switchyard/core/profile.hpp"
#include "switchyard/llm/benchmark.hpp"

namespace sy::llm {
namespace {

// Sends every node `target` supports to it: 0 ns there, a time no real node takes elsewhere
// (finite, so that a node `target` cannot run still goes to the cheapest of the others).
class PreferBackend final : public MeasuredCosts {
  public:
    explicit PreferBackend(std::string target) : target_(std::move(target)) {}
    std::optional<double> ns(std::string_view backend, const sy_node&) const override {
        return backend == target_ ? 0.0 : 1e12;
    }

  private:
    std::string target_;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The times of one graph's nodes over the repetitions: node index -> backend and samples.
struct NodeTimes {
    std::string backend;
    CostTable::Entry entry;
    bool product = false;
    std::vector<double> ns;
};

}  // namespace

Calibration calibrate(const Model& model, const SessionBackends& backends,
                      const CalibrationOptions& options) {
    if (options.batches.empty()) throw Error("calibrate: no batch sizes given");
    if (options.repetitions < 1) throw Error("calibrate: repetitions must be at least 1");
    const int64_t ubatch = model.options().n_ubatch;
    for (int64_t b : options.batches)
        if (b < 1 || b > ubatch)
            throw Error(
                fmt::format("calibrate: batch {} is outside 1..{} (the ubatch, -ub)", b, ubatch));

    std::map<std::string, std::vector<double>> samples;  // backend + signature
    std::map<std::string, CostTable::Entry> described;
    Calibration out;
    const size_t steps = backends.backends.size() * options.batches.size();
    size_t step = 0;
    for (const Scheduler::Backend& target : backends.backends) {
        const std::string name = backend_name(*target.plugin, target.device);
        SessionBackends prefer = backends;
        prefer.offload = OffloadPolicy{};  // calibration measures; the policy decides later
        prefer.offload.device_weights_stay = false;
        prefer.costs = std::make_shared<PreferBackend>(name);
        Session session(model, prefer);
        session.allocate();
        BenchTokens tokens(model.n_vocab(), -1);
        bool ran_any = false;
        for (int64_t batch : options.batches) {
            ++step;
            if (options.progress)
                options.progress(fmt::format("{}: batch {} ({} of {})", name, batch, step, steps));
            if (batch > session.n_ctx())
                throw Error(fmt::format("calibrate: batch {} does not fit the context of {} (-c)",
                                        batch, session.n_ctx()));
            std::map<int32_t, NodeTimes> nodes;
            Profile profile;
            profile.observe_nodes([&nodes](std::string_view backend, const Graph& graph,
                                           int32_t index, double seconds) {
                NodeTimes& n = nodes[index];
                if (n.ns.empty()) {
                    n.backend = backend;
                    n.entry = CostTable::describe(backend, graph, index);
                    n.product = graph.nodes()[size_t(index)].is_product();
                }
                n.ns.push_back(seconds * 1e9);
            });
            // The same tokens every time: the same experts are routed to, so that the warm-up
            // prepares what the timed runs use (oneDNN compiles a kernel per new shape).
            const std::vector<int32_t> ids = tokens.next(batch, false);
            for (int rep = 0; rep <= options.repetitions; ++rep) {
                session.reset();
                if (rep == 1) session.set_profile(&profile);  // the first run warms up
                session.eval(ids);
            }
            session.set_profile(nullptr);

            CalibrationTotal total{name, batch};
            for (auto& [index, n] : nodes) {
                const double node_median = median(n.ns);
                if (n.backend == name) {
                    ran_any = true;
                    (n.product ? total.product_ns : total.other_ns) += node_median;
                    (n.product ? total.product_nodes : total.other_nodes) += 1;
                }
                const std::string key = n.entry.key();
                described.try_emplace(key, n.entry);
                auto& s = samples[key];
                s.insert(s.end(), n.ns.begin(), n.ns.end());
            }
            out.totals.push_back(total);
        }
        if (!ran_any)
            throw Error("calibrate: backend '" + name + "' ran none of the model's nodes");
    }
    for (auto& [key, entry] : described) {
        const std::vector<double>& s = samples[key];
        entry.ns = std::max(median(s), 1.0);
        entry.samples = int64_t(s.size());
        out.table.add(std::move(entry));
    }
    return out;
}

}  // namespace sy::llm
