// A session: one model (any architecture, model.hpp) run on one backend device or over
// several, its KV cache holding one sequence or several (llama-server's slots), graphs of
// ubatches that may mix sequences, and the statistics of where the time went.
//
//   std::unique_ptr<Model> model = load_model(gguf::Reader::open(path), options);
//   Session session(*model, cpu_plugin);
//   std::vector<float> logits = session.eval(tokens);  // sequence 0: logits of the last token
//
//   session.set_sequences(4);                          // four slots of n_ctx / 4 cells
//   std::vector<Session::SequenceTokens> batch = {{0, prompt}, {1, {&next, 1}}};
//   session.decode(batch);                             // a prompt beside a decode step
//   session.copy_prefix(0, 2, n_system);               // a shared system prompt
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "switchyard/core/cost_table.hpp"
#include "switchyard/core/executor.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/core/placement.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/core/policy.hpp"
#include "switchyard/core/scheduler.hpp"
#include "switchyard/llm/model.hpp"

namespace sy {
class Profile;
}  // namespace sy

namespace sy::llm {

// The weights one session's graphs read, copied once into one buffer of a device that does not
// compute on host memory (the whole model on a GPU): found by the host memory they come from.
class DeviceWeights {
  public:
    DeviceWeights() = default;
    // Collects the weights of `graphs` (each distinct host range once; only those `include`
    // accepts when given); uploads nothing yet.
    DeviceWeights(Plugin& plugin, int32_t device, std::span<const Graph* const> graphs,
                  const std::function<bool(const Tensor&)>& include = {});
    uint64_t bytes() const { return bytes_; }  // the device buffer's size
    // Elements of the largest weight matrix (ne0 x ne1) among them.
    uint64_t largest_matrix_elements() const { return largest_; }
    bool uploaded() const { return static_cast<bool>(buffer_); }
    Plugin* plugin() const { return plugin_; }
    // Allocates the buffer and copies every weight into it (once).
    void upload();
    // Where the weight read from `host` lives on the device (upload() first); throws Error
    // naming `name` when it was not collected.
    std::pair<const Buffer*, uint64_t> find(const void* host, const std::string& name) const;
    // The same, or nullopt when the weight read from `host` is not here.
    std::optional<std::pair<const Buffer*, uint64_t>> try_find(const void* host) const;

