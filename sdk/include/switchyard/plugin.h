/*
 * switchyard plugin ABI — plain C, stable, versioned both ways.
 *
 * A backend is a shared object that exports one entry symbol, `sy_plugin_init`, and optionally
 * `sy_plugin_probe` (name, variant and a score, so that of several builds of one backend the host
 * loads the best one this machine can run).
 *
 *   host                                   plugin
 *   ----                                   ------
 *   probe = dlsym("sy_plugin_probe")       (optional) fills sy_probe_info, score 0 = cannot run
 *   init  = dlsym("sy_plugin_init")
 *   api.struct_size = sizeof(api)
 *   init(&host_api, &api)  ------------->  checks host_api.abi_major, fills api (at most
 *                                          api.struct_size bytes), sets api.struct_size to what it
 *                                          filled, api.abi_major/minor to what it was built with
 *   host checks api.abi_major
 *   ... api.fn(api.ctx, ...) ...
 *   api.shutdown(api.ctx)                  frees everything, joins its threads
 *   dlclose
 *
 * Growth rules. Every struct that crosses the boundary starts with `uint32_t struct_size`, set by
 * whoever allocates it. A reader uses a field only if the struct is large enough to contain it
 * (SY_HAS_FIELD). New fields are only ever appended; a minor version bump adds fields, a major
 * version bump breaks. Both sides refuse a different major version.
 *
 * Errors. Every function returns an sy_status. `message` is owned by the plugin and stays valid
 * until the next call into the same plugin from the same thread; NULL when code == SY_OK.
 *
 * Lifetimes and threads. Arrays and strings a plugin returns (name, capabilities, cost_params,
 * named_ops) stay valid until shutdown. The host never calls one plugin from two threads at the
 * same time, but successive calls may come from different threads.
 *
 * Shapes follow GGUF/ggml order: ne[0] is the innermost (contiguous for a packed tensor)
 * dimension, nb[i] is the byte stride of dimension i. Op semantics are documented in ops.h.
 */
#ifndef SWITCHYARD_PLUGIN_H
#define SWITCHYARD_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SY_ABI_VERSION_MAJOR 1
#define SY_ABI_VERSION_MINOR 2

#if defined(_WIN32)
#define SY_EXPORT __declspec(dllexport)
#else
#define SY_EXPORT __attribute__((visibility("default")))
#endif

/* True when struct `s` (with its struct_size) is large enough to hold `field`. */
#define SY_HAS_FIELD(s, field)                  \
    ((s) != NULL && (size_t)(s)->struct_size >= \
                        offsetof(__typeof__(*(s)), field) + sizeof(((__typeof__(*(s))*)0)->field))

/* ---------------------------------------------------------------------------------------------
 * Status
 * ------------------------------------------------------------------------------------------- */
typedef enum sy_status_code {
    SY_OK = 0,
    SY_ERR_INVALID_ARGUMENT = 1, /* a shape, type, parameter or index the op cannot accept */
    SY_ERR_UNSUPPORTED = 2,      /* asked for something this plugin does not do */
    SY_ERR_OUT_OF_MEMORY = 3,
    SY_ERR_ABI = 4,     /* version mismatch or a struct too small to be valid */
    SY_ERR_BACKEND = 5, /* the device or library underneath failed */
    SY_ERR_REFUSED = 6, /* the plugin declines to run here (init only) */
} sy_status_code;

typedef struct sy_status {
    int32_t code;        /* sy_status_code */
    const char* message; /* plugin-owned; valid until the next call on this thread */
} sy_status;

/* ---------------------------------------------------------------------------------------------
 * Data types: the numeric values are the GGUF tensor type ids (ggml_type), so a tensor read
 * from a file needs no translation. Block sizes and byte sizes are in switchyard/dtype.h.
 * ------------------------------------------------------------------------------------------- */
