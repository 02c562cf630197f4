#include "capabilities.hpp"

namespace sy::cpu {

validation::CapabilityTable capability_table() {
    return validation::builtin_capabilities();
}

const validation::Backend& validation_rules() {
    static const validation::CapabilityTable table = validation::builtin_capabilities();
    static const validation::Backend rules{"cpu", table.rows, table.count, true};
    return rules;
}

}  // namespace sy::cpu
