// MUL_MAT_ID: dst[n, u, t] = sum_k W[k, n, ids[u, t]] * X[k, u % U1, t]. One warp per output
// element (rowdot.cu): X rows packed to F32 (float weights) or quantized to 8-bit blocks (block
// types) first; a SY_ID_NONE slot gets zeros, any other expert id outside [0, E) is reported
// through the error word.
#include "ops/ops.hpp"
#include "ops/rowdot.hpp"
#include "quant/blocks.cuh"
#include "quant/quant.hpp"
#include "switchyard/dtype.h"

namespace sy::cuda {

void launch_mul_mat_id(const OpContext& ctx, const sy_node& node) {
    const TensorDesc w = desc_of(*node.src[0]);
    const TensorDesc x = desc_of(*node.src[1]);
    const TensorDesc ids = desc_of(*node.src[2]);
    const TensorDesc dst = desc_of(*node.dst);
    const int64_t K = w.ne[0];
    const RowDotColumns cols = expert_columns(w, x, ids);
    if (sy_dtype_info(w.type).block_size > 1) {
        launch_rowdot(ctx, w, quantize_activations(ctx, x), cols, dst);
    } else {
        auto* f = static_cast<float*>(ctx.scratch->take(size_t(nrows(x) * K) * sizeof(float)));
        convert_tensor(ctx, packed_desc(f, SY_TYPE_F32, x.ne), x);
        launch_rowdot(ctx, w, f, cols, dst);
    }
}

}  // namespace sy::cuda
