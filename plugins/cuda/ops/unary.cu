// SCALE, SILU, GELU, SIGMOID: elementwise over float types, any strides, in place allowed (each
// element is read before it is written, by the same thread).
#include "ops/ops.hpp"
#include "ops/tensor.cuh"

namespace sy::cuda {
namespace {

enum class UnaryOp { kScale, kSilu, kGelu, kSigmoid };

template <UnaryOp Op>
__device__ inline float apply(float x, float p0, float p1) {
    switch (Op) {
        case UnaryOp::kScale: return x * p0 + p1;
        case UnaryOp::kSilu: return silu_of(x);
        case UnaryOp::kSigmoid: return 1.0f / (1.0f + expf(-x));
        case UnaryOp::kGelu: return gelu_of(x);
    }
    return x;
}

template <UnaryOp Op>
__global__ void unary_kernel(TensorDesc dst, TensorDesc a, float p0, float p1, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_threads()) {
        const Coord c = unravel(dst, i);
        store_float(dst.type, at(dst, c), apply<Op>(load_float(a.type, at(a, c)), p0, p1));
    }
}

template <UnaryOp Op>
void launch_unary(const OpContext& ctx, const sy_node& node, const char* name) {
    const TensorDesc dst = desc_of(*node.dst);
    const int64_t n = nelements(dst);
    unary_kernel<Op><<<grid_for(n), kThreads, 0, ctx.stream>>>(
        dst, desc_of(*node.src[0]), node.fparams[0], node.fparams[1], n);
    check_launch(name);
}

}  // namespace

void launch_scale(const OpContext& ctx, const sy_node& node) {
    launch_unary<UnaryOp::kScale>(ctx, node, "scale");
}
void launch_silu(const OpContext& ctx, const sy_node& node) {
    launch_unary<UnaryOp::kSilu>(ctx, node, "silu");
}
void launch_gelu(const OpContext& ctx, const sy_node& node) {
    launch_unary<UnaryOp::kGelu>(ctx, node, "gelu");
}
void launch_sigmoid(const OpContext& ctx, const sy_node& node) {
    launch_unary<UnaryOp::kSigmoid>(ctx, node, "sigmoid");
}

}  // namespace sy::cuda
