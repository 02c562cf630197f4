// Where the time of a run went (`--profile`): per backend, the ops sorted by total time, the
// matrix products grouped by the kind of weight they read (ffn_down_exps, attn_kv_b, ... from
// the tensor names, layer numbers dropped), the copies between backends, and the host's share
// (building graphs, planning and binding). Prompt batches and one-token decode steps are kept
// apart, since their mix differs completely.
//
// An Executor with a profile attached runs its nodes one at a time, each followed by the
// backend's synchronize(), and times each from the host: on a device that queues work
// asynchronously that adds a synchronization per node (the total grows; the shares stay
// meaningful), on the CPU it adds one call per node.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace sy {

class Graph;

class Profile {
  public:
    enum class Phase { prompt, decode };

    // The phase the following records belong to.
    void begin_graph(Phase phase, int64_t tokens);
    // One node of `graph`, run by `backend` in `seconds`.
    void add_node(std::string_view backend, const Graph& graph, int32_t node, double seconds);
    // Also hands every node added to `observer` (calibration keeps each node's time; the
    // report keeps sums).
    using NodeObserver = std::function<void(std::string_view backend, const Graph& graph,
                                            int32_t node, double seconds)>;
    void observe_nodes(NodeObserver observer) { observer_ = std::move(observer); }
    void add_copy(double seconds, uint64_t bytes);
    // Of the node times `backend` added: time inside its synchronize() (a device that queues
    // its work; the CPU computes inside compute()).
    void add_sync(std::string_view backend, double seconds);
    // One graph's evaluation: building it, and the whole of running it (nodes, copies, the
    // host's planning and binding).
    void end_graph(double build_seconds, double run_seconds);

    bool empty() const { return phases_.empty(); }
    // The report, one section per phase that ran.
    std::string format() const;

    // "blk.12.ffn_down_exps.weight" -> "ffn_down_exps", "kq-3" -> "kq", "" -> "".
    static std::string kind_of(std::string_view tensor_name);

  private:
    struct Time {
        int64_t count = 0;
        double seconds = 0;
    };
    struct PhaseTimes {
        int64_t graphs = 0;
        int64_t tokens = 0;
        double build = 0;
        double run = 0;
        double copies = 0;
        uint64_t copy_bytes = 0;
        std::map<std::string, std::map<std::string, Time>> ops;       // backend -> op
        std::map<std::string, std::map<std::string, Time>> products;  // backend -> weight kind
        std::map<std::string, double> sync;                           // backend -> seconds
    };

    Phase phase_ = Phase::decode;
    std::map<Phase, PhaseTimes> phases_;
    NodeObserver observer_;
};

}  // namespace sy
