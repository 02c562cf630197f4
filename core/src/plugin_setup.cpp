#include "switchyard/core/plugin_setup.hpp"

namespace sy {

std::vector<std::string> setup_plugins(PluginHost& host, const Config& config,
                                       const std::vector<std::string>& extra, int threads) {
    PluginHostConfig host_config;
    host_config.search_paths = config.plugins.search;
    host_config.load = config.plugins.load;
    host_config.extra = extra;
    host.load(host_config);

    std::vector<std::string> warnings;
    for (const PluginOption& option : config.plugins.options) {
        Plugin* plugin = host.find(option.plugin);
        if (!plugin) {
            warnings.push_back(option.where + ": option '" + option.key + "' for plugin '" +
                               option.plugin + "', which is not loaded");
            continue;
        }
        bool known = false;
        try {
            known = plugin->set_option(option.key, option.value);
        } catch (const Error& e) {
            throw ConfigError(option.where + ": plugins." + option.plugin + "." + option.key +
                              ": " + e.what());
        }
        if (!known) {
            throw ConfigError(option.where + ": plugin '" + option.plugin + "' has no option '" +
                              option.key + "'");
        }
    }
    if (threads > 0) {
        for (const auto& plugin : host.plugins()) {
            plugin->set_option("threads", std::to_string(threads));
        }
    }
    return warnings;
}

}  // namespace sy
