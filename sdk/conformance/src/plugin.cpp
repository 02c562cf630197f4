// Loading a plugin with plain dlopen/dlsym and a minimal host API. The SDK must not depend on
// core/, so this is its own small loader (no search paths, no policy).
#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "switchyard/conformance.hpp"
#include "switchyard/sdk.hpp"

namespace sy::conformance {

namespace {

struct HostContext {
    int32_t min_level = SY_LOG_WARN;
};

void host_log(void* host_ctx, int32_t level, const char* plugin, const char* message) {
    const auto* ctx = static_cast<const HostContext*>(host_ctx);
    if (ctx && level < ctx->min_level) return;
    static const char* const names[] = {"debug", "info", "warn", "error"};
    const char* name = level >= 0 && level <= 3 ? names[level] : "log";
    std::fprintf(stderr, "[%s] %s: %s\n", plugin ? plugin : "plugin", name, message ? message : "");
}

void* host_alloc(void*, size_t size, size_t alignment) {
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    if ((alignment & (alignment - 1)) != 0) return nullptr;
    const size_t rounded = (size + alignment - 1) / alignment * alignment;
    return std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
}

void host_free(void*, void* ptr) {
    std::free(ptr);
}

HostContext quiet_context{SY_LOG_WARN};
HostContext verbose_context{SY_LOG_DEBUG};

std::string dl_error() {
    const char* e = dlerror();
    return e ? e : "unknown dlopen error";
}

std::string status_text(const sy_status& st) {
    return std::string(sdk::status_name(st.code)) +
           (st.message && *st.message ? std::string(": ") + st.message : std::string());
}

ProbeInfo read_probe(void* library) {
    ProbeInfo p;
    auto probe = reinterpret_cast<sy_plugin_probe_fn>(dlsym(library, SY_PLUGIN_PROBE_SYMBOL));
    if (!probe) return p;
    sy_probe_info info{};
    info.struct_size = sizeof info;
    p.has_probe = true;
    p.score = probe(&info);  // the return value is the score (as the core's host reads it)
    if (info.name) p.name = info.name;
    if (info.variant) p.variant = info.variant;
    return p;
}

}  // namespace

ProbeInfo Plugin::probe(const std::string& path) {
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) throw std::runtime_error(path + ": cannot load: " + dl_error());
    ProbeInfo p = read_probe(library);
    dlclose(library);
    return p;
}

std::unique_ptr<Plugin> Plugin::load(const std::string& path, bool verbose_log) {
    std::unique_ptr<Plugin> plugin(new Plugin());
    plugin->path_ = path;
    plugin->library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!plugin->library_) throw std::runtime_error(path + ": cannot load: " + dl_error());

    plugin->probe_ = read_probe(plugin->library_);
    if (plugin->probe_.has_probe && plugin->probe_.score <= 0)
        throw NotRunnable(path + ": variant '" + plugin->probe_.variant +
                          "' cannot run on this machine (probe score 0)");

    auto init = reinterpret_cast<sy_plugin_init_fn>(dlsym(plugin->library_, SY_PLUGIN_INIT_SYMBOL));
    if (!init)
        throw std::runtime_error(path + ": no '" SY_PLUGIN_INIT_SYMBOL
                                        "' symbol (not a switchyard plugin)");
    static sy_host_api host[2];
    for (int i = 0; i < 2; ++i) {
        host[i] = sy_host_api{};
        host[i].struct_size = sizeof(sy_host_api);
        host[i].abi_major = SY_ABI_VERSION_MAJOR;
        host[i].abi_minor = SY_ABI_VERSION_MINOR;
        host[i].host_version = "switchyard-conformance";
        host[i].host_ctx = i ? &verbose_context : &quiet_context;
        host[i].log = host_log;
        host[i].alloc_host = host_alloc;
        host[i].free_host = host_free;
    }
    plugin->api_.struct_size = sizeof(sy_plugin_api);
    const sy_status st = init(&host[verbose_log ? 1 : 0], &plugin->api_);
    if (st.code != SY_OK) throw std::runtime_error(path + ": init failed: " + status_text(st));
    plugin->initialized_ = true;

    const sy_plugin_api& api = plugin->api_;
    if (api.abi_major != SY_ABI_VERSION_MAJOR)
        throw std::runtime_error(path + ": plugin built for ABI " + std::to_string(api.abi_major) +
                                 "." + std::to_string(api.abi_minor) + ", the kit has " +
                                 std::to_string(SY_ABI_VERSION_MAJOR));
#define SY_REQUIRE(field)                                                                   \
    if (api.struct_size < offsetof(sy_plugin_api, field) + sizeof(api.field) || !api.field) \
        throw std::runtime_error(path + ": function table lacks '" #field "'");
    SY_REQUIRE(name)
    SY_REQUIRE(device_count)
    SY_REQUIRE(capabilities)
    SY_REQUIRE(supports)
    SY_REQUIRE(buffer_alloc)
    SY_REQUIRE(buffer_free)
    SY_REQUIRE(buffer_set)
    SY_REQUIRE(buffer_get)
    SY_REQUIRE(compute)
    SY_REQUIRE(synchronize)
    SY_REQUIRE(shutdown)
#undef SY_REQUIRE
    return plugin;
}

Plugin::~Plugin() {
    if (initialized_ && api_.shutdown) api_.shutdown(api_.ctx);
    if (library_) dlclose(library_);
}

std::string Plugin::name() const {
    std::string n = api_.name ? api_.name : "?";
    if (!probe_.variant.empty()) n += " (" + probe_.variant + ")";
    return n;
}

int32_t Plugin::device_count() const {
    int32_t count = 0;
    const sy_status st = api_.device_count(api_.ctx, &count);
    if (st.code != SY_OK)
        throw std::runtime_error(path_ + ": device_count failed: " + status_text(st));
    return count;
}

std::vector<sy_capability> Plugin::capabilities() const {
    const sy_capability* rows = nullptr;
    size_t count = 0;
    const sy_status st = api_.capabilities(api_.ctx, &rows, &count);
    if (st.code != SY_OK)
        throw std::runtime_error(path_ + ": capabilities failed: " + status_text(st));
    if (count > 0 && !rows) throw std::runtime_error(path_ + ": capabilities returned NULL rows");
    std::vector<sy_capability> out;
    for (size_t i = 0; i < count; ++i) {
        sy_capability c{};
        const size_t n = rows[i].struct_size < sizeof c ? rows[i].struct_size : sizeof c;
        if (n < offsetof(sy_capability, src_type) + sizeof c.src_type)
            throw std::runtime_error(path_ + ": capability row " + std::to_string(i) +
                                     " has struct_size " + std::to_string(rows[i].struct_size) +
                                     ", too small");
        std::memcpy(&c, &rows[i], n);
        c.struct_size = sizeof c;
        out.push_back(c);
    }
    return out;
}

}  // namespace sy::conformance
