// A test backend whose memory the host cannot touch: buffers report host_visible = 0 and their
// base addresses are not host pointers, and compute refuses tensors in host memory. An executor
// that forgets to upload (buffer_set) or download (buffer_get) fails here instead of silently
// working on host memory. Ops: ADD, MUL (with broadcast), SCALE, SILU on f32, any strides, and
// one named op, test.twice v1 (dst = 2 * src0), for the named-op registry.
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "switchyard/sdk.hpp"

namespace {

struct Storage {
    std::vector<unsigned char> bytes;
    uintptr_t fake_base;
};

struct Context {
    std::vector<std::unique_ptr<Storage>> buffers;
    uintptr_t next_base = uintptr_t(0x5ee000000000);  // never a host pointer in this test
};

Context* context(void* ctx) {
    return static_cast<Context*>(ctx);
}

sy_status device_count(void*, int32_t* count) {
    *count = 1;
    return sy::sdk::ok();
}

sy_status device_props(void*, int32_t device, sy_device_props* props) {
    if (device != 0) return sy::sdk::error(SY_ERR_INVALID_ARGUMENT, "no device %d", device);
    std::strncpy(props->name, "off-host test device", sizeof props->name - 1);
    props->kind = SY_DEVICE_ACCELERATOR;
    props->compute_units = 1;
    props->memory_total = props->memory_free = uint64_t(1) << 30;
    props->host_memory = 0;
    return sy::sdk::ok();
}

const sy_capability kCaps[] = {
    sy::sdk::capability(SY_OP_ADD, SY_TYPE_F32, SY_TYPE_F32, SY_TYPE_F32),
    sy::sdk::capability(SY_OP_MUL, SY_TYPE_F32, SY_TYPE_F32, SY_TYPE_F32),
    sy::sdk::capability(SY_OP_SCALE, SY_TYPE_F32, SY_TYPE_F32),
    sy::sdk::capability(SY_OP_SILU, SY_TYPE_F32, SY_TYPE_F32),
};

sy_status capabilities(void*, const sy_capability** rows, size_t* count) {
    *rows = kCaps;
    *count = sizeof kCaps / sizeof kCaps[0];
    return sy::sdk::ok();
}

const sy_named_op_info kNamedOps[] = {
    {sizeof(sy_named_op_info), "test.twice", 1, "dst = 2 * src0"},
};

sy_status named_ops(void*, const sy_named_op_info** ops, size_t* count) {
    *ops = kNamedOps;
    *count = 1;
    return sy::sdk::ok();
}

bool is_twice(const sy_node* node) {
    return node->op == SY_OP_NAMED && node->named_op &&
           std::strcmp(node->named_op, "test.twice") == 0 && node->named_op_version == 1 &&
           node->n_src == 1;
}

bool known_op(const sy_node* node) {
    const int32_t op = node->op;
    return op == SY_OP_ADD || op == SY_OP_MUL || op == SY_OP_SCALE || op == SY_OP_SILU ||
           is_twice(node);
}

sy_status supports(void*, int32_t, const sy_node* node, int32_t* yes) {
    *yes = known_op(node) && node->dst->type == SY_TYPE_F32;
    for (int i = 0; i < node->n_src; ++i) *yes = *yes && node->src[i]->type == SY_TYPE_F32;
    return sy::sdk::ok();
}

sy_status buffer_alloc(void* ctx, int32_t, uint64_t size, sy_buffer* buffer) {
    auto storage = std::make_unique<Storage>();
    storage->bytes.assign(size, 0xAB);  // garbage, so a missing upload shows
    storage->fake_base = context(ctx)->next_base;
    context(ctx)->next_base += (size + 0xFFFFF) & ~uint64_t(0xFFFFF);
    buffer->device = 0;
    buffer->handle = storage.get();
    buffer->base = reinterpret_cast<void*>(storage->fake_base);
    buffer->size = size;
    buffer->host_visible = 0;
    context(ctx)->buffers.push_back(std::move(storage));
    return sy::sdk::ok();
}

sy_status buffer_free(void* ctx, sy_buffer* buffer) {
    auto& all = context(ctx)->buffers;
    for (auto it = all.begin(); it != all.end(); ++it) {
        if (it->get() == buffer->handle) {
            all.erase(it);
            return sy::sdk::ok();
        }
    }
    return sy::sdk::error(SY_ERR_INVALID_ARGUMENT, "unknown buffer");
}

sy_status buffer_set(void*, const sy_buffer* buffer, uint64_t offset, const void* src, uint64_t n) {
    auto* s = static_cast<Storage*>(buffer->handle);
    if (offset + n > s->bytes.size())
        return sy::sdk::error(SY_ERR_INVALID_ARGUMENT, "set out of range");
    std::memcpy(s->bytes.data() + offset, src, n);
    return sy::sdk::ok();
}

sy_status buffer_get(void*, const sy_buffer* buffer, uint64_t offset, void* dst, uint64_t n) {
    auto* s = static_cast<Storage*>(buffer->handle);
    if (offset + n > s->bytes.size())
        return sy::sdk::error(SY_ERR_INVALID_ARGUMENT, "get out of range");
    std::memcpy(dst, s->bytes.data() + offset, n);
    return sy::sdk::ok();
}

sy_status copy_tensors(void*, const sy_copy*, size_t) {
    return sy::sdk::error(SY_ERR_UNSUPPORTED, "copy_tensors is not implemented");
}

// Host address of a tensor's element (0,0,0,0), or null when it is not inside its buffer.
unsigned char* resolve(const sy_tensor* t) {
    if (t->buffer == nullptr) return nullptr;  // host memory: not reachable from this device
    auto* s = static_cast<Storage*>(t->buffer->handle);
    const uintptr_t offset = reinterpret_cast<uintptr_t>(t->data) - s->fake_base;
    if (offset + uint64_t(sy::sdk::nbytes(*t)) > s->bytes.size()) return nullptr;
    return s->bytes.data() + offset;
}

float* at(unsigned char* base, const sy_tensor* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return reinterpret_cast<float*>(base + (i0 % t->ne[0]) * t->nb[0] + (i1 % t->ne[1]) * t->nb[1] +
                                    (i2 % t->ne[2]) * t->nb[2] + (i3 % t->ne[3]) * t->nb[3]);
}

sy_status compute(void*, int32_t, const sy_node* const* nodes, size_t count) {
    for (size_t n = 0; n < count; ++n) {
        const sy_node* node = nodes[n];
        int32_t ok = 0;
        supports(nullptr, 0, node, &ok);
        if (!ok) return sy::sdk::error(SY_ERR_UNSUPPORTED, "op %s", sy::sdk::op_name(node->op));
        unsigned char* d = resolve(node->dst);
        unsigned char* a = resolve(node->src[0]);
        unsigned char* b = node->n_src > 1 ? resolve(node->src[1]) : nullptr;
        if (!d || !a || (node->n_src > 1 && !b)) {
            return sy::sdk::error(SY_ERR_INVALID_ARGUMENT,
                                  "node %zu: a tensor is not in a buffer of this device", n);
        }
        const sy_tensor* td = node->dst;
        for (int64_t i3 = 0; i3 < td->ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < td->ne[2]; ++i2)
                for (int64_t i1 = 0; i1 < td->ne[1]; ++i1)
                    for (int64_t i0 = 0; i0 < td->ne[0]; ++i0) {
                        const float x = *at(a, node->src[0], i0, i1, i2, i3);
                        float y = 0;
                        switch (node->op) {
                            case SY_OP_ADD: y = x + *at(b, node->src[1], i0, i1, i2, i3); break;
                            case SY_OP_MUL: y = x * *at(b, node->src[1], i0, i1, i2, i3); break;
                            case SY_OP_SCALE: y = x * node->fparams[0] + node->fparams[1]; break;
                            case SY_OP_SILU: y = x / (1.0f + std::exp(-x)); break;
                            default: y = 2.0f * x; break;  // test.twice
                        }
                        *at(d, td, i0, i1, i2, i3) = y;
                    }
    }
    return sy::sdk::ok();
}

sy_status synchronize(void*, int32_t) {
    return sy::sdk::ok();
}

void shutdown(void* ctx) {
    delete context(ctx);
}

}  // namespace

extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    if (const sy_status st = sy::sdk::check_host(host, api, "test-offhost"); st.code != SY_OK)
        return st;
    sy_plugin_api t{};
    t.ctx = new Context;
    t.name = "test-offhost";
    t.version = "0.0.1";
    t.build_info = "test plugin";
    t.device_count = device_count;
    t.device_props = device_props;
    t.capabilities = capabilities;
    t.supports = supports;
    t.buffer_alloc = buffer_alloc;
    t.buffer_free = buffer_free;
    t.buffer_set = buffer_set;
    t.buffer_get = buffer_get;
    t.copy_tensors = copy_tensors;
    t.compute = compute;
    t.synchronize = synchronize;
    t.named_ops = named_ops;
    t.shutdown = shutdown;
    sy::sdk::publish_api(t, api);
    return sy::sdk::ok();
}
