// moe.fused_up_gate (named_ops.h, schema 1) from MUL_MAT_ID's row dots: the activations
// quantized (block types) or packed to F32 once for both products, the gate products into
// scratch and the up products into dst, then dst = act(gate) * dst in one elementwise pass. A
// SY_ID_NONE slot is 0 in both products, and act(0) * 0 = 0, as the schema asks. One expert with
// one slot per token (the shared experts, the dense FFN) takes MUL_MAT's path for both products
// (each packs or quantizes the activations itself).
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

template <bool kGelu>
__device__ inline float activation(float x) {
    return kGelu ? gelu_of(x) : silu_of(x);
}

// dst = act(g) * dst, g the packed {N, U, T} gate products, dst with any strides.
template <bool kGelu>
__global__ void gated_kernel(TensorDesc dst, const float* g, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_threads()) {
        float* p = reinterpret_cast<float*>(at(dst, unravel(dst, i)));
        *p *= activation<kGelu>(g[i]);
    }
}

// The dense form (one expert, one slot per token): dst[:, 0, t] = act(g[:, t]) * dst[:, 0, t]
// where ids[0, t] is 0, zeros where it is SY_ID_NONE, any other id reported through the error
// word (once per token).
template <bool kGelu>
__global__ void dense_gated_kernel(TensorDesc dst, const float* g, TensorDesc ids, int64_t n,
                                   int* error_word, int error_code) {
    const int64_t N = dst.ne[0];
    for (int64_t i = global_thread(); i < n; i += grid_threads()) {
        const int64_t t = i / N;
        const int32_t e = *reinterpret_cast<const int32_t*>(ids.data + t * ids.nb[1]);
        float* p = reinterpret_cast<float*>(dst.data + (i % N) * dst.nb[0] + t * dst.nb[2]);
        if (e != 0) {
            if (e != SY_ID_NONE && i % N == 0) report_bad_index(error_word, error_code);
            *p = 0.0f;
            continue;
        }
        *p *= activation<kGelu>(g[i]);
    }
}

// A tensor descriptor as a sy_tensor for a MUL_MAT node (data, type, sizes, strides).
sy_tensor tensor_of(const TensorDesc& d) {
    sy_tensor t{};
    t.struct_size = sizeof(sy_tensor);
    t.type = d.type;
    t.data = d.data;
    for (int i = 0; i < 4; ++i) {
        t.ne[i] = d.ne[i];
        t.nb[i] = d.nb[i];
    }
    return t;
}

// The shared experts and the dense FFN come as one expert with one slot per token: both products
// are then MUL_MAT's, whose paths suit every token count (row dots over all the tokens at once,
// cuBLAS past them), not a row dot per output element.
void launch_dense(const OpContext& ctx, const sy_node& node, const TensorDesc& up,
                  const TensorDesc& gate, const TensorDesc& x, const TensorDesc& ids,
                  const TensorDesc& dst) {
    const int64_t N = up.ne[1], T = ids.ne[1];
    TensorDesc x2 = x;  // {K, 1, T} as {K, T}
    x2.ne[1] = T;
    x2.nb[1] = x.nb[2];
    x2.ne[2] = x2.ne[3] = 1;
    x2.nb[2] = x2.nb[3] = x2.nb[1] * T;
    TensorDesc out2 = dst;  // {N, 1, T} as {N, T}
    out2.ne[1] = T;
    out2.nb[1] = dst.nb[2];
    out2.ne[2] = out2.ne[3] = 1;
    out2.nb[2] = out2.nb[3] = out2.nb[1] * T;
    const int64_t ne[4] = {N, T, 1, 1};
    auto* g = static_cast<float*>(ctx.scratch->take(size_t(N * T) * sizeof(float)));
    const sy_tensor x_t = tensor_of(x2), g_t = tensor_of(packed_desc(g, SY_TYPE_F32, ne)),
                    out_t = tensor_of(out2);
    for (const auto& [w, out] : {std::pair{&gate, &g_t}, std::pair{&up, &out_t}}) {
        TensorDesc w2 = *w;
        w2.ne[2] = w2.ne[3] = 1;
        const sy_tensor w_t = tensor_of(w2);
        sy_node mm{};
        mm.struct_size = sizeof(sy_node);
        mm.op = SY_OP_MUL_MAT;
        mm.n_src = 2;
        mm.src[0] = &w_t;
        mm.src[1] = &x_t;
        mm.dst = out;
        launch_mul_mat(ctx, mm);
    }
    const int64_t n = N * T;
    if (node.iparams[0] == 1)
        dense_gated_kernel<true><<<grid_for(n), kThreads, 0, ctx.stream>>>(
            dst, g, ids, n, ctx.error_word, ctx.error_code);
    else
        dense_gated_kernel<false><<<grid_for(n), kThreads, 0, ctx.stream>>>(
            dst, g, ids, n, ctx.error_word, ctx.error_code);
    check_launch("moe.fused_up_gate");
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
    if (up.ne[2] == 1 && ids.ne[0] == 1 && x.ne[1] == 1)
        return launch_dense(ctx, node, up, gate, x, ids, dst);
    const int64_t K = up.ne[0];
    const RowDotColumns cols = expert_columns(up, x, ids);
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
