// Per-node timing of compute(), for finding where a model's time goes on the GPU. Off unless
// the environment sets SWITCHYARD_CUDA_PROFILE (any value but 0). Each node's time is the gap
// between device events recorded before it and before the next node: the kernel time, plus any
// time the GPU waited for the host to launch the next one. Totals per node kind (op, the weight
// or result it works on with its layer number dropped, types, columns) are printed to stderr
// when the plugin shuts down, largest first, with the host time spent inside compute().
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

#include "switchyard/plugin.h"

namespace sy::cuda {

class NodeProfile {
  public:
    NodeProfile();
    ~NodeProfile();
    NodeProfile(const NodeProfile&) = delete;
    NodeProfile& operator=(const NodeProfile&) = delete;

    bool enabled() const { return enabled_; }
    // One compute() call: begin() before its launches, mark(i) before node i's, end() after
    // the last, while the nodes are still valid (it waits for the stream), with the host seconds
    // the launches took. Keys are built in end(), so the timed launches pay only for an event.
    void begin(cudaStream_t stream, size_t count);
    void mark(const sy_node& node, size_t i);
    void end(double host_seconds);

  private:
    struct Total {
        double ms = 0;
        long count = 0;
    };
    bool enabled_ = false;
    cudaStream_t stream_ = nullptr;
    std::vector<cudaEvent_t> events_;
    std::vector<const sy_node*> nodes_;  // this call's, valid until end() (null: not launched)
    std::map<std::string, Total> totals_;
    double host_seconds_ = 0;
    long calls_ = 0;
};

}  // namespace sy::cuda
