// A deliberately wrong plugin for the conformance kit's own tests. It declares add, mul, scale
// and sigmoid on f32 (same shapes, any strides) and gets two of them wrong:
//   scale   adds 1e-2 to every element       -> the kit must report FAIL (error > tolerance)
//   sigmoid never writes the last element of each row -> FAIL (element not written)
// add and mul are right and must PASS.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "switchyard/sdk.hpp"

namespace {

using sy::sdk::error;
using sy::sdk::ok;

const sy_capability kRows[] = {
    sy::sdk::capability(SY_OP_ADD, SY_TYPE_F32, SY_TYPE_F32, SY_TYPE_F32),
    sy::sdk::capability(SY_OP_MUL, SY_TYPE_F32, SY_TYPE_F32, SY_TYPE_F32),
    sy::sdk::capability(SY_OP_SCALE, SY_TYPE_F32, SY_TYPE_F32),
    sy::sdk::capability(SY_OP_SIGMOID, SY_TYPE_F32, SY_TYPE_F32),
};

float* at(const sy_tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return reinterpret_cast<float*>(static_cast<char*>(t.data) + i0 * t.nb[0] + i1 * t.nb[1] +
                                    i2 * t.nb[2] + i3 * t.nb[3]);
}

bool handles(const sy_node* n) {
    if (!n || !n->dst || n->n_src < 1 || !n->src[0]) return false;
    const bool binary = n->op == SY_OP_ADD || n->op == SY_OP_MUL;
    if (!binary && n->op != SY_OP_SCALE && n->op != SY_OP_SIGMOID) return false;
    if (binary && (n->n_src < 2 || !n->src[1])) return false;
    for (int i = 0; i < (binary ? 2 : 1); ++i)
        if (n->src[i]->type != SY_TYPE_F32 ||
            std::memcmp(n->src[i]->ne, n->dst->ne, sizeof n->dst->ne))
            return false;
    return n->dst->type == SY_TYPE_F32;
}

sy_status device_count(void*, int32_t* count) {
    *count = 1;
    return ok();
}
sy_status device_props(void*, int32_t, sy_device_props* p) {
    std::strncpy(p->name, "wrong device", sizeof p->name - 1);
    return ok();
}
sy_status capabilities(void*, const sy_capability** rows, size_t* count) {
    *rows = kRows;
    *count = sizeof kRows / sizeof kRows[0];
    return ok();
}
sy_status supports(void*, int32_t, const sy_node* node, int32_t* yes) {
    *yes = handles(node);
    return ok();
}
sy_status buffer_alloc(void*, int32_t device, uint64_t size, sy_buffer* b) {
    b->device = device;
    b->base = b->handle = std::malloc(size ? size : 1);
    b->size = size;
    b->host_visible = 1;
    return b->base ? ok() : error(SY_ERR_OUT_OF_MEMORY, "wrong: out of memory");
}
sy_status buffer_free(void*, sy_buffer* b) {
    std::free(b->handle);
    return ok();
}
sy_status buffer_set(void*, const sy_buffer* b, uint64_t off, const void* src, uint64_t n) {
    std::memcpy(static_cast<char*>(b->base) + off, src, n);
    return ok();
}
sy_status buffer_get(void*, const sy_buffer* b, uint64_t off, void* dst, uint64_t n) {
    std::memcpy(dst, static_cast<const char*>(b->base) + off, n);
    return ok();
}
sy_status copy_tensors(void*, const sy_copy*, size_t) {
    return error(SY_ERR_UNSUPPORTED, "wrong: no copies");
}
sy_status compute(void*, int32_t, const sy_node* const* nodes, size_t count) {
    for (size_t k = 0; k < count; ++k) {
        const sy_node* n = nodes[k];
        if (!handles(n)) return error(SY_ERR_INVALID_ARGUMENT, "wrong: cannot run this node");
        const sy_tensor& d = *n->dst;
        for (int64_t i3 = 0; i3 < d.ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < d.ne[2]; ++i2)
                for (int64_t i1 = 0; i1 < d.ne[1]; ++i1)
                    for (int64_t i0 = 0; i0 < d.ne[0]; ++i0) {
                        const float x = *at(*n->src[0], i0, i1, i2, i3);
                        float y = 0;
                        switch (n->op) {
                            case SY_OP_ADD: y = x + *at(*n->src[1], i0, i1, i2, i3); break;
                            case SY_OP_MUL: y = x * *at(*n->src[1], i0, i1, i2, i3); break;
                            case SY_OP_SCALE: y = x * n->fparams[0] + n->fparams[1] + 1e-2f; break;
                            case SY_OP_SIGMOID:
                                if (i0 == d.ne[0] - 1) continue;  // the bug: last one skipped
                                y = 1.0f / (1.0f + std::exp(-x));
                                break;
                        }
                        *at(d, i0, i1, i2, i3) = y;
                    }
    }
    return ok();
}
sy_status synchronize(void*, int32_t) {
    return ok();
}
void shutdown(void*) {}

}  // namespace

extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    if (const sy_status st = sy::sdk::check_host(host, api, "wrong"); st.code != SY_OK) return st;
    sy_plugin_api t{};
    t.name = "wrong";
    t.version = "0.0.1";
    t.build_info = "conformance kit test plugin (deliberately wrong)";
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
    t.shutdown = shutdown;
    sy::sdk::publish_api(t, api);
    return ok();
}
