// The exported entry points and the C function table. Every table function turns exceptions
// into statuses: nothing may unwind across the C boundary.
//
// Start-up order matters for the avx2/avx512 builds: the kernels were compiled with instructions
// this CPU may lack, and the linker may have merged some inline functions (std:: templates) from
// those objects. So sy_plugin_probe and the first step of sy_plugin_init touch nothing but cpuid
// (variant.cpp, built with baseline flags) and static strings before refusing.
#include <algorithm>
#include <cstring>

#include "capabilities.hpp"
#include "cpu_backend.hpp"
#include "switchyard/named_ops.h"
#include "switchyard/sdk.hpp"
#include "variant.hpp"

namespace sy::cpu {
namespace {

constexpr const char* kPluginVersion = "0.1.0";

CpuBackend& backend(void* ctx) {
    return *static_cast<CpuBackend*>(ctx);
}

using sdk::guarded;

sy_status device_count(void*, int32_t* count) {
    if (count == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "device_count: count is NULL");
    *count = 1;
    return sdk::ok();
}

sy_status device_props(void* ctx, int32_t device, sy_device_props* props) {
    return guarded("device_props", [&] { return backend(ctx).device_props(device, props); });
}

sy_status capabilities(void*, const sy_capability** rows, size_t* count) {
    if (rows == nullptr || count == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "capabilities: result pointers are NULL");
    const validation::CapabilityTable table = capability_table();
    *rows = table.rows;
    *count = table.count;
    return sdk::ok();
}

sy_status supports(void* ctx, int32_t device, const sy_node* node, int32_t* supported) {
    return guarded("supports", [&] { return backend(ctx).supports(device, node, supported); });
}

sy_status estimate(void* ctx, int32_t device, const sy_node* node, double* nanoseconds) {
    return guarded("estimate", [&] { return backend(ctx).estimate(device, node, nanoseconds); });
}

sy_status cost_params(void* ctx, int32_t device, const sy_cost_param** params, size_t* count) {
    return guarded("cost_params", [&] { return backend(ctx).cost_params(device, params, count); });
}

sy_status buffer_alloc(void* ctx, int32_t device, uint64_t size, sy_buffer* buffer) {
    return guarded("buffer_alloc", [&] { return backend(ctx).buffer_alloc(device, size, buffer); });
}

sy_status buffer_free(void* ctx, sy_buffer* buffer) {
    return guarded("buffer_free", [&] { return backend(ctx).buffers().free(buffer); });
}

sy_status buffer_set(void* ctx, const sy_buffer* buffer, uint64_t offset, const void* src,
                     uint64_t size) {
    return guarded("buffer_set",
                   [&] { return backend(ctx).buffers().set(buffer, offset, src, size); });
}

sy_status buffer_get(void* ctx, const sy_buffer* buffer, uint64_t offset, void* dst,
                     uint64_t size) {
    return guarded("buffer_get",
                   [&] { return backend(ctx).buffers().get(buffer, offset, dst, size); });
}

sy_status copy_tensors(void* ctx, const sy_copy* copies, size_t count) {
    return guarded("copy_tensors", [&] { return backend(ctx).copy_tensors(copies, count); });
}

sy_status compute(void* ctx, int32_t device, const sy_node* const* nodes, size_t count) {
    return guarded("compute", [&] { return backend(ctx).compute(device, nodes, count); });
}

// compute() finishes before it returns, so there is never anything to wait for.
sy_status synchronize(void* ctx, int32_t device) {
    return backend(ctx).check_device(device, "synchronize");
}

const sy_named_op_info kNamedOps[] = {
    {sizeof(sy_named_op_info), SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
     "routed experts' up and gate products, activation and multiply in one pass"},
    {sizeof(sy_named_op_info), SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION,
     "attention with an online softmax over blocks of keys (no K.Q matrix)"},
    {sizeof(sy_named_op_info), SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION,
     "latent attention of absorbed queries against the [k_rope | c_kv] cache, flash-style"},
};

sy_status named_ops(void*, const sy_named_op_info** ops, size_t* count) {
    if (ops == nullptr || count == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "named_ops: result pointers are NULL");
    *ops = kNamedOps;
    *count = sizeof kNamedOps / sizeof kNamedOps[0];
    return sdk::ok();
}

sy_status set_option(void* ctx, const char* key, const char* value) {
    return guarded("set_option", [&] { return backend(ctx).set_option(key, value); });
}

sy_status release_constants(void* ctx, uint64_t constant_id) {
    return guarded("release_constants",
                   [&] { return backend(ctx).release_constants(constant_id); });
}

void shutdown(void* ctx) {
    delete static_cast<CpuBackend*>(ctx);
}

sy_status refuse(int32_t code, const char* message) {
    return sy_status{code, message};
}

}  // namespace
}  // namespace sy::cpu

extern "C" SY_EXPORT int32_t sy_plugin_probe(sy_probe_info* info) {
    const sy::cpu::VariantInfo& variant = sy::cpu::this_variant();
    const int32_t score = sy::cpu::cpu_can_run_this_variant() ? variant.score : 0;
    if (SY_HAS_FIELD(info, name)) info->name = "cpu";
    if (SY_HAS_FIELD(info, variant)) info->variant = variant.name;
    if (SY_HAS_FIELD(info, score)) info->score = score;
    return score;
}

extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    using namespace sy::cpu;
    if (!cpu_can_run_this_variant())
        return refuse(SY_ERR_REFUSED,
                      "cpu: this CPU lacks the instruction-set extensions of this "
                      "build variant; load a lower variant (probe scores it 0)");
    if (const sy_status st = sy::sdk::check_host(host, api, "cpu"); st.code != SY_OK) return st;
    return guarded("sy_plugin_init", [&] {
        sy_host_api host_copy{};
        std::memcpy(&host_copy, host, std::min<size_t>(host->struct_size, sizeof host_copy));
        host_copy.struct_size = uint32_t(std::min<size_t>(host->struct_size, sizeof host_copy));

        sy_plugin_api table{};
        auto* ctx = new CpuBackend(host_copy, this_variant());
        table.ctx = ctx;
        table.name = "cpu";
        table.version = kPluginVersion;
        table.build_info = ctx->build_info();
        table.device_count = device_count;
        table.device_props = device_props;
        table.capabilities = capabilities;
        table.supports = supports;
        table.estimate = estimate;
        table.cost_params = cost_params;
        table.buffer_alloc = buffer_alloc;
        table.buffer_free = buffer_free;
        table.buffer_set = buffer_set;
        table.buffer_get = buffer_get;
        table.copy_tensors = copy_tensors;
        table.compute = compute;
        table.synchronize = synchronize;
        table.named_ops = named_ops;
        table.set_option = set_option;
        table.release_constants = release_constants;
        table.shutdown = shutdown;
        sy::sdk::publish_api(table, api);
        return sy::sdk::ok();
    });
}
