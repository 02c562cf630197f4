// The capability table: every (op, dst type, source types) combination compute() accepts. It is
// what capabilities() hands the host and the first check of supports() and compute(); shapes and
// parameters are checked afterwards by the SDK's op-contract checks (switchyard/validation.hpp).
#pragma once

#include <cstddef>

#include "switchyard/plugin.h"
#include "switchyard/validation.hpp"

namespace sy::cpu {

// Every built-in op (validation::builtin_capabilities()) and the named ops of named_ops.h
// (validation::named_capabilities()).
validation::CapabilityTable capability_table();

// The CPU backend as the SDK's op-contract checks (switchyard/validation.hpp) see it: its name,
// this table, and host memory.
const validation::Backend& validation_rules();

}  // namespace sy::cpu
