// SUM_ROWS: dst {1, R, B2, B3} = the sum over ne0 of each row. One block per row.
#include "ops/ops.hpp"
#include "ops/tensor.cuh"

namespace sy::cuda {
namespace {

__global__ void sum_rows_kernel(TensorDesc dst, TensorDesc x) {
    __shared__ float shared[32];
    const int64_t r = blockIdx.x;
    const char* in = row_ptr(x, r);
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < x.ne[0]; i += blockDim.x)
        sum += load_float(x.type, in + i * x.nb[0]);
    sum = block_sum(sum, shared);
    if (threadIdx.x == 0) store_float(dst.type, row_ptr(dst, r), sum);
}

}  // namespace

void launch_sum_rows(const OpContext& ctx, const sy_node& node) {
    const TensorDesc dst = desc_of(*node.dst);
    sum_rows_kernel<<<unsigned(nrows(dst)), kThreads, 0, ctx.stream>>>(dst,
                                                                       desc_of(*node.src[0]));
    check_launch("sum_rows");
}

}  // namespace sy::cuda
