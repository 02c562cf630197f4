// The C++ side of plugin.h: a backend written as a C++ class and published as the C function
// table, with every entry guarded (no exception crosses the ABI), its pointer arguments and
// device index checked, and the entries the class does not implement left NULL or given their
// documented default. Header-only and optional: a plugin may implement plugin.h in plain C
// (sdk/examples/hello-plugin-c).
//
// The class (called Backend here) is constructed from the host's API and owns everything the
// plugin holds; shutdown deletes it. Its members take the C entries' arguments after `ctx`:
//
//   required
//     sy_status device_props(int32_t device, sy_device_props* props);   // a full, zeroed struct
//     sy_status capabilities(const sy_capability** rows, size_t* count);
//     sy_status supports(int32_t device, const sy_node* node, int32_t* supported);
//     sy_status compute(int32_t device, const sy_node* const* nodes, size_t count);
//     buffer_alloc, buffer_free, buffer_set, buffer_get, copy_tensors   (or derive from
//         sdk::HostMemory, switchyard/host_buffers.hpp, for host-visible buffers)
//   optional
//     int32_t device_count();                    // default 1
//     sy_status synchronize(int32_t device);     // default: compute() finished its work
//     sy_status estimate(int32_t device, const sy_node* node, double* nanoseconds);
//     sy_status cost_params(int32_t device, const sy_cost_param** params, size_t* count);
//     sy_status named_ops(const sy_named_op_info** ops, size_t* count);
//     sy_status set_option(const char* key, const char* value);
//     sy_status release_constants(uint64_t constant_id);
//     sy_status host_register(void* ptr, uint64_t size);
//     sy_status host_unregister(void* ptr);
//     const char* build_info();                  // default ""
//
// A member may also throw: sdk::Failure gives its code, std::bad_alloc SY_ERR_OUT_OF_MEMORY,
// anything else SY_ERR_BACKEND, each with a message naming the entry. The entry point is then:
//
//   extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
//       return sy::sdk::publish_plugin<Backend>(host, api, {"name", "0.1.0"});
//   }
#pragma once

#if __cplusplus < 202002L
#error "switchyard/plugin.hpp needs C++20 (sdk.hpp and plugin.h alone work with C++17 and C)"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <utility>

#include "switchyard/plugin.h"
#include "switchyard/sdk.hpp"

namespace sy::sdk {

// What the host reads before any call: the backend's name ("cpu", "cuda": what users type in
// placement rules) and the plugin's version.
struct PluginIdentity {
    const char* name;
    const char* version;
};

namespace detail {

// The context the host passes back: the backend and the name its messages use.
template <class Backend>
struct Published {
    Backend* backend;
    const char* name;
};

template <class Backend>
class Trampolines {
    static Backend& self(void* ctx) { return *static_cast<Published<Backend>*>(ctx)->backend; }
    static const char* name(void* ctx) { return static_cast<Published<Backend>*>(ctx)->name; }

    static int32_t devices(void* ctx) {
        if constexpr (requires(Backend & b) { b.device_count(); })
            return self(ctx).device_count();
        else
            return 1;
    }

    static sy_status check_device(void* ctx, const char* fn, int32_t device) {
        const int32_t n = devices(ctx);
        if (device >= 0 && device < n) return ok();
        return error(SY_ERR_INVALID_ARGUMENT, "%s: device %d does not exist (the %s plugin has %d)",
                     fn, device, name(ctx), n);
    }

    static sy_status null_argument(const char* fn) {
        return error(SY_ERR_INVALID_ARGUMENT, "%s: a pointer argument is NULL", fn);
    }

  public:
    static sy_status device_count(void* ctx, int32_t* count) {
        return guarded("device_count", [&] {
            if (count == nullptr) return null_argument("device_count");
            *count = devices(ctx);
            return ok();
        });
    }

    // The backend fills a full, zeroed struct; the host gets as much of it as its struct holds.
    static sy_status device_props(void* ctx, int32_t device, sy_device_props* props) {
        return guarded("device_props", [&] {
            if (props == nullptr) return null_argument("device_props");
            if (!SY_HAS_FIELD(props, launch_overhead_ns))
                return error(SY_ERR_ABI,
                             "device_props: struct_size %u is smaller than ABI 1.0's %zu",
                             props->struct_size, sizeof(sy_device_props));
            if (sy_status s = check_device(ctx, "device_props", device); s.code) return s;
            sy_device_props full{};
            full.struct_size = sizeof full;
            if (sy_status s = self(ctx).device_props(device, &full); s.code) return s;
            const uint32_t size =
                props->struct_size < sizeof full ? props->struct_size : uint32_t(sizeof full);
            full.struct_size = size;
            std::memcpy(static_cast<void*>(props), &full, size);
            return ok();
        });
    }

