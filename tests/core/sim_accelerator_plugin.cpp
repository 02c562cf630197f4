// "sim": a simulated accelerator for tests of placement across backends on machines without a
// GPU. Devices with their own memory: their buffers are not host visible, so every byte in or
// out goes through buffer_set/buffer_get (counted), and compute() refuses any tensor outside the
// device's own buffers (host memory, or another device's), as a GPU would. It computes with the CPU
// plugin's kernels (loaded from SWITCHYARD_CPU_PLUGIN, or SWITCHYARD_SIM_CPU_PLUGIN when set: the
// same variant as the cpu backend, its named ops included), so a graph split between the CPU plugin
// and this device computes exactly what the CPU alone computes. Its cost hints come from rates set
// with options, so tests can move the point where offloading pays:
//   gflops          compute rate, 1e9 operations per second (default 1000)
//   memory_gbps     bandwidth of its own memory, GB/s (default 1000)
//   link_gbps       host <-> device bandwidth, GB/s (default 25)
//   link_latency_us fixed cost of one transfer, microseconds (default 10)
//   launch_us       fixed cost of one node, microseconds (default 5)
//   memory_mib      memory of each device, MiB (default 4096)
//   devices         how many devices (1 to 8, default 1): "sim", "sim:1", ...
//   product_delay_us time each matrix product really takes on top of the CPU's (default 0):
//                    a device slower than its hints say, which only measuring finds out. It
//                    passes as a GPU's does: compute() returns, the device is busy that long
//                    after (its queue), and synchronize() waits for the end.
// Other options go to the CPU plugin ("threads"). The counters are read with the exported C
// function sy_sim_counters (tests find it with dlsym). Host memory offered with host_register is
// kept as a GPU keeps pinned memory: ranges that may not overlap, each unregistered by its start;
// sy_sim_host_memory says how many are registered and how many transfers went through them.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "switchyard/named_ops.h"
#include "switchyard/plugin.h"
#include "switchyard/sdk.hpp"

