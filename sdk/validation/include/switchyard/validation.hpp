// The contract of every built-in op (ops.h) as checks a backend runs before it computes: tensor
// descriptors, types against the backend's capability table, then the op's shapes, types and
// parameters (op_contract.hpp, the rules the graph builder and the reference apply too) and the
// index values a host backend reads. A
// backend's supports() and compute() both call validate_node, so what supports() accepts is
// exactly what compute() runs. Part of the SDK (Switchyard::validation) so that every backend
// enforces the same contract with the same messages.
#pragma once

#include <cstddef>
#include <cstdint>

#include "switchyard/plugin.h"

namespace sy::validation {

enum class DataChecks {
    kDescriptorsOnly,  // supports(): data may still be null while the host plans
    kFull,             // compute(): data set and inside its buffer (and, for a backend that
                       // reads host memory, index values in range)
};

// What a backend accepts, for the checks and their messages.
struct Backend {
    const char* name;           // "cpu", "cuda": names the backend in messages
    const sy_capability* rows;  // its capability table
    size_t row_count;
    // true: the backend computes on host memory: with kFull, every tensor must be host-readable
    // (no buffer, or a host_visible one) and index values (row ids, expert ids) are read and
    // range-checked here. false: the tensors live in device memory this code cannot read; the
    // backend checks buffer ownership and index values itself.
    bool host_memory;
};

struct CapabilityTable {
    const sy_capability* rows;
    size_t count;
};

// Every built-in op (ops.h) on every type combination the contract allows, with the block types
// the SDK's quant library decodes as MUL_MAT / MUL_MAT_ID weights and GET_ROWS sources, and CPY
// f32 <-> q8_0 (the quantized KV cache): the table of a backend that implements the whole
// catalogue (the CPU plugin advertises exactly this; the CUDA plugin all but the q8_0 CPY).
CapabilityTable builtin_capabilities();

// The named ops of named_ops.h: moe.fused_up_gate v1 on every MUL_MAT_ID weight type of
// builtin_capabilities(), attn.flash v1 and attn.mla v1 on F32/F16/BF16/Q8_0 keys and values;
// validate_node checks their schemas' shapes, parameters and expert ids.
CapabilityTable named_capabilities();

// The row matching the node's op, dst type and first four source types (absent sources match
// SY_TYPE_NONE, SY_TYPE_ANY matches any type), or nullptr. Nodes with sources beyond the fourth
// match no row.
const sy_capability* find_capability(const sy_node& node, const sy_capability* rows,
                                     size_t row_count);

// SY_OK, or SY_ERR_INVALID_ARGUMENT (SY_ERR_UNSUPPORTED for an op the backend does not know,
// SY_ERR_ABI for a node struct too small) with a message naming the op, the tensor and what is
// wrong.
sy_status validate_node(const sy_node* node, DataChecks checks, const Backend& backend);

// Bytes from the first to one past the last byte a tensor's descriptor reaches, or -1 when the
// descriptor is malformed (negative sizes or strides, unknown type, a partial block, overflow).
int64_t tensor_extent(const sy_tensor& t);

// Checks one tensor descriptor on its own (struct size, type, sizes, strides and, with kFull,
// data pointer and buffer bounds); `role` names it in the message ("src0", "copy 3 dst").
// `host_memory` as in Backend: true requires host-readable data.
sy_status validate_tensor(const sy_tensor* t, const char* role, const char* context,
                          DataChecks checks, bool host_memory);

}  // namespace sy::validation
