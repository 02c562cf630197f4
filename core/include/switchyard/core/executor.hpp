// Runs a graph (or a sequence of its nodes) on one device of one backend plugin:
//   plan memory -> one compute buffer from the plugin -> bind every tensor's descriptor ->
//   make weights and inputs reachable -> one compute() call -> synchronize.
// Weights and inputs in host memory are used in place on a device that computes on host memory;
// on any other device they are uploaded into a staging buffer: inputs every run, weights just
// before the first node that reads them, unless the buffer still holds those bytes there (the
// executor keeps a record of what each range of the buffer holds). Expert weights that the
// sequence reads only through expert products (MUL_MAT_ID, moe.fused_up_gate) are uploaded
// expert by expert: before such a node runs, its ids are read back and the experts they name
// that the staging buffer does not hold yet are copied, so a batch moves only the experts it
// routes to (and later batches only the experts that are new to the buffer).
// When the weights a sequence stages are more than the staging limit (set_staging_limit), each
// weight's room is reused once the nodes reading it have run: the buffer then needs only what
// is read at one time (one layer's experts, say), not every weight of the model, and weights
// are uploaded again on every run. Plans are cached by the graph's shape signature, so
// rebuilding the same graph every decode step reuses plan and buffers.
//
// The multi-backend scheduler (scheduler.hpp) gives one Executor all the nodes of a graph that
// its backend runs, in steps (begin, bind, then compute one split after the other): results of
// other backends' nodes come in as imports, whose bytes the scheduler provides.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "switchyard/core/memory_planner.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/core/tensor.hpp"

namespace sy {

class Graph;
class Profile;
struct Node;

struct RunReport {
    bool plan_reused = false;           // the plan came from the cache (same shape signature)
    uint64_t compute_buffer_bytes = 0;  // size of the compute buffer (>= this plan's peak)
    uint64_t planned_peak_bytes = 0;    // what this plan needs
    uint64_t naive_bytes = 0;           // what it would need without reuse
    uint64_t staged_bytes = 0;          // weight and input bytes uploaded by this run
    uint64_t staging_buffer_bytes = 0;  // size of the staging buffer (0 on host memory)
    bool staged_per_use = false;        // this plan's weights were over the staging limit
    size_t nodes = 0;
    double backend_seconds = 0;  // inside the plugin's compute and synchronize calls (its own
                                 // node checks included); the rest of run() is the host's:
                                 // planning, source checks, buffer growth, binding, staging
    double sync_seconds = 0;     // of backend_seconds: inside synchronize() (waiting for a device
                                 // that queues its work; ~0 for one that computes in compute())
    double stage_seconds = 0;    // uploading staged weights and inputs to the device
    double setup_seconds = 0;    // run(): begin() and bind(), the memory plan (or its cache
                                 // lookup), buffer growth and binding every tensor
};

// Throws Error naming the first node of `graph` that the plugin's device does not support
// (its supports() on the tensors' descriptors: types and shapes, no memory needed), so a model
// can be refused before anything is allocated.
void check_supported(const Plugin& plugin, int32_t device, const Graph& graph);

class Executor {
  public:
    Executor(Plugin& plugin, int32_t device = 0);
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;
    ~Executor();

    const RunReport& run(const Graph& graph);
    // `order`: ascending node indices; every source must be a weight, an input, or the result of
    // a node earlier in `order`.
    const RunReport& run(const Graph& graph, std::span<const int32_t> order);

    // The same in steps, for a sequence that reads tensors another executor provides (`imports`:
    // ids of base tensors: results of nodes outside the sequence, or external tensors that live
    // in another plugin's memory):
    //   begin()   plans memory (a cached plan when the shapes repeat) and grows the buffers, so
    //             that planned_host_data() is known;
    //   bind()    binds every tensor: an import to `import_host[k]` on a device that computes on
    //             host memory, to a slot of the staging buffer otherwise (filled by upload());
    //   compute() runs positions [first, end) of `order` and waits for them; call it in order.
    //             With wait false, the last call to the plugin's compute is not followed by its
    //             synchronize (a device may still be running when it returns): finish() waits,
    //             and must come before anything else touches this executor's device.
    void begin(const Graph& graph, std::span<const int32_t> order,
               std::span<const int32_t> imports);
    void bind(std::span<const void* const> import_host);
    void compute(size_t first, size_t end, bool wait = true);
    // Waits for what compute(..., false) left running (timed as synchronize); no-op otherwise.
    void finish();
    bool running() const { return running_; }
    // After begin(): a host pointer to intermediate t's bytes when the compute buffer is host
    // visible, else nullptr.
    const void* planned_host_data(const Tensor& t) const;
    // After bind(), on a device that does not compute on host memory: copies import k's bytes
    // from `host` into its staging slot (not counted in staged_bytes: the caller counts them).
    void upload(size_t import, const void* host);

