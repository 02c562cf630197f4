// Runs a graph across several backends as an OpPlan (placement.hpp) places it: one Executor per
// backend holds all the nodes that backend runs (one memory plan, so a backend's results live
// in its own compute buffer until its last reader, wherever that reader runs), and the splits
// run in graph order. A tensor that a node reads from another backend's memory is an import of
// the reader's executor:
//   - between backends that compute on host memory: the reader binds the writer's bytes in
//     place (nothing moves);
//   - from a device whose memory the host cannot read: fetched once per run into host memory
//     owned by the scheduler (buffer get), when its first reader's split is about to run;
//   - to a device that does not compute on host memory: uploaded into that executor's staging
//     buffer (buffer set) before the first split of that backend that reads it.
// Every move is counted in the report, as the plan predicts them (TensorCopy). Weights and
// inputs in host memory that a device reads are staged by its executor as for a single backend
// (weights once per plan, inputs every run); those bytes are reported apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "switchyard/core/executor.hpp"
#include "switchyard/core/placement.hpp"

namespace sy {

class Graph;
class Plugin;
class Profile;
class Tensor;

struct MovedTensor {
    int32_t tensor = 0;  // id of the base tensor
    int32_t from = 0;    // backend index that wrote it, or kHostInput (external memory)
    int32_t to = 0;      // backend index that read it
    uint64_t bytes = 0;  // bytes over the link: fetched + uploaded (0 when read in place)
};

struct ScheduleReport {
    size_t splits = 0;
    size_t overlapped = 0;           // nodes run beside the split before theirs (set_overlap)
    double overlap_seconds = 0;      // time saved by overlap (at least): already taken off
                                     // the sums below, which are wall time
    std::vector<MovedTensor> moves;  // tensors read across backends, in the order they moved
    uint64_t link_bytes = 0;         // sum of moves' bytes
    uint64_t staged_bytes = 0;       // weights and inputs staged by the executors
    double backend_seconds = 0;      // inside the plugins' compute and synchronize calls
    double sync_seconds = 0;         // of backend_seconds: inside synchronize()
    double stage_seconds = 0;        // the executors' uploads of staged weights and inputs
                                     // (each less its share of overlap_seconds)
    double copy_seconds = 0;         // fetching and uploading imports
    double setup_seconds = 0;        // before the first split: who runs what and reads what
                                     // from elsewhere, every executor's memory plan (or its
                                     // cache lookup), buffers and binding
    bool plans_reused = false;       // every executor reused a cached memory plan
    std::vector<uint64_t> compute_buffer_bytes;  // per backend (0: not used)
    std::vector<uint64_t> staging_buffer_bytes;  // per backend: host bytes staged on a device
};

class Scheduler {
  public:
    struct Backend {
        Plugin* plugin = nullptr;
        int32_t device = 0;
    };
    // `backends` in the order of the BackendInfo list the plans were made with.
    explicit Scheduler(std::vector<Backend> backends);
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;
    ~Scheduler();

    // Runs every node of `graph` where `plan` puts it. Throws Error for a plan that does not
    // fit the graph (node count, a backend index out of range) and whatever the executors or
    // plugins throw (naming the node).
    const ScheduleReport& run(const Graph& graph, const OpPlan& plan);

    // After a run: the bytes of a contiguous tensor written by the last run's graph, from the
    // backend that wrote it.
    void read(const Tensor& t, std::span<std::byte> dst) const;
    template <typename T>
    std::vector<T> read(const Tensor& t) const {
        std::vector<T> out(static_cast<size_t>(t.bytes()) / sizeof(T));
        read(t, std::as_writable_bytes(std::span<T>(out)));
        return out;
    }

    // Executor::set_staging_limit for every backend's executor (0: each device's own half of
    // its free memory).
    void set_staging_limit(uint64_t bytes);

    const ScheduleReport& last_run() const { return report_; }

    // Times every node (Executor::set_profile) and every copy into `profile`; nullptr stops.
    // A profile runs the splits one after another (see set_overlap).
    void set_profile(Profile* profile);

