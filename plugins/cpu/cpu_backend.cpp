#include "cpu_backend.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <thread>

#include "capabilities.hpp"
#include "compute.hpp"
#include "switchyard/named_ops.h"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
namespace {

int default_thread_count() {
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? int(n) : 1;
}

constexpr int kMaxThreads = 1024;

}  // namespace

CpuBackend::CpuBackend(const sy_host_api& host, const VariantInfo& variant)
    : host_(host),
      variant_(variant),
      model_name_(cpu_model_name()),
      clock_hz_(nominal_clock_hz()),
      pool_(std::make_unique<ThreadPool>(default_thread_count())) {
    build_info_ = std::string("variant ") + variant_.name + " (" + variant_.isa_flags + "), " +
#if defined(__clang__)
                  "clang " __clang_version__
#elif defined(__GNUC__)
                  "gcc " __VERSION__
#else
                  "unknown compiler"
#endif
                  ", C++" +
                  std::to_string(__cplusplus / 100 % 100) + ", ABI " +
                  std::to_string(SY_ABI_VERSION_MAJOR) + "." + std::to_string(SY_ABI_VERSION_MINOR);
}

void CpuBackend::log(int32_t level, const std::string& message) const {
    if (SY_HAS_FIELD(&host_, log) && host_.log)
        host_.log(host_.host_ctx, level, "cpu", message.c_str());
}

CpuBackend::Rates CpuBackend::rates() {
    std::lock_guard calibration_lock(calibration_mutex_);
    int threads;
    {
        std::lock_guard run_lock(run_mutex_);
        threads = pool_->size();
        if (!calibration_) calibration_ = measure_calibration(*pool_);
    }
    Rates r;
    r.threads = threads;
    r.clock_hz = clock_hz_;
    // Two FMA pipes (2 flops per lane each) per cycle per thread, as on Haswell+ and Zen cores;
    // a measured f16 GEMM came close to this formula (docs/design-measurements.md#cpu-peak-flops).
    // SMT siblings share the pipes, so on an SMT machine this overstates the peak by up to 2x.
    r.cost.peak_flops = double(threads) * variant_.f32_lanes * 2.0 * 2.0 * clock_hz_;
    r.cost.memory_bandwidth =
        memory_gbps_ > 0 ? memory_gbps_ * 1e9 : calibration_->memory_bandwidth;
    r.cost.launch_overhead_ns =
        launch_us_ >= 0 ? launch_us_ * 1e3 : calibration_->launch_overhead_ns;
    return r;
}

sy_status CpuBackend::device_props(int32_t /*device*/, sy_device_props* props) {
    if (props == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "device_props: props is NULL");
    if (!SY_HAS_FIELD(props, launch_overhead_ns))
        return sdk::error(SY_ERR_ABI, "device_props: struct_size %u is smaller than ABI 1.0's %zu",
                          props->struct_size, sizeof(sy_device_props));
    const Rates r = rates();
    // Fill a full local copy, then hand over the part the host's struct has room for.
    sy_device_props p{};
    std::snprintf(p.name, sizeof p.name, "%s (%d threads)", model_name_.c_str(), r.threads);
    std::snprintf(
        p.description, sizeof p.description,
        "host CPU, %s kernels, %d f32 lanes, %d threads, ~%.2f GHz; computes on host memory",
        variant_.name, variant_.f32_lanes, r.threads, r.clock_hz / 1e9);
    p.kind = SY_DEVICE_CPU;
    p.compute_units = r.threads;
    p.memory_total = memory_total_bytes();
    p.memory_free = memory_available_bytes();
    p.host_memory = 1;
    p.peak_flops_f32 = r.cost.peak_flops;
    p.peak_flops_f16 = r.cost.peak_flops;  // f16/bf16 weights are widened to f32 in registers
    p.peak_flops_int8 = 0.0;               // no int8 kernels
    p.memory_bandwidth = r.cost.memory_bandwidth;
    p.link_bandwidth = 0.0;  // host memory: no transfer needed
    p.link_latency_ns = 0.0;
    p.launch_overhead_ns = r.cost.launch_overhead_ns;
    const uint32_t size = std::min<uint32_t>(props->struct_size, sizeof p);
    p.struct_size = size;
    std::memcpy(props, &p, size);
    return sdk::ok();
}

sy_status CpuBackend::supports(int32_t /*device*/, const sy_node* node, int32_t* supported) {
    if (supported == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "supports: result pointer is NULL");
    if (node == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "supports: node is NULL");
    *supported = validation::validate_node(node, validation::DataChecks::kDescriptorsOnly,
                                           validation_rules())
                             .code == SY_OK
                     ? 1
                     : 0;
    return sdk::ok();
}

sy_status CpuBackend::estimate(int32_t /*device*/, const sy_node* node, double* nanoseconds) {
    if (nanoseconds == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "estimate: result pointer is NULL");
    if (sy_status s = validation::validate_node(node, validation::DataChecks::kDescriptorsOnly,
                                                validation_rules());
        s.code)
        return s;
    *nanoseconds = estimate_ns(rates().cost, sdk::op_work(*node));
    return sdk::ok();
}

