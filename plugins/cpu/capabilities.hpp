// The capability table: every (op, dst type, source types) combination compute() accepts. It is
// what capabilities() hands the host and the first check of supports() and compute(); shapes and
// parameters are checked afterwards by node_validation.
#pragma once

#include <cstddef>

#include "switchyard/plugin.h"

namespace sy::cpu {

struct CapabilityTable {
    const sy_capability* rows;
    size_t count;
};

CapabilityTable capability_table();

// The row matching the node's op, dst type and first four source types (absent sources match
// SY_TYPE_NONE), or nullptr.
const sy_capability* find_capability(const sy_node& node);

}  // namespace sy::cpu
