#include "switchyard/core/named_op_registry.hpp"

#include <algorithm>
#include <tuple>

#include "switchyard/core/error.hpp"
#include "switchyard/core/plugin_host.hpp"

namespace sy {

namespace {

// "namespace.name": a non-empty namespace and a non-empty name around the first dot.
bool well_formed(std::string_view name) {
    const size_t dot = name.find('.');
    return dot != std::string_view::npos && dot > 0 && dot + 1 < name.size();
}

}  // namespace

void NamedOpRegistry::register_from(const Plugin& plugin) {
    for (const sy_named_op_info& info : plugin.named_ops()) {
        add(plugin.name(), info.name ? info.name : "", info.schema_version,
            info.summary ? info.summary : "");
    }
}

void NamedOpRegistry::add(std::string_view provider, std::string_view name, uint32_t schema_version,
                          std::string_view summary) {
    if (!well_formed(name)) {
        throw Error("plugin '" + std::string(provider) + "' offers a named op '" +
                    std::string(name) + "' that is not of the form namespace.name");
    }
    const auto key = std::make_tuple(name, schema_version);
    auto it = std::lower_bound(
        entries_.begin(), entries_.end(), key, [](const NamedOpEntry& e, const auto& k) {
            return std::make_tuple(std::string_view(e.name), e.schema_version) < k;
        });
    if (it == entries_.end() || it->name != name || it->schema_version != schema_version) {
        NamedOpEntry entry;
        entry.name = name;
        entry.schema_version = schema_version;
        entry.summary = summary;
        it = entries_.insert(it, std::move(entry));
    }
    if (std::find(it->providers.begin(), it->providers.end(), provider) == it->providers.end()) {
        it->providers.emplace_back(provider);
    }
}

const NamedOpEntry* NamedOpRegistry::find(std::string_view name, uint32_t schema_version) const {
    for (const NamedOpEntry& e : entries_) {
        if (e.name == name && e.schema_version == schema_version) return &e;
    }
    return nullptr;
}

}  // namespace sy