    // After a run: a host pointer to t's element (0,0,0,0) when t lives in host-visible memory,
    // otherwise nullptr (use read).
    const void* host_data(const Tensor& t) const;
    // Copies the bytes of a contiguous tensor of the last run's graph into `dst`
    // (dst.size() == t.bytes()), from host memory or through the plugin.
    void read(const Tensor& t, std::span<std::byte> dst) const;
    template <typename T>
    std::vector<T> read(const Tensor& t) const {
        std::vector<T> out(static_cast<size_t>(t.bytes()) / sizeof(T));
        read(t, std::as_writable_bytes(std::span<T>(out)));
        return out;
    }

    // With a profile (profile.hpp), compute() runs and times one node at a time; nullptr stops.
    void set_profile(Profile* profile) { profile_ = profile; }

    // A look at the nodes `wants` picks, just before each runs: its sources are computed and
    // readable through host_data() or read() (activation statistics such as an importance
    // matrix, without keeping intermediates alive). The other nodes still run in batches
    // between them. nullptr stops; the observer must outlive the runs it watches.
    struct NodeObserver {
        std::function<bool(const Node&)> wants;
        std::function<void(const Node&, const Executor&)> observe;
    };
    void set_observer(const NodeObserver* observer) { observer_ = observer; }

    // The most bytes of host-resident weights a plan keeps staged at once; beyond it, weights
    // share room by when they are read (see above). 0 (the default): auto_staging_limit when a
    // plan is made. Applies to plans made after the call.
    void set_staging_limit(uint64_t bytes) { staging_limit_ = bytes; }
    // Devices whose executors copy from and to this executor's compute buffer (it runs on host
    // memory, the scheduler's other lanes on their own): the buffer is offered to their plugins
    // for direct transfers (Plugin::register_host) from the next allocation on.
    void set_transfer_partners(std::vector<Plugin*> plugins) { partners_ = std::move(plugins); }
    // The limit 0 stands for: half of what a device with these properties has free besides the
    // compute buffer the plan needs (the buffers the executor holds, `held` bytes, count as
    // free); no limit when the plugin does not say what is free.
    static uint64_t auto_staging_limit(const sy_device_props& props, uint64_t held,
                                       uint64_t compute);

    // The staging buffer a plan of `order` (reading `imports` from other backends) needs on a
    // device that does not compute on host memory, under `limit` (bytes, no auto): for
    // `switchyard plan`, before weights are on their devices: `homed_here` says which external
    // tensors will live in this device's memory (otherwise: those in one of its buffers now).
    struct StagingLayout {
        uint64_t bytes = 0;
        bool per_use = false;
    };
    static StagingLayout staging_layout(const Graph& graph, std::span<const int32_t> order,
                                        std::span<const int32_t> imports, uint64_t limit,
                                        const std::function<bool(const Tensor&)>& homed_here = {});

    bool computes_on_host_memory() const { return host_memory_; }
    uint64_t compute_buffer_size() const { return compute_.size(); }
    size_t cached_plans() const { return cache_.size(); }
    const RunReport& last_run() const { return report_; }

  private:
    // Staged weights to upload before the node at `position` of the order runs: whole
    // (ids < 0), or the experts that the ids (a tensor id) of the expert product there name.
    // Tensor ids, not pointers: plans outlive the graphs they were made for, and rebuilt graphs
    // of one shape number their tensors alike.
    struct StageStep {
        size_t position;
        int32_t ids = -1;
        std::vector<int32_t> weights;
    };
    struct CachedPlan {
        MemoryPlan memory;
        std::vector<int64_t> staging_offset;  // per tensor id: offset in staging_, -1 if not staged
        uint64_t staging_bytes = 0;
        bool per_use = false;          // weights share room by when they are read
        std::vector<char> routed;      // per tensor id: staged by experts
        std::vector<StageStep> steps;  // ascending positions
    };
    // What a range of the staging buffer holds: `bytes` copied from `host`, in pieces (experts;
    // one piece for a whole weight) of which `have` says which are there.
    struct Resident {
        const void* host = nullptr;
        uint64_t bytes = 0;
        std::vector<char> have;
    };

