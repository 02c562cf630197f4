/* Deliberately broken plugins, one per failure the host must report in one line. Plain C on
 * purpose: the ABI must be usable without C++. Which breakage is compiled in is chosen by one
 * BROKEN_* macro. */
#include <stdlib.h>
#include <string.h>

/* Some variants never reach the function table below; their helpers stay unused. */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"

#include "switchyard/ops.h"
#include "switchyard/plugin.h"

#ifdef BROKEN_MISSING_DEPENDENCY
int sy_test_dependency_value(void); /* lives in a library the loader will not find */
#endif

static sy_status ok(void) {
    sy_status s = {SY_OK, NULL};
    return s;
}
static sy_status fail(int32_t code, const char* message) {
    sy_status s = {code, message};
    return s;
}

static sy_status device_count(void* ctx, int32_t* count) {
    (void)ctx;
    *count = 1;
    return ok();
}
static sy_status device_props(void* ctx, int32_t device, sy_device_props* props) {
    (void)ctx;
    if (device != 0) return fail(SY_ERR_INVALID_ARGUMENT, "no such device");
    strncpy(props->name, "broken test device", sizeof props->name - 1);
    props->kind = SY_DEVICE_CPU;
    props->host_memory = 1;
    return ok();
}
/* Capability rows as a newer minor ABI might lay them out: the known fields, then 16 bytes the
 * host does not know. */
typedef struct {
    sy_capability known;
    char newer_fields[16];
} wide_capability;
static wide_capability wide_rows[3];

static sy_status capabilities(void* ctx, const sy_capability** rows, size_t* count) {
    (void)ctx;
    *rows = NULL;
    *count = 0;
#if defined(BROKEN_HUGE_COUNT) || defined(BROKEN_ROW_SIZE) || defined(WIDE_ROWS)
    for (int i = 0; i < 3; ++i) {
        memset(&wide_rows[i], 0x5a, sizeof wide_rows[i]);
        wide_rows[i].known.struct_size = (uint32_t)sizeof(wide_capability);
        wide_rows[i].known.op = SY_OP_ADD + i;
        wide_rows[i].known.named_op = NULL;
        wide_rows[i].known.named_op_version = 0;
        wide_rows[i].known.dst_type = SY_TYPE_F32;
        for (int k = 0; k < 4; ++k) wide_rows[i].known.src_type[k] = k < 2 ? SY_TYPE_F32 : SY_TYPE_NONE;
    }
    *rows = &wide_rows[0].known;
    *count = 3;
#endif
#ifdef BROKEN_HUGE_COUNT
    *count = (size_t)1 << 40; /* three rows are there */
#endif
#ifdef BROKEN_ROW_SIZE
    wide_rows[0].known.struct_size = 4;
#endif
    return ok();
}
static sy_status supports(void* ctx, int32_t device, const sy_node* node, int32_t* yes) {
    (void)ctx;
    (void)device;
    (void)node;
    *yes = 0;
    return ok();
}
static sy_status buffer_alloc(void* ctx, int32_t device, uint64_t size, sy_buffer* b) {
    (void)ctx;
    (void)device;
#ifdef BROKEN_SHORT_BUFFER
    /* Half of what was asked, as if it had miscounted. */
    static char storage[4096];
    b->base = storage;
    b->handle = storage;
    b->size = size / 2;
    b->host_visible = 1;
    return ok();
#else
    (void)size;
    (void)b;
    return fail(SY_ERR_UNSUPPORTED, "this plugin allocates nothing");
#endif
}
static sy_status buffer_free(void* ctx, sy_buffer* b) {
    (void)ctx;
    (void)b;
    return ok();
}
static sy_status buffer_set(void* ctx, const sy_buffer* b, uint64_t o, const void* s, uint64_t n) {
    (void)ctx;
    (void)b;
    (void)o;
    (void)s;
    (void)n;
    return fail(SY_ERR_UNSUPPORTED, "no buffers");
}
static sy_status buffer_get(void* ctx, const sy_buffer* b, uint64_t o, void* d, uint64_t n) {
    (void)ctx;
    (void)b;
    (void)o;
    (void)d;
    (void)n;
    return fail(SY_ERR_UNSUPPORTED, "no buffers");
}
static sy_status copy_tensors(void* ctx, const sy_copy* c, size_t n) {
    (void)ctx;
    (void)c;
    (void)n;
    return fail(SY_ERR_UNSUPPORTED, "no buffers");
}
static sy_status compute(void* ctx, int32_t device, const sy_node* const* nodes, size_t n) {
    (void)ctx;
    (void)device;
    (void)nodes;
    return n == 0 ? ok() : fail(SY_ERR_UNSUPPORTED, "this plugin computes nothing");
}
static sy_status synchronize(void* ctx, int32_t device) {
    (void)ctx;
    (void)device;
    return ok();
}
#ifdef BROKEN_NAMED_OP
/* A named op without a namespace ("fused", not "namespace.fused"). */
static sy_status named_ops(void* ctx, const sy_named_op_info** ops, size_t* count) {
    static sy_named_op_info rows[1];
    (void)ctx;
    rows[0].struct_size = (uint32_t)sizeof rows[0];
    rows[0].name = "fused";
    rows[0].schema_version = 1;
    rows[0].summary = "a name without a namespace";
    *ops = rows;
    *count = 1;
    return ok();
}
#endif
static void shutdown(void* ctx) {
    (void)ctx;
#ifdef BROKEN_WRONG_ABI
    /* The host refused this table: calling into it is the bug this catches. */
    abort();
#endif
}

#ifndef BROKEN_NO_ENTRY
SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    (void)host;
#ifdef BROKEN_REFUSES
    (void)api;
    return fail(SY_ERR_REFUSED, "no compatible device found (test plugin refuses on purpose)");
#else
    sy_plugin_api table;
    memset(&table, 0, sizeof table);
    table.struct_size = sizeof table;
#ifdef BROKEN_WRONG_ABI
    table.abi_major = SY_ABI_VERSION_MAJOR + 1;
#else
    table.abi_major = SY_ABI_VERSION_MAJOR;
#endif
    table.abi_minor = 0;
    table.name = PLUGIN_NAME;
    table.version = "0.0.1";
    table.build_info = "test plugin";
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
#ifdef BROKEN_NAMED_OP
    table.named_ops = named_ops;
#endif
    size_t n = api->struct_size < sizeof table ? api->struct_size : sizeof table;
    memcpy(api, &table, n);
    api->struct_size = (uint32_t)n;
    return ok();
#endif
}
#else
SY_EXPORT int sy_plugin_entry_with_a_wrong_name(void) {
    return 0;
}
#endif

#if defined(BROKEN_PROBE_ZERO) || defined(BROKEN_MISSING_DEPENDENCY)
SY_EXPORT int32_t sy_plugin_probe(sy_probe_info* info) {
    info->name = PLUGIN_NAME;
    info->variant = "impossible";
#ifdef BROKEN_MISSING_DEPENDENCY
    return sy_test_dependency_value();
#else
    return 0;
#endif
}
#endif
