#include "switchyard/llm/host_memory.hpp"

#include <fstream>
#include <string>

namespace sy::llm {

uint64_t available_memory() {
    std::ifstream in("/proc/meminfo");
    std::string key, unit;
    uint64_t kib = 0;
    while (in >> key >> kib >> unit)
        if (key == "MemAvailable:") return kib * 1024;
    return 0;
}

}  // namespace sy::llm
