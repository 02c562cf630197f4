// From configuration to loaded backends: what `switchyard <command>` does before its work.
#pragma once

#include <string>
#include <vector>

#include "switchyard/core/config.hpp"
#include "switchyard/core/plugin_host.hpp"

namespace sy {

// Loads the plugins `config` names (or every one found, when it names none) plus `extra`
// (names or paths from --plugin), then hands each [plugins.<name>] option to its plugin.
// Load failures are recorded in the host; an option a plugin rejects throws ConfigError naming
// the file and line; options for a plugin that is not loaded are returned as warnings.
// `threads` > 0 (the -t flag) is then given to every plugin that takes a "threads" option:
// the command line wins over the file.
std::vector<std::string> setup_plugins(PluginHost& host, const Config& config,
                                       const std::vector<std::string>& extra, int threads = 0);

}  // namespace sy
