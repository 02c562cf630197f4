#include "capabilities.hpp"

namespace sy::cuda {

validation::CapabilityTable capability_table() {
    return validation::builtin_capabilities();
}

const validation::Backend& validation_rules() {
    static const validation::CapabilityTable table = validation::builtin_capabilities();
    static const validation::Backend rules{"cuda", table.rows, table.count, false};
    return rules;
}

}  // namespace sy::cuda