  private:
    struct Range {
        uint64_t bytes;
        uint64_t offset;
    };
    Plugin* plugin_ = nullptr;
    int32_t device_ = 0;
    std::unordered_map<const void*, Range> ranges_;  // by host address
    uint64_t bytes_ = 0;
    uint64_t largest_ = 0;
    Buffer buffer_;
};

struct EvalStats {
    uint64_t compute_buffer_bytes = 0;  // largest compute buffer of the session so far
    uint64_t staging_buffer_bytes = 0;  // largest staging buffers (devices' copies of host
                                        // weights and inputs) of the session so far
    double graph_build_seconds = 0;     // building graphs (host overhead)
    double plan_bind_seconds = 0;       // executor runs outside the backends, their copies and
                                        // staging: planning, binding, buffer growth (host
                                        // overhead)
    double placement_seconds = 0;       // of plan_bind_seconds: choosing each node's backend
                                        // (or finding the choice in the cache)
    int64_t placements = 0;             // graphs placed anew (not found in the cache)
    double setup_seconds = 0;           // of plan_bind_seconds: memory plans and binding
                                        // before the first node; the rest is spent between
                                        // and around the backends' calls
    double compute_seconds = 0;         // executor runs, the backend's compute included
    double backend_seconds = 0;         // of compute_seconds: inside the plugins' compute and
                                        // synchronize calls
    double sync_seconds = 0;            // of backend_seconds: inside synchronize()
    double copy_seconds = 0;            // of compute_seconds: tensors moved between backends
    double stage_seconds = 0;           // of compute_seconds: weights and inputs uploaded
    int64_t overlapped_nodes = 0;       // nodes run beside the split before theirs
    int64_t graphs = 0;
    int64_t graphs_built = 0;   // of graphs: built for their ubatch (the others were kept from
                                // an earlier step of the same shape and moved)
    uint64_t staged_bytes = 0;  // bytes copied to devices and between backends: staged
                                // weights (experts as routed) and inputs, results passed on
};

// Where the evaluation time between two EvalStats went, as shares of it (building the graphs
// and running them): the backends' ops, and what hybrid runs lose around them, the way the
// target of losing 5% or less counts it: waiting in synchronize(), tensors copied between
// backends, weights and inputs staged on devices, and the host's graph building, planning and
// binding.
struct EvalTimeShares {
    double ops = 0, sync = 0, copies = 0, staging = 0, host = 0;
    double seconds = 0;  // the evaluation time they are shares of
    int64_t graphs = 0;
    double overlapped_nodes = 0;  // per graph: nodes run beside the split before theirs
    // What a hybrid run loses: synchronization, copies between backends and the host's work.
    double overhead() const { return sync + copies + host; }
    // The shares of both stretches of evaluation together.
    void add(const EvalTimeShares& o);
};
// The shares of the evaluation between `before` and `after`; nullopt when no graph ran.
std::optional<EvalTimeShares> eval_time_shares(const EvalStats& before, const EvalStats& after);

// The backends a session may use, and the policy that places weights and nodes on them.
struct SessionBackends {
    std::vector<Scheduler::Backend> backends;  // plugin devices; names must differ
    PlacementPolicy placement;  // default_backend (else the first backend) holds the KV cache
    OffloadPolicy offload;
    // Measured op times (a calibrated cost table) that placement takes before the hints.
    std::shared_ptr<const MeasuredCosts> costs;
};

// Runs a model (any architecture) for one user or several: its KV cache with one or more
// sequences, the weights on their homes, and one execution path: an executor on one backend
// device, or a scheduler over several (SessionBackends), node placements cached per graph shape.
class Session {
  public:
    // Chooses the fused and flash ops and checks that the backend supports every node of a
    // generation step and of a full ubatch at the end of the context (throws sy::Error naming
    // the flag or the node otherwise); the KV cache is allocated by the first eval() or by
    // allocate(). On a device that does not compute on host memory, the weights the graphs
    // read and the KV cache live in that device's memory (uploaded by allocate()).
    Session(const Model& model, Plugin& plugin, int32_t device = 0);
    // Several backends: each weight gets a home from the placement rules (weights homed on a
    // device with its own memory are copied there by allocate(); host ones stay where they
    // are), the KV cache lives on the default backend, which also decides fused MoE and flash
    // attention; every graph's nodes are placed by place_ops (cost hints + the offload policy,
    // plans cached per graph shape) and run by a Scheduler. Throws sy::Error for an unknown
    // backend or rule, weights that do not fit, or a node no backend supports.
    Session(const Model& model, const SessionBackends& backends);
    void allocate();
    // The model on the device: bytes of its weight copy there (0 on a host-memory device).
    uint64_t device_weight_bytes() const;
    uint64_t largest_weight_elements() const;
    // Device memory kept for the backend's own temporaries besides weights, KV cache and compute
    // buffer: a GPU's prompt products may expand the largest weight matrix to F16, plus room for
    // its libraries' workspaces.
    static uint64_t device_reserve(uint64_t largest_matrix_elements) {
        return largest_matrix_elements * 2 + (uint64_t(256) << 20);
    }
    bool on_device() const { return cache_->on_device(); }

