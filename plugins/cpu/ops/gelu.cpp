// GELU: dst = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), elementwise (ops.h; the vector form
// is in simd_math.hpp).
#include "ops/ops.hpp"
#include "ops/row_loops.hpp"

namespace sy::cpu {

void compute_gelu(ThreadPool& pool, const sy_node& node) {
    map_unary(pool, node,
              [](const float* in, float* out, int64_t n) { simd::map<simd::gelu>(in, out, n); });
}

}  // namespace sy::cpu
