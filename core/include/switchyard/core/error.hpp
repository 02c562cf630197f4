// Errors in the core are exceptions carrying a message that names the file, key, tensor or
// plugin at fault.
#pragma once

#include <cstdint>
#include <new>
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

// The Error for an allocation of `bytes` for `what` that failed: "out of memory: <what> needs
// 3.2 GiB (3435973837 bytes)".
Error out_of_memory(std::string_view what, uint64_t bytes);

// Runs `allocate`, which allocates about `bytes` for `what`: a std::bad_alloc becomes
// out_of_memory(what, bytes), so the message says what to make smaller. Sizes that come from
// files and options are checked before this point; what is left is the machine running out.
template <class F>
decltype(auto) allocating(std::string_view what, uint64_t bytes, F&& allocate) {
    try {
        return allocate();
    } catch (const std::bad_alloc&) {
        throw out_of_memory(what, bytes);
    }
}

}  // namespace sy
