// The host's available memory, for refusing allocations that cannot fit before making them.
#pragma once

#include <cstdint>

namespace sy::llm {

// MemAvailable from /proc/meminfo in bytes, or 0 when unknown.
uint64_t available_memory();

}  // namespace sy::llm
