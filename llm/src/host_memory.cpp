#include "switchyard/llm/host_memory.hpp"

#include "switchyard/sdk.hpp"

namespace sy::llm {

uint64_t available_memory() {
    return sdk::available_memory();
}

}  // namespace sy::llm
