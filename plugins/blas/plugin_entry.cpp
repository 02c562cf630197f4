// The exported entry point and the C function table of the BLAS plugin. Every table function
// turns exceptions into statuses: nothing may unwind across the C boundary.
#include <algorithm>
#include <cstring>
#include <exception>
#include <new>

#include "blas_backend.hpp"
#include "switchyard/named_ops.h"
#include "switchyard/sdk.hpp"

namespace sy::blas {
namespace {

constexpr const char* kPluginVersion = "0.1.0";

BlasBackend& backend(void* ctx) {
    return *static_cast<BlasBackend*>(ctx);
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
    const validation::CapabilityTable& table = BlasBackend::capabilities();
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

// compute() finishes before it returns.
sy_status synchronize(void* ctx, int32_t device) {
    return backend(ctx).check_device(device, "synchronize");
}

const sy_named_op_info kNamedOps[] = {
    {sizeof(sy_named_op_info), SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
     "routed experts' up and gate products as one GEMM per expert, then the activation"},
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
    delete static_cast<BlasBackend*>(ctx);
}

// The reason init refused, kept for the host to read after the call.
thread_local std::string refusal;

}  // namespace
}  // namespace sy::blas

extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    using namespace sy::blas;
    if (const sy_status st = sy::sdk::check_host(host, api, "blas"); st.code != SY_OK) return st;
    sy_host_api host_copy{};
    std::memcpy(&host_copy, host, std::min<size_t>(host->struct_size, sizeof host_copy));
    host_copy.struct_size = uint32_t(std::min<size_t>(host->struct_size, sizeof host_copy));
    BlasBackend* ctx = nullptr;
    try {
        ctx = new BlasBackend(host_copy);
    } catch (const std::bad_alloc&) {
        return sy::sdk::error(SY_ERR_OUT_OF_MEMORY, "blas: out of host memory at start-up");
    } catch (const std::exception& e) {
        refusal = std::string("blas: ") + e.what();
        return sy_status{SY_ERR_REFUSED, refusal.c_str()};
    }
    sy_plugin_api table{};
    table.ctx = ctx;
    table.name = "blas";
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
    table.shutdown = shutdown;
    table.release_constants = release_constants;
    sy::sdk::publish_api(table, api);
    return sy::sdk::ok();
}
