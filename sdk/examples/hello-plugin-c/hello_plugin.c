/*
 * hello-c: the hello backend (../hello-plugin) in plain C against plugin.h alone, for authors
 * who want no C++. One device computing SY_OP_ADD on f32 tensors of one shape (any strides, no
 * broadcasting) on host memory from the host's allocator. Everything the C++ helper does for a
 * plugin is spelled out here: the version checks, the function table, NULL and device checks,
 * and messages that stay valid until the next call (one static buffer per thread).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "switchyard/dtype.h"
#include "switchyard/ops.h"
#include "switchyard/plugin.h"

typedef struct hello {
    sy_host_api host;
} hello;

static _Thread_local char message[256];

static sy_status ok(void) {
    sy_status s = {SY_OK, NULL};
    return s;
}

static sy_status fail(int32_t code, const char* format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    sy_status s = {code, message};
    return s;
}

static sy_status check_device(const char* fn, int32_t device) {
    return device == 0
               ? ok()
               : fail(SY_ERR_INVALID_ARGUMENT,
                      "%s: device %d does not exist (the hello-c plugin has 1)", fn, device);
}

static int same_shape(const sy_tensor* a, const sy_tensor* b) {
    return memcmp(a->ne, b->ne, sizeof a->ne) == 0;
}

/* Why this plugin cannot run `node`, or NULL if it can. */
static const char* refusal(const sy_node* node) {
    if (node->op != SY_OP_ADD) return "only add is implemented";
    if (node->dst == NULL || node->n_src < 2 || node->src[0] == NULL || node->src[1] == NULL)
        return "add needs two sources and a destination";
    const sy_tensor *a = node->src[0], *b = node->src[1], *d = node->dst;
    if (a->type != SY_TYPE_F32 || b->type != SY_TYPE_F32 || d->type != SY_TYPE_F32)
        return "only f32 is implemented";
    if (!same_shape(a, d) || !same_shape(b, d)) return "broadcasting is not implemented";
    return NULL;
}

