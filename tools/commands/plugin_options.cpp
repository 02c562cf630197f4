#include "commands/commands.hpp"

namespace sy::tools {

void PluginOptions::add_to(CLI::App& app) {
    app.add_option("--config", config_file, "TOML configuration file");
    app.add_option("--plugin", plugins,
                   "Load this plugin too: a file path or a backend name (repeatable)");
    app.add_option("-t,--threads", threads, "Threads for the backends that take a thread count")
        ->check(CLI::Range(1, 4096));
}

}  // namespace sy::tools
