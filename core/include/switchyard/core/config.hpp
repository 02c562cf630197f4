// The TOML configuration file (toml++). One file holds everything a run needs; every key has a
// command-line twin and the command line wins. Unknown keys and wrong types are errors that name
// the file, the line and the key.
//
//   [plugins]
//   search = ["~/.local/lib/switchyard", "./plugins"]   # relative to this file
//   load   = ["cpu"]                                     # names or paths; default: all found
//   [plugins.cpu]                                        # options passed to that plugin
//   threads = 8
//   [placement] ... [offload] ...                        # policy.hpp
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "switchyard/core/error.hpp"
#include "switchyard/core/policy.hpp"

namespace sy {

class ConfigError : public Error {
  public:
    using Error::Error;
};

// One option for one plugin, with where it was written (for messages).
struct PluginOption {
    std::string plugin;
    std::string key;
    std::string value;  // as text: 8, 0.5, true, "onednn" -> onednn
    std::string where;  // "file.toml:12:1"
};

struct PluginSettings {
    std::vector<std::filesystem::path> search;
    std::vector<std::string> load;
    std::vector<PluginOption> options;
};

struct Config {
    std::filesystem::path file;  // empty when no file was given
    PluginSettings plugins;
    PlacementPolicy placement;
    OffloadPolicy offload;
};

// Reads and validates a configuration file. Throws ConfigError naming the file, the position
// and the key at fault.
Config load_config(const std::filesystem::path& file);

// Same, from text (for tests and for messages that name `source_name`).
Config parse_config(std::string_view text, const std::filesystem::path& source_name);

}  // namespace sy
