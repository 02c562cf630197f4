// SCALE, SILU, GELU and SIGMOID: elementwise (ops.h; the vector forms are in simd_math.hpp).
#include "ops/ops.hpp"
#include "ops/row_loops.hpp"

namespace sy::cpu {

// SCALE: dst = src0 * fparams[0] + fparams[1] (ops.h).
void compute_scale(ThreadPool& pool, const sy_node& node) {
    const float scale = node.fparams[0], bias = node.fparams[1];
    map_unary(pool, node, [&](const float* in, float* out, int64_t n) {
        simd::scale_shift(in, out, n, scale, bias);
    });
}

// SILU: dst = x / (1 + e^-x), elementwise (ops.h; the vector form is in simd_math.hpp).
void compute_silu(ThreadPool& pool, const sy_node& node) {
    map_unary(pool, node,
              [](const float* in, float* out, int64_t n) { simd::map<simd::silu>(in, out, n); });
}

// GELU: dst = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), elementwise (ops.h; the vector form
// is in simd_math.hpp).
void compute_gelu(ThreadPool& pool, const sy_node& node) {
    map_unary(pool, node,
              [](const float* in, float* out, int64_t n) { simd::map<simd::gelu>(in, out, n); });
}

// SIGMOID: dst = 1 / (1 + e^-x), elementwise (ops.h; the vector form is in simd_math.hpp).
void compute_sigmoid(ThreadPool& pool, const sy_node& node) {
    map_unary(pool, node,
              [](const float* in, float* out, int64_t n) { simd::map<simd::sigmoid>(in, out, n); });
}

}  // namespace sy::cpu
