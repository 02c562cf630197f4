// RMS_NORM: per row over ne0, dst = x / sqrt(mean(x^2) + eps). One block per row.
#include "ops/ops.hpp"
#include "ops/tensor.cuh"

namespace sy::cuda {
namespace {

__global__ void rms_norm_kernel(TensorDesc dst, TensorDesc x, float eps) {
    __shared__ float shared[32];
    const int64_t r = blockIdx.x;
    const char* in = row_ptr(x, r);
    char* out = row_ptr(dst, r);
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < x.ne[0]; i += blockDim.x) {
        const float v = load_float(x.type, in + i * x.nb[0]);
        sum += v * v;
    }
    sum = block_sum(sum, shared);
    const float scale = rsqrtf(sum / float(x.ne[0]) + eps);
    for (int64_t i = threadIdx.x; i < x.ne[0]; i += blockDim.x)
        store_float(dst.type, out + i * dst.nb[0], load_float(x.type, in + i * x.nb[0]) * scale);
}

}  // namespace

void launch_rms_norm(const OpContext& ctx, const sy_node& node) {
    const TensorDesc dst = desc_of(*node.dst);
    rms_norm_kernel<<<unsigned(nrows(dst)), kThreads, 0, ctx.stream>>>(
        dst, desc_of(*node.src[0]), node.fparams[0]);
    check_launch("rms_norm");
}

}  // namespace sy::cuda
