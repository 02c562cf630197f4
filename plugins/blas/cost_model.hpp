// The BLAS plugin's cost hints: measured, not assumed. The first time the scheduler asks (or
// `switchyard plugins` shows the parameters), the plugin times its engine on this machine:
//   * the fixed cost of one product (a 1 x 256 x 256 GEMM, whose arithmetic is a small part of
//     it: the library call, its thread fork and join, the primitive lookup;
//     docs/design-measurements.md#blas-fixed-cost);
//   * GEMM throughput at M = 1, 4, 16, 64, 256 rows for each operand type (N = K = 1024, in cache:
//     the compute rate; the weights' memory traffic is counted separately);
//   * the conversions a call makes: activations f32 -> bf16, weights f16 -> f32 and a block type
//     (q8_0 as the representative) -> the bf16 or f32 operand, in ns per value, over 32 MiB
//     buffers (from memory, as a call's weights are);
//   * the host memory bandwidth (a parallel read of 64 MiB), and the weight bytes per second of
//     a one-row product over 64 MiB of weights in each operand type (what generation gets).
// A product then costs overhead + max(flops / rate(M), weight bytes / stream rate) +
// conversions.
// For one token (M = 1) that is never below the CPU plugin's GEMV (same bytes, larger fixed
// cost, plus the conversions); for a prompt ubatch the GEMM rate wins. The measurement takes a
// fraction of a second and is repeated when the thread count or the engine changes.
#pragma once

#include <array>
#include <cstdint>

#include "engine.hpp"
#include "products.hpp"
#include "switchyard/plugin.h"

namespace sy::blas {

struct Rates {
    static constexpr std::array<int64_t, 5> kRows = {1, 4, 16, 64, 256};
    double overhead_ns = 0;
    std::array<double, 5> flops_f32{}, flops_bf16{};  // FLOP/s at kRows; bf16 zero when absent
    // The same with weights in the engine's packed layout (kept copies); zero without one.
    std::array<double, 5> flops_f32_packed{}, flops_bf16_packed{};
    double pack_bf16_ns = 0;                          // per activation value, f32 -> bf16
    double pack_f32_ns = 0;                           // per activation value, copy
    double f16_to_f32_ns = 0;                         // per weight value
    double block_to_operand_ns = 0;                   // per weight value, q8_0 -> operand
    double bandwidth = 0;                             // bytes/s
    // Weight bytes/s of a one-row product over weights far larger than the caches (the engine's
    // GEMV as generation runs it: oneDNN reaches well under the memory bandwidth there); bf16
    // zero when absent.
    double stream_f32 = 0, stream_bf16 = 0;
    int threads = 0;

    // Interpolated in log(rows); the packed table when `packed` and measured.
    double flops(GemmType t, double rows, bool packed = false) const;
};

Rates measure_rates(Workspace& ws);

// Expected nanoseconds of a node this plugin supports (promises the weight cache's room to the
// weights it counts as kept: WeightCache::promise).
double estimate_ns(const Rates& r, Workspace& ws, const sy_node& node);

}  // namespace sy::blas
