// SILU: dst = x / (1 + e^-x), elementwise (ops.h; the vector form is in simd_math.hpp).
#include "ops/ops.hpp"
#include "ops/row_loops.hpp"

namespace sy::cpu {

void compute_silu(ThreadPool& pool, const sy_node& node) {
    map_unary(pool, node,
              [](const float* in, float* out, int64_t n) { simd::map<simd::silu>(in, out, n); });
}

}  // namespace sy::cpu
