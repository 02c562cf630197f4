#include "capabilities.hpp"

#include <cstring>
#include <vector>

#include "switchyard/dtype.h"
#include "switchyard/named_ops.h"
#include "switchyard/ops.h"

namespace sy::cuda {

namespace {

// The SDK's table without CPY to or from block types (the q8_0 KV cache's conversions), which
// this backend's copy kernels do not implement; and moe.fused_up_gate's rows (every MUL_MAT_ID
// weight type), the one named op it provides.
const std::vector<sy_capability>& rows() {
    static const std::vector<sy_capability> table = [] {
        const validation::CapabilityTable all = validation::builtin_capabilities();
        std::vector<sy_capability> kept;
        for (size_t i = 0; i < all.count; ++i) {
            const sy_capability& row = all.rows[i];
            const bool blocks = sy_dtype_info(row.dst_type).block_size > 1 ||
                                sy_dtype_info(row.src_type[0]).block_size > 1;
            if (row.op == SY_OP_CPY && blocks) continue;
            kept.push_back(row);
        }
        const validation::CapabilityTable named = validation::named_capabilities();
        for (size_t i = 0; i < named.count; ++i)
            if (named.rows[i].named_op != nullptr &&
                std::strcmp(named.rows[i].named_op, SY_NAMED_MOE_FUSED_UP_GATE) == 0)
                kept.push_back(named.rows[i]);
        return kept;
    }();
    return table;
}

}  // namespace

validation::CapabilityTable capability_table() {
    return {rows().data(), rows().size()};
}

const validation::Backend& validation_rules() {
    static const validation::Backend rules{"cuda", rows().data(), rows().size(), false};
    return rules;
}

}  // namespace sy::cuda
