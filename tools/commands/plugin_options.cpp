#include <map>

#include "commands/commands.hpp"

namespace sy::tools {

std::vector<std::string> expand_llama_flags(int argc, char** argv) {
    static const std::map<std::string, std::string> kLong = {{"-ub", "--ubatch-size"},
                                                             {"-mla", "--mla"},
                                                             {"-fmoe", "--fused-moe"},
                                                             {"-ctk", "--cache-type-k"},
                                                             {"-ctv", "--cache-type-v"},
                                                             {"-ser", "--smart-expert-reduction"},
                                                             {"-amb", "--attention-max-batch"},
                                                             {"-fa", "--flash-attn"},
                                                             {"-sys", "--system-prompt"},
                                                             {"-ngl", "--n-gpu-layers"},
                                                             {"-ot", "--override-tensor"},
                                                             {"-pg", "--pg"},
                                                             {"-gp", "--gp"},
                                                             {"-ncmoe", "--n-cpu-moe"},
                                                             {"-cmoe", "--cpu-moe"},
                                                             {"-ts", "--tensor-split"},
                                                             {"-rtr", "--run-time-repack"}};
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        const auto it = kLong.find(argv[i]);
        args.push_back(it == kLong.end() ? std::string(argv[i]) : it->second);
    }
    return args;
}

void PluginOptions::add_to(CLI::App& app) {
    app.add_option("--config", config_file, "TOML configuration file");
    app.add_option("--plugin", plugins,
                   "Load this plugin too: a file path or a backend name (repeatable)");
    app.add_option("-t,--threads", threads, "Threads for the backends that take a thread count")
        ->check(CLI::Range(1, 4096));
}

}  // namespace sy::tools
