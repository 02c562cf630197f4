#include "switchyard/core/error.hpp"

#include <cstdio>
#include <string>

#include "switchyard/sdk.hpp"

namespace sy {

void check(const sy_status& status, std::string_view context) {
    if (status.code == SY_OK) return;
    std::string message(context);
    message += ": ";
    message += (status.message && *status.message) ? status.message : sdk::status_name(status.code);
    throw Error(message);
}

Error out_of_memory(std::string_view what, uint64_t bytes) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double size = double(bytes);
    int unit = 0;
    while (size >= 1024 && unit < 6) {
        size /= 1024;
        ++unit;
    }
    char amount[64];
    if (unit == 0)
        std::snprintf(amount, sizeof amount, "%llu bytes", static_cast<unsigned long long>(bytes));
    else
        std::snprintf(amount, sizeof amount, "%.1f %s (%llu bytes)", size, units[unit],
                      static_cast<unsigned long long>(bytes));
    return Error("out of memory: " + std::string(what) + " needs " + amount);
}

}  // namespace sy