typedef enum sy_dtype {
    SY_TYPE_F32 = 0,
    SY_TYPE_F16 = 1,
    SY_TYPE_Q4_0 = 2,
    SY_TYPE_Q4_1 = 3,
    SY_TYPE_Q5_0 = 6,
    SY_TYPE_Q5_1 = 7,
    SY_TYPE_Q8_0 = 8,
    SY_TYPE_Q8_1 = 9,
    SY_TYPE_Q2_K = 10,
    SY_TYPE_Q3_K = 11,
    SY_TYPE_Q4_K = 12,
    SY_TYPE_Q5_K = 13,
    SY_TYPE_Q6_K = 14,
    SY_TYPE_Q8_K = 15,
    SY_TYPE_IQ2_XXS = 16,
    SY_TYPE_IQ2_XS = 17,
    SY_TYPE_IQ3_XXS = 18,
    SY_TYPE_IQ1_S = 19,
    SY_TYPE_IQ4_NL = 20,
    SY_TYPE_IQ3_S = 21,
    SY_TYPE_IQ2_S = 22,
    SY_TYPE_IQ4_XS = 23,
    SY_TYPE_I8 = 24,
    SY_TYPE_I16 = 25,
    SY_TYPE_I32 = 26,
    SY_TYPE_I64 = 27,
    SY_TYPE_F64 = 28,
    SY_TYPE_IQ1_M = 29,
    SY_TYPE_BF16 = 30,
    /* ik_llama.cpp's own types (its GGUF ids; docs/ik-quants.md). */
    SY_TYPE_Q6_0 = 133,
    SY_TYPE_IQ2_K = 137,
    SY_TYPE_IQ3_K = 138,
    SY_TYPE_IQ4_K = 139,
    SY_TYPE_IQ5_K = 140,
    SY_TYPE_IQ6_K = 141,
    /* Row-scaled: each row starts with its scale (sy_dtype_traits.row_meta_size bytes). */
    SY_TYPE_IQ4_KS = 144,
    SY_TYPE_IQ2_KS = 145,
    SY_TYPE_IQ4_KSS = 146,
    SY_TYPE_IQ5_KS = 152,
    SY_TYPE_IQ3_KS = 156,
    SY_TYPE_IQ2_KL = 157,
    /* Trellis ("KT"), row-scaled too: values generated from codes (quant_blocks.h). */
    SY_TYPE_IQ2_KT = 153,
    SY_TYPE_IQ3_KT = 154,
    SY_TYPE_IQ4_KT = 155,
    SY_TYPE_IQ1_KT = 158,
    SY_TYPE_Q8_KV = 151, /* ik_llama.cpp's: f32 d and int32 sum per row, then int8 q */
    /* switchyard's in-memory form of ik_llama.cpp's IQ1_M_R4 (file type id 229): the same bytes
       with its rows de-interleaved (quant_blocks.h). Never a file's type id. */
    SY_TYPE_IQ1_M_R4_ROWS = 1229,
    /* Wildcards for capability tables only (never in a tensor). */
    SY_TYPE_ANY = -1,  /* any type */
    SY_TYPE_NONE = -2, /* this source slot must be absent */
} sy_dtype;

/* ---------------------------------------------------------------------------------------------
 * Buffers and tensors
 * ------------------------------------------------------------------------------------------- */
typedef struct sy_buffer {
    uint32_t struct_size;
    int32_t device;       /* device index within the plugin */
    void* handle;         /* plugin-private */
    void* base;           /* address of byte 0; dereferenceable by the host iff host_visible */
    uint64_t size;        /* bytes */
    int32_t host_visible; /* 1: plain host memory the CPU can read and write */
} sy_buffer;

#define SY_MAX_DIMS 4

