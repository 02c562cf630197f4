// A test backend that provides no named ops: the CPU plugin (loaded from
// SWITCHYARD_CPU_PLUGIN) behind a function table that reports no named ops, drops their
// capability rows and refuses named nodes. Models loaded on it must build their decomposed
// graphs (fused MoE falls back to MUL_MAT_ID + SILU + MUL). Like the CUDA plugin, it also
// copies float types only (no CPY to or from a block type): a q8_0 KV cache must be refused
// on it before anything runs.
//
// Built with SWITCHYARD_TEST_OFFHOST it is "cpu-offhost": a device with its own memory, as a GPU
// (host_memory 0), whose compute() refuses any tensor outside its buffers. A model on it must
// keep its weights and KV cache in device buffers and upload only the step's inputs; its
// results must be the CPU's own, bit for bit.
#include <dlfcn.h>

#include <vector>

#include "switchyard/plugin.h"
#include "switchyard/sdk.hpp"

namespace {

sy_plugin_api g_inner{};  // the CPU plugin's table; its ctx is passed to every call
void* g_library = nullptr;
std::vector<sy_capability> g_rows;

bool block_copy(int32_t op, int32_t dst, int32_t src) {
    const auto blocks = [](int32_t t) {
        return t >= 0 && t != SY_TYPE_ANY && sy_dtype_info(t).block_size > 1;
    };
    return op == SY_OP_CPY && (blocks(dst) || blocks(src));
}

sy_status capabilities(void* ctx, const sy_capability** rows, size_t* count) {
    const sy_capability* inner = nullptr;
    size_t n = 0;
    if (sy_status s = g_inner.capabilities(ctx, &inner, &n); s.code) return s;
    g_rows.clear();
    for (size_t i = 0; i < n; ++i)
        if (inner[i].op != SY_OP_NAMED &&
            !block_copy(inner[i].op, inner[i].dst_type, inner[i].src_type[0]))
            g_rows.push_back(inner[i]);
    *rows = g_rows.data();
    *count = g_rows.size();
    return sy::sdk::ok();
}

sy_status supports(void* ctx, int32_t device, const sy_node* node, int32_t* supported) {
    if (node != nullptr && supported != nullptr &&
        (node->op == SY_OP_NAMED ||
         (node->op == SY_OP_CPY && node->dst != nullptr && node->src[0] != nullptr &&
          block_copy(node->op, node->dst->type, node->src[0]->type)))) {
        *supported = 0;
        return sy::sdk::ok();
    }
    return g_inner.supports(ctx, device, node, supported);
}

#ifdef SWITCHYARD_TEST_OFFHOST
constexpr const char* kName = "cpu-offhost";

sy_status device_props(void* ctx, int32_t device, sy_device_props* props) {
    if (sy_status s = g_inner.device_props(ctx, device, props); s.code) return s;
    props->kind = SY_DEVICE_ACCELERATOR;
    props->host_memory = 0;
    return sy::sdk::ok();
}

// Every tensor a node touches must be in one of this backend's buffers, as on a GPU.
sy_status check_placement(const sy_node* node) {
    const auto outside = [](const sy_tensor* t) { return t != nullptr && t->buffer == nullptr; };
    if (outside(node->dst))
        return sy::sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "cpu-offhost: dst of a %s node is in host memory",
                              sy::sdk::op_name(node->op));
    for (int32_t i = 0; i < node->n_src; ++i)
        if (outside(node->src[i]))
            return sy::sdk::error(SY_ERR_INVALID_ARGUMENT,
                                  "cpu-offhost: src%d of a %s node is in host memory", i,
                                  sy::sdk::op_name(node->op));
    return sy::sdk::ok();
}
#else
constexpr const char* kName = "cpu-plain";
sy_status check_placement(const sy_node*) {
    return sy::sdk::ok();
}
#endif

sy_status compute(void* ctx, int32_t device, const sy_node* const* nodes, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        if (nodes[i] != nullptr && nodes[i]->op == SY_OP_NAMED)
            return sy::sdk::error(SY_ERR_UNSUPPORTED, "%s provides no named ops (%s)", kName,
                                  nodes[i]->named_op ? nodes[i]->named_op : "?");
        if (nodes[i] != nullptr)
            if (sy_status s = check_placement(nodes[i]); s.code) return s;
    }
    return g_inner.compute(ctx, device, nodes, count);
}

sy_status named_ops(void*, const sy_named_op_info** ops, size_t* count) {
    *ops = nullptr;
    *count = 0;
    return sy::sdk::ok();
}

void shutdown(void* ctx) {
    g_inner.shutdown(ctx);
    dlclose(g_library);
    g_library = nullptr;
}

}  // namespace

extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    if (sy_status s = sy::sdk::check_host(host, api, kName); s.code) return s;
    if (g_library != nullptr)
        return sy::sdk::error(SY_ERR_BACKEND, "%s: one instance at a time", kName);
    g_library = dlopen(SWITCHYARD_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (g_library == nullptr) return sy::sdk::error(SY_ERR_BACKEND, "%s: %s", kName, dlerror());
    auto init = reinterpret_cast<sy_plugin_init_fn>(dlsym(g_library, SY_PLUGIN_INIT_SYMBOL));
    g_inner = sy_plugin_api{};
    g_inner.struct_size = sizeof g_inner;
    if (sy_status s = init ? init(host, &g_inner)
                           : sy::sdk::error(SY_ERR_BACKEND, "%s: no sy_plugin_init", kName);
        s.code) {
        dlclose(g_library);
        g_library = nullptr;
        return s;
    }
    sy_plugin_api table = g_inner;
    table.name = kName;
    table.capabilities = capabilities;
    table.supports = supports;
    table.compute = compute;
    table.named_ops = named_ops;
    table.shutdown = shutdown;
#ifdef SWITCHYARD_TEST_OFFHOST
    table.device_props = device_props;
#endif
    sy::sdk::publish_api(table, api);
    return sy::sdk::ok();
}
