#include "cost_model.hpp"

#include <algorithm>

namespace sy::cpu {

double estimate_ns(const CostRates& rates, const sdk::OpWork& work) {
    const double compute_s = rates.peak_flops > 0 ? work.flops / rates.peak_flops : 0.0;
    const double memory_s = rates.memory_bandwidth > 0 ? work.bytes / rates.memory_bandwidth : 0.0;
    return std::max(compute_s, memory_s) * 1e9 + rates.launch_overhead_ns;
}

}  // namespace sy::cpu