typedef struct sy_tensor {
    uint32_t struct_size;    /* since ABI 1.0, as every member up to name */
    int32_t type;            /* sy_dtype */
    int64_t ne[SY_MAX_DIMS]; /* elements per dimension; unused dimensions are 1 */
    int64_t nb[SY_MAX_DIMS]; /* byte strides; for block-quantized types nb[0] is the block size
                                in bytes and ne[0] must be a whole number of blocks; a
                                row-scaled type's row (at data + i1 nb[1] + ...) starts with
                                its scale, sy_dtype_traits.row_meta_size bytes before its first
                                block */
    void* data;              /* address of element (0,0,0,0) in the owning buffer's space */
    const sy_buffer* buffer; /* owning buffer, or NULL for host memory not owned by a plugin */
    const char* name;        /* for messages; may be NULL */
    /* Since ABI 1.1. Nonzero: the bytes are constant (a model's weights): they do not change while
     * the id is in use, so a plugin may keep what it derives from them (a converted or reordered
     * copy), keyed by this id and the address, until the host calls release_constants with the
     * id. Ids are never reused within a process. 0: the bytes may change between calls (inputs,
     * intermediates, the KV cache). Read it only when SY_HAS_FIELD(t, constant_id). */
    uint64_t constant_id;
} sy_tensor;

/* The size of an ABI 1.0 sy_tensor (without constant_id): the smallest a reader accepts. */
#define SY_TENSOR_SIZE_1_0 (offsetof(sy_tensor, name) + sizeof(const char*))

/* ---------------------------------------------------------------------------------------------
 * Nodes: one op applied to sources, writing dst. Built-in op ids are in ops.h (sy_op); a node
 * with op == SY_OP_NAMED names a plugin-provided op ("namespace.name") and its schema version.
 * ------------------------------------------------------------------------------------------- */
#define SY_MAX_SRC 8
#define SY_MAX_PARAMS 16

typedef struct sy_node {
    uint32_t struct_size;      /* since ABI 1.0, as every member */
    int32_t op;                /* sy_op */
    const char* named_op;      /* "moe.fused_up_gate" when op == SY_OP_NAMED, else NULL */
    uint32_t named_op_version; /* schema version of the named op */
    int32_t n_src;
    const sy_tensor* src[SY_MAX_SRC]; /* unused slots are NULL */
    const sy_tensor* dst;
    int32_t iparams[SY_MAX_PARAMS]; /* meaning per op: ops.h */
    float fparams[SY_MAX_PARAMS];
} sy_node;

/* A copy of one tensor's bytes; src and dst have the same type and shape. Either side may be
 * host memory (buffer == NULL) or a buffer of this plugin. */
typedef struct sy_copy {
    uint32_t struct_size;
    const sy_tensor* src;
    const sy_tensor* dst;
} sy_copy;

/* ---------------------------------------------------------------------------------------------
 * Devices and their properties (the inputs of the scheduler's cost model)
 * ------------------------------------------------------------------------------------------- */
typedef enum sy_device_kind {
    SY_DEVICE_CPU = 0,
    SY_DEVICE_GPU = 1,
    SY_DEVICE_ACCELERATOR = 2,
} sy_device_kind;

typedef struct sy_device_props {
    uint32_t struct_size; /* since ABI 1.0, as every member */
    char name[128];       /* "AMD EPYC 9B14 (2 threads)", "NVIDIA H100 80GB HBM3" */
    char description[256];
    int32_t kind;          /* sy_device_kind */
    int32_t compute_units; /* threads, SMs ... */
    uint64_t memory_total; /* bytes */
    uint64_t memory_free;  /* bytes */
    int32_t host_memory;   /* 1: the device computes on host memory directly (no copies) */
    /* Peak rates, per second. 0 = unknown. */
    double peak_flops_f32;
    double peak_flops_f16; /* f16/bf16 operands */
    double peak_flops_int8;
    double memory_bandwidth; /* bytes/s of the device's own memory */
    /* Link to host memory. For host_memory devices: 0 bandwidth and 0 latency mean "free". */
    double link_bandwidth;     /* bytes/s host -> device */
    double link_latency_ns;    /* fixed cost of one transfer */
    double launch_overhead_ns; /* fixed cost of running one node */
} sy_device_props;

/* One accepted type combination of one op: a row of the plugin's capability table. A plugin
 * lists every combination it accepts; supports(node) refines by shape. */
