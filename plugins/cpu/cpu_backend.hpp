// The CPU backend: one device computing on host memory with a persistent thread pool. Published
// as the plugin's function table by sdk::publish_plugin (plugin_entry.cpp, switchyard/plugin.hpp),
// which checks pointers and device indices before these members run.
//
// Locking. run_mutex_ guards the pool (it runs one job at a time and is replaced when the thread
// count changes) and the interleaved weights: compute, copy_tensors, set_option,
// release_constants and calibration hold it. calibration_mutex_
// guards the lazily measured rates; when both are needed it is taken first.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "buffers.hpp"
#include "cost_model.hpp"
#include "device_facts.hpp"
#include "interleaved_weights.hpp"
#include "switchyard/plugin.h"
#include "thread_pool.hpp"
#include "variant.hpp"

namespace sy::cpu {

class CpuBackend : public sdk::HostMemory {
  public:
    CpuBackend(const sy_host_api& host, const VariantInfo& variant);

    const char* build_info() const { return build_info_.c_str(); }

    sy_status device_props(int32_t device, sy_device_props* props);
    sy_status capabilities(const sy_capability** rows, size_t* count);
    sy_status named_ops(const sy_named_op_info** ops, size_t* count);
    sy_status supports(int32_t device, const sy_node* node, int32_t* supported);
    sy_status estimate(int32_t device, const sy_node* node, double* nanoseconds);
    sy_status cost_params(int32_t device, const sy_cost_param** params, size_t* count);
    // In parallel on the pool (hides HostMemory's, which copies on the calling thread).
    sy_status copy_tensors(const sy_copy* copies, size_t count);
    sy_status compute(int32_t device, const sy_node* const* nodes, size_t count);
    sy_status set_option(const char* key, const char* value);
    sy_status release_constants(uint64_t constant_id);

  private:
    struct Rates {
        CostRates cost;
        int threads = 1;
        double clock_hz = 0.0;
    };
    // The cost-model rates, measuring bandwidth and overhead the first time (and again after the
    // thread count changed).
    Rates rates();
    void log(int32_t level, const std::string& message) const;
    size_t interleaved_bytes();

    const sy_host_api host_;
    const VariantInfo variant_;
    const std::string model_name_;
    const double clock_hz_;
    std::string build_info_;

    std::mutex calibration_mutex_;
    std::optional<Calibration> calibration_;
    // Rates given with the options memory_gbps and launch_us instead of measured (-1: measure).
    double memory_gbps_ = -1, launch_us_ = -1;
    static constexpr size_t kCostParamCount = 7;
    std::array<sy_cost_param, kCostParamCount> cost_params_{};

    std::mutex run_mutex_;
    std::unique_ptr<ThreadPool> pool_;
    // The option repack (auto by default, on, off): the matrix products read row-interleaved
    // copies of Q4_0 / Q8_0 weights, made on first use (under run_mutex_).
    bool repack_ = true;
    InterleavedWeights interleaved_;
};

}  // namespace sy::cpu
