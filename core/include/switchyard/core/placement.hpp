// Placement across backends: a home for every weight (policy rules), then a backend for every
// node of a graph (plugin cost hints + the offload policy), the splits (runs of consecutive nodes
// on one backend) and the copies between them. Every decision keeps its reason, so that
// `switchyard plan` can explain it.
//
// Cost of running node n on backend b:
//   compute: a measured time for n on b (a calibrated cost table, cost_table.hpp), else b's
//            estimate(n) in ns, else the roofline default from b's device properties
//            (max(flops / peak, bytes / memory bandwidth) + launch overhead);
//   transfer: for each source not readable where b computes, bytes / link bandwidth + latency
//            (through host memory between two devices), unless an earlier node already copied
//            it there (copies are reused within a graph). An expert tensor counts only the
//            experts the batch can touch: min(E, routed slots) / E of its bytes.
// Backends that compute on host memory read each other's data and host inputs for free.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/core/policy.hpp"
#include "switchyard/plugin.h"

namespace sy {

class Graph;
class Plugin;
class Tensor;

// A backend device as placement sees it; from a loaded plugin (backend_info) or made up by tests.
struct BackendInfo {
    std::string name;
    sy_device_props props{};
    std::function<bool(const sy_node&)> supports;
    std::function<std::optional<double>(const sy_node&)> estimate;  // may be empty
    // A measured time (a calibrated cost table), taken before the estimate; may be empty.
    std::function<std::optional<double>(const sy_node&)> measured;

    bool host_memory() const { return props.host_memory != 0; }
};

BackendInfo backend_info(const Plugin& plugin, int32_t device);

// A plugin device as placement rules, plans and profiles name it: the plugin's name for device 0
// ("cuda"), with the index for the others ("cuda:1").
std::string backend_name(const Plugin& plugin, int32_t device);

// Index of the backend called `name`, in any spelling canonical_backend_name (policy.hpp)
// accepts ("CUDA0" and "cuda:0" are "cuda"); throws Error naming `where` and the loaded backends.
int32_t find_backend(std::span<const BackendInfo> backends, std::string_view name,
                     const std::string& where);

// ---- weights ----------------------------------------------------------------------------------

struct WeightInfo {
    std::string name;
    uint64_t bytes = 0;
};

struct WeightPlan {
    struct Home {
        int32_t backend = 0;
        int32_t rule = -1;  // index into the policy's rules, or one of the k* below
    };
    static constexpr int32_t kDefault = -1;   // the default backend
    static constexpr int32_t kFitted = -2;    // --fit: the fastest device with room
    static constexpr int32_t kSpilled = -3;   // --fit: no device had room, a host backend
    static constexpr int32_t kSplit = -4;     // --tensor-split: its layer's share of the devices
    std::vector<int32_t> split_from;          // per weight with kSplit: the rule (or kDefault)
    std::vector<Home> homes;                  // per weight, in the order given
    std::vector<uint64_t> bytes_per_backend;  // per backend
    std::vector<std::string> warnings;        // rules that match nothing or are shadowed

    // "rule 2 '\.ffn_.*_exps\.' (policy.toml:7:1)" or "default backend".
    std::string reason(size_t weight, const PlacementPolicy& policy) const;
};

// Homes in order: the first rule whose regex is found in the name, else the default backend
// (policy.default_backend, or `fallback_default` when the policy names none); with policy.fit,
// the weights no rule places fill the devices instead, fastest first, in the given order but
// routed experts (names with "_exps.") last, each device keeping policy.fit_margin plus
// `reserved[b]` (what the caller will need there besides weights: KV cache, compute buffers)
// free. Throws Error for an unknown backend, an invalid regex (naming the rule and where it was
// written), or weights that exceed a device's free memory (host-memory devices are not checked:
// weights stay mapped).
WeightPlan place_weights(std::span<const WeightInfo> weights, const PlacementPolicy& policy,
                         std::span<const BackendInfo> backends, std::string_view fallback_default,
                         std::span<const uint64_t> reserved = {});

// ---- nodes ------------------------------------------------------------------------------------

// Where a tensor's bytes are before the graph runs: a backend index, or kHostInput for inputs
// and weights in plain host memory.
constexpr int32_t kHostInput = -1;

// Where a candidate's compute time comes from: a measurement (cost table), the plugin's
// estimate(), or the roofline default from the device's properties.
enum class CostSource { roofline, hint, measured };
const char* cost_source_name(CostSource source);  // "roofline", "hint", "measured"

struct CandidateCost {
    int32_t backend = 0;
    double compute_ns = 0;
    double transfer_ns = 0;
    uint64_t transfer_bytes = 0;
    CostSource source = CostSource::roofline;  // where compute_ns comes from
    std::string excluded;  // why the policy rules this candidate out; empty: allowed
    double total_ns() const { return compute_ns + transfer_ns; }
};

struct NodePlacement {
    int32_t backend = 0;
    std::string reason;  // "pin (policy.toml:9:1)", "cheapest of 2", "only candidate" ...
    std::vector<CandidateCost> candidates;  // every backend that supports the node
};

struct Split {
    int32_t backend = 0;
    int32_t first = 0, end = 0;  // node indices [first, end)
};

struct TensorCopy {
    int32_t tensor = 0;     // id of the (base) tensor copied
    int32_t from = 0;       // backend index, or kHostInput
    int32_t to = 0;         // backend index
    int32_t first_use = 0;  // the first node that reads the copy
    uint64_t bytes = 0;     // bytes moved (touched experts only for expert tensors)
};

struct OpPlan {
    Phase phase = Phase::decode;
    int64_t batch = 1;
    std::vector<NodePlacement> nodes;  // per graph node
    std::vector<Split> splits;
    std::vector<TensorCopy> copies;
    uint64_t copy_bytes() const;
};

// How many nodes at the start of `next` depend on nothing `split` does: none reads a tensor
// `split` writes or writes one it reads or writes (views count as their base, external tensors
// too), so none depends on it through the others either. The scheduler runs them beside `split`
// when the two backends may overlap (Scheduler::set_overlap).
int32_t independent_nodes(const Graph& graph, const Split& split, const Split& next);

struct OpPlacementRequest {
    Phase phase = Phase::decode;
    int64_t batch = 1;  // tokens in the ubatch: offload.min_batch is compared with it
    // Where each external tensor (weights, inputs such as the KV cache) lives: a backend index
    // or kHostInput; when empty, all of them are in plain host memory.
    std::function<int32_t(const Tensor&)> home;
};

// Places every node of `graph` (in order). A node that writes into an external tensor (a KV
// cache view) runs where that tensor lives: a host-memory backend for host memory, else its
// device. Throws Error naming the node when no backend supports it or the policy leaves it
// none, and naming the pin for a pin that cannot hold.
OpPlan place_ops(const Graph& graph, std::span<const BackendInfo> backends,
                 const OffloadPolicy& policy, const OpPlacementRequest& request);

}  // namespace sy
