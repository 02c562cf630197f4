// Activations to ActBlock: one warp per block of 32 values, d = max|x| / 127, q = round(x / d).
#include "ops/ops.hpp"
#include "ops/tensor.cuh"
#include "quant/blocks.cuh"
#include "quant/quant.hpp"

namespace sy::cuda {
namespace {

__global__ void quantize_activations_kernel(TensorDesc x, ActBlock* out, int64_t n_blocks) {
    const int lane = threadIdx.x % 32;
    const int64_t blocks_per_row = x.ne[0] / 32;
    const int64_t first = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    const int64_t stride = int64_t(gridDim.x) * blockDim.x / 32;
    for (int64_t b = first; b < n_blocks; b += stride) {
        const int64_t r = b / blocks_per_row, i = (b % blocks_per_row) * 32 + lane;
        const float v = *reinterpret_cast<const float*>(row_ptr(x, r) + i * x.nb[0]);
        const float amax = warp_max(fabsf(v));
        const float d = amax / 127.0f;
        const int q = d != 0.0f ? __float2int_rn(v / d) : 0;
        ActBlock& blk = out[b];
        reinterpret_cast<int8_t*>(blk.q)[lane] = int8_t(q);
        if (lane == 0) blk.d = d;
    }
}

template <int Type>
__global__ void dequantize_f16_kernel(const char* base, int64_t row_stride, int64_t rows,
                                      int64_t k, __half* out) {
    const int64_t subs_per_row = k / 32;
    const int64_t n = rows * subs_per_row;
    for (int64_t w = global_thread(); w < n; w += grid_threads()) {
        const int64_t r = w / subs_per_row, s = w % subs_per_row;
        Sub32 sub;
        decode_row_sub<Type>(reinterpret_cast<const uint8_t*>(base + r * row_stride), s, sub);
        __half* dst = out + r * k + s * 32;
        for (int e = 0; e < 32; ++e) dst[e] = __float2half_rn(sub_value<Type>(sub, e));
    }
}

}  // namespace

void quantize_activations(const OpContext& ctx, const TensorDesc& x, ActBlock* out) {
    const int64_t n_blocks = nrows(x) * (x.ne[0] / 32);
    if (n_blocks == 0) return;
    quantize_activations_kernel<<<grid_for(n_blocks * 32), kThreads, 0, ctx.stream>>>(x, out,
                                                                                    n_blocks);
    check_launch("quantize activations");
}

void dequantize_rows_f16(const OpContext& ctx, int32_t type, const char* base, int64_t row_stride,
                         int64_t rows, int64_t k, void* out) {
    const int64_t n = rows * (k / 32);
    if (n == 0) return;
    const bool known = with_block_type(type, [&](auto type_tag) {
            constexpr int Type = decltype(type_tag)::value;
        dequantize_f16_kernel<Type><<<grid_for(n), kThreads, 0, ctx.stream>>>(
            base, row_stride, rows, k, static_cast<__half*>(out));
    });
    if (!known) throw LaunchError("dequantize: no decoder for this block type");
    check_launch("dequantize to f16");
}

}  // namespace sy::cuda
