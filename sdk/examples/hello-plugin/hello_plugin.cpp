// hello: the smallest honest switchyard backend. One device ("hello device") computing one op,
// SY_OP_ADD on f32 tensors of one shape (any strides, no broadcasting), on host memory.
// Everything a real backend needs is here: probe, init with version checks, a capability
// table, supports() that agrees with compute(), buffers, copies, and errors with messages.
#include <cstring>

#include "switchyard/sdk.hpp"

namespace {

using sy::sdk::error;
using sy::sdk::ok;

struct Hello {
    sy_host_api host{};
};

const sy_capability kCapabilities[] = {
    {sizeof(sy_capability),
     SY_OP_ADD,
     nullptr,
     0,
     SY_TYPE_F32,
     {SY_TYPE_F32, SY_TYPE_F32, SY_TYPE_NONE, SY_TYPE_NONE}},
};

Hello* self(void* ctx) {
    return static_cast<Hello*>(ctx);
}

sy_status check_device(int32_t device) {
    return device == 0 ? ok() : error(SY_ERR_INVALID_ARGUMENT, "hello: no device %d", device);
}

bool same_shape(const sy_tensor& a, const sy_tensor& b) {
    return std::memcmp(a.ne, b.ne, sizeof a.ne) == 0;
}

// Why this plugin cannot run `node`, or nullptr if it can.
const char* refusal(const sy_node* node) {
    if (!node || !node->dst) return "node without dst";
    if (node->op != SY_OP_ADD) return "only add is implemented";
    if (node->n_src < 2 || !node->src[0] || !node->src[1]) return "add needs two sources";
    const sy_tensor &a = *node->src[0], &b = *node->src[1], &d = *node->dst;
    if (a.type != SY_TYPE_F32 || b.type != SY_TYPE_F32 || d.type != SY_TYPE_F32)
        return "only f32 is implemented";
    if (!same_shape(a, d) || !same_shape(b, d)) return "broadcasting is not implemented";
    return nullptr;
}

float* element(const sy_tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return reinterpret_cast<float*>(static_cast<char*>(t.data) + i0 * t.nb[0] + i1 * t.nb[1] +
                                    i2 * t.nb[2] + i3 * t.nb[3]);
}

// ---- function table ---------------------------------------------------------------------------

sy_status device_count(void*, int32_t* count) {
    *count = 1;
    return ok();
}

sy_status device_props(void*, int32_t device, sy_device_props* props) {
    if (sy_status st = check_device(device); st.code != SY_OK) return st;
    const uint32_t size = props->struct_size;
    sy_device_props p{};
    p.struct_size = size < sizeof p ? size : uint32_t(sizeof p);
    std::strncpy(p.name, "hello device", sizeof p.name - 1);
    std::strncpy(p.description, "example plugin: f32 add on the host", sizeof p.description - 1);
    p.kind = SY_DEVICE_CPU;
    p.compute_units = 1;
    p.host_memory = 1;
    std::memcpy(props, &p, p.struct_size);
    return ok();
}

sy_status capabilities(void*, const sy_capability** rows, size_t* count) {
    *rows = kCapabilities;
    *count = sizeof kCapabilities / sizeof kCapabilities[0];
    return ok();
}

sy_status supports(void*, int32_t device, const sy_node* node, int32_t* supported) {
    if (sy_status st = check_device(device); st.code != SY_OK) return st;
    *supported = refusal(node) == nullptr;
    return ok();
}

sy_status buffer_alloc(void* ctx, int32_t device, uint64_t size, sy_buffer* buffer) {
    if (sy_status st = check_device(device); st.code != SY_OK) return st;
    void* p = self(ctx)->host.alloc_host(self(ctx)->host.host_ctx, size ? size : 1, 64);
    if (!p)
        return error(SY_ERR_OUT_OF_MEMORY, "hello: cannot allocate %llu bytes",
                     static_cast<unsigned long long>(size));
    buffer->struct_size = sizeof(sy_buffer);
    buffer->device = device;
    buffer->handle = p;
    buffer->base = p;
    buffer->size = size;
    buffer->host_visible = 1;
    return ok();
}

sy_status buffer_free(void* ctx, sy_buffer* buffer) {
    self(ctx)->host.free_host(self(ctx)->host.host_ctx, buffer->handle);
    buffer->handle = buffer->base = nullptr;
    return ok();
}

sy_status buffer_set(void*, const sy_buffer* buffer, uint64_t offset, const void* src,
                     uint64_t size) {
    if (offset > buffer->size || size > buffer->size - offset)
        return error(SY_ERR_INVALID_ARGUMENT, "hello: buffer_set out of range");
    std::memcpy(static_cast<char*>(buffer->base) + offset, src, size);
    return ok();
}

sy_status buffer_get(void*, const sy_buffer* buffer, uint64_t offset, void* dst, uint64_t size) {
    if (offset > buffer->size || size > buffer->size - offset)
        return error(SY_ERR_INVALID_ARGUMENT, "hello: buffer_get out of range");
    std::memcpy(dst, static_cast<const char*>(buffer->base) + offset, size);
    return ok();
}

// Every tensor this plugin sees is in host memory, so a copy is an element-by-element memcpy.
sy_status copy_tensors(void*, const sy_copy* copies, size_t count) {
    for (size_t c = 0; c < count; ++c) {
        const sy_tensor &s = *copies[c].src, &d = *copies[c].dst;
        const int32_t esize = sy_dtype_info(s.type).type_size;
        if (s.type != d.type || !same_shape(s, d) || sy_dtype_info(s.type).block_size != 1)
            return error(SY_ERR_INVALID_ARGUMENT, "hello: copy needs one scalar type and shape");
        for (int64_t i3 = 0; i3 < d.ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < d.ne[2]; ++i2)
                for (int64_t i1 = 0; i1 < d.ne[1]; ++i1)
                    for (int64_t i0 = 0; i0 < d.ne[0]; ++i0)
                        std::memcpy(element(d, i0, i1, i2, i3), element(s, i0, i1, i2, i3),
                                    size_t(esize));
    }
    return ok();
}

sy_status compute(void*, int32_t device, const sy_node* const* nodes, size_t count) {
    if (sy_status st = check_device(device); st.code != SY_OK) return st;
    for (size_t n = 0; n < count; ++n) {
        if (const char* why = refusal(nodes[n]))
            return error(nodes[n] && nodes[n]->op == SY_OP_ADD ? SY_ERR_INVALID_ARGUMENT
                                                               : SY_ERR_UNSUPPORTED,
                         "hello: %s", why);
        const sy_tensor &a = *nodes[n]->src[0], &b = *nodes[n]->src[1], &d = *nodes[n]->dst;
        for (int64_t i3 = 0; i3 < d.ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < d.ne[2]; ++i2)
                for (int64_t i1 = 0; i1 < d.ne[1]; ++i1)
                    for (int64_t i0 = 0; i0 < d.ne[0]; ++i0)
                        *element(d, i0, i1, i2, i3) =
                            *element(a, i0, i1, i2, i3) + *element(b, i0, i1, i2, i3);
    }
    return ok();
}

sy_status synchronize(void*, int32_t device) {
    return check_device(device);
}

void shutdown(void* ctx) {
    delete self(ctx);
}

}  // namespace

extern "C" SY_EXPORT int32_t sy_plugin_probe(sy_probe_info* info) {
    if (info && info->struct_size >= sizeof(sy_probe_info)) {
        info->name = "hello";
        info->variant = "generic";
        info->score = 1;
    }
    return 1;  // runs anywhere
}

extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    if (const sy_status st = sy::sdk::check_host(host, api, "hello"); st.code != SY_OK) return st;
    if (!SY_HAS_FIELD(host, free_host) || !host->alloc_host || !host->free_host)
        return error(SY_ERR_ABI, "hello: the host API lacks alloc_host/free_host");

    sy_plugin_api table{};
    table.ctx = new Hello{*host};
    table.name = "hello";
    table.version = "0.1.0";
    table.build_info = "hello example plugin";
    table.device_count = device_count;
    table.device_props = device_props;
    table.capabilities = capabilities;
    table.supports = supports;
    table.buffer_alloc = buffer_alloc;
    table.buffer_free = buffer_free;
    table.buffer_set = buffer_set;
    table.buffer_get = buffer_get;
    table.copy_tensors = copy_tensors;
    table.compute = compute;
    table.synchronize = synchronize;
    table.shutdown = shutdown;

    sy::sdk::publish_api(table, api);
    return ok();
}