    static sy_status capabilities(void* ctx, const sy_capability** rows, size_t* count) {
        return guarded("capabilities", [&] {
            if (rows == nullptr || count == nullptr) return null_argument("capabilities");
            return self(ctx).capabilities(rows, count);
        });
    }

    static sy_status supports(void* ctx, int32_t device, const sy_node* node, int32_t* supported) {
        return guarded("supports", [&] {
            if (node == nullptr || supported == nullptr) return null_argument("supports");
            if (sy_status s = check_device(ctx, "supports", device); s.code) return s;
            return self(ctx).supports(device, node, supported);
        });
    }

    static sy_status estimate(void* ctx, int32_t device, const sy_node* node, double* ns) {
        return guarded("estimate", [&] {
            if (node == nullptr || ns == nullptr) return null_argument("estimate");
            if (sy_status s = check_device(ctx, "estimate", device); s.code) return s;
            return self(ctx).estimate(device, node, ns);
        });
    }

    static sy_status cost_params(void* ctx, int32_t device, const sy_cost_param** params,
                                 size_t* count) {
        return guarded("cost_params", [&] {
            if (params == nullptr || count == nullptr) return null_argument("cost_params");
            if (sy_status s = check_device(ctx, "cost_params", device); s.code) return s;
            return self(ctx).cost_params(device, params, count);
        });
    }

    static sy_status buffer_alloc(void* ctx, int32_t device, uint64_t size, sy_buffer* buffer) {
        return guarded("buffer_alloc", [&] {
            if (buffer == nullptr) return null_argument("buffer_alloc");
            if (sy_status s = check_device(ctx, "buffer_alloc", device); s.code) return s;
            return self(ctx).buffer_alloc(device, size, buffer);
        });
    }

    static sy_status buffer_free(void* ctx, sy_buffer* buffer) {
        return guarded("buffer_free", [&] {
            if (buffer == nullptr) return null_argument("buffer_free");
            return self(ctx).buffer_free(buffer);
        });
    }

    static sy_status buffer_set(void* ctx, const sy_buffer* buffer, uint64_t offset,
                                const void* src, uint64_t size) {
        return guarded("buffer_set", [&] {
            if (buffer == nullptr || (src == nullptr && size > 0))
                return null_argument("buffer_set");
            return self(ctx).buffer_set(buffer, offset, src, size);
        });
    }

    static sy_status buffer_get(void* ctx, const sy_buffer* buffer, uint64_t offset, void* dst,
                                uint64_t size) {
        return guarded("buffer_get", [&] {
            if (buffer == nullptr || (dst == nullptr && size > 0))
                return null_argument("buffer_get");
            return self(ctx).buffer_get(buffer, offset, dst, size);
        });
    }

    static sy_status copy_tensors(void* ctx, const sy_copy* copies, size_t count) {
        return guarded("copy_tensors", [&] {
            if (copies == nullptr && count > 0) return null_argument("copy_tensors");
            return self(ctx).copy_tensors(copies, count);
        });
    }

    static sy_status compute(void* ctx, int32_t device, const sy_node* const* nodes, size_t count) {
        return guarded("compute", [&] {
            if (nodes == nullptr && count > 0) return null_argument("compute");
            if (sy_status s = check_device(ctx, "compute", device); s.code) return s;
            return self(ctx).compute(device, nodes, count);
        });
    }

    static sy_status synchronize(void* ctx, int32_t device) {
        return guarded("synchronize", [&] {
            if (sy_status s = check_device(ctx, "synchronize", device); s.code) return s;
            if constexpr (requires(Backend & b, int32_t d) { b.synchronize(d); })
                return self(ctx).synchronize(device);
            else
                return ok();
        });
    }

    static sy_status named_ops(void* ctx, const sy_named_op_info** ops, size_t* count) {
        return guarded("named_ops", [&] {
            if (ops == nullptr || count == nullptr) return null_argument("named_ops");
            return self(ctx).named_ops(ops, count);
        });
    }

    static sy_status set_option(void* ctx, const char* key, const char* value) {
        return guarded("set_option", [&] {
            if (key == nullptr || value == nullptr) return null_argument("set_option");
            return self(ctx).set_option(key, value);
        });
    }

