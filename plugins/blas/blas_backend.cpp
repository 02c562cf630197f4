#include "blas_backend.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>
#include <vector>

#include "switchyard/named_ops.h"
#include "switchyard/sdk.hpp"

namespace sy::blas {
namespace {

constexpr int kMaxThreads = 1024;

int hardware_threads() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : int(std::min<unsigned>(n, kMaxThreads));
}

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) != 0) continue;
        const size_t colon = line.find(':');
        if (colon == std::string::npos) break;
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(" \t"));
        if (!name.empty()) return name;
    }
    return "host CPU";
}

// MUL_MAT and MUL_MAT_ID rows of the SDK's built-in table (every float and block weight type the
// SDK's quant library decodes) and moe.fused_up_gate's rows.
std::vector<sy_capability> capability_rows() {
    std::vector<sy_capability> rows;
    const validation::CapabilityTable builtin = validation::builtin_capabilities();
    for (size_t i = 0; i < builtin.count; ++i)
        if (builtin.rows[i].op == SY_OP_MUL_MAT || builtin.rows[i].op == SY_OP_MUL_MAT_ID)
            rows.push_back(builtin.rows[i]);
    const validation::CapabilityTable named = validation::named_capabilities();
    for (size_t i = 0; i < named.count; ++i)
        if (named.rows[i].named_op &&
            std::strcmp(named.rows[i].named_op, SY_NAMED_MOE_FUSED_UP_GATE) == 0)
            rows.push_back(named.rows[i]);
    return rows;
}

const validation::Backend& rules() {
    static const std::vector<sy_capability> rows = capability_rows();
    static const validation::Backend b{"blas", rows.data(), rows.size(), true};
    return b;
}

}  // namespace

const validation::CapabilityTable& BlasBackend::capability_table() {
    static const validation::CapabilityTable t{rules().rows, rules().row_count};
    return t;
}

BlasBackend::BlasBackend(const sy_host_api& host) : host_(host), model_name_(cpu_model_name()) {
    onednn_ = load_onednn(&onednn_why_);
    if (!onednn_) {
        openblas_ = load_openblas(&openblas_why_);
        if (!openblas_)
            throw std::runtime_error("no GEMM engine could be loaded: oneDNN: " + onednn_why_ +
                                     "; OpenBLAS: " + openblas_why_);
        log(SY_LOG_WARN, "oneDNN is unavailable (" + onednn_why_ + "); using OpenBLAS");
    }
    ws_.engine = onednn_ ? onednn_.get() : openblas_.get();
    ws_.threads = hardware_threads();
    ws_.engine->set_threads(ws_.threads);
    describe();
}

void BlasBackend::describe() {
    const std::string text =
        std::string("engine ") + ws_.engine->name() + ": " + ws_.engine->version() +
        "; block weights to " + (gemm_type(ws_, SY_TYPE_Q8_0) == GemmType::bf16 ? "bf16" : "f32") +
        ", f16 weights to " + (gemm_type(ws_, SY_TYPE_F16) == GemmType::bf16 ? "bf16" : "f32") +
        ", converted weights kept up to " + std::to_string(ws_.weights.budget() >> 20) +
        " MiB; gcc " __VERSION__ ", ABI " + std::to_string(SY_ABI_VERSION_MAJOR) + "." +
        std::to_string(SY_ABI_VERSION_MINOR);
    std::snprintf(build_info_.data(), build_info_.size(), "%s", text.c_str());
}

void BlasBackend::log(int32_t level, const std::string& message) const {
    if (host_.log) host_.log(host_.host_ctx, level, "blas", message.c_str());
}

const Rates& BlasBackend::rates() {
    if (!rates_ || rates_->threads != ws_.threads) {
        rates_ = measure_rates(ws_);
        char text[256];
        std::snprintf(text, sizeof text,
                      "%s measured: %.0f ns per product, %.1f GFLOP/s f32 and %.1f GFLOP/s bf16 "
                      "at 256 rows, %.1f GB/s",
                      ws_.engine->name(), rates_->overhead_ns, rates_->flops_f32.back() / 1e9,
                      rates_->flops_bf16.back() / 1e9, rates_->bandwidth / 1e9);
        log(SY_LOG_DEBUG, text);
    }
    return *rates_;
}

