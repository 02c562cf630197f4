// The built-in ops as data: id, name, how many sources, one line of what it does. One table;
// names come from sdk::op_name so there is a single spelling. Semantics are in ops.h.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "switchyard/ops.h"

namespace sy {

struct BuiltinOp {
    sy_op op;
    int min_sources;  // softmax's mask is optional: 1..2
    int max_sources;
    const char* summary;

    const char* name() const;  // "rms_norm"
};

// Every built-in op in id order (SY_OP_ADD .. SY_OP_DROP_IDS).
std::span<const BuiltinOp> builtin_ops();
// Throws Error for an id that is not a built-in op.
const BuiltinOp& builtin_op(sy_op op);
std::optional<sy_op> builtin_op_by_name(std::string_view name);

}  // namespace sy
