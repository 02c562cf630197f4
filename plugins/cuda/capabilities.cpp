#include "capabilities.hpp"

#include <vector>

#include "switchyard/dtype.h"
#include "switchyard/ops.h"

namespace sy::cuda {

namespace {

// The SDK's table without CPY to or from block types (the q8_0 KV cache's conversions), which
// this backend's copy kernels do not implement.
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