static char* element(const sy_tensor* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (char*)t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

/* ---- the function table -------------------------------------------------------------------- */

static sy_status device_count(void* ctx, int32_t* count) {
    (void)ctx;
    if (count == NULL) return fail(SY_ERR_INVALID_ARGUMENT, "device_count: count is NULL");
    *count = 1;
    return ok();
}

static sy_status device_props(void* ctx, int32_t device, sy_device_props* props) {
    (void)ctx;
    if (props == NULL || !SY_HAS_FIELD(props, launch_overhead_ns))
        return fail(SY_ERR_ABI, "device_props: props is NULL or smaller than ABI 1.0's");
    sy_status s = check_device("device_props", device);
    if (s.code != SY_OK) return s;
    const uint32_t size = props->struct_size < sizeof *props ? props->struct_size : sizeof *props;
    sy_device_props p;
    memset(&p, 0, sizeof p);
    p.struct_size = size;
    snprintf(p.name, sizeof p.name, "hello-c device");
    snprintf(p.description, sizeof p.description, "example plugin in C: f32 add");
    p.kind = SY_DEVICE_CPU;
    p.compute_units = 1;
    p.host_memory = 1;
    memcpy(props, &p, size);
    return ok();
}

static const sy_capability capability_rows[] = {
    {sizeof(sy_capability),
     SY_OP_ADD,
     NULL,
     0,
     SY_TYPE_F32,
     {SY_TYPE_F32, SY_TYPE_F32, SY_TYPE_NONE, SY_TYPE_NONE}},
};

static sy_status capabilities(void* ctx, const sy_capability** rows, size_t* count) {
    (void)ctx;
    if (rows == NULL || count == NULL)
        return fail(SY_ERR_INVALID_ARGUMENT, "capabilities: a result pointer is NULL");
    *rows = capability_rows;
    *count = sizeof capability_rows / sizeof capability_rows[0];
    return ok();
}

static sy_status supports(void* ctx, int32_t device, const sy_node* node, int32_t* supported) {
    (void)ctx;
    if (node == NULL || supported == NULL)
        return fail(SY_ERR_INVALID_ARGUMENT, "supports: node or result is NULL");
    sy_status s = check_device("supports", device);
    if (s.code != SY_OK) return s;
    *supported = refusal(node) == NULL;
    return ok();
}

static sy_status buffer_alloc(void* ctx, int32_t device, uint64_t size, sy_buffer* buffer) {
    hello* self = (hello*)ctx;
    if (buffer == NULL || !SY_HAS_FIELD(buffer, host_visible))
        return fail(SY_ERR_ABI, "buffer_alloc: buffer is NULL or smaller than ABI 1.0's");
    sy_status s = check_device("buffer_alloc", device);
    if (s.code != SY_OK) return s;
    void* p = size <= SIZE_MAX - 64
                  ? self->host.alloc_host(self->host.host_ctx, size ? (size_t)size : 1, 64)
                  : NULL;
    if (p == NULL)
        return fail(SY_ERR_OUT_OF_MEMORY, "buffer_alloc: cannot allocate %llu bytes",
                    (unsigned long long)size);
    buffer->device = device;
    buffer->handle = p;
    buffer->base = p;
    buffer->size = size;
    buffer->host_visible = 1;
    return ok();
}

static sy_status buffer_free(void* ctx, sy_buffer* buffer) {
    hello* self = (hello*)ctx;
    if (buffer == NULL) return fail(SY_ERR_INVALID_ARGUMENT, "buffer_free: buffer is NULL");
    self->host.free_host(self->host.host_ctx, buffer->handle);
    buffer->handle = buffer->base = NULL;
    return ok();
}

static sy_status check_range(const char* fn, const sy_buffer* buffer, uint64_t offset,
                             const void* host, uint64_t size) {
    if (buffer == NULL || (host == NULL && size > 0))
        return fail(SY_ERR_INVALID_ARGUMENT, "%s: a pointer argument is NULL", fn);
    if (offset > buffer->size || size > buffer->size - offset)
        return fail(SY_ERR_INVALID_ARGUMENT, "%s: %llu bytes at %llu pass the buffer's %llu", fn,
                    (unsigned long long)size, (unsigned long long)offset,
                    (unsigned long long)buffer->size);
    return ok();
}

static sy_status buffer_set(void* ctx, const sy_buffer* buffer, uint64_t offset, const void* src,
                            uint64_t size) {
    (void)ctx;
    sy_status s = check_range("buffer_set", buffer, offset, src, size);
    if (s.code == SY_OK && size > 0) memcpy((char*)buffer->base + offset, src, (size_t)size);
    return s;
}

static sy_status buffer_get(void* ctx, const sy_buffer* buffer, uint64_t offset, void* dst,
                            uint64_t size) {
    (void)ctx;
    sy_status s = check_range("buffer_get", buffer, offset, dst, size);
    if (s.code == SY_OK && size > 0) memcpy(dst, (const char*)buffer->base + offset, (size_t)size);
    return s;
}

/* Every tensor this plugin sees is in host memory: a copy is element by element. */
static sy_status copy_tensors(void* ctx, const sy_copy* copies, size_t count) {
    (void)ctx;
    for (size_t c = 0; c < count; ++c) {
        const sy_tensor *s = copies[c].src, *d = copies[c].dst;
        if (s == NULL || d == NULL || s->type != d->type || !same_shape(s, d) ||
            sy_dtype_info(s->type).block_size != 1)
            return fail(SY_ERR_INVALID_ARGUMENT,
                        "copy_tensors: copy %zu needs one scalar type and shape", c);
    }
    for (size_t c = 0; c < count; ++c) {
        const sy_tensor *s = copies[c].src, *d = copies[c].dst;
        const size_t esize = (size_t)sy_dtype_info(s->type).type_size;
        for (int64_t i3 = 0; i3 < d->ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < d->ne[2]; ++i2)
                for (int64_t i1 = 0; i1 < d->ne[1]; ++i1)
                    for (int64_t i0 = 0; i0 < d->ne[0]; ++i0)
                        memcpy(element(d, i0, i1, i2, i3), element(s, i0, i1, i2, i3), esize);
    }
    return ok();
}

static sy_status compute(void* ctx, int32_t device, const sy_node* const* nodes, size_t count) {
    (void)ctx;
    sy_status s = check_device("compute", device);
    if (s.code != SY_OK) return s;
    for (size_t n = 0; n < count; ++n) {
        if (nodes[n] == NULL) return fail(SY_ERR_INVALID_ARGUMENT, "compute: node %zu is NULL", n);
        const char* why = refusal(nodes[n]);
        if (why != NULL)
            return fail(nodes[n]->op == SY_OP_ADD ? SY_ERR_INVALID_ARGUMENT : SY_ERR_UNSUPPORTED,
                        "compute: node %zu: %s", n, why);
        const sy_tensor *a = nodes[n]->src[0], *b = nodes[n]->src[1], *d = nodes[n]->dst;
        for (int64_t i3 = 0; i3 < d->ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < d->ne[2]; ++i2)
                for (int64_t i1 = 0; i1 < d->ne[1]; ++i1)
                    for (int64_t i0 = 0; i0 < d->ne[0]; ++i0)
                        *(float*)element(d, i0, i1, i2, i3) =
                            *(const float*)element(a, i0, i1, i2, i3) +
                            *(const float*)element(b, i0, i1, i2, i3);
    }
    return ok();
}

/* compute() finishes its work before it returns. */
static sy_status synchronize(void* ctx, int32_t device) {
    (void)ctx;
    return check_device("synchronize", device);
}

static void shutdown(void* ctx) {
    free(ctx);
}

/* ---- the exported entry points ------------------------------------------------------------- */

SY_EXPORT int32_t sy_plugin_probe(sy_probe_info* info) {
    if (SY_HAS_FIELD(info, score)) {
        info->name = "hello-c";
        info->variant = "generic";
        info->score = 1;
    }
    return 1; /* runs anywhere */
}

SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    if (host == NULL || api == NULL)
        return fail(SY_ERR_INVALID_ARGUMENT, "hello-c: sy_plugin_init got a NULL argument");
    if (!SY_HAS_FIELD(host, abi_minor) || host->abi_major != SY_ABI_VERSION_MAJOR)
        return fail(SY_ERR_ABI, "hello-c: the host does not speak plugin ABI %d.x",
                    SY_ABI_VERSION_MAJOR);
    if (!SY_HAS_FIELD(host, free_host) || host->alloc_host == NULL || host->free_host == NULL)
        return fail(SY_ERR_ABI, "hello-c: the host API lacks alloc_host/free_host");
    if (!SY_HAS_FIELD(api, shutdown))
        return fail(SY_ERR_ABI, "hello-c: sy_plugin_api struct_size %u is smaller than ABI 1.0's",
                    api->struct_size);

    hello* self = calloc(1, sizeof *self);
    if (self == NULL) return fail(SY_ERR_OUT_OF_MEMORY, "hello-c: out of host memory");
    memcpy(&self->host, host,
           host->struct_size < sizeof self->host ? host->struct_size : sizeof self->host);

    /* Fill a whole table, then hand over as much of it as the host's struct has room for. */
    sy_plugin_api table;
    memset(&table, 0, sizeof table);
    table.abi_major = SY_ABI_VERSION_MAJOR;
    table.abi_minor = SY_ABI_VERSION_MINOR;
    table.ctx = self;
    table.name = "hello-c";
    table.version = "0.1.0";
    table.build_info = "hello-c example plugin";
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
    table.struct_size = api->struct_size < sizeof table ? api->struct_size : sizeof table;
    memcpy(api, &table, table.struct_size);
    return ok();
}
