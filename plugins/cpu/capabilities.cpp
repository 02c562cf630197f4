#include "capabilities.hpp"

#include <vector>

namespace sy::cpu {
namespace {

// The built-in ops plus the named ops this plugin provides, in one array.
const std::vector<sy_capability>& all_rows() {
    static const std::vector<sy_capability> rows = [] {
        std::vector<sy_capability> r;
        for (const validation::CapabilityTable& t :
             {validation::builtin_capabilities(), validation::named_capabilities()})
            r.insert(r.end(), t.rows, t.rows + t.count);
        return r;
    }();
    return rows;
}

}  // namespace

validation::CapabilityTable capability_table() {
    return {all_rows().data(), all_rows().size()};
}

const validation::Backend& validation_rules() {
    static const validation::Backend rules{"cpu", all_rows().data(), all_rows().size(), true};
    return rules;
}

}  // namespace sy::cpu
