// SOFTMAX over ne0 of y = x * scale + mask (+ causal mask: element j of row i1 is -inf when
// j > i1 + offset); the mask is indexed [j, i1 % R1, i2 % ne2, i3 % ne3]. A row that is -inf
// everywhere yields zeros. One block per row: max, then the sum of exponentials, then the write.
#include "ops/ops.hpp"
#include "ops/tensor.cuh"

namespace sy::cuda {
namespace {

__device__ inline float masked_value(const TensorDesc& x, const TensorDesc& mask, bool has_mask,
                                     const char* in, const char* mask_row, int64_t j, int64_t i1,
                                     float scale, int causal, int offset) {
    if (causal && j > i1 + offset) return -INFINITY;
    float v = load_float(x.type, in + j * x.nb[0]) * scale;
    if (has_mask) v += load_float(mask.type, mask_row + j * mask.nb[0]);
    return v;
}

__global__ void softmax_kernel(TensorDesc dst, TensorDesc x, TensorDesc mask, bool has_mask,
                               float scale, int causal, int offset) {
    __shared__ float shared[32];
    const int64_t r = blockIdx.x;
    const int64_t i1 = r % x.ne[1], i2 = (r / x.ne[1]) % x.ne[2], i3 = r / x.ne[1] / x.ne[2];
    const char* in = row_ptr(x, r);
    char* out = row_ptr(dst, r);
    const char* mask_row = has_mask ? mask.data + (i1 % mask.ne[1]) * mask.nb[1] +
                                          (i2 % mask.ne[2]) * mask.nb[2] +
                                          (i3 % mask.ne[3]) * mask.nb[3]
                                    : nullptr;
    const int64_t n = x.ne[0];
    float max = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        max = fmaxf(max, masked_value(x, mask, has_mask, in, mask_row, j, i1, scale, causal,
                                      offset));
    max = block_max(max, shared);
    if (max == -INFINITY) {
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
            store_float(dst.type, out + j * dst.nb[0], 0.0f);
        return;
    }
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        sum += expf(masked_value(x, mask, has_mask, in, mask_row, j, i1, scale, causal, offset) -
                    max);
    sum = block_sum(sum, shared);
    const float inv = 1.0f / sum;
    // dst may alias x only through the op contract's "in place" rule, which softmax does not
    // grant, so x can be read again here.
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        store_float(dst.type, out + j * dst.nb[0],
                    expf(masked_value(x, mask, has_mask, in, mask_row, j, i1, scale, causal,
                                      offset) -
                         max) *
                        inv);
}

}  // namespace

void launch_softmax(const OpContext& ctx, const sy_node& node) {
    const TensorDesc dst = desc_of(*node.dst);
    const bool has_mask = node.src[1] != nullptr;
    const TensorDesc mask = has_mask ? desc_of(*node.src[1]) : TensorDesc{};
    softmax_kernel<<<unsigned(nrows(dst)), kThreads, 0, ctx.stream>>>(
        dst, desc_of(*node.src[0]), mask, has_mask, node.fparams[0], node.iparams[0],
        node.iparams[1]);
    check_launch("softmax");
}

}  // namespace sy::cuda
