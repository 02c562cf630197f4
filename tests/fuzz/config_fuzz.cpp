// libFuzzer target: any text as a configuration file (TOML: [plugins], [placement], [offload],
// rules, pins, switches) either parses or raises sy::Error naming the place — never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "switchyard/core/config.hpp"
#include "switchyard/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        (void)sy::parse_config(text, "fuzz.toml");
    } catch (const sy::Error&) {
    }
    return 0;
}