    const CachedPlan& plan_for(const Graph& graph, std::span<const int32_t> order);
    // `limit` is asked only when the order reads host-resident weights (a device's free
    // memory can take a driver call to learn).
    static void plan_staging(const Graph& graph, std::span<const int32_t> order,
                             std::span<const int32_t> import_of,
                             const std::function<uint64_t()>& limit,
                             const std::function<bool(const Tensor&)>& homed_here,
                             CachedPlan& plan);
    static void find_steps(const Graph& graph, std::span<const int32_t> order,
                           std::span<const char> staged, std::span<const int32_t> first_read,
                           CachedPlan& plan);
    void check_sources(const Graph& graph, std::span<const int32_t> order,
                       const CachedPlan& plan) const;
    static void grow(Plugin& plugin, int32_t device, Buffer& buffer, uint64_t size);
    void bind_external(const Tensor& root, const CachedPlan& plan);
    // Binds a root of the sequence (import, external or intermediate) / a view of a bound root.
    void bind_root(const Tensor& root, const CachedPlan& plan,
                   std::span<const void* const> import_host);
    void bind_view(const Tensor& t);
    void bind_import(const Tensor& root, const CachedPlan& plan, const void* host);
    void run_nodes(size_t first, size_t end);  // split at observed nodes
    void run_batch(size_t first, size_t end, bool wait = true);
    double synchronize();  // the plugin's, timed into report_.sync_seconds; returns the time
    bool needs_upload(const StageStep& step) const;
    void stage(const StageStep& step);
    const Resident* resident(uint64_t offset, const Tensor& weight) const;
    Resident& hold(uint64_t offset, const Tensor& weight, size_t pieces);
    void forget(uint64_t offset, uint64_t bytes);
    std::vector<int32_t> read_ids(const Tensor& ids) const;
    const sy_tensor& bound(const Tensor& t) const;

    Plugin& plugin_;
    int32_t device_;
    // The sequence between begin() and its last compute().
    const Graph* graph_ = nullptr;
    std::vector<int32_t> order_;
    std::vector<int32_t> imports_;
    std::vector<int32_t> import_of_;  // per tensor id: index in imports_, or -1
    const CachedPlan* plan_ = nullptr;

    bool host_memory_;
    Buffer compute_;
    std::vector<Plugin*> partners_;    // set_transfer_partners
    std::vector<Plugin*> registered_;  // of partners_: those that took compute_ (its base)
    void* registered_base_ = nullptr;
    void grow_compute(uint64_t size);
    void unregister_compute() noexcept;
    bool running_ = false;  // compute(..., false) returned before its device finished
    Buffer staging_;
    std::unordered_map<std::string, CachedPlan> cache_;
    uint64_t cache_generation_ = 1;  // bumped whenever cache_ loses a plan
    // The last begin(): the same graph begun again with the same sequence and imports (a kept
    // decode graph, moved) takes its plan without making the key, and its sources are checked.
    struct Begun {
        GraphStamp graph;
        const CachedPlan* plan = nullptr;
        uint64_t generation = 0;
        std::vector<uint8_t> externals;  // external_state() at that begin()
    };
    Begun begun_;
    // Per tensor: 0 for a view or an intermediate; for an external root whether it has data and
    // lives in host memory or a device's buffer (what the plan's key and checks depend on).
    static void external_state(const Graph& graph, std::vector<uint8_t>& out);
    std::vector<uint8_t> externals_now_;
    std::map<uint64_t, Resident> resident_;    // by offset in staging_: what it holds now
    uint64_t staging_limit_ = 0;               // 0: half of the device's free memory
    std::vector<sy_tensor> bound_;             // per tensor id, for the last run
    std::vector<const Buffer*> bound_buffer_;  // per tensor id: buffer holding it, null = host
    std::vector<sy_node> nodes_;
    // What the last bind() bound: the same sequence bound again in the same buffers, with the
    // same imports, rebinds only these external roots and views.
    struct BoundAs {
        GraphStamp graph;
        const CachedPlan* plan = nullptr;
        uint64_t generation = 0;
        void* compute = nullptr;
        void* staging = nullptr;
        std::vector<const void*> import_host;
        std::vector<int32_t> externals, views;
    };
    BoundAs bound_as_;
    uint64_t last_graph_serial_ = 0;
    RunReport report_;
    Profile* profile_ = nullptr;
    const NodeObserver* observer_ = nullptr;
};

}  // namespace sy