typedef struct sy_capability {
    uint32_t struct_size;
    int32_t op;           /* sy_op */
    const char* named_op; /* for SY_OP_NAMED */
    uint32_t named_op_version;
    int32_t dst_type;    /* sy_dtype or SY_TYPE_ANY */
    int32_t src_type[4]; /* first four sources: sy_dtype, SY_TYPE_ANY or SY_TYPE_NONE */
} sy_capability;

/* A named op this plugin provides (its semantics are documented in named_ops.h or by the plugin
 * author for third-party ops). */
typedef struct sy_named_op_info {
    uint32_t struct_size;
    const char* name; /* "namespace.name" */
    uint32_t schema_version;
    const char* summary;
} sy_named_op_info;

/* Cost-model parameters a plugin exposes for display and for the scheduler (key = value).
 * By convention the key "extra_memory" (unit "B") is the host memory the plugin holds of its own
 * beyond the buffers the host allocated (kept copies of converted weights, caches); the host
 * reports it after a run. */
typedef struct sy_cost_param {
    uint32_t struct_size;
    const char* key;
    double value;
    const char* unit;
} sy_cost_param;

/* ---------------------------------------------------------------------------------------------
 * What the host gives a plugin
 * ------------------------------------------------------------------------------------------- */
typedef enum sy_log_level {
    SY_LOG_DEBUG = 0,
    SY_LOG_INFO = 1,
    SY_LOG_WARN = 2,
    SY_LOG_ERROR = 3,
} sy_log_level;

typedef struct sy_host_api {
    uint32_t struct_size; /* since ABI 1.0, as every member */
    uint32_t abi_major;
    uint32_t abi_minor;
    const char* host_version;
    void* host_ctx;
    void (*log)(void* host_ctx, int32_t level, const char* plugin, const char* message);
    /* Aligned host memory (alignment a power of two); free with free_host. */
    void* (*alloc_host)(void* host_ctx, size_t size, size_t alignment);
    void (*free_host)(void* host_ctx, void* ptr);
} sy_host_api;

/* ---------------------------------------------------------------------------------------------
 * What a plugin gives the host: its function table. Function pointers that a plugin does not
 * implement are NULL (estimate, cost_params, named_ops, set_option and release_constants are
 * optional). In C++, switchyard/plugin.hpp builds this table from a class.
 *
 * Life cycle, in the order the host calls:
 *   1. probe    sy_plugin_probe (optional export): may this build run here, and how well?
 *   2. init     sy_plugin_init: version checks, the table filled; a plugin that cannot run
 *               returns SY_ERR_REFUSED with the reason (no table is used after a failed init,
 *               and shutdown is not called).
 *   3. devices  device_count, device_props: what the scheduler plans with.
 *   4. supports capabilities once (the type table), supports per node (shapes, strides); the
 *               host never sends compute a node that supports refused.
 *   5. estimate estimate per node and cost_params (optional): the cost hints of placement.
 *   6. buffers  buffer_alloc, buffer_set/get, copy_tensors: weights, caches and activations.
 *   7. compute  compute lists of nodes per device, in order; synchronize waits for them.
 *   8. release  release_constants when a model is unloaded; buffer_free for each buffer;
 *               shutdown last, once, before dlclose.
 * ------------------------------------------------------------------------------------------- */
