// DIV: dst = src0 / src1 elementwise, src1 broadcast (ops.h).
#include "ops/ops.hpp"
#include "ops/row_loops.hpp"

namespace sy::cpu {

void compute_div(ThreadPool& pool, const sy_node& node) {
    map_binary_broadcast(pool, node, [](const float* a, const float* b, float* out, int64_t n) {
        int64_t i = 0;
        for (; i + simd::kLanes <= n; i += simd::kLanes)
            simd::store(out + i, simd::div(simd::load(a + i), simd::load(b + i)));
        for (; i < n; ++i) out[i] = a[i] / b[i];
    });
}

}  // namespace sy::cpu
