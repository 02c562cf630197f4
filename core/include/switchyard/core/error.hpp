// Errors in the core are exceptions carrying a message that names the file, key, tensor or
// plugin at fault.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "switchyard/plugin.h"

namespace sy {

class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Throws Error("<context>: <plugin's message>") unless status is SY_OK.
void check(const sy_status& status, std::string_view context);

}  // namespace sy
