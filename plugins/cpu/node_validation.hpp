// The contract of every op (ops.h) as checks: types against the capability table, then shapes
// and parameters. supports() and compute() both call validate_node, so what supports() accepts
// is exactly what compute() runs.
#pragma once

#include <cstdint>

#include "switchyard/plugin.h"

namespace sy::cpu {

enum class DataChecks {
    kDescriptorsOnly,  // supports(): data may still be null while the host plans
    kFull,             // compute(): data set, inside its buffer, index values in range
};

// SY_OK, or SY_ERR_INVALID_ARGUMENT (SY_ERR_UNSUPPORTED for an op this plugin does not know)
// with a message naming the op, the tensor and what is wrong.
sy_status validate_node(const sy_node* node, DataChecks checks);

// Bytes from the first to one past the last byte a tensor's descriptor reaches, or -1 when the
// descriptor is malformed (negative sizes or strides, unknown type, overflow).
int64_t tensor_extent(const sy_tensor& t);

// Checks one tensor descriptor on its own (struct size, type, sizes, strides and, with kFull,
// data pointer and buffer bounds); `role` names it in the message ("src0", "copy 3 dst").
sy_status validate_tensor(const sy_tensor* t, const char* role, const char* context,
                          DataChecks checks);

}  // namespace sy::cpu