    // Overlap (on by default): when a split is followed by one on another plugin, one of the
    // two a device with its own memory, the nodes at the start of the next split that neither
    // read what the split writes nor write what it touches run at the same time, on an overlap
    // thread: a GPU's shared experts while the CPU computes the routed ones. The results are
    // the same either way.
    void set_overlap(bool on) { overlap_ = on; }
    // Whether splits on two backends may overlap: two plugins, one of them a device with its own
    // memory (a GPU, which does not need the cores the other computes with).
    static bool may_overlap(const Plugin* a, bool a_host_memory, const Plugin* b,
                            bool b_host_memory) {
        return a != b && !(a_host_memory && b_host_memory);
    }

  private:
    struct Import {
        int32_t tensor = 0;
        int32_t from = kHostInput;   // writer backend, or kHostInput for an external tensor
        const void* host = nullptr;  // where the bytes are (or will be) in host memory
        bool fetch = false;          // host is a buffer of ours, filled by a buffer get
        size_t first_position = 0;   // first position in the reader's order that reads it
        bool done = false;           // moved in this run
    };
    struct Lane {  // one backend's share of the current graph
        std::unique_ptr<Executor> executor;
        std::vector<int32_t> order;   // its nodes, ascending
        std::vector<Import> imports;  // in the order given to the executor
    };

    class OverlapThread;  // runs the next split's overlapped nodes beside the caller

    void collect(const Graph& graph, const OpPlan& plan);
    void move_imports(const Graph& graph, int32_t backend, size_t first, size_t end);
    std::byte* fetch_buffer(const Tensor& root);
    size_t position_of(const Split& split, int32_t node) const;
    // Time the executors count twice for a stretch run on the overlap thread.
    struct Hidden {
        double backend = 0, sync = 0, stage = 0;
    };
    size_t nodes_beside(const Graph& graph, const Split& split, const Split* next) const;
    bool runs_async(int32_t backend) const;
    bool running(int32_t backend) const;  // a split of it returned before its device finished
    void settle(int32_t backend);         // waits for that device (no-op when not running)
    void run_split(const Graph& graph, const Split& split, bool async);
    // Runs `split` and, beside it on the overlap thread, the first `beside` nodes of `next`.
    void run_beside(const Graph& graph, const Split& split, const Split& next, size_t beside,
                    Hidden& hidden);

    std::vector<Backend> backends_;
    std::vector<Lane> lanes_;      // per backend
    std::vector<int32_t> writer_;  // per tensor id of the last graph: backend
    // Host memory that a device's bytes are fetched into: whole pages, offered to the devices'
    // plugins for direct transfers (Plugin::register_host) while it is held.
    class HostCopy {
      public:
        HostCopy() = default;
        HostCopy(HostCopy&& o) noexcept;
        HostCopy& operator=(HostCopy&& o) noexcept;
        ~HostCopy() { release(); }
        std::byte* data() const { return data_; }
        size_t size() const { return size_; }
        // Room for at least `bytes` (zeroed), registered with those of `plugins` that take it.
        void reserve(size_t bytes, std::span<Plugin* const> plugins);

      private:
        void release() noexcept;
        std::byte* data_ = nullptr;
        size_t size_ = 0;
        std::vector<Plugin*> registered_;
    };
    std::vector<Plugin*> devices_;   // plugins of the backends with own memory
    std::vector<HostCopy> fetched_;  // per tensor id: host copy of device bytes
    std::vector<bool> fetched_now_;  // per tensor id: fetched in this run
    // What the lanes were collected from: the same graph (as many tensors) placed the same way
    // again (a kept decode graph) has the same lanes and imports.
    struct Collected {
        GraphStamp graph;
        std::vector<int32_t> backends;  // per node
    };
    Collected collected_;
    ScheduleReport report_;
    Profile* profile_ = nullptr;
    uint64_t staging_limit_ = 0;
    bool overlap_ = true;
    std::vector<char> host_memory_;  // per backend: its device computes on host memory
    std::unique_ptr<OverlapThread> overlap_thread_;
};

}  // namespace sy
