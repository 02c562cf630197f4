// The capability table: every (op, dst type, source types) combination compute() accepts. It is
// what capabilities() hands the host and, through validation_rules(), the first check of
// supports() and compute(); shapes and parameters are checked afterwards by the SDK's op-contract
// checks (switchyard/validation.hpp).
#pragma once

#include <cstddef>

#include "switchyard/plugin.h"
#include "switchyard/validation.hpp"

namespace sy::cuda {

// Every built-in op: the SDK's table (validation::builtin_capabilities()) less CPY to and from
// block types; and the named op moe.fused_up_gate's rows (validation::named_capabilities()).
validation::CapabilityTable capability_table();

// The CUDA backend as the op-contract checks see it: its name, this table, device memory.
const validation::Backend& validation_rules();

}  // namespace sy::cuda