sy_status BlasBackend::device_props(int32_t /*device*/, sy_device_props* props) {
    if (props == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "device_props: props is NULL");
    if (!SY_HAS_FIELD(props, launch_overhead_ns))
        return sdk::error(SY_ERR_ABI, "device_props: struct_size %u is smaller than ABI 1.0's %zu",
                          props->struct_size, sizeof(sy_device_props));
    std::lock_guard lock(mutex_);
    const Rates& r = rates();
    sy_device_props p{};
    std::snprintf(p.name, sizeof p.name, "%s (%d threads, %s)", model_name_.c_str(), ws_.threads,
                  ws_.engine->name());
    std::snprintf(p.description, sizeof p.description,
                  "host CPU through %s; matrix products only; computes on host memory",
                  ws_.engine->version().c_str());
    p.kind = SY_DEVICE_CPU;
    p.compute_units = ws_.threads;
    // The host's memory, shared with the CPU plugin.
    const auto page = uint64_t(sysconf(_SC_PAGESIZE));
    p.memory_total = uint64_t(sysconf(_SC_PHYS_PAGES)) * page;
    p.memory_free = uint64_t(sysconf(_SC_AVPHYS_PAGES)) * page;
    p.host_memory = 1;
    p.peak_flops_f32 = r.flops_f32.back();
    p.peak_flops_f16 = ws_.engine->has_bf16() ? r.flops_bf16.back() : r.flops_f32.back();
    p.peak_flops_int8 = 0.0;
    p.memory_bandwidth = r.bandwidth;
    p.link_bandwidth = 0.0;
    p.link_latency_ns = 0.0;
    p.launch_overhead_ns = r.overhead_ns;
    const uint32_t size = std::min<uint32_t>(props->struct_size, sizeof p);
    p.struct_size = size;
    std::memcpy(props, &p, size);
    return sdk::ok();
}

sy_status BlasBackend::supports(int32_t /*device*/, const sy_node* node, int32_t* supported) {
    if (supported == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "supports: result pointer is NULL");
    if (node == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "supports: node is NULL");
    *supported =
        validation::validate_node(node, validation::DataChecks::kDescriptorsOnly, rules()).code ==
                SY_OK
            ? 1
            : 0;
    return sdk::ok();
}

sy_status BlasBackend::estimate(int32_t /*device*/, const sy_node* node, double* nanoseconds) {
    if (nanoseconds == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "estimate: result pointer is NULL");
    if (sy_status s =
            validation::validate_node(node, validation::DataChecks::kDescriptorsOnly, rules());
        s.code)
        return s;
    std::lock_guard lock(mutex_);
    *nanoseconds = estimate_ns(rates(), ws_, *node);
    return sdk::ok();
}

