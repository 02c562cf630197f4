// The plugin context behind sy_plugin_api.ctx: one device computing on host memory (the CPU's,
// shared with the CPU plugin, so work moves between them without copies), running matrix
// products through a GEMM engine (engine.hpp). Published as the plugin's function table by
// sdk::publish_plugin (plugin_entry.cpp), which checks pointers and device indices first.
//
// Locking: mutex_ guards the engine, the workspace and the measured rates; every entry point
// that touches them holds it (the host never calls from two threads at once, but calls may come
// from different threads).
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "cost_model.hpp"
#include "engine.hpp"
#include "products.hpp"
#include "switchyard/host_buffers.hpp"
#include "switchyard/plugin.h"
#include "switchyard/validation.hpp"

namespace sy::blas {

class BlasBackend : public sdk::HostMemory {
  public:
    // Loads the default engine (oneDNN, else OpenBLAS); throws std::runtime_error with every
    // engine's reason when none loads.
    explicit BlasBackend(const sy_host_api& host);

    // Stable for the plugin's lifetime (the host keeps the pointer); the text follows the engine.
    const char* build_info() const { return build_info_.data(); }
    static const validation::CapabilityTable& capability_table();
    sy_status capabilities(const sy_capability** rows, size_t* count);
    sy_status named_ops(const sy_named_op_info** ops, size_t* count);

    sy_status device_props(int32_t device, sy_device_props* props);
    sy_status supports(int32_t device, const sy_node* node, int32_t* supported);
    sy_status estimate(int32_t device, const sy_node* node, double* nanoseconds);
    sy_status cost_params(int32_t device, const sy_cost_param** params, size_t* count);
    sy_status compute(int32_t device, const sy_node* const* nodes, size_t count);
    sy_status set_option(const char* key, const char* value);
    sy_status release_constants(uint64_t constant_id);

  private:
    const Rates& rates();  // measured on first use; mutex_ held
    void log(int32_t level, const std::string& message) const;
    void describe();  // build_info_ from the engine

    const sy_host_api host_;
    std::array<char, 512> build_info_{};
    std::string model_name_;

    std::mutex mutex_;
    std::unique_ptr<Engine> onednn_, openblas_;
    std::string onednn_why_, openblas_why_;
    Workspace ws_;
    std::optional<Rates> rates_;
    static constexpr size_t kCostParams = 31;
    std::array<sy_cost_param, kCostParams> cost_params_{};
    size_t cost_param_count_ = 0;
};

}  // namespace sy::blas
