// ADD, MUL and DIV: dst = src0 op src1, src1 broadcast (index i % ne per dimension), any float types
// and strides on every side.
#include "ops/ops.hpp"
#include "ops/tensor.cuh"

namespace sy::cuda {
namespace {

enum class BinaryOp { kAdd, kMul, kDiv };

template <BinaryOp Op>
__global__ void binary_kernel(TensorDesc dst, TensorDesc a, TensorDesc b, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_threads()) {
        const Coord c = unravel(dst, i);
        Coord cb;
        for (int d = 0; d < 4; ++d) cb.i[d] = c.i[d] % b.ne[d];
        const float x = load_float(a.type, at(a, c));
        const float y = load_float(b.type, at(b, cb));
        store_float(dst.type, at(dst, c),
                    Op == BinaryOp::kAdd ? x + y : Op == BinaryOp::kMul ? x * y : x / y);
    }
}

template <BinaryOp Op>
void launch_binary(const OpContext& ctx, const sy_node& node, const char* name) {
    const TensorDesc dst = desc_of(*node.dst);
    const int64_t n = nelements(dst);
    binary_kernel<Op><<<grid_for(n), kThreads, 0, ctx.stream>>>(dst, desc_of(*node.src[0]),
                                                                 desc_of(*node.src[1]), n);
    check_launch(name);
}

}  // namespace

void launch_add(const OpContext& ctx, const sy_node& node) {
    launch_binary<BinaryOp::kAdd>(ctx, node, "add");
}

void launch_mul(const OpContext& ctx, const sy_node& node) {
    launch_binary<BinaryOp::kMul>(ctx, node, "mul");
}

void launch_div(const OpContext& ctx, const sy_node& node) {
    launch_binary<BinaryOp::kDiv>(ctx, node, "div");
}

}  // namespace sy::cuda
