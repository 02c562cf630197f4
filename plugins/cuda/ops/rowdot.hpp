// Small-batch matrix products as one dot product per (weight row, column): a warp per output
// element reads its weight row once, the lanes striding over the row (32 values per lane step for
// block types, decoded with blocks.cuh against quantized activations (ActRows); one element per
// lane step for float weights against F32 activations). Used for token generation (few columns) and
// for the expert products, where every column may use a different expert.
#pragma once

#include <cstdint>

#include "ops/op_context.hpp"
#include "ops/tensor.cuh"

namespace sy::cuda {

struct ActRows;

// Which weight slice, activation row and dst element column c uses.
struct RowDotColumns {
    int64_t count;  // columns
    bool by_expert;
    // MUL_MAT: c = m + M * (b2 + B2 * b3); weights (b2 / r2, b3 / r3); activation row c;
    // dst [n, m, b2, b3].
    int64_t M, B2, r2, r3;
    // MUL_MAT_ID: c = u + U * t; weights ids[u, t] (checked against E); activation row
    // (u % U1) + U1 * t; dst [n, u, t].
    TensorDesc ids;
    int64_t U, U1, E;
};

// The columns of MUL_MAT_ID (and the fused MoE op): W {K, N, E}, X {K, U1, T}, ids {U, T}.
inline RowDotColumns expert_columns(const TensorDesc& w, const TensorDesc& x,
                                    const TensorDesc& ids) {
    RowDotColumns cols{};
    cols.count = ids.ne[0] * ids.ne[1];
    cols.by_expert = true;
    cols.ids = ids;
    cols.U = ids.ne[0];
    cols.U1 = x.ne[1];
    cols.E = w.ne[2];
    return cols;
}

// MUL_MAT with float weights and at most kRowDotFloatColumns columns per weight slice (M; the
// batches B2 x B3 broadcast weights by r2, r3): each weight row is read once for all M columns.
// `x` holds the columns packed as F32, K floats each, in (m, b2, b3) order.
constexpr int64_t kRowDotFloatColumns = 16;
void launch_rowdot_float_columns(const OpContext& ctx, const TensorDesc& w, const float* x,
                                 int64_t M, int64_t B2, int64_t B3, int64_t r2, int64_t r3,
                                 const TensorDesc& dst);

// dst[n, column] for every n < w.ne[1] and column, from the activation rows: packed F32 (K
// floats each) for float weights, quantized (quantize_activations) for block types.
void launch_rowdot(const OpContext& ctx, const TensorDesc& w, const float* x,
                   const RowDotColumns& cols, const TensorDesc& dst);
void launch_rowdot(const OpContext& ctx, const TensorDesc& w, const ActRows& x,
                   const RowDotColumns& cols, const TensorDesc& dst);

}  // namespace sy::cuda
