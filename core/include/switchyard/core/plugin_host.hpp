// Loading backend plugins (Boost.DLL) and calling them through their C function table.
//
// A Plugin owns its shared library and its plugin context; destroying it calls the plugin's
// shutdown() and only then unloads the library. PluginHost keeps plugins in load order and
// destroys them in reverse, so nothing a plugin created outlives its code.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/core/error.hpp"
#include "switchyard/plugin.h"

namespace boost::dll {
class shared_library;
}

namespace sy {

class Plugin;

// A buffer allocated by a plugin, freed through it when this object dies.
class Buffer {
  public:
    Buffer() = default;
    Buffer(Plugin* owner, const sy_buffer& buffer) : owner_(owner), buffer_(buffer) {}
    Buffer(Buffer&& other) noexcept;
    Buffer& operator=(Buffer&& other) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer();

    const sy_buffer& raw() const { return buffer_; }
    const sy_buffer* get() const { return owner_ ? &buffer_ : nullptr; }
    void* base() const { return buffer_.base; }
    uint64_t size() const { return buffer_.size; }
    bool host_visible() const { return buffer_.host_visible != 0; }
    Plugin* owner() const { return owner_; }
    int32_t device() const { return buffer_.device; }  // the owner's device it lives on
    explicit operator bool() const { return owner_ != nullptr; }

  private:
    void release();
    Plugin* owner_ = nullptr;
    sy_buffer buffer_{};
};

class Plugin {
  public:
    // Loads `file`, probes it and initializes it. Throws Error naming the file and the reason.
    static std::unique_ptr<Plugin> load(const std::filesystem::path& file);
    ~Plugin();
    Plugin(const Plugin&) = delete;
    Plugin& operator=(const Plugin&) = delete;

    const std::string& name() const { return name_; }
    const std::string& variant() const { return variant_; }
    int32_t score() const { return score_; }
    const std::filesystem::path& file() const { return file_; }
    const sy_plugin_api& api() const { return api_; }
    std::string version() const;
    std::string build_info() const;

    int32_t device_count() const;
    sy_device_props device_props(int32_t device) const;
    std::vector<sy_capability> capabilities() const;
    bool supports(int32_t device, const sy_node& node) const;
    // Nanoseconds the plugin expects the node to take; nullopt when it gives no estimate.
    std::optional<double> estimate(int32_t device, const sy_node& node) const;
    std::vector<sy_cost_param> cost_params(int32_t device) const;
    std::vector<sy_named_op_info> named_ops() const;
    bool provides(std::string_view named_op, uint32_t schema_version) const;

    Buffer alloc(int32_t device, uint64_t size);
    void free(sy_buffer& buffer);
    void set(const Buffer& buffer, uint64_t offset, const void* src, uint64_t size);
    void get(const Buffer& buffer, uint64_t offset, void* dst, uint64_t size) const;
    void copy(std::span<const sy_copy> copies);
    void compute(int32_t device, std::span<const sy_node* const> nodes);
    void synchronize(int32_t device);
    // Returns false when the plugin does not know the option; throws on other errors.
    bool set_option(std::string_view key, std::string_view value);
    // Tells the plugin that tensors with this constant_id will not come again (ABI 1.1; nothing
    // for a plugin without the function). Never throws: a failure is logged.
    void release_constants(uint64_t constant_id) noexcept;
    // Offers host memory that crosses to this plugin's buffers every step for direct transfers
    // (ABI 1.2, host_register): true when the plugin took it, and unregister_host must then be
    // called before the memory is freed. Never throws: a refusal or failure is false.
    bool register_host(void* ptr, uint64_t size) noexcept;
    void unregister_host(void* ptr) noexcept;

  private:
    Plugin() = default;
    std::unique_ptr<boost::dll::shared_library> library_;
    std::filesystem::path file_;
    std::string name_;
    std::string variant_;
    int32_t score_ = 1;
    sy_plugin_api api_{};
    bool initialized_ = false;
};

// What went wrong with one plugin, in one line.
struct PluginFailure {
    std::string file;  // the file (or the name that found no file)
    std::string reason;
    bool requested = false;  // the user asked for this plugin explicitly (flag or config)
};

struct PluginHostConfig {
    std::vector<std::filesystem::path> search_paths;  // searched in order, before the defaults
    std::vector<std::string> load;   // names ("cpu") or paths; when given, only these load
    std::vector<std::string> extra;  // names or paths loaded in addition (--plugin)
    bool load_all_found = true;      // with an empty `load`: every backend in the search paths
};

class PluginHost {
  public:
    PluginHost() = default;
    ~PluginHost();
    PluginHost(const PluginHost&) = delete;
    PluginHost& operator=(const PluginHost&) = delete;

    // The default plugin folder: <directory of the running executable>/../<libdir>/switchyard,
    // the same layout in the build tree and in an installation.
    static std::filesystem::path default_plugin_dir();

    // Loads what `config` asks for; failures are recorded, never thrown.
    void load(const PluginHostConfig& config);
    // Loads one plugin file; a failure is recorded (and returned false).
    bool load_path(const std::filesystem::path& file, bool requested);
    // Loads the best runnable variant of backend `name` found in `search_paths`.
    bool load_name(std::string_view name, const std::vector<std::filesystem::path>& search_paths,
                   bool requested);

    const std::vector<std::unique_ptr<Plugin>>& plugins() const { return plugins_; }
    const std::vector<PluginFailure>& failures() const { return failures_; }
    bool any_requested_failure() const;
    Plugin* find(std::string_view name) const;
    // Plugin::release_constants on every loaded plugin.
    void release_constants(uint64_t constant_id) noexcept;

  private:
    bool add(std::unique_ptr<Plugin> plugin, bool requested);
    std::vector<std::unique_ptr<Plugin>> plugins_;
    std::vector<PluginFailure> failures_;
};

}  // namespace sy