namespace {

struct Settings {
    double gflops = 1000, memory_gbps = 1000, link_gbps = 25, link_latency_us = 10, launch_us = 5;
    double memory_mib = 4096;
    double product_delay_us = 0;
    double devices = 1;
};
constexpr int kMaxDevices = 8;

sy_plugin_api g_inner{};  // the CPU plugin's table; its ctx is passed to every inner call
void* g_library = nullptr;
Settings g_settings;
uint64_t g_allocated[kMaxDevices] = {};
// Per device: when the work it was given ends (product_delay_us after what came before).
std::chrono::steady_clock::time_point g_busy_until[kMaxDevices] = {};
std::atomic<uint64_t> g_to_device{0}, g_to_host{0}, g_nodes{0};
// compute() calls so far, and how many there had been at the last buffer_get: the order in which
// a scheduler fetches a device's results and sends it more work.
std::atomic<uint64_t> g_computes{0}, g_computes_at_get{0};
// Registered host memory: start -> bytes; transfers whose host side lay inside it, and all.
std::mutex g_host_mutex;
std::map<uintptr_t, uint64_t> g_registered;
uint64_t g_pinned_transfers = 0, g_transfers = 0;

// Counts a transfer from or to host memory [p, p + n).
void count_transfer(const void* p, uint64_t n) {
    const auto at = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(g_host_mutex);
    ++g_transfers;
    auto it = g_registered.upper_bound(at);
    if (it == g_registered.begin()) return;
    --it;
    if (at + n <= it->first + it->second) ++g_pinned_transfers;
}

// A buffer of ours: the CPU plugin's host buffer inside, shown to the host as device memory.
struct SimBuffer {
    sy_buffer inner;
};

SimBuffer* sim(const sy_buffer* b) {
    return static_cast<SimBuffer*>(b->handle);
}

sy_status device_count(void*, int32_t* count) {
    *count = int32_t(g_settings.devices);
    return sy::sdk::ok();
}

sy_status no_device(int32_t device) {
    if (device >= 0 && device < int32_t(g_settings.devices)) return sy::sdk::ok();
    return sy::sdk::error(SY_ERR_INVALID_ARGUMENT, "sim: no device %d", device);
}

sy_status device_props(void* ctx, int32_t device, sy_device_props* props) {
    if (sy_status s = no_device(device); s.code) return s;
    if (sy_status s = g_inner.device_props(ctx, 0, props); s.code) return s;
    const Settings& s = g_settings;
    if (device == 0)
        std::snprintf(props->name, sizeof props->name, "simulated accelerator");
    else
        std::snprintf(props->name, sizeof props->name, "simulated accelerator %d", device);
    std::snprintf(props->description, sizeof props->description,
                  "%.0f GFLOP/s, %.0f GB/s memory, %.1f GB/s link; the CPU plugin's kernels",
                  s.gflops, s.memory_gbps, s.link_gbps);
    props->kind = SY_DEVICE_ACCELERATOR;
    props->memory_total = uint64_t(s.memory_mib * 1048576.0);
    const uint64_t used = g_allocated[device];
    props->memory_free = props->memory_total > used ? props->memory_total - used : 0;
    props->host_memory = 0;
    props->peak_flops_f32 = props->peak_flops_f16 = props->peak_flops_int8 = s.gflops * 1e9;
    props->memory_bandwidth = s.memory_gbps * 1e9;
    props->link_bandwidth = s.link_gbps * 1e9;
    props->link_latency_ns = s.link_latency_us * 1e3;
    props->launch_overhead_ns = s.launch_us * 1e3;
    return sy::sdk::ok();
}

// A roofline on the configured rates: 2 K operations per matrix-product result element (both
// products of the fused up/gate), one per element elsewhere; every byte of the sources and the
// result once (expert weights: only the experts the node's ids can select).
sy_status estimate(void*, int32_t, const sy_node* node, double* ns) {
    const Settings& s = g_settings;
    const sy_tensor& d = *node->dst;
    const bool fused = node->op == SY_OP_NAMED && node->named_op != nullptr &&
                       std::strcmp(node->named_op, SY_NAMED_MOE_FUSED_UP_GATE) == 0;
    const bool experts = node->op == SY_OP_MUL_MAT_ID || fused;
    double flops = double(sy::sdk::nelements(d));
    if (node->op == SY_OP_MUL_MAT || experts)
        flops *= 2.0 * double(node->src[0]->ne[0]) * (fused ? 2 : 1);
    double bytes = double(sy::sdk::nbytes(d));
    for (int i = 0; i < node->n_src; ++i) {
        double b = double(sy::sdk::nbytes(*node->src[i]));
        const bool weight = experts && (i == 0 || (fused && i == 1));
        if (weight) {
            const sy_tensor& ids = *node->src[fused ? 3 : 2];
            const double e = double(node->src[i]->ne[2]);
            b *= std::min(e, double(ids.ne[0] * ids.ne[1])) / e;
        }
        bytes += b;
    }
    *ns =
        std::max(flops / (s.gflops * 1e9), bytes / (s.memory_gbps * 1e9)) * 1e9 + s.launch_us * 1e3;
    return sy::sdk::ok();
}

sy_status buffer_alloc(void* ctx, int32_t device, uint64_t size, sy_buffer* buffer) {
    if (sy_status s = no_device(device); s.code) return s;
    if (g_allocated[device] + size > uint64_t(g_settings.memory_mib * 1048576.0))
        return sy::sdk::error(SY_ERR_OUT_OF_MEMORY,
                              "sim: %llu bytes do not fit in %.0f MiB (%llu bytes in use)",
                              static_cast<unsigned long long>(size), g_settings.memory_mib,
                              static_cast<unsigned long long>(g_allocated[device]));
    auto* b = new SimBuffer{};
    b->inner.struct_size = sizeof b->inner;
    if (sy_status s = g_inner.buffer_alloc(ctx, 0, size, &b->inner); s.code) {
        delete b;
        return s;
    }
    g_allocated[device] += size;
    buffer->device = device;
    buffer->handle = b;
    buffer->base = b->inner.base;
    buffer->size = size;
    buffer->host_visible = 0;  // the host must go through buffer_set / buffer_get
    return sy::sdk::ok();
}

sy_status buffer_free(void* ctx, sy_buffer* buffer) {
    SimBuffer* b = sim(buffer);
    g_allocated[buffer->device] -= b->inner.size;
    const sy_status s = g_inner.buffer_free(ctx, &b->inner);
    delete b;
    return s;
}

sy_status buffer_set(void* ctx, const sy_buffer* buffer, uint64_t offset, const void* src,
                     uint64_t n) {
    if (sy_status s = g_inner.buffer_set(ctx, &sim(buffer)->inner, offset, src, n); s.code)
        return s;
    g_to_device += n;
    count_transfer(src, n);
    return sy::sdk::ok();
}

sy_status buffer_get(void* ctx, const sy_buffer* buffer, uint64_t offset, void* dst, uint64_t n) {
    if (sy_status s = g_inner.buffer_get(ctx, &sim(buffer)->inner, offset, dst, n); s.code)
        return s;
    g_to_host += n;
    g_computes_at_get = g_computes.load();
    count_transfer(dst, n);
    return sy::sdk::ok();
}

sy_status host_register(void*, void* ptr, uint64_t size) {
    const auto at = reinterpret_cast<uintptr_t>(ptr);
    if (ptr == nullptr || size == 0)
        return sy::sdk::error(SY_ERR_INVALID_ARGUMENT, "sim: host_register of %llu bytes at %p",
                              static_cast<unsigned long long>(size), ptr);
    std::lock_guard<std::mutex> lock(g_host_mutex);
    auto next = g_registered.lower_bound(at);
    const bool overlaps =
        (next != g_registered.end() && next->first < at + size) ||
        (next != g_registered.begin() && std::prev(next)->first + std::prev(next)->second > at);
    if (overlaps)
        return sy::sdk::error(
            SY_ERR_INVALID_ARGUMENT,
            "sim: host memory at %p (%llu bytes) overlaps memory registered before", ptr,
            static_cast<unsigned long long>(size));
    g_registered.emplace(at, size);
    return sy::sdk::ok();
}

sy_status host_unregister(void*, void* ptr) {
    std::lock_guard<std::mutex> lock(g_host_mutex);
    if (g_registered.erase(reinterpret_cast<uintptr_t>(ptr)) == 0)
        return sy::sdk::error(SY_ERR_INVALID_ARGUMENT, "sim: host memory at %p is not registered",
                              ptr);
    return sy::sdk::ok();
}

sy_status copy_tensors(void*, const sy_copy*, size_t) {
    return sy::sdk::error(SY_ERR_UNSUPPORTED, "sim: copy_tensors is not implemented");
}

// The nodes as the CPU plugin sees them: the same, with the inner (host) buffers.
sy_status compute(void* ctx, int32_t device, const sy_node* const* nodes, size_t count) {
    if (sy_status s = no_device(device); s.code) return s;
    ++g_computes;
    std::vector<sy_node> inner(count);
    std::vector<sy_tensor> tensors(count * (SY_MAX_SRC + 1));
    std::vector<const sy_node*> pointers(count);
    for (size_t i = 0; i < count; ++i) {
        inner[i] = *nodes[i];
        // Null for a tensor outside this device's buffers (host memory, another device's):
        // refused below.
        const auto translate = [&](const sy_tensor* t, size_t slot) -> const sy_tensor* {
            if (t == nullptr || t->buffer == nullptr || t->buffer->device != device) return nullptr;
            sy_tensor& out = tensors[i * (SY_MAX_SRC + 1) + slot];
            out = *t;
            out.buffer = &sim(t->buffer)->inner;
            return &out;
        };
        const sy_tensor* dst = translate(nodes[i]->dst, 0);
        if (dst == nullptr)
            return sy::sdk::error(SY_ERR_INVALID_ARGUMENT,
                                  "sim: dst of node %zu (%s) is not in a buffer of this device", i,
                                  sy::sdk::op_name(nodes[i]->op));
        inner[i].dst = dst;
        for (int32_t s = 0; s < nodes[i]->n_src; ++s) {
            if (nodes[i]->src[s] == nullptr) continue;
            const sy_tensor* src = translate(nodes[i]->src[s], size_t(s) + 1);
            if (src == nullptr)
                return sy::sdk::error(SY_ERR_INVALID_ARGUMENT,
                                      "sim: src%d of node %zu (%s) is not in a buffer of this "
                                      "device",
                                      s, i, sy::sdk::op_name(nodes[i]->op));
            inner[i].src[s] = src;
        }
        pointers[i] = &inner[i];
    }
    if (sy_status s = g_inner.compute(ctx, 0, pointers.data(), count); s.code) return s;
    g_nodes += count;
    if (g_settings.product_delay_us > 0) {
        size_t products = 0;
        for (size_t i = 0; i < count; ++i)
            products += nodes[i]->op == SY_OP_MUL_MAT || nodes[i]->op == SY_OP_MUL_MAT_ID ||
                        (nodes[i]->op == SY_OP_NAMED && nodes[i]->named_op != nullptr &&
                         std::strncmp(nodes[i]->named_op, "moe.", 4) == 0);
        auto& until = g_busy_until[device];
        until = std::max(until, std::chrono::steady_clock::now()) +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double, std::micro>(g_settings.product_delay_us *
                                                              double(products)));
    }
    return sy::sdk::ok();
}

