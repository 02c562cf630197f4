// Activations to ActRows: one warp per sub-block of 32 values, d = max|x| / 127, q = round(x / d).
#include "ops/ops.hpp"
#include "ops/tensor.cuh"
#include "quant/blocks.cuh"
#include "quant/quant.hpp"

namespace sy::cuda {
namespace {

__global__ void quantize_activations_kernel(TensorDesc x, ActRows out, int64_t n_blocks) {
    allow_dependents();  // the row dots after this kernel may start prefetching their weights
    const int lane = threadIdx.x % 32;
    const int64_t first = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    const int64_t stride = int64_t(gridDim.x) * blockDim.x / 32;
    for (int64_t b = first; b < n_blocks; b += stride) {
        const int64_t r = b / out.subs, s = b % out.subs;
        const float v = *reinterpret_cast<const float*>(row_ptr(x, r) + (s * 32 + lane) * x.nb[0]);
        const float amax = warp_max(fabsf(v));
        const float d = amax / 127.0f;
        const int q = d != 0.0f ? __float2int_rn(v / d) : 0;
        out.q[r * out.row_bytes() + (s / 32) * 1024 + (lane / 16) * 512 + (s % 32) * 16 +
              lane % 16] = int8_t(q);
        int sum = q;  // over the lane's half (16 lanes)
        for (int o = 8; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        const int other = __shfl_xor_sync(0xffffffffu, sum, 16);
        if (lane == 0) out.meta[r * out.subs + s] = ActMeta{d, {sum, other}, 0};
    }
}

template <int Type>
__global__ void dequantize_f16_kernel(const char* base, int64_t row_stride, int64_t rows, int64_t k,
                                      __half* out) {
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

ActRows quantize_activations(const OpContext& ctx, const TensorDesc& x) {
    const int64_t rows = nrows(x), subs = x.ne[0] / 32;
    auto* bytes = static_cast<int8_t*>(ctx.scratch->take(size_t(ActRows::bytes(rows, subs))));
    const ActRows out{bytes, reinterpret_cast<ActMeta*>(bytes + ActRows::quant_bytes(rows, subs)),
                      subs};
    const int64_t n_blocks = rows * subs;
    if (n_blocks == 0) return out;
    quantize_activations_kernel<<<grid_for(n_blocks * 32), kThreads, 0, ctx.stream>>>(x, out,
                                                                                      n_blocks);
    check_launch("quantize activations");
    return out;
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