typedef struct sy_plugin_api {
    uint32_t struct_size; /* since ABI 1.0, as every member below unless it says otherwise */
    uint32_t abi_major;
    uint32_t abi_minor;
    void* ctx; /* passed back as the first argument of every call */

    /* identity */
    const char* name;       /* backend name: "cpu", "cuda", "blas" */
    const char* version;    /* plugin version, "0.1.0" */
    const char* build_info; /* compiler, flags, variant, library versions */

    /* devices */
    sy_status (*device_count)(void* ctx, int32_t* count);
    /* Fills at most props->struct_size bytes and sets struct_size to what it filled. */
    sy_status (*device_props)(void* ctx, int32_t device, sy_device_props* props);

    /* capability */
    sy_status (*capabilities)(void* ctx, const sy_capability** rows, size_t* count);
    sy_status (*supports)(void* ctx, int32_t device, const sy_node* node, int32_t* supported);

    /* cost hints (optional) */
    sy_status (*estimate)(void* ctx, int32_t device, const sy_node* node, double* nanoseconds);
    sy_status (*cost_params)(void* ctx, int32_t device, const sy_cost_param** params,
                             size_t* count);

    /* memory */
    sy_status (*buffer_alloc)(void* ctx, int32_t device, uint64_t size, sy_buffer* buffer);
    sy_status (*buffer_free)(void* ctx, sy_buffer* buffer);
    sy_status (*buffer_set)(void* ctx, const sy_buffer* buffer, uint64_t offset, const void* src,
                            uint64_t size);
    sy_status (*buffer_get)(void* ctx, const sy_buffer* buffer, uint64_t offset, void* dst,
                            uint64_t size);
    sy_status (*copy_tensors)(void* ctx, const sy_copy* copies, size_t count);

    /* execution: nodes run in order; a device may run them asynchronously until synchronize,
     * which then reports what they found (a bad index). Until synchronize returns the host keeps
     * the nodes and their tensors valid and neither reads nor writes their memory. */
    sy_status (*compute)(void* ctx, int32_t device, const sy_node* const* nodes, size_t count);
    sy_status (*synchronize)(void* ctx, int32_t device);

    /* named ops (optional) */
    sy_status (*named_ops)(void* ctx, const sy_named_op_info** ops, size_t* count);

    /* options (optional): "threads" = "8", ... Unknown keys return SY_ERR_UNSUPPORTED. */
    sy_status (*set_option)(void* ctx, const char* key, const char* value);

    /* Frees everything the plugin holds and stops its threads; called once, before unload. */
    void (*shutdown)(void* ctx);

    /* Since ABI 1.1, optional (NULL, or absent when the plugin's struct_size ends before it). The
     * host will not pass tensors with this constant_id again (their model was unloaded): the
     * plugin frees whatever it kept for them. */
    sy_status (*release_constants)(void* ctx, uint64_t constant_id);

    /* Since ABI 1.2, optional. Host memory [ptr, ptr + size) that the host will pass to
     * buffer_set, buffer_get and copy_tensors of this plugin again and again (the host's side of
     * the tensors that cross between backends every step): the plugin may prepare it for direct
     * transfers (CUDA: pin it with cudaHostRegister). The host calls host_unregister with the
     * same ptr before it frees or reuses that memory otherwise. A plugin that cannot returns an
     * error or SY_ERR_UNSUPPORTED; the host then copies from and to the memory as before. */
    sy_status (*host_register)(void* ctx, void* ptr, uint64_t size);
    sy_status (*host_unregister)(void* ctx, void* ptr);
} sy_plugin_api;

/* ---------------------------------------------------------------------------------------------
 * Exported symbols
 * ------------------------------------------------------------------------------------------- */
#define SY_PLUGIN_INIT_SYMBOL "sy_plugin_init"
#define SY_PLUGIN_PROBE_SYMBOL "sy_plugin_probe"

typedef struct sy_probe_info {
    uint32_t struct_size; /* since ABI 1.0, as every member */
    const char* name;     /* backend name, the same as sy_plugin_api.name */
    const char* variant;  /* "avx2", "avx512", "generic" ... */
    int32_t score;        /* 0: cannot run on this machine; otherwise higher is better */
} sy_probe_info;

typedef sy_status (*sy_plugin_init_fn)(const sy_host_api* host, sy_plugin_api* api);
/* Fills `info` (name, variant, score) and returns the same score. Must run on any CPU of the
   architecture: it may not execute instructions of the variant it describes. */
typedef int32_t (*sy_plugin_probe_fn)(sy_probe_info* info);

#ifdef __cplusplus
}
#endif

#endif /* SWITCHYARD_PLUGIN_H */