sy_status CpuBackend::cost_params(int32_t /*device*/, const sy_cost_param** params, size_t* count) {
    if (params == nullptr || count == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "cost_params: result pointers are NULL");
    const Rates r = rates();
    const auto row = [](const char* key, double value, const char* unit) {
        return sy_cost_param{sizeof(sy_cost_param), key, value, unit};
    };
    std::lock_guard lock(calibration_mutex_);
    cost_params_ = {
        row("threads", r.threads, "threads"),
        row("simd_f32_lanes", variant_.f32_lanes, "floats"),
        row("clock", r.clock_hz, "Hz"),
        row("peak_flops_f32", r.cost.peak_flops, "FLOP/s"),
        row("memory_bandwidth", r.cost.memory_bandwidth, "B/s"),
        row("launch_overhead", r.cost.launch_overhead_ns, "ns"),
        row("extra_memory", double(interleaved_bytes()), "B"),  // plugin.h's convention
    };
    *params = cost_params_.data();
    *count = cost_params_.size();
    return sdk::ok();
}

sy_status CpuBackend::capabilities(const sy_capability** rows, size_t* count) {
    const validation::CapabilityTable table = capability_table();
    *rows = table.rows;
    *count = table.count;
    return sdk::ok();
}

namespace {
const sy_named_op_info kNamedOps[] = {
    {sizeof(sy_named_op_info), SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
     "routed experts' up and gate products, activation and multiply in one pass"},
    {sizeof(sy_named_op_info), SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION,
     "attention with an online softmax over blocks of keys (no K.Q matrix)"},
    {sizeof(sy_named_op_info), SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION,
     "latent attention of absorbed queries against the [k_rope | c_kv] cache, flash-style"},
};
}  // namespace

sy_status CpuBackend::named_ops(const sy_named_op_info** ops, size_t* count) {
    *ops = kNamedOps;
    *count = std::size(kNamedOps);
    return sdk::ok();
}

sy_status CpuBackend::copy_tensors(const sy_copy* copies, size_t count) {
    std::lock_guard lock(run_mutex_);
    return cpu::copy_tensors(*pool_, copies, count);
}

sy_status CpuBackend::compute(int32_t /*device*/, const sy_node* const* nodes, size_t count) {
    std::lock_guard lock(run_mutex_);
    return compute_nodes(*pool_, repack_ ? &interleaved_ : nullptr, nodes, count);
}

sy_status CpuBackend::release_constants(uint64_t constant_id) {
    std::lock_guard lock(run_mutex_);
    interleaved_.release(constant_id);
    return sdk::ok();
}

size_t CpuBackend::interleaved_bytes() {
    std::lock_guard lock(run_mutex_);
    return interleaved_.bytes();
}

sy_status CpuBackend::set_option(const char* key, const char* value) {
    if (key == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "set_option: key is NULL");
    if (value == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "set_option: %s: value is NULL", key);
    // The measured cost rates, given instead (reproducible plans: the same placement whatever
    // else the machine is doing when the plugin measures). "" or "measured": measure again.
    const bool memory = std::strcmp(key, "memory_gbps") == 0;
    if (memory || std::strcmp(key, "launch_us") == 0) {
        double v = -1;
        if (*value != '\0' && std::strcmp(value, "measured") != 0) {
            char* end = nullptr;
            errno = 0;
            v = std::strtod(value, &end);
            if (errno != 0 || end == value || *end != '\0' || !std::isfinite(v) ||
                (memory ? v <= 0 || v > 1e6 : v < 0 || v > 1e6))
                return sdk::error(SY_ERR_INVALID_ARGUMENT,
                                  "set_option: %s = '%s'; expected %s, or \"measured\"", key, value,
                                  memory ? "GB/s above 0" : "microseconds, 0 or more");
        }
        std::lock_guard calibration_lock(calibration_mutex_);
        (memory ? memory_gbps_ : launch_us_) = v;
        return sdk::ok();
    }
    if (std::strcmp(key, "repack") == 0) {
        const bool on = std::strcmp(value, "on") == 0, automatic = std::strcmp(value, "auto") == 0;
        if (!on && !automatic && std::strcmp(value, "off") != 0)
            return sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "set_option: repack = '%s'; expected auto, on or off", value);
        std::lock_guard run_lock(run_mutex_);
        repack_ = on || automatic;
        // Copies made under another mode are dropped: off reads none, and auto's budget or
        // on's absence of one applies to all of them.
        interleaved_ = InterleavedWeights();
        interleaved_.set_automatic_budget(automatic);
        return sdk::ok();
    }
    if (std::strcmp(key, "threads") != 0)
        return sdk::error(SY_ERR_UNSUPPORTED,
                          "set_option: unknown option '%s' (the cpu plugin knows threads, "
                          "memory_gbps, launch_us, repack)",
                          key);
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || n < 0 || n > kMaxThreads)
        return sdk::error(
            SY_ERR_INVALID_ARGUMENT,
            "set_option: threads = '%s'; expected a whole number in [1, %d], or 0 for "
            "the hardware's %d",
            value, kMaxThreads, default_thread_count());
    const int threads = n == 0 ? default_thread_count() : int(n);
    std::lock_guard calibration_lock(calibration_mutex_);
    std::lock_guard run_lock(run_mutex_);
    if (threads == pool_->size()) return sdk::ok();
    // Start the new workers first, so that a failure to start them leaves the old pool in place;
    // the assignment then joins the old ones.
    std::unique_ptr<ThreadPool> fresh = std::make_unique<ThreadPool>(threads);
    pool_ = std::move(fresh);
    calibration_.reset();  // bandwidth and overhead depend on the thread count
    log(SY_LOG_DEBUG, "thread pool now has " + std::to_string(threads) + " threads");
    return sdk::ok();
}

}  // namespace sy::cpu
