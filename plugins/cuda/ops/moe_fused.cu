// moe.fused_up_gate (named_ops.h, schema 1) from MUL_MAT_ID's row dots: the activations
// quantized (block types) or packed to F32 once for both products, the gate products into
// scratch and the up products into dst, then dst = act(gate) * dst in one elementwise pass. A
// SY_ID_NONE slot is 0 in both products, and act(0) * 0 = 0, as the schema asks.
#include <cstring>

#include "ops/ops.hpp"
#include "ops/rowdot.hpp"
#include "ops/tensor.cuh"
#include "quant/blocks.cuh"
#include "quant/quant.hpp"
#include "switchyard/dtype.h"
#include "switchyard/named_ops.h"

namespace sy::cuda {
namespace {

// dst = act(g) * dst, g the packed {N, U, T} gate products, dst with any strides (act: silu, or
// gelu's tanh form, as SILU and GELU compute them).
template <bool kGelu>
__global__ void gated_kernel(TensorDesc dst, const float* g, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_threads()) {
        const float x = g[i];
        float a;
        if constexpr (kGelu) {
            constexpr float kSqrt2OverPi = 0.7978845608028654f;
            a = 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
        } else {
            a = x / (1.0f + expf(-x));
        }
        float* p = reinterpret_cast<float*>(at(dst, unravel(dst, i)));
        *p *= a;
    }
}

}  // namespace

bool is_moe_fused_up_gate(const sy_node& node) {
    return node.op == SY_OP_NAMED && node.named_op != nullptr &&
           std::strcmp(node.named_op, SY_NAMED_MOE_FUSED_UP_GATE) == 0 &&
           node.named_op_version == SY_NAMED_MOE_FUSED_UP_GATE_VERSION;
}

void launch_moe_fused_up_gate(const OpContext& ctx, const sy_node& node) {
    const TensorDesc up = desc_of(*node.src[0]);
    const TensorDesc gate = desc_of(*node.src[1]);
    const TensorDesc x = desc_of(*node.src[2]);
    const TensorDesc ids = desc_of(*node.src[3]);
    const TensorDesc dst = desc_of(*node.dst);
    const int64_t K = up.ne[0];
    RowDotColumns cols{};
    cols.count = ids.ne[0] * ids.ne[1];
    cols.by_expert = true;
    cols.ids = ids;
    cols.U = ids.ne[0];
    cols.U1 = x.ne[1];
    cols.E = up.ne[2];
    const int64_t n = nelements(dst);
    auto* g = static_cast<float*>(ctx.scratch->take(size_t(n) * sizeof(float)));
    const TensorDesc gated = packed_desc(g, SY_TYPE_F32, dst.ne);
    if (sy_dtype_info(up.type).block_size > 1) {
        const ActRows act = quantize_activations(ctx, x);
        launch_rowdot(ctx, gate, act, cols, gated);
        launch_rowdot(ctx, up, act, cols, dst);
    } else {
        auto* f = static_cast<float*>(ctx.scratch->take(size_t(nrows(x) * K) * sizeof(float)));
        convert_tensor(ctx, packed_desc(f, SY_TYPE_F32, x.ne), x);
        launch_rowdot(ctx, gate, f, cols, gated);
        launch_rowdot(ctx, up, f, cols, dst);
    }
    if (node.iparams[0] == 1)
        gated_kernel<true><<<grid_for(n), kThreads, 0, ctx.stream>>>(dst, g, n);
    else
        gated_kernel<false><<<grid_for(n), kThreads, 0, ctx.stream>>>(dst, g, n);
    check_launch("moe.fused_up_gate");
}

}  // namespace sy::cuda