    // --- sequences ---------------------------------------------------------------------------
    // The cache holds `sequences()` independent sequences (1 until set_sequences()), each in its
    // own n_ctx / sequences() cells (llama-server's slots). Each has its own length: its tokens
    // so far, the positions of the next ones.
    //
    // Splits the cache into n sequences; only while every sequence is empty (after reset()).
    // Throws sy::Error otherwise, or for n < 1 or more sequences than cells.
    void set_sequences(int64_t n);
    int64_t sequences() const { return int64_t(seq_len_.size()); }
    int64_t sequence_capacity() const { return cache_->sequence_cells(); }
    int64_t sequence_length(int64_t seq) const;
    // Keeps the first n_keep tokens of sequence seq and drops the rest (0: empties it; the next
    // tokens overwrite their cells). Throws sy::Error for an unknown sequence or more than its
    // length.
    void truncate(int64_t seq, int64_t n_keep);
    // Makes dst's first n tokens those of src (a shared prompt prefix, computed once): their
    // cache cells are copied and dst continues at position n. Throws sy::Error for an unknown
    // sequence or more than src's length.
    void copy_prefix(int64_t src, int64_t dst, int64_t n);
    // Sequence seq's first n tokens, saved to host memory (KvCache::save_sequence), and put back
    // into a sequence, which then continues at position n (a prefix kept while its slot served
    // others). Throw sy::Error as copy_prefix, or for bytes of another size.
    std::vector<std::byte> save_prefix(int64_t seq, int64_t n);
    void load_prefix(int64_t seq, int64_t n, std::span<const std::byte> bytes);

    // Tokens that continue one sequence.
    struct SequenceTokens {
        int64_t seq = 0;
        std::span<const int32_t> tokens;
    };
    // Runs several sequences' tokens together: each entry's tokens at its sequence's positions,
    // appended to its cache. Graphs hold up to n_ubatch tokens: each entry with tokens left
    // gets an equal share, and what short entries leave of it goes to the others in order, so
    // decoding sequences (one token each) share a pass over the weights with a prompt. Returns
    // each entry's logits in turn, n_vocab floats per token: of every token (all_logits) or of
    // its last. Throws sy::Error, leaving every sequence unchanged, for an unknown or repeated
    // sequence, an entry without tokens, tokens past a sequence's capacity, or an id outside
    // the vocabulary.
    std::vector<float> decode(std::span<const SequenceTokens> batch, bool all_logits = false);

    // Runs `tokens` on sequence 0 at positions n_past() .. n_past() + size - 1 (in ubatches).
    // Returns the logits of every token (all_logits) or of the last one. Throws as decode().
    std::vector<float> eval(std::span<const int32_t> tokens, bool all_logits = false);
    // n_seqs sequences side by side (perplexity's chunks): `tokens` holds n_seqs equally long
    // runs, one per sequence 0 .. n_seqs - 1; with an empty cache it first sets n_seqs
    // sequences. Each graph takes n_ubatch / n_seqs (at least one) tokens of every sequence, so
    // the weights are read once for all of them. Returns each sequence's logits in turn, as
    // decode(). Throws sy::Error as decode() does, for a count the tokens do not divide into,
    // or another count than the cached sequences'.
    std::vector<float> eval_sequences(std::span<const int32_t> tokens, int64_t n_seqs,
                                      bool all_logits = false);

    // Sequence 0's length (every sequence's, after eval_sequences).
    int64_t n_past() const { return seq_len_[0]; }
    int64_t n_ctx() const { return cache_->n_ctx(); }
    // Empties every sequence.
    void reset() { std::fill(seq_len_.begin(), seq_len_.end(), 0); }
    // Keeps the first `n_past` tokens of every sequence. Throws sy::Error for more than a
    // sequence's length or a negative count.
    void rewind(int64_t n_past);
    void clear_stats() { stats_ = EvalStats{}; }
    const KvCache& cache() const { return *cache_; }
    bool uses_fused_moe() const { return ops_.fused_moe; }
    bool uses_flash_attention() const { return ops_.flash; }
    const Model& model() const { return model_; }
    const EvalStats& stats() const { return stats_; }
    // Times every node, copy and graph of the following evals into `profile` (profile.hpp):
    // the nodes then run one at a time. nullptr stops.
    void set_profile(Profile* profile);
    // Shows each node `observer` picks to it just before the node runs (the collection of an
    // importance matrix, imatrix.hpp); nullptr stops. Throws sy::Error for a session over
    // several backends (its nodes run in the scheduler's executors).
    void set_node_observer(const Executor::NodeObserver* observer);

