// SCALE: dst = src0 * fparams[0] + fparams[1] (ops.h).
#include "ops/ops.hpp"
#include "ops/row_loops.hpp"

namespace sy::cpu {

void compute_scale(ThreadPool& pool, const sy_node& node) {
    const float scale = node.fparams[0], bias = node.fparams[1];
    map_unary(pool, node, [&](const float* in, float* out, int64_t n) {
        simd::scale_shift(in, out, n, scale, bias);
    });
}

}  // namespace sy::cpu