sy_status BlasBackend::cost_params(int32_t /*device*/, const sy_cost_param** params,
                                   size_t* count) {
    if (params == nullptr || count == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "cost_params: result pointers are NULL");
    std::lock_guard lock(mutex_);
    const Rates& r = rates();
    // Keys are string literals (valid until shutdown, as plugin.h asks); every row is always
    // there, the bf16 rates 0 on an engine without bf16 products.
    static constexpr const char* kBf16Keys[] = {"gemm_bf16_m1", "gemm_bf16_m4", "gemm_bf16_m16",
                                                "gemm_bf16_m64", "gemm_bf16_m256"};
    static constexpr const char* kF32Keys[] = {"gemm_f32_m1", "gemm_f32_m4", "gemm_f32_m16",
                                               "gemm_f32_m64", "gemm_f32_m256"};
    static constexpr const char* kBf16PackedKeys[] = {
        "gemm_bf16_packed_m1", "gemm_bf16_packed_m4", "gemm_bf16_packed_m16",
        "gemm_bf16_packed_m64", "gemm_bf16_packed_m256"};
    static constexpr const char* kF32PackedKeys[] = {"gemm_f32_packed_m1", "gemm_f32_packed_m4",
                                                     "gemm_f32_packed_m16", "gemm_f32_packed_m64",
                                                     "gemm_f32_packed_m256"};
    static_assert(std::size(kF32Keys) == Rates::kRows.size());
    size_t n = 0;
    const auto row = [&](const char* key, double value, const char* unit) {
        cost_params_[n++] = sy_cost_param{sizeof(sy_cost_param), key, value, unit};
    };
    row("threads", double(ws_.threads), "threads");
    row("overhead", r.overhead_ns, "ns");
    for (size_t i = 0; i < Rates::kRows.size(); ++i) row(kF32Keys[i], r.flops_f32[i], "FLOP/s");
    for (size_t i = 0; i < Rates::kRows.size(); ++i) row(kBf16Keys[i], r.flops_bf16[i], "FLOP/s");
    for (size_t i = 0; i < Rates::kRows.size(); ++i)
        row(kF32PackedKeys[i], r.flops_f32_packed[i], "FLOP/s");
    for (size_t i = 0; i < Rates::kRows.size(); ++i)
        row(kBf16PackedKeys[i], r.flops_bf16_packed[i], "FLOP/s");
    row("pack_bf16", r.pack_bf16_ns, "ns/value");
    row("f16_to_f32", r.f16_to_f32_ns, "ns/value");
    row("block_to_operand", r.block_to_operand_ns, "ns/value");
    row("memory_bandwidth", r.bandwidth, "B/s");
    row("gemv_f32_stream", r.stream_f32, "B/s");
    row("gemv_bf16_stream", r.stream_bf16, "B/s");
    row("cached_primitives", double(ws_.engine->cached_products()), "primitives");
    row("weight_cache_budget", double(ws_.weights.budget()), "B");
    // The converted weight copies kept (plugin.h's convention for memory a plugin holds beyond
    // the buffers the host asked for).
    row("extra_memory", double(ws_.weights.bytes()), "B");
    cost_param_count_ = n;
    *params = cost_params_.data();
    *count = cost_param_count_;
    return sdk::ok();
}

sy_status BlasBackend::capabilities(const sy_capability** rows, size_t* count) {
    *rows = capability_table().rows;
    *count = capability_table().count;
    return sdk::ok();
}

namespace {
const sy_named_op_info kNamedOps[] = {
    {sizeof(sy_named_op_info), SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
     "routed experts' up and gate products as one GEMM per expert, then the activation"},
};
}  // namespace

sy_status BlasBackend::named_ops(const sy_named_op_info** ops, size_t* count) {
    *ops = kNamedOps;
    *count = std::size(kNamedOps);
    return sdk::ok();
}

sy_status BlasBackend::compute(int32_t /*device*/, const sy_node* const* nodes, size_t count) {
    if (count > 0 && nodes == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "compute: nodes is NULL for %zu nodes", count);
    for (size_t i = 0; i < count; ++i)
        if (sy_status s =
                validation::validate_node(nodes[i], validation::DataChecks::kFull, rules());
            s.code)
            return s;
    std::lock_guard lock(mutex_);
    ws_.engine->set_threads(ws_.threads);
    for (size_t i = 0; i < count; ++i) {
        const sy_node& n = *nodes[i];
        try {
            if (n.op == SY_OP_MUL_MAT)
                mul_mat(ws_, n);
            else
                mul_mat_id(ws_, n);
        } catch (const std::runtime_error& e) {
            throw std::runtime_error(
                std::string(n.op == SY_OP_NAMED ? n.named_op : sdk::op_name(n.op)) + " -> " +
                (n.dst->name ? n.dst->name : "(unnamed)") + ": " + e.what());
        }
    }
    return sdk::ok();
}

sy_status BlasBackend::release_constants(uint64_t constant_id) {
    std::lock_guard lock(mutex_);
    ws_.weights.release(constant_id);
    return sdk::ok();
}