    // The graph of one ubatch (exposed for `switchyard plan` and tests): `tokens` at n_past, as
    // n_seqs sequences of n_tokens / n_seqs tokens each, each in n_ctx / n_seqs cells.
    UbatchGraph build(int64_t n_tokens, int64_t n_past, bool all_logits, int64_t n_seqs = 1);
    // The graph of parts in order, each sequence in `cells` cache cells; logits of every token
    // (all_logits) or of each part's last.
    UbatchGraph build(std::span<const UbatchPart> parts, int64_t cells, bool all_logits,
                      bool reusable = false);

    // What the backends are, where each weight lives and why, and the node placement of a graph
    // this session built (cached per shape, as eval() uses it with several backends; with one,
    // every node is on it). Valid before allocate().
    bool multi_backend() const { return scheduler_ != nullptr; }
    const SessionBackends& session_backends() const { return backends_; }
    size_t primary() const { return primary_; }  // the default backend
    // Bytes of the KV cache in backend b's memory: its device's layers, or the layers in host
    // memory for the primary when it computes there (else the first backend that does).
    uint64_t cache_bytes_on(size_t b) const;
    std::span<const BackendInfo> backend_infos() const { return infos_; }
    const WeightPlan& weight_plan() const { return weight_plan_; }
    std::span<const WeightInfo> weights() const { return weight_infos_; }
    // The placement of a graph built for n_tokens after n_past cached tokens (kept for graphs
    // of the same structure, batch and power-of-two range of n_past).
    const OpPlan& plan(const Graph& graph, int64_t n_tokens, int64_t n_past);
    // Where a weight or cache tensor of this session's graphs lives: the index of the backend
    // holding it in its own memory, kHostInput for host memory.
    int32_t home_of(const Tensor& t) const;
    const ScheduleReport* last_schedule() const {
        return scheduler_ ? &scheduler_->last_run() : nullptr;
    }

  private:
    Session(const Model& model, const SessionBackends& backends, size_t primary);
    void check_graphs(std::vector<UbatchGraph>& graphs);
    void check_sequence(int64_t seq, const char* what) const;
    void bind_weight(Tensor& t) const;
    // Runs one graph of `parts` (their tokens in `tokens`, in order) and returns the logits it
    // outputs (none unless read_logits).
    std::vector<float> run_ubatch(std::span<const UbatchPart> parts,
                                  std::span<const int32_t> tokens, bool all_logits,
                                  bool read_logits);
    // The graph of a small ubatch (decode steps): one kept from an earlier step of the same
    // sequences and token counts, moved to these parts, or built for reuse.
    UbatchGraph& reusable_graph(std::span<const UbatchPart> parts, bool all_logits);

    const Model& model_;
    SessionBackends backends_;
    size_t primary_ = 0;
    Plugin& plugin_;  // the primary backend's
    int32_t device_ = 0;
    NamedOps ops_;
    Executor executor_;  // one backend
    std::unique_ptr<KvCache> cache_;
    std::vector<DeviceWeights> weights_;  // per device with its own memory that holds weights
    std::vector<BackendInfo> infos_;      // several backends
    std::vector<WeightInfo> weight_infos_;
    WeightPlan weight_plan_;
    std::unordered_map<const void*, int32_t> weight_home_;  // by host address
    std::unordered_map<std::string, OpPlan> plans_;         // by phase + shape signature
    uint64_t plans_generation_ = 1;                         // bumped when plans_ is cleared
    // The placements of the last graphs placed, by graph object (kept graphs run again).
    struct PlacedGraph {
        GraphStamp graph;
        int64_t n_tokens;
        int bits;  // bit_width(n_past)
        uint64_t generation;
        const OpPlan* plan;
    };
    std::vector<PlacedGraph> placed_;
    // Graphs of small ubatches kept for the steps after (building a graph anew each step is a
    // share of a decode step): by sequences, token counts, keys read and all_logits.
    std::unordered_map<std::string, UbatchGraph> reusable_;
    UbatchGraph unkept_;  // a small ubatch's graph that lists no moves, for its one run
    std::unique_ptr<Scheduler> scheduler_;
    std::vector<int64_t> seq_len_ = {0};  // each sequence's tokens in the cache
    EvalStats stats_;
    Profile* profile_ = nullptr;
};

}  // namespace sy::llm