    static sy_status release_constants(void* ctx, uint64_t constant_id) {
        return guarded("release_constants",
                       [&] { return self(ctx).release_constants(constant_id); });
    }

    static sy_status host_register(void* ctx, void* ptr, uint64_t size) {
        return guarded("host_register", [&] {
            if (ptr == nullptr) return null_argument("host_register");
            return self(ctx).host_register(ptr, size);
        });
    }

    static sy_status host_unregister(void* ctx, void* ptr) {
        return guarded("host_unregister", [&] {
            if (ptr == nullptr) return null_argument("host_unregister");
            return self(ctx).host_unregister(ptr);
        });
    }

    static void shutdown(void* ctx) {
        auto* p = static_cast<Published<Backend>*>(ctx);
        delete p->backend;
        delete p;
    }
};

}  // namespace detail

// The whole of a C++ plugin's sy_plugin_init: checks the host (sdk::check_host), constructs
// Backend(host, args...) from a copy of the host's API (zero beyond what the host's struct
// holds) and hands the host the function table. A constructor that throws refuses to load:
// sdk::Failure with its code, std::bad_alloc as SY_ERR_OUT_OF_MEMORY, anything else as
// SY_ERR_REFUSED ("name: what", say a library the backend needs is missing).
template <class Backend, class... Args>
sy_status publish_plugin(const sy_host_api* host, sy_plugin_api* api, PluginIdentity id,
                         Args&&... args) {
    if (const sy_status s = check_host(host, api, id.name); s.code != SY_OK) return s;
    sy_host_api host_copy{};
    const size_t host_size =
        host->struct_size < sizeof host_copy ? host->struct_size : sizeof host_copy;
    std::memcpy(static_cast<void*>(&host_copy), host, host_size);
    host_copy.struct_size = uint32_t(host_size);

    auto* published = new (std::nothrow) detail::Published<Backend>{nullptr, id.name};
    if (published == nullptr) return error(SY_ERR_OUT_OF_MEMORY, "%s: out of host memory", id.name);
    try {
        published->backend = new Backend(host_copy, std::forward<Args>(args)...);
    } catch (const Failure& e) {
        delete published;
        return error(e.code(), "%s: %s", id.name, e.what());
    } catch (const std::bad_alloc&) {
        delete published;
        return error(SY_ERR_OUT_OF_MEMORY, "%s: out of host memory at start-up", id.name);
    } catch (const std::exception& e) {
        delete published;
        return error(SY_ERR_REFUSED, "%s: %s", id.name, e.what());
    } catch (...) {
        delete published;
        return error(SY_ERR_REFUSED, "%s: unknown failure at start-up", id.name);
    }

    using T = detail::Trampolines<Backend>;
    Backend& b = *published->backend;
    sy_plugin_api table{};
    table.ctx = published;
    table.name = id.name;
    table.version = id.version;
    table.build_info = "";
    if constexpr (requires { b.build_info(); }) table.build_info = b.build_info();
    table.device_count = T::device_count;
    table.device_props = T::device_props;
    table.capabilities = T::capabilities;
    table.supports = T::supports;
    if constexpr (requires(int32_t d, const sy_node* n, double* ns) { b.estimate(d, n, ns); })
        table.estimate = T::estimate;
    if constexpr (requires(int32_t d, const sy_cost_param** p, size_t* c) {
                      b.cost_params(d, p, c);
                  })
        table.cost_params = T::cost_params;
    table.buffer_alloc = T::buffer_alloc;
    table.buffer_free = T::buffer_free;
    table.buffer_set = T::buffer_set;
    table.buffer_get = T::buffer_get;
    table.copy_tensors = T::copy_tensors;
    table.compute = T::compute;
    table.synchronize = T::synchronize;
    if constexpr (requires(const sy_named_op_info** o, size_t* c) { b.named_ops(o, c); })
        table.named_ops = T::named_ops;
    if constexpr (requires(const char* k) { b.set_option(k, k); }) table.set_option = T::set_option;
    if constexpr (requires(uint64_t id) { b.release_constants(id); })
        table.release_constants = T::release_constants;
    if constexpr (requires(void* p, uint64_t n) {
                      b.host_register(p, n);
                      b.host_unregister(p);
                  }) {
        table.host_register = T::host_register;
        table.host_unregister = T::host_unregister;
    }
    table.shutdown = T::shutdown;
    publish_api(table, api);
    return ok();
}

}  // namespace sy::sdk