sy_status set_option(void* ctx, const char* key, const char* value) {
    Settings& s = g_settings;
    double* field = nullptr;
    const std::string k = key;
    if (k == "gflops") field = &s.gflops;
    if (k == "memory_gbps") field = &s.memory_gbps;
    if (k == "link_gbps") field = &s.link_gbps;
    if (k == "link_latency_us") field = &s.link_latency_us;
    if (k == "launch_us") field = &s.launch_us;
    if (k == "memory_mib") field = &s.memory_mib;
    if (k == "product_delay_us") field = &s.product_delay_us;
    if (k == "devices") field = &s.devices;
    if (field == nullptr)
        return g_inner.set_option
                   ? g_inner.set_option(ctx, key, value)
                   : sy::sdk::error(SY_ERR_UNSUPPORTED, "sim: unknown option '%s'", key);
    char* end = nullptr;
    const double v = std::strtod(value, &end);
    if (end == value || *end != '\0' || !std::isfinite(v) || v < 0 ||
        (v == 0 && k != "link_latency_us" && k != "launch_us" && k != "product_delay_us"))
        return sy::sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "sim: option '%s': '%s' is not a positive number", key, value);
    if (k == "devices" && (v != std::floor(v) || v < 1 || v > kMaxDevices))
        return sy::sdk::error(SY_ERR_INVALID_ARGUMENT, "sim: devices '%s': 1 to %d", value,
                              kMaxDevices);
    *field = v;
    return sy::sdk::ok();
}

