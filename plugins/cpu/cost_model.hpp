// The CPU device's cost model: a roofline plus a fixed cost per node.
//   time = max(flops / peak_flops, bytes / memory_bandwidth) + launch_overhead
// flops and bytes are counted per op from the node's shapes (sdk::op_work); the rates come from
// CpuBackend (peak from threads x lanes x 2 x clock, bandwidth and overhead measured once).
#pragma once

#include "switchyard/op_work.hpp"
#include "switchyard/plugin.h"

namespace sy::cpu {

struct CostRates {
    double peak_flops = 0.0;        // f32 FLOP/s
    double memory_bandwidth = 0.0;  // bytes/s
    double launch_overhead_ns = 0.0;
};

// `work`: sdk::op_work of a node that validate_node accepted.
double estimate_ns(const CostRates& rates, const sdk::OpWork& work);

}  // namespace sy::cpu
