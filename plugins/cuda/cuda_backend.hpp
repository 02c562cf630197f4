// The CUDA backend: the CUDA devices of this machine (zero on a machine without a GPU or
// driver), each with a stream, a cuBLAS handle, a scratch arena and an error word the kernels
// write when an index read on the device is out of range. Published as the plugin's function
// table by sdk::publish_plugin (plugin_entry.cpp), which checks pointers and device indices first.
//
// Execution. compute() enqueues a node list on the device's stream and returns (the host runs
// other backends meanwhile); synchronize() waits for the lists queued since the last one and
// reports an out-of-range index a kernel found, naming the node. Copies between the host and
// device buffers wait for queued work first (they are not on the stream). A captured graph's
// list and a profiled one are waited for by their own compute() call.
//
// CUDA graphs. A list of several nodes that comes again exactly as it was (the same ops,
// parameters, tensors, addresses and sizes, and the same scratch arena) is captured from the
// stream into a graph the second time and replayed from then on: one launch instead of one per
// kernel. A list that changes every time (the attention of a decode step reads one more cached
// token) is launched kernel by kernel: capturing it anew each time and updating the graph cost
// as much as the launches it saves (docs/design-measurements.md#cuda-graphs).
// Anything that cannot be captured (an arena that has to grow, a refused instantiation) falls
// back to launching the nodes one by one. Off unless the plugin option `graphs` = "on": the
// lists of this project's models rarely come back unchanged, and graphs gained nothing in
// generation, with the whole model on the GPU or with the routed experts on the cpu (same
// section).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "buffers.hpp"
#include "ops/op_context.hpp"
#include "profile.hpp"
#include "switchyard/plugin.h"

namespace sy::cuda {

// Link to host memory, measured once per device with pinned buffers.
struct LinkRates {
    double host_to_device = 0;  // bytes/s
    double device_to_host = 0;  // bytes/s
    double latency_ns = 0;      // one small copy, issue to completion
    double launch_ns = 0;       // one empty kernel launch, back to back
};

struct Device {
    int ordinal = 0;
    cudaDeviceProp props{};
    double memory_bandwidth = 0;  // bytes/s, from the memory clock and bus width
    double peak_flops_f32 = 0;
    double peak_flops_f16 = 0;
    double peak_flops_int8 = 0;
    cudaStream_t stream = nullptr;
    cublasHandle_t cublas = nullptr;
    std::unique_ptr<Scratch> scratch;
    int* error_word = nullptr;         // device address of an int: 0, or 1 + the index of the node
                                       // that failed
    int* host_error_word = nullptr;    // the same int mapped into host memory (read after a
                                       // synchronization without a copy), or null: device memory
    void* cublas_workspace = nullptr;  // cuBLAS's, set once so that captures never allocate
    struct Replay {
        std::string content;             // the list as last seen (list_content)
        cudaGraphExec_t exec = nullptr;  // its captured graph, once it came twice
        bool refused = false;            // this content could not be captured
    };
    std::unordered_map<std::string, Replay> graphs;  // by list shape (graph_key)
    std::optional<LinkRates> link;
    std::unique_ptr<NodeProfile> profile;  // SWITCHYARD_CUDA_PROFILE
    // The nodes of compute() calls launched since the last synchronize(): compute() returns once
    // its kernels are queued, and synchronize() waits for them and says which node reported a
    // bad index (error word 1 + the node's index in this list). The host keeps the nodes alive
    // until then (plugin.h).
    std::vector<const sy_node*> pending;
};

class CudaBackend {
  public:
    explicit CudaBackend(const sy_host_api& host);
    ~CudaBackend();
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    const char* build_info() const { return build_info_.c_str(); }
    int32_t device_count() const { return int32_t(devices_.size()); }

    sy_status device_props(int32_t device, sy_device_props* props);
    sy_status capabilities(const sy_capability** rows, size_t* count);
    sy_status named_ops(const sy_named_op_info** ops, size_t* count);
    sy_status supports(int32_t device, const sy_node* node, int32_t* supported);
    sy_status estimate(int32_t device, const sy_node* node, double* nanoseconds);
    sy_status cost_params(int32_t device, const sy_cost_param** params, size_t* count);
    sy_status buffer_alloc(int32_t device, uint64_t size, sy_buffer* buffer);
    sy_status buffer_free(sy_buffer* buffer) { return buffers_.free(buffer); }
    sy_status buffer_set(const sy_buffer* buffer, uint64_t offset, const void* src, uint64_t size) {
        if (buffer != nullptr) settle(buffer->device);
        return buffers_.set(buffer, offset, src, size);
    }
    sy_status buffer_get(const sy_buffer* buffer, uint64_t offset, void* dst, uint64_t size) {
        if (buffer != nullptr) settle(buffer->device);
        return buffers_.get(buffer, offset, dst, size);
    }
    sy_status copy_tensors(const sy_copy* copies, size_t count);
    sy_status compute(int32_t device, const sy_node* const* nodes, size_t count);
    sy_status synchronize(int32_t device);
    sy_status set_option(const char* key, const char* value);
    // Pins host memory the host copies from and to every step (cudaHostRegister), so those
    // copies are DMA from the page-locked pages rather than staged through the driver's own.
    sy_status host_register(void* ptr, uint64_t size);
    sy_status host_unregister(void* ptr);

  private:
    sy_status init_device(Device& d);
    const LinkRates& link_rates(Device& d);
    sy_status check_node_memory(const Device& d, const sy_node& node) const;
    // Waits for the stream, then turns a bad index a kernel reported into an error.
    sy_status synchronize_and_check(Device& d, const sy_node* const* nodes, size_t count);
    // synchronize_and_check over the pending nodes, which it clears.
    sy_status synchronize_pending(Device& d);
    // Waits for the kernels of devices with pending nodes (their errors stay for synchronize()),
    // so that a copy from or to their buffers sees what those kernels write and read: the copies
    // are not on the devices' streams.
    void settle(int32_t device);
    static void clear_error_word(Device& d);
    // Replays the list's graph, or captures it when the list comes a second time unchanged;
    // false when the nodes are to be launched one by one (nothing was launched then).
    bool launch_graph(Device& d, const sy_node* const* nodes, size_t count);
    // Enqueues node `index` of a compute() call on the stream (its errors report 1 + index);
    // false when the op has no kernel here. Throws LaunchError when CUDA refuses.
    static bool launch_node(Device& d, const sy_node& node, size_t index);
    sy_status copy_one(const sy_copy& c, size_t index);
    void log(int32_t level, const std::string& message) const;

    const sy_host_api host_;
    std::string build_info_;
    std::vector<Device> devices_;
    std::mutex mutex_;             // compute, copies and calibration: one at a time per plugin
    bool graphs_enabled_ = false;  // option `graphs`
    static constexpr size_t kCostParamCount = 7;
    std::vector<std::array<sy_cost_param, kCostParamCount>> cost_params_;
    DeviceBuffers buffers_;
    std::mutex pinned_mutex_;
    std::map<void*, uint64_t> pinned_;  // host_register's ranges, by start
};

}  // namespace sy::cuda
