#include "switchyard/core/error.hpp"

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

}  // namespace sy
