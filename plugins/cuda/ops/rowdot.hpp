// Small-batch matrix products as one dot product per (weight row, column): a warp per output
// element reads its weight row once, the lanes striding over the row (32 values per lane step for
// block types, decoded with blocks.cuh against ActBlock activations; one element per lane step
// for float weights against F32 activations). Used for token generation (few columns) and for
// the expert products, where every column may use a different expert.
#pragma once

#include <cstdint>

#include "ops/op_context.hpp"
#include "ops/tensor.cuh"

namespace sy::cuda {

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

// dst[n, column] for every n < w.ne[1] and column. `x` holds packed activation rows: F32 (K
// floats each) for float weights, ActBlock (K / 32 each) for block types.
void launch_rowdot(const OpContext& ctx, const TensorDesc& w, const void* x,
                   const RowDotColumns& cols, const TensorDesc& dst);

}  // namespace sy::cuda