// The CPU plugin's answers for any of our devices (it has one).
sy_status supports(void* ctx, int32_t device, const sy_node* node, int32_t* supported) {
    if (sy_status s = no_device(device); s.code) return s;
    return g_inner.supports(ctx, 0, node, supported);
}

sy_status cost_params(void* ctx, int32_t device, const sy_cost_param** params, size_t* count) {
    if (sy_status s = no_device(device); s.code) return s;
    return g_inner.cost_params ? g_inner.cost_params(ctx, 0, params, count)
                               : sy::sdk::error(SY_ERR_UNSUPPORTED, "sim: no cost parameters");
}

sy_status synchronize(void* ctx, int32_t device) {
    if (sy_status s = no_device(device); s.code) return s;
    std::this_thread::sleep_until(g_busy_until[device]);
    return g_inner.synchronize(ctx, 0);
}

void shutdown(void* ctx) {
    g_inner.shutdown(ctx);
    dlclose(g_library);
    g_library = nullptr;
    g_settings = Settings{};
    for (uint64_t& a : g_allocated) a = 0;
    std::lock_guard<std::mutex> lock(g_host_mutex);
    g_registered.clear();
}

}  // namespace

// Bytes set into and got from this device's buffers and nodes computed since load or the last
// reset (reset != 0 zeroes them after reading).
extern "C" SY_EXPORT void sy_sim_counters(uint64_t* to_device, uint64_t* to_host, uint64_t* nodes,
                                          int reset) {
    if (to_device) *to_device = g_to_device;
    if (to_host) *to_host = g_to_host;
    if (nodes) *nodes = g_nodes;
    if (reset) g_to_device = g_to_host = g_nodes = 0;
}

