// The CPU plugin variants built into SWITCHYARD_PLUGIN_OUTPUT_DIR that this machine can run
// (probe score > 0), loaded once per test process through the conformance kit's loader.
#pragma once

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "switchyard/conformance.hpp"

namespace sy::test {

struct CpuPlugin {
    std::string variant;  // "generic", "avx2", "avx512"
    std::shared_ptr<conformance::Plugin> plugin;
};

inline std::vector<std::string> cpu_plugin_files() {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& entry :
         std::filesystem::directory_iterator(SWITCHYARD_PLUGIN_OUTPUT_DIR, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("libswitchyard-cpu", 0) == 0 && entry.path().extension() == ".so")
            files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

// Variants whose probe score is > 0, loaded; a file that fails to load is reported by the
// CpuPlugins.AtLeastOneVariantLoads test through load_errors().
inline std::vector<std::string>& load_errors() {
    static std::vector<std::string> errors;
    return errors;
}

inline const std::vector<CpuPlugin>& cpu_plugins() {
    static const std::vector<CpuPlugin> plugins = [] {
        std::vector<CpuPlugin> out;
        for (const std::string& file : cpu_plugin_files()) {
            try {
                const conformance::ProbeInfo probe = conformance::Plugin::probe(file);
                if (probe.has_probe && probe.score <= 0) continue;
                std::shared_ptr<conformance::Plugin> p = conformance::Plugin::load(file);
                std::string variant = probe.variant;
                if (variant.empty()) variant = std::filesystem::path(file).stem().string();
                out.push_back({variant, std::move(p)});
            } catch (const std::exception& e) {
                load_errors().push_back(e.what());
            }
        }
        return out;
    }();
    return plugins;
}

}  // namespace sy::test