sy_status BlasBackend::set_option(const char* key, const char* value) {
    if (key == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "set_option: key is NULL");
    if (value == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "set_option: %s: value is NULL", key);
    std::lock_guard lock(mutex_);
    if (std::strcmp(key, "threads") == 0) {
        char* end = nullptr;
        errno = 0;
        const long n = std::strtol(value, &end, 10);
        if (errno != 0 || end == value || *end != '\0' || n < 0 || n > kMaxThreads)
            return sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "set_option: threads = '%s'; expected a whole number in [1, %d], or "
                              "0 for the hardware's %d",
                              value, kMaxThreads, hardware_threads());
        ws_.threads = n == 0 ? hardware_threads() : int(n);
        ws_.engine->set_threads(ws_.threads);
        return sdk::ok();
    }
    if (std::strcmp(key, "engine") == 0) {
        Engine* chosen = nullptr;
        if (std::strcmp(value, "onednn") == 0) {
            if (!onednn_ && onednn_why_.empty()) onednn_ = load_onednn(&onednn_why_);
            if (!onednn_)
                return sdk::error(SY_ERR_INVALID_ARGUMENT, "set_option: engine = onednn: %s",
                                  onednn_why_.c_str());
            chosen = onednn_.get();
        } else if (std::strcmp(value, "openblas") == 0) {
            if (!openblas_ && openblas_why_.empty()) openblas_ = load_openblas(&openblas_why_);
            if (!openblas_)
                return sdk::error(SY_ERR_INVALID_ARGUMENT, "set_option: engine = openblas: %s",
                                  openblas_why_.c_str());
            chosen = openblas_.get();
        } else {
            return sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "set_option: engine = '%s'; expected onednn or openblas", value);
        }
        if (chosen != ws_.engine) {
            ws_.engine = chosen;
            ws_.engine->set_threads(ws_.threads);
            ws_.weights.clear();  // copies in the other engine's layout
            rates_.reset();
            describe();
        }
        return sdk::ok();
    }
    if (std::strcmp(key, "dequantize_to") == 0) {
        if (std::strcmp(value, "bf16") != 0 && std::strcmp(value, "f32") != 0)
            return sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "set_option: dequantize_to = '%s'; expected bf16 or f32", value);
        const bool bf16 = std::strcmp(value, "bf16") == 0;
        if (bf16 != ws_.block_to_bf16) {
            ws_.block_to_bf16 = bf16;
            ws_.weights.clear();  // copies in the other type
            rates_.reset();
            describe();
        }
        return sdk::ok();
    }
    if (std::strcmp(key, "f16_weights") == 0) {
        if (std::strcmp(value, "bf16") != 0 && std::strcmp(value, "f32") != 0)
            return sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "set_option: f16_weights = '%s'; expected f32 (exact) or bf16",
                              value);
        const bool bf16 = std::strcmp(value, "bf16") == 0;
        if (bf16 != ws_.f16_to_bf16) {
            ws_.f16_to_bf16 = bf16;
            ws_.weights.clear();
            describe();
        }
        return sdk::ok();
    }
    if (std::strcmp(key, "weight_cache_mib") == 0) {
        char* end = nullptr;
        errno = 0;
        const long long mib = std::strtoll(value, &end, 10);
        const bool automatic = std::strcmp(value, "auto") == 0;
        if (!automatic &&
            (errno != 0 || end == value || *end != '\0' || mib < 0 || mib > (int64_t(1) << 40)))
            return sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "set_option: weight_cache_mib = '%s'; expected auto or a whole "
                              "number of MiB (0: convert weights on every call)",
                              value);
        ws_.weights.clear();  // copies and promises made under the old budget
        if (automatic)
            ws_.weights.set_automatic_budget();
        else
            ws_.weights.set_budget(uint64_t(mib) * 1024 * 1024);
        describe();
        return sdk::ok();
    }
    return sdk::error(SY_ERR_UNSUPPORTED,
                      "set_option: unknown option '%s' (the blas plugin knows threads, engine, "
                      "dequantize_to, f16_weights, weight_cache_mib)",
                      key);
}

}  // namespace sy::blas
