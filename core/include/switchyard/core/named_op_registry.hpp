// Which named ops (named_ops.h: fused ops that plugins provide, "namespace.name" + schema
// version) the loaded backends offer. A model asks before building a fused node:
//
//   if (registry.find(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION))
//       y = g.named(...);          // one fused node
//   else
//       y = decomposed_up_gate(g, ...);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sy {

class Plugin;

struct NamedOpEntry {
    std::string name;  // "moe.fused_up_gate"
    uint32_t schema_version = 0;
    std::string summary;                 // as the first provider describes it
    std::vector<std::string> providers;  // plugin names, in registration order
};

class NamedOpRegistry {
  public:
    // Adds every named op the plugin reports (Plugin::named_ops), under the plugin's name.
    void register_from(const Plugin& plugin);
    // Adds one (name, version) offered by `provider`. Throws Error naming the provider for a name
    // that is not of the form "namespace.name".
    void add(std::string_view provider, std::string_view name, uint32_t schema_version,
             std::string_view summary);

    // The entry for exactly this name and schema version, or nullptr when no backend offers it.
    const NamedOpEntry* find(std::string_view name, uint32_t schema_version) const;
    // Sorted by name, then version.
    const std::vector<NamedOpEntry>& entries() const { return entries_; }

  private:
    std::vector<NamedOpEntry> entries_;
};

}  // namespace sy
