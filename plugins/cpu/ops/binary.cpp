// ADD, MUL and DIV: dst = src0 op src1, src1 broadcast (ops.h). One family per file, as in the
// cuda plugin.
#include "ops/ops.hpp"
#include "ops/row_loops.hpp"

namespace sy::cpu {

// ADD: dst = src0 + src1, src1 broadcast (ops.h).
void compute_add(ThreadPool& pool, const sy_node& node) {
    map_binary_broadcast(pool, node, [](const float* a, const float* b, float* out, int64_t n) {
        int64_t i = 0;
        for (; i + simd::kLanes <= n; i += simd::kLanes)
            simd::store(out + i, simd::add(simd::load(a + i), simd::load(b + i)));
        for (; i < n; ++i) out[i] = a[i] + b[i];
    });
}

// MUL: dst = src0 * src1 elementwise, src1 broadcast (ops.h).
void compute_mul(ThreadPool& pool, const sy_node& node) {
    map_binary_broadcast(pool, node, [](const float* a, const float* b, float* out, int64_t n) {
        int64_t i = 0;
        for (; i + simd::kLanes <= n; i += simd::kLanes)
            simd::store(out + i, simd::mul(simd::load(a + i), simd::load(b + i)));
        for (; i < n; ++i) out[i] = a[i] * b[i];
    });
}

// DIV: dst = src0 / src1 elementwise, src1 broadcast (ops.h).
void compute_div(ThreadPool& pool, const sy_node& node) {
    map_binary_broadcast(pool, node, [](const float* a, const float* b, float* out, int64_t n) {
        int64_t i = 0;
        for (; i + simd::kLanes <= n; i += simd::kLanes)
            simd::store(out + i, simd::div(simd::load(a + i), simd::load(b + i)));
        for (; i < n; ++i) out[i] = a[i] / b[i];
    });
}

}  // namespace sy::cpu
