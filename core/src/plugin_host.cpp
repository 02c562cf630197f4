// Plugin loading through Boost.DLL. Every failure becomes one line naming the file and the reason;
// nothing a plugin does at load time may take the host down with it.
#define BOOST_DLL_USE_STD_FS
#include "switchyard/core/plugin_host.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <boost/dll/shared_library.hpp>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "switchyard/sdk.hpp"
#include "switchyard/version.hpp"

namespace fs = std::filesystem;

namespace sy {
namespace {

void host_log(void*, int32_t level, const char* plugin, const char* message) {
    static const char* const names[] = {"debug", "info", "warning", "error"};
    if (level < SY_LOG_WARN && !std::getenv("SWITCHYARD_DEBUG")) return;
    const char* name = (level >= 0 && level <= 3) ? names[level] : "log";
    std::fprintf(stderr, "[%s] %s: %s\n", plugin ? plugin : "plugin", name, message ? message : "");
}

void* host_alloc(void*, size_t size, size_t alignment) {
    if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return nullptr;
    void* p = nullptr;
    if (posix_memalign(&p, alignment, size == 0 ? 1 : size) != 0) return nullptr;
    return p;
}

void host_free(void*, void* p) {
    std::free(p);
}

const sy_host_api& host_api() {
    static const sy_host_api api = [] {
        sy_host_api a{};
        a.struct_size = sizeof(sy_host_api);
        a.abi_major = SY_ABI_VERSION_MAJOR;
        a.abi_minor = SY_ABI_VERSION_MINOR;
        a.host_version = SWITCHYARD_VERSION;
        a.log = host_log;
        a.alloc_host = host_alloc;
        a.free_host = host_free;
        return a;
    }();
    return api;
}

// A library whose init succeeded but whose function table the host refused: never called again
// (not even shutdown: the table's layout may not be this ABI's), and never unloaded, since the
// plugin may have started threads in init that still run its code.
void keep_loaded(std::unique_ptr<boost::dll::shared_library> library) {
    static auto* kept = new std::vector<std::unique_ptr<boost::dll::shared_library>>();
    kept->push_back(std::move(library));
}

// The most rows a plugin may return from capabilities, cost_params or named_ops, and the largest
// row struct it may declare.
constexpr size_t kMaxPluginRows = size_t(1) << 16;
constexpr uint32_t kMaxRowStruct = 1 << 16;

// Copies of `count` rows a plugin returned, walked with the struct_size the plugin declares in
// each row (a newer minor ABI may add fields; the host reads the fields it knows, zero past the
// plugin's size). `known` is the end of the last field the host reads.
template <typename Row>
std::vector<Row> plugin_rows(const Row* rows, size_t count, size_t known, const std::string& what) {
    if (rows == nullptr || count == 0) return {};
    if (count > kMaxPluginRows)
        throw Error(what + ": " + std::to_string(count) + " rows, more than " +
                    std::to_string(kMaxPluginRows));
    const auto* bytes = reinterpret_cast<const unsigned char*>(rows);
    uint32_t stride = 0;
    std::memcpy(&stride, bytes, sizeof stride);
    if (stride < known || stride > kMaxRowStruct)
        throw Error(what + ": rows declare struct_size " + std::to_string(stride) +
                    " (this host reads " + std::to_string(known) + " bytes of each, at most " +
                    std::to_string(kMaxRowStruct) + ")");
    std::vector<Row> out(count);
    for (size_t i = 0; i < count; ++i) {
        const unsigned char* row = bytes + i * stride;
        uint32_t size = 0;
        std::memcpy(&size, row, sizeof size);
        if (size != stride)
            throw Error(what + ": row " + std::to_string(i) + " declares struct_size " +
                        std::to_string(size) + ", row 0 " + std::to_string(stride));
        std::memcpy(&out[i], row, std::min<size_t>(stride, sizeof(Row)));
        out[i].struct_size = sizeof(Row);
    }
    return out;
}

// The functions every plugin must provide; the optional ones may be NULL.
std::string missing_required_function(const sy_plugin_api& api) {
#define SY_REQUIRE(field)                                                       \
    if (api.struct_size < offsetof(sy_plugin_api, field) + sizeof(api.field) || \
        api.field == nullptr)                                                   \
        return #field;
    SY_REQUIRE(name)
    SY_REQUIRE(device_count)
    SY_REQUIRE(device_props)
    SY_REQUIRE(capabilities)
    SY_REQUIRE(supports)
    SY_REQUIRE(buffer_alloc)
    SY_REQUIRE(buffer_free)
    SY_REQUIRE(buffer_set)
    SY_REQUIRE(buffer_get)
    SY_REQUIRE(copy_tensors)
    SY_REQUIRE(compute)
    SY_REQUIRE(synchronize)
    SY_REQUIRE(shutdown)
#undef SY_REQUIRE
    return {};
}

template <typename Fn>
Fn optional_fn(const sy_plugin_api& api, Fn sy_plugin_api::*field, size_t offset) {
    if (api.struct_size < offset + sizeof(Fn)) return nullptr;
    return api.*field;
}
#define SY_OPTIONAL(api, field) \
    optional_fn(api, &sy_plugin_api::field, offsetof(sy_plugin_api, field))

bool looks_like_plugin_file(const fs::path& p) {
    const std::string name = p.filename().string();
    return name.starts_with("libswitchyard-") && p.extension() == ".so";
}

}  // namespace

// ---- Buffer -----------------------------------------------------------------------------------

Buffer::Buffer(Buffer&& other) noexcept : owner_(other.owner_), buffer_(other.buffer_) {
    other.owner_ = nullptr;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
    if (this != &other) {
        release();
        owner_ = other.owner_;
        buffer_ = other.buffer_;
        other.owner_ = nullptr;
    }
    return *this;
}

Buffer::~Buffer() {
    release();
}

void Buffer::release() {
    if (owner_) {
        try {
            owner_->free(buffer_);
        } catch (const Error& e) {
            std::fprintf(stderr, "switchyard: %s\n", e.what());
        }
        owner_ = nullptr;
    }
}

// ---- Plugin -------------------------------------------------------------------------------------

std::unique_ptr<Plugin> Plugin::load(const fs::path& file) {
    const std::string where = file.string();
    std::error_code fs_error;
    if (!fs::exists(file, fs_error)) throw Error(where + ": no such file");
    if (fs::is_directory(file, fs_error)) throw Error(where + ": is a directory, not a plugin");

    std::unique_ptr<Plugin> plugin(new Plugin());
    plugin->file_ = file;
    plugin->library_ = std::make_unique<boost::dll::shared_library>();
    std::error_code ec;
    dlerror();  // clear, so that the message below is this load's
    plugin->library_->load(fs::absolute(file),
                           boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
    if (ec || !plugin->library_->is_loaded()) {
        const char* why = dlerror();
        throw Error(where + ": cannot load: " + (why ? why : ec.message()));
    }
    if (!plugin->library_->has(SY_PLUGIN_INIT_SYMBOL)) {
        throw Error(where + ": no entry symbol '" SY_PLUGIN_INIT_SYMBOL
                            "' (not a switchyard plugin)");
    }

    if (plugin->library_->has(SY_PLUGIN_PROBE_SYMBOL)) {
        auto probe = plugin->library_->get<int32_t(sy_probe_info*)>(SY_PLUGIN_PROBE_SYMBOL);
        sy_probe_info info{};
        info.struct_size = sizeof(info);
        plugin->score_ = probe(&info);
        if (info.variant) plugin->variant_ = info.variant;
        if (info.name) plugin->name_ = info.name;
        if (plugin->score_ <= 0) {
            throw Error(where + ": variant '" + plugin->variant_ +
                        "' cannot run on this machine (probe score 0)");
        }
    }

    auto init =
        plugin->library_->get<sy_status(const sy_host_api*, sy_plugin_api*)>(SY_PLUGIN_INIT_SYMBOL);
    sy_plugin_api& api = plugin->api_;
    api.struct_size = sizeof(sy_plugin_api);
    const sy_status st = init(&host_api(), &api);
    if (st.code != SY_OK) {
        std::string why = (st.message && *st.message) ? st.message : sdk::status_name(st.code);
        throw Error(where + ": " + (st.code == SY_ERR_ABI ? "ABI mismatch: " : "refused: ") + why);
    }
    // Until the table passes these checks nothing in it is called, shutdown included.
    const auto refuse = [&](const std::string& why) {
        keep_loaded(std::move(plugin->library_));
        throw Error(where + ": " + why);
    };
    if (api.struct_size < offsetof(sy_plugin_api, abi_minor) + sizeof(api.abi_minor))
        refuse("function table too small (" + std::to_string(api.struct_size) + " bytes)");
    if (api.abi_major != SY_ABI_VERSION_MAJOR) {
        refuse("ABI mismatch: plugin built for ABI " + std::to_string(api.abi_major) + "." +
               std::to_string(api.abi_minor) + ", host has " +
               std::to_string(SY_ABI_VERSION_MAJOR) + "." + std::to_string(SY_ABI_VERSION_MINOR));
    }
    if (api.struct_size < offsetof(sy_plugin_api, name) + sizeof(api.name))
        refuse("function table too small (" + std::to_string(api.struct_size) + " bytes)");
    if (const std::string missing = missing_required_function(api); !missing.empty())
        refuse("function table lacks required '" + missing + "'");
    plugin->initialized_ = true;  // from here on, shutdown() runs on destruction
    const std::string api_name = api.name;
    if (api_name.empty()) throw Error(where + ": plugin reports an empty name");
    if (!plugin->name_.empty() && plugin->name_ != api_name) {
        throw Error(where + ": probe says '" + plugin->name_ + "' but init says '" + api_name +
                    "'");
    }
    plugin->name_ = api_name;
    // The tables the host keeps reading are checked once here, so that a plugin whose rows are
    // malformed fails to load (one line) instead of failing whatever reads them later.
    try {
        (void)plugin->capabilities();
        (void)plugin->named_ops();
    } catch (const Error& e) {
        throw Error(where + ": " + e.what());
    }
    return plugin;
}

Plugin::~Plugin() {
    // shutdown() before the library goes: the plugin's threads and memory must not outlive
    // its code. library_ is destroyed after this body.
    if (initialized_ && api_.shutdown) api_.shutdown(api_.ctx);
}

std::string Plugin::version() const {
    return api_.version ? api_.version : "";
}
std::string Plugin::build_info() const {
    return api_.build_info ? api_.build_info : "";
}

int32_t Plugin::device_count() const {
    int32_t n = 0;
    check(api_.device_count(api_.ctx, &n), name_ + ".device_count");
    return n;
}

sy_device_props Plugin::device_props(int32_t device) const {
    sy_device_props props{};
    props.struct_size = sizeof(props);
    check(api_.device_props(api_.ctx, device, &props), name_ + ".device_props");
    props.name[sizeof(props.name) - 1] = '\0';
    props.description[sizeof(props.description) - 1] = '\0';
    return props;
}

std::vector<sy_capability> Plugin::capabilities() const {
    const sy_capability* rows = nullptr;
    size_t count = 0;
    check(api_.capabilities(api_.ctx, &rows, &count), name_ + ".capabilities");
    return plugin_rows(rows, count, offsetof(sy_capability, src_type) + sizeof(rows->src_type),
                       name_ + ".capabilities");
}

bool Plugin::supports(int32_t device, const sy_node& node) const {
    int32_t yes = 0;
    check(api_.supports(api_.ctx, device, &node, &yes), name_ + ".supports");
    return yes != 0;
}

std::optional<double> Plugin::estimate(int32_t device, const sy_node& node) const {
    auto fn = SY_OPTIONAL(api_, estimate);
    if (!fn) return std::nullopt;
    double ns = 0;
    const sy_status st = fn(api_.ctx, device, &node, &ns);
    if (st.code == SY_ERR_UNSUPPORTED) return std::nullopt;
    check(st, name_ + ".estimate");
    return ns;
}

std::vector<sy_cost_param> Plugin::cost_params(int32_t device) const {
    auto fn = SY_OPTIONAL(api_, cost_params);
    if (!fn) return {};
    const sy_cost_param* rows = nullptr;
    size_t count = 0;
    check(fn(api_.ctx, device, &rows, &count), name_ + ".cost_params");
    return plugin_rows(rows, count, offsetof(sy_cost_param, unit) + sizeof(rows->unit),
                       name_ + ".cost_params");
}

std::vector<sy_named_op_info> Plugin::named_ops() const {
    auto fn = SY_OPTIONAL(api_, named_ops);
    if (!fn) return {};
    const sy_named_op_info* ops = nullptr;
    size_t count = 0;
    check(fn(api_.ctx, &ops, &count), name_ + ".named_ops");
    std::vector<sy_named_op_info> rows =
        plugin_rows(ops, count, offsetof(sy_named_op_info, summary) + sizeof(ops->summary),
                    name_ + ".named_ops");
    // "namespace.name": a non-empty namespace and a non-empty name around the first dot.
    for (const sy_named_op_info& op : rows) {
        const std::string_view name = op.name ? op.name : "";
        const size_t dot = name.find('.');
        if (dot == std::string_view::npos || dot == 0 || dot + 1 >= name.size())
            throw Error("plugin '" + name_ + "' offers a named op '" + std::string(name) +
                        "' that is not of the form namespace.name");
    }
    return rows;
}

bool Plugin::provides(std::string_view named_op, uint32_t schema_version) const {
    for (const sy_named_op_info& op : named_ops()) {
        if (op.name && named_op == op.name && op.schema_version == schema_version) return true;
    }
    return false;
}

Buffer Plugin::alloc(int32_t device, uint64_t size) {
    sy_buffer buffer{};
    buffer.struct_size = sizeof(buffer);
    const std::string what = name_ + ".buffer_alloc(" + std::to_string(size) + " bytes)";
    check(api_.buffer_alloc(api_.ctx, device, size, &buffer), what);
    buffer.device = device;  // the host's record of where it lives, whatever the plugin wrote
    // What comes back must be what was asked for: the host writes up to `size` bytes through it.
    std::string wrong;
    if (buffer.size < size)
        wrong = "a buffer of " + std::to_string(buffer.size) + " bytes";
    else if (buffer.host_visible && buffer.base == nullptr && size > 0)
        wrong = "a host-visible buffer without an address";
    if (!wrong.empty()) {
        api_.buffer_free(api_.ctx, &buffer);
        throw Error(what + " returned " + wrong);
    }
    return Buffer(this, buffer);
}

void Plugin::free(sy_buffer& buffer) {
    check(api_.buffer_free(api_.ctx, &buffer), name_ + ".buffer_free");
}

void Plugin::set(const Buffer& buffer, uint64_t offset, const void* src, uint64_t size) {
    check(api_.buffer_set(api_.ctx, &buffer.raw(), offset, src, size), name_ + ".buffer_set");
}

void Plugin::get(const Buffer& buffer, uint64_t offset, void* dst, uint64_t size) const {
    check(api_.buffer_get(api_.ctx, &buffer.raw(), offset, dst, size), name_ + ".buffer_get");
}

void Plugin::copy(std::span<const sy_copy> copies) {
    check(api_.copy_tensors(api_.ctx, copies.data(), copies.size()), name_ + ".copy_tensors");
}

void Plugin::compute(int32_t device, std::span<const sy_node* const> nodes) {
    check(api_.compute(api_.ctx, device, nodes.data(), nodes.size()), name_ + ".compute");
}

void Plugin::synchronize(int32_t device) {
    check(api_.synchronize(api_.ctx, device), name_ + ".synchronize");
}

bool Plugin::set_option(std::string_view key, std::string_view value) {
    auto fn = SY_OPTIONAL(api_, set_option);
    if (!fn) return false;
    const std::string k(key), v(value);
    const sy_status st = fn(api_.ctx, k.c_str(), v.c_str());
    if (st.code == SY_ERR_UNSUPPORTED) return false;
    check(st, name_ + ": option " + k + " = " + v);
    return true;
}

void Plugin::release_constants(uint64_t constant_id) noexcept {
    auto fn = SY_OPTIONAL(api_, release_constants);
    if (!fn || constant_id == 0) return;
    const sy_status st = fn(api_.ctx, constant_id);
    if (st.code != SY_OK)
        host_log(nullptr, SY_LOG_WARN, name_.c_str(),
                 ("release_constants: " + std::string(st.message ? st.message : "failed")).c_str());
}

bool Plugin::register_host(void* ptr, uint64_t size) noexcept {
    auto reg = SY_OPTIONAL(api_, host_register);
    auto unreg = SY_OPTIONAL(api_, host_unregister);
    if (!reg || !unreg || ptr == nullptr || size == 0) return false;
    const sy_status st = reg(api_.ctx, ptr, size);
    if (st.code != SY_OK && st.code != SY_ERR_UNSUPPORTED)
        host_log(nullptr, SY_LOG_DEBUG, name_.c_str(),
                 ("host_register: " + std::string(st.message ? st.message : "failed")).c_str());
    return st.code == SY_OK;
}

void Plugin::unregister_host(void* ptr) noexcept {
    auto unreg = SY_OPTIONAL(api_, host_unregister);
    if (!unreg || ptr == nullptr) return;
    const sy_status st = unreg(api_.ctx, ptr);
    if (st.code != SY_OK)
        host_log(nullptr, SY_LOG_WARN, name_.c_str(),
                 ("host_unregister: " + std::string(st.message ? st.message : "failed")).c_str());
}

// ---- PluginHost ---------------------------------------------------------------------------------

void PluginHost::release_constants(uint64_t constant_id) noexcept {
    for (const auto& p : plugins_) p->release_constants(constant_id);
}

PluginHost::~PluginHost() {
    while (!plugins_.empty()) plugins_.pop_back();  // reverse load order
}

fs::path PluginHost::default_plugin_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    return exe.parent_path().parent_path() / SWITCHYARD_PLUGIN_RELATIVE_DIR;
}

bool PluginHost::add(std::unique_ptr<Plugin> plugin, bool requested) {
    if (Plugin* existing = find(plugin->name())) {
        if (existing->file() == plugin->file()) return true;
        failures_.push_back({plugin->file().string(),
                             "a plugin named '" + plugin->name() + "' is already loaded from " +
                                 existing->file().string(),
                             requested});
        return false;
    }
    plugins_.push_back(std::move(plugin));
    return true;
}

bool PluginHost::load_path(const fs::path& file, bool requested) {
    try {
        return add(Plugin::load(file), requested);
    } catch (const Error& e) {
        failures_.push_back({file.string(), e.what(), requested});
    } catch (const std::exception& e) {
        failures_.push_back({file.string(), file.string() + ": " + e.what(), requested});
    }
    return false;
}

namespace {

struct Candidate {
    fs::path file;
    std::string name;
    std::string variant;
    int32_t score = 0;
};

// Probes a plugin file without initializing it: its backend name, variant and score. A file
// without a probe symbol is named after its file name (libswitchyard-<name>.so).
std::optional<Candidate> probe_file(const fs::path& file) {
    Candidate c{file, {}, {}, 1};
    std::string stem = file.stem().string();
    stem = stem.substr(std::string("libswitchyard-").size());
    c.name = stem;
    boost::dll::shared_library lib;
    std::error_code ec;
    lib.load(fs::absolute(file),
             boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local, ec);
    if (ec || !lib.is_loaded() || !lib.has(SY_PLUGIN_PROBE_SYMBOL)) return c;
    sy_probe_info info{};
    info.struct_size = sizeof(info);
    c.score = lib.get<int32_t(sy_probe_info*)>(SY_PLUGIN_PROBE_SYMBOL)(&info);
    if (info.name) c.name = info.name;
    if (info.variant) c.variant = info.variant;
    return c;
}

std::vector<fs::path> plugin_files_in(const fs::path& dir) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (looks_like_plugin_file(it->path())) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

bool PluginHost::load_name(std::string_view name, const std::vector<fs::path>& search_paths,
                           bool requested) {
    if (find(name)) return true;
    std::vector<Candidate> variants;
    for (const fs::path& dir : search_paths) {
        for (const fs::path& file : plugin_files_in(dir)) {
            const std::string stem = file.stem().string();
            const std::string exact = "libswitchyard-" + std::string(name);
            if (stem != exact && !stem.starts_with(exact + "-")) continue;
            if (auto c = probe_file(file); c && c->name == name) variants.push_back(*c);
        }
        if (!variants.empty()) break;  // earlier search paths win
    }
    if (variants.empty()) {
        std::string where;
        for (const fs::path& dir : search_paths)
            where += (where.empty() ? "" : ", ") + dir.string();
        failures_.push_back({std::string(name),
                             "plugin '" + std::string(name) + "' not found in " +
                                 (where.empty() ? "(no search paths)" : where),
                             requested});
        return false;
    }
    std::stable_sort(variants.begin(), variants.end(),
                     [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
    if (variants.front().score <= 0) {
        std::string tried;
        for (const Candidate& c : variants) tried += (tried.empty() ? "" : ", ") + c.variant;
        failures_.push_back({variants.front().file.string(),
                             "no variant of plugin '" + std::string(name) +
                                 "' can run on this machine (tried " + tried + ")",
                             requested});
        return false;
    }
    return load_path(variants.front().file, requested);
}

void PluginHost::load(const PluginHostConfig& config) {
    std::vector<fs::path> search = config.search_paths;
    if (const fs::path dir = default_plugin_dir(); !dir.empty()) search.push_back(dir);

    for (const auto* list : {&config.extra, &config.load}) {
        for (const std::string& item : *list) {
            const bool is_path = item.find('/') != std::string::npos || item.ends_with(".so");
            if (is_path) {
                load_path(item, true);
            } else {
                load_name(item, search, true);
            }
        }
    }
    if (!config.load.empty() || !config.load_all_found) return;

    // No list: every backend found in the search paths, its best variant each.
    std::map<std::string, bool> names;
    for (const fs::path& dir : search) {
        for (const fs::path& file : plugin_files_in(dir)) {
            if (auto c = probe_file(file)) names[c->name] = true;
        }
    }
    for (const auto& [name, _] : names) load_name(name, search, false);
}

bool PluginHost::any_requested_failure() const {
    return std::any_of(failures_.begin(), failures_.end(),
                       [](const PluginFailure& f) { return f.requested; });
}

Plugin* PluginHost::find(std::string_view name) const {
    for (const auto& p : plugins_) {
        if (p->name() == name) return p.get();
    }
    return nullptr;
}

}  // namespace sy