// compute() calls since load or the last reset, and how many there had been at the last
// buffer_get (reset != 0 zeroes both).
extern "C" SY_EXPORT void sy_sim_order(uint64_t* computes, uint64_t* computes_at_last_get,
                                       int reset) {
    if (computes) *computes = g_computes;
    if (computes_at_last_get) *computes_at_last_get = g_computes_at_get;
    if (reset) g_computes = g_computes_at_get = 0;
}

// Host memory ranges registered now, and transfers (buffer_set / buffer_get) through registered
// memory and in all since load or the last reset (reset != 0 zeroes the transfer counts).
extern "C" SY_EXPORT void sy_sim_host_memory(uint64_t* registered, uint64_t* pinned_transfers,
                                             uint64_t* transfers, int reset) {
    std::lock_guard<std::mutex> lock(g_host_mutex);
    if (registered) *registered = g_registered.size();
    if (pinned_transfers) *pinned_transfers = g_pinned_transfers;
    if (transfers) *transfers = g_transfers;
    if (reset) g_pinned_transfers = g_transfers = 0;
}

extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    if (sy_status s = sy::sdk::check_host(host, api, "sim"); s.code) return s;
    if (g_library != nullptr) return sy::sdk::error(SY_ERR_BACKEND, "sim: one instance at a time");
    // SWITCHYARD_SIM_CPU_PLUGIN: the CPU plugin variant the host itself loaded (the command-line
    // tests, where the host picks the best variant for this CPU), so that a graph split between
    // the cpu and this device computes bit for bit what the cpu alone computes.
    const char* variant = std::getenv("SWITCHYARD_SIM_CPU_PLUGIN");
    g_library =
        dlopen(variant && *variant ? variant : SWITCHYARD_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (g_library == nullptr) return sy::sdk::error(SY_ERR_BACKEND, "sim: %s", dlerror());
    auto init = reinterpret_cast<sy_plugin_init_fn>(dlsym(g_library, SY_PLUGIN_INIT_SYMBOL));
    g_inner = sy_plugin_api{};
    g_inner.struct_size = sizeof g_inner;
    if (sy_status s =
            init ? init(host, &g_inner) : sy::sdk::error(SY_ERR_BACKEND, "sim: no sy_plugin_init");
        s.code) {
        dlclose(g_library);
        g_library = nullptr;
        return s;
    }
    sy_plugin_api table = g_inner;
    table.name = "sim";
    table.version = "0.1.0";
    table.build_info = "simulated accelerator (tests only) over the CPU plugin's kernels";
    table.device_count = device_count;
    table.device_props = device_props;
    table.estimate = estimate;
    table.buffer_alloc = buffer_alloc;
    table.buffer_free = buffer_free;
    table.buffer_set = buffer_set;
    table.buffer_get = buffer_get;
    table.copy_tensors = copy_tensors;
    table.compute = compute;
    table.supports = supports;
    table.cost_params = g_inner.cost_params ? cost_params : nullptr;
    table.synchronize = synchronize;
    table.set_option = set_option;
    table.shutdown = shutdown;
    table.host_register = host_register;
    table.host_unregister = host_unregister;
    sy::sdk::publish_api(table, api);
    return sy::sdk::ok();
}
